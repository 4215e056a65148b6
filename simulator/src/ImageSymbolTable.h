// ompsim simulator: names device addresses from a loaded image's symbols (host side).
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Object/ObjectFile.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ompsim::sim {

/// Sorted function and object symbols of one image at its load address.
class ImageSymbolTable {
public:
  /// Reads .symtab and .dynsym of an ELF image loaded at `Base`; an
  /// unreadable image gives an empty table.
  static ImageSymbolTable fromElf(llvm::ArrayRef<char> Bytes, uint64_t Base);
  /// Adds one symbol (JIT-linked images add theirs one by one).
  void add(std::string Name, uint64_t Addr, uint64_t Size);
  /// "name+0xoff" when `Addr` lies in a symbol (or within 4 KiB past a
  /// sizeless one), else "".
  std::string symbolize(uint64_t Addr) const;

private:
  /// Adds the functions the image's DWARF describes where no symbol covers them.
  void addDebugInfoFunctions(const llvm::object::ObjectFile &Obj, uint64_t Base);

  struct Entry {
    uint64_t Addr, Size;
    std::string Name;
  };
  mutable bool Sorted = true;
  mutable std::vector<Entry> Entries;
};

} // namespace ompsim::sim

// ompsim simulator: names device addresses from a loaded image's symbols (host side).
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ompsim::sim {

/// Sorted function and object symbols of one image at its load address.
class ImageSymbolTable {
public:
  /// Reads .symtab and .dynsym of an ELF image loaded at `Base`; an
  /// unreadable image gives an empty table.
  static ImageSymbolTable fromElf(llvm::ArrayRef<char> Bytes, uint64_t Base);
  /// The symbols of the shared library at `Path`, at its link addresses,
  /// and the link address of its byte at `FileOffset` (in a PT_LOAD
  /// segment); null when the file cannot be read or holds no such byte.
  static std::unique_ptr<ImageSymbolTable> fromLibraryFile(const std::string &Path, uint64_t FileOffset,
                                                           uint64_t &Address);
  /// Adds one symbol (JIT-linked images add theirs one by one).
  void add(std::string Name, uint64_t Addr, uint64_t Size);
  /// The symbol `Addr` lies in (or within 4 KiB past, when it has no size),
  /// demangled, and `Addr`'s offset from its start.
  struct SymbolAt {
    std::string Name;
    uint64_t Offset;
  };
  std::optional<SymbolAt> lookup(uint64_t Addr) const;
  /// "name+0xoff" of lookup(Addr), else "".
  std::string symbolize(uint64_t Addr) const;

private:
  /// Adds the function and object symbols of .symtab and .dynsym, at `Base`,
  /// and the functions its DWARF describes.
  void addElfSymbols(const llvm::object::ELFObjectFileBase &Elf, uint64_t Base);
  /// Adds the code the IFUNCs of the library at `Path` resolve to on this
  /// CPU, under their names, where this process has the library loaded.
  void addIfuncTargets(const std::string &Path, const llvm::object::ELFObjectFileBase &Obj);
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

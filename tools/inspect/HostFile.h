// The host ELF file ompsim-inspect reads, and the readers that decode its
// offload entries and device images (internal to tools/inspect).
#pragma once

#include "OffloadInspector.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/ADT/Twine.h>
#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELF.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <memory>
#include <string>
#include <vector>

namespace ompsim::inspect {

using ELFT = llvm::object::ELF64LE;
using ElfFile = llvm::object::ELFFile<ELFT>;
using Shdr = ELFT::Shdr;
using Sym = ELFT::Sym;

constexpr llvm::StringRef kCurrentEntrySection = "llvm_offload_entries";
constexpr llvm::StringRef kLegacyEntrySection = "omp_offloading_entries";
constexpr llvm::StringRef kImageSection = ".llvm.offloading";

/// An error with `Message` (the readers' one way to fail).
llvm::Error fail(const llvm::Twine &Message);
/// One message for up to two errors that may each be success.
std::string errorsOf(llvm::Error A, llvm::Error B);
/// `V` as 0x-prefixed hexadecimal.
std::string hex(uint64_t V);

/// An address inside the host file: a virtual address (section 0, linked files)
/// or an offset inside section `section` (relocatable objects).
struct Location {
  unsigned Section = 0;
  uint64_t Addr = 0;
};

/// Where a relocated field points.
struct RelocTarget {
  Location Loc;
  std::string Symbol; ///< the relocation's own symbol when it is a named, non-section symbol
  uint64_t Addend = 0;
  bool Undefined = false;
};

struct NamedSymbol {
  unsigned Section; // 0 in linked files (addresses are global)
  uint64_t Value, Size;
  std::string Name;
  bool Global, Typed, Dotted;
};

/// The host file opened as ELF, with the lookups the entry decoder needs.
class HostFile {
public:
  static llvm::Expected<std::unique_ptr<HostFile>> create(llvm::StringRef Path);

  const ElfFile &elf() const { return Elf; }
  bool relocatable() const { return Elf.getHeader().e_type == llvm::ELF::ET_REL; }
  llvm::ArrayRef<Shdr> sections() const { return Sections; }
  llvm::StringRef sectionName(const Shdr &S) const {
    llvm::Expected<llvm::StringRef> N = Elf.getSectionName(S);
    if (!N) {
      llvm::consumeError(N.takeError());
      return "";
    }
    return *N;
  }
  unsigned indexOf(const Shdr &S) const { return unsigned(&S - Sections.data()); }
  const Shdr *findSection(llvm::StringRef Name) const {
    for (const Shdr &S : Sections)
      if (sectionName(S) == Name)
        return &S;
    return nullptr;
  }
  llvm::Expected<llvm::ArrayRef<uint8_t>> contents(const Shdr &S) const {
    if (S.sh_type == llvm::ELF::SHT_NOBITS)
      return fail("section " + sectionName(S) + " has no contents in the file");
    return Elf.getSectionContents(S);
  }

  /// The bytes from `Loc` to the end of the section that holds it.
  llvm::Expected<llvm::ArrayRef<uint8_t>> bytesAt(Location Loc) const;
  /// The NUL-terminated string at `Loc`.
  llvm::Expected<std::string> stringAt(Location Loc) const;
  /// Names `Loc` from the symbol tables (fills symbol/mangled/offset).
  void symbolize(Location Loc, HostLocation &Out) const;

  std::string elfType() const;
  std::string machine() const;

private:
  HostFile(std::unique_ptr<llvm::MemoryBuffer> Buffer, ElfFile Elf)
      : Buffer(std::move(Buffer)), Elf(std::move(Elf)) {}
  llvm::Error load();

  std::unique_ptr<llvm::MemoryBuffer> Buffer;
  ElfFile Elf;
  llvm::ArrayRef<Shdr> Sections;
  std::vector<NamedSymbol> Symbols; // sorted by (section, value)
};

/// Decodes the entry table in `Sec` (relocated pointer fields included).
llvm::Expected<std::vector<OffloadEntry>> readEntries(const HostFile &File, const Shdr &Sec,
                                                      EntryFormat Format);
/// Appends the device images of the OffloadBinary section `Sec` to `Images`.
llvm::Error readOffloadBinaries(const HostFile &File, const Shdr &Sec, std::vector<DeviceImage> &Images);
/// Appends raw legacy device images (LLVM <= 19 __tgt_device_image arrays) to `Images`.
llvm::Error readRawLegacyImages(const HostFile &File, std::vector<DeviceImage> &Images);

} // namespace ompsim::inspect

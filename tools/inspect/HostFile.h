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

/// An error with `message` (the readers' one way to fail).
llvm::Error fail(const llvm::Twine &message);
/// One message for up to two errors that may each be success.
std::string errorsOf(llvm::Error a, llvm::Error b);
/// `v` as 0x-prefixed hexadecimal.
std::string hex(uint64_t v);


/// An address inside the host file: a virtual address (section 0, linked files)
/// or an offset inside section `section` (relocatable objects).
struct Location {
  unsigned section = 0;
  uint64_t addr = 0;
};

/// Where a relocated field points.
struct RelocTarget {
  Location loc;
  std::string symbol; ///< the relocation's own symbol when it is a named, non-section symbol
  uint64_t addend = 0;
  bool undefined = false;
};

struct NamedSymbol {
  unsigned section; // 0 in linked files (addresses are global)
  uint64_t value, size;
  std::string name;
  bool global, typed, dotted;
};

/// The host file opened as ELF, with the lookups the entry decoder needs.
class HostFile {
public:
  static llvm::Expected<std::unique_ptr<HostFile>> Create(llvm::StringRef path);

  const ElfFile &elf() const { return elf_; }
  bool relocatable() const { return elf_.getHeader().e_type == llvm::ELF::ET_REL; }
  llvm::ArrayRef<Shdr> sections() const { return sections_; }
  llvm::StringRef sectionName(const Shdr &s) const {
    llvm::Expected<llvm::StringRef> n = elf_.getSectionName(s);
    if (!n) {
      llvm::consumeError(n.takeError());
      return "";
    }
    return *n;
  }
  unsigned indexOf(const Shdr &s) const { return unsigned(&s - sections_.data()); }
  const Shdr *findSection(llvm::StringRef name) const {
    for (const Shdr &s : sections_)
      if (sectionName(s) == name)
        return &s;
    return nullptr;
  }
  llvm::Expected<llvm::ArrayRef<uint8_t>> contents(const Shdr &s) const {
    if (s.sh_type == llvm::ELF::SHT_NOBITS)
      return fail("section " + sectionName(s) + " has no contents in the file");
    return elf_.getSectionContents(s);
  }

  /// The bytes from `loc` to the end of the section that holds it.
  llvm::Expected<llvm::ArrayRef<uint8_t>> bytesAt(Location loc) const;
  /// The NUL-terminated string at `loc`.
  llvm::Expected<std::string> stringAt(Location loc) const;
  /// Names `loc` from the symbol tables (fills symbol/mangled/offset).
  void symbolize(Location loc, HostLocation &out) const;

  std::string elfType() const;
  std::string machine() const;

private:
  HostFile(std::unique_ptr<llvm::MemoryBuffer> buffer, ElfFile elf)
      : buffer_(std::move(buffer)), elf_(std::move(elf)) {}
  llvm::Error load();

  std::unique_ptr<llvm::MemoryBuffer> buffer_;
  ElfFile elf_;
  llvm::ArrayRef<Shdr> sections_;
  std::vector<NamedSymbol> symbols_; // sorted by (section, value)
};

/// Decodes the entry table in `sec` (relocated pointer fields included).
llvm::Expected<std::vector<OffloadEntry>> readEntries(const HostFile &file, const Shdr &sec,
                                                      EntryFormat format);
/// Appends the device images of the OffloadBinary section `sec` to `images`.
llvm::Error readOffloadBinaries(const HostFile &file, const Shdr &sec, std::vector<DeviceImage> &images);
/// Appends raw legacy device images (LLVM <= 19 __tgt_device_image arrays) to `images`.
llvm::Error readRawLegacyImages(const HostFile &file, std::vector<DeviceImage> &images);

} // namespace ompsim::inspect

//===- ElfImageLoad.h - One ELF image load in progress ------*- C++ -*-===//
//
// ImageLoad and the helpers it uses, shared by the loader's validation
// (ElfImageValidator.cpp), mapping (ElfImageLoader.cpp) and relocation
// (ElfRelocator.cpp). Private to the simulator.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "ElfImageLoader.h"

#include "llvm/ADT/StringExtras.h"

#include <gelf.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// The image is untrusted input (a fuzzer feeds it): every number it gives is
// an offset, size, index or address that is checked before it is used, all
// reads and writes of loaded memory go through ImageSpan (bounds-checked,
// memcpy so misaligned fields are fine), and nothing is called that does not
// lie in an executable PT_LOAD segment.

namespace ompsim::sim {

constexpr uint64_t kPage = 4096;
/// No x86-64 user address is this high; a vaddr above it is corrupt, and sums
/// of two values below it cannot wrap.
constexpr uint64_t kMaxVaddr = 1ull << 47;

inline uint64_t pageDown(uint64_t x) { return x & ~(kPage - 1); }
inline uint64_t pageUp(uint64_t x) { return (x + kPage - 1) & ~(kPage - 1); }
inline std::string hex(uint64_t v) { return "0x" + llvm::utohexstr(v, /*LowerCase=*/true); }

using InitFn = void (*)();

/// A PT_LOAD segment's vaddr range and p_flags.
struct Segment {
  uint64_t begin, end;
  uint32_t flags;
};

/// Address ranges [first, second), sorted and merged, for membership tests.
class RangeSet {
public:
  void add(uint64_t begin, uint64_t end) {
    if (begin < end)
      ranges_.emplace_back(begin, end);
  }
  void finish() {
    std::sort(ranges_.begin(), ranges_.end());
    std::vector<std::pair<uint64_t, uint64_t>> merged;
    for (auto r : ranges_)
      if (!merged.empty() && r.first <= merged.back().second)
        merged.back().second = std::max(merged.back().second, r.second);
      else
        merged.push_back(r);
    ranges_ = std::move(merged);
  }
  /// Whether [addr, addr + bytes) lies inside one range (bytes 0 counts as 1).
  bool contains(uint64_t addr, uint64_t bytes = 1) const {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                               [](uint64_t a, const auto &r) { return a < r.first; });
    if (it == ranges_.begin())
      return false;
    --it;
    return addr < it->second && std::max<uint64_t>(bytes, 1) <= it->second - addr;
  }

private:
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;
};

/// The loaded image's memory, addressed by vaddr: [lo, hi) at bias + vaddr.
class ImageSpan {
public:
  ImageSpan(uint64_t bias, uint64_t lo, uint64_t hi) : bias_(bias), lo_(lo), hi_(hi) {}
  /// Whether [vaddr, vaddr + bytes) lies inside the span.
  bool contains(uint64_t vaddr, uint64_t bytes) const {
    return vaddr >= lo_ && vaddr <= hi_ && bytes <= hi_ - vaddr;
  }
  /// Reads a T at vaddr; the caller has checked contains(vaddr, sizeof(T)).
  template <typename T> T read(uint64_t vaddr) const {
    T value;
    std::memcpy(&value, ptr(vaddr), sizeof value);
    return value;
  }
  /// Writes 8 bytes at vaddr; the caller has checked contains(vaddr, 8).
  void write64(uint64_t vaddr, uint64_t value) const { std::memcpy(ptr(vaddr), &value, 8); }
  char *ptr(uint64_t vaddr) const { return reinterpret_cast<char *>(bias_ + vaddr); }
  std::string describe() const { return "[" + hex(lo_) + ", " + hex(hi_) + ")"; }
  uint64_t lo() const { return lo_; }
  uint64_t hi() const { return hi_; }

private:
  uint64_t bias_, lo_, hi_;
};

/// One load in progress: the image's parsed tables and the checks on them.
class ImageLoad {
public:
  /// `checkOnly`: validate without running or registering anything (see
  /// ElfImageLoader::validate); `env` then provides only memory.
  ImageLoad(llvm::StringRef name, const ElfLoadEnvironment &env, bool checkOnly = false)
      : name_(name), env_(env), checkOnly_(checkOnly) {}

  /// Loads (or checks) `bytes`; `inPlace` parses them where they are (see
  /// ElfImageLoader::load's `exclusive`) instead of a private copy.
  llvm::Expected<std::unique_ptr<LoadedElfImage>> run(llvm::ArrayRef<char> bytes, bool inPlace = false);

private:
  llvm::Error fail(const llvm::Twine &what) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "image " + name_ + ": " + what);
  }
  llvm::Error readProgramHeaders(Elf *elf, uint64_t fileSize);
  llvm::Error readDynamic();
  llvm::Error checkTables(Elf *elf);
  /// The number of dynamic symbols by DT_GNU_HASH: one past the last symbol
  /// of the longest-reaching hash chain (symbols below symoffset are unhashed).
  llvm::Expected<uint64_t> gnuHashSymbolCount() const;
  llvm::Expected<llvm::StringRef> string(uint64_t offset, const llvm::Twine &what) const;
  llvm::Error readSymbols();
  llvm::Expected<uint64_t> symbolValue(uint64_t index, uint64_t reloc, const char *table);
  llvm::Error relocate(uint64_t table, uint64_t bytes, const char *tableName);
  llvm::Error protect(bool withRelro);
  void applyIrelative();
  llvm::Error registerEhFrame(Elf *elf);
  llvm::Error checkEhFrame(uint64_t begin, uint64_t size) const;
  llvm::Error collectInitFini(std::vector<uint64_t> &init);
  bool executable(uint64_t vaddr) const { return executable_.contains(vaddr); }

  llvm::StringRef name_;
  const ElfLoadEnvironment &env_;
  bool checkOnly_ = false;
  std::vector<GElf_Phdr> phdrs_;
  std::vector<Segment> segments_;
  /// Vaddrs of segments with PF_X / PF_W / PF_R: their pages get at least that access.
  RangeSet executable_, writable_, readable_;
  std::optional<GElf_Phdr> dynamicPh_, relroPh_, ehFrameHdrPh_;
  uint64_t lo_ = UINT64_MAX, hi_ = 0;
  std::unique_ptr<LoadedElfImage> img_;
  std::optional<ImageSpan> span_;

  // Dynamic section.
  uint64_t strtab_ = 0, strsz_ = 0, symtab_ = 0, nsyms_ = 0, hash_ = 0, gnuHash_ = 0, versym_ = 0;
  /// Symbol indices a relocation may use: nsyms_, or with only DT_GNU_HASH
  /// (which counts just the hashed, defined symbols) every whole entry
  /// between DT_SYMTAB and the next table the dynamic section names.
  uint64_t symLimit_ = 0;
  std::optional<uint64_t> syment_, relaent_;
  uint64_t rela_ = 0, relasz_ = 0, jmprel_ = 0, pltrelsz_ = 0;
  uint64_t init_ = 0, initArray_ = 0, initArraySz_ = 0, fini_ = 0, finiArray_ = 0, finiArraySz_ = 0;
  bool haveStrsz_ = false;
  std::vector<uint64_t> neededOffsets_;
  /// IRELATIVE relocations (where, resolver vaddr), applied once code is executable.
  std::vector<std::pair<uint64_t, uint64_t>> irelative_;
};

} // namespace ompsim::sim

//===- ElfImageLoad.h - One ELF image load in progress ------*- C++ -*-===//
//
// ImageLoad and the helpers it uses, shared by the loader's validation
// (ElfImageValidator.cpp, ElfEhFrameValidator.cpp), mapping
// (ElfImageLoader.cpp) and relocation (ElfRelocator.cpp). Private to the
// simulator.
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

inline uint64_t pageDown(uint64_t X) { return X & ~(kPage - 1); }
inline uint64_t pageUp(uint64_t X) { return (X + kPage - 1) & ~(kPage - 1); }
inline std::string hex(uint64_t V) { return "0x" + llvm::utohexstr(V, /*LowerCase=*/true); }

using InitFn = void (*)();

/// A PT_LOAD segment's vaddr range and p_flags.
struct Segment {
  uint64_t Begin, End;
  uint32_t Flags;
};

/// Address ranges [first, second), sorted and merged, for membership tests.
class RangeSet {
public:
  void add(uint64_t Begin, uint64_t End) {
    if (Begin < End)
      Ranges.emplace_back(Begin, End);
  }
  void finish() {
    std::sort(Ranges.begin(), Ranges.end());
    std::vector<std::pair<uint64_t, uint64_t>> Merged;
    for (auto R : Ranges)
      if (!Merged.empty() && R.first <= Merged.back().second)
        Merged.back().second = std::max(Merged.back().second, R.second);
      else
        Merged.push_back(R);
    Ranges = std::move(Merged);
  }
  /// Whether [addr, addr + bytes) lies inside one range (bytes 0 counts as 1).
  bool contains(uint64_t Addr, uint64_t Bytes = 1) const {
    auto It = std::upper_bound(Ranges.begin(), Ranges.end(), Addr,
                               [](uint64_t A, const auto &R) { return A < R.first; });
    if (It == Ranges.begin())
      return false;
    --It;
    return Addr < It->second && std::max<uint64_t>(Bytes, 1) <= It->second - Addr;
  }
  /// Whether any byte of [addr, addr + bytes) lies in a range (bytes 0 counts as 1).
  bool overlaps(uint64_t Addr, uint64_t Bytes = 1) const {
    uint64_t End = Addr + std::max<uint64_t>(Bytes, 1);
    for (auto R : Ranges)
      if (R.first < End && Addr < R.second)
        return true;
    return false;
  }

private:
  std::vector<std::pair<uint64_t, uint64_t>> Ranges;
};

/// The loaded image's memory, addressed by vaddr: [lo, hi) at bias + vaddr.
class ImageSpan {
public:
  ImageSpan(uint64_t Bias, uint64_t Lo, uint64_t Hi) : Bias(Bias), Lo(Lo), Hi(Hi) {}
  /// Whether [vaddr, vaddr + bytes) lies inside the span.
  bool contains(uint64_t Vaddr, uint64_t Bytes) const {
    return Vaddr >= Lo && Vaddr <= Hi && Bytes <= Hi - Vaddr;
  }
  /// Reads a T at vaddr; the caller has checked contains(vaddr, sizeof(T)).
  template <typename T> T read(uint64_t Vaddr) const {
    T Value;
    std::memcpy(&Value, ptr(Vaddr), sizeof Value);
    return Value;
  }
  /// Writes 8 bytes at vaddr; the caller has checked contains(vaddr, 8).
  void write64(uint64_t Vaddr, uint64_t Value) const { std::memcpy(ptr(Vaddr), &Value, 8); }
  char *ptr(uint64_t Vaddr) const { return reinterpret_cast<char *>(Bias + Vaddr); }
  std::string describe() const { return "[" + hex(Lo) + ", " + hex(Hi) + ")"; }
  uint64_t lo() const { return Lo; }
  uint64_t hi() const { return Hi; }

private:
  uint64_t Bias, Lo, Hi;
};

/// A kernel: a defined function whose name marks it as an offload entry
/// point (`__omp_offloading_...`), which only the host launches.
struct KernelSymbol {
  std::string Name;
  uint64_t Vaddr, Size;
};

/// Whether a dynamic symbol of this type and name is a kernel (clang names
/// every target region's entry point `__omp_offloading_<...>`).
inline bool isKernelSymbol(unsigned char Type, llvm::StringRef Name) {
  return Type == STT_FUNC && Name.starts_with("__omp_offloading_");
}

/// One load in progress: the image's parsed tables and the checks on them.
class ImageLoad {
public:
  /// `CheckOnly`: validate without running or registering anything (see
  /// ElfImageLoader::validate); `Env` then provides only memory.
  ImageLoad(llvm::StringRef Name, const ElfLoadEnvironment &Env, bool CheckOnly = false)
      : Name(Name), Env(Env), CheckOnly(CheckOnly) {}

  /// Loads (or checks) `Bytes`; `InPlace` parses them where they are (see
  /// ElfImageLoader::load's `exclusive`) instead of a private copy.
  llvm::Expected<std::unique_ptr<LoadedElfImage>> run(llvm::ArrayRef<char> Bytes, bool InPlace = false);

private:
  llvm::Error fail(const llvm::Twine &What) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "image " + Name + ": " + What);
  }
  llvm::Error readProgramHeaders(Elf *Elf, uint64_t FileSize);
  llvm::Error readDynamic();
  llvm::Error checkTables(Elf *Elf);
  /// DT_VERSYM, DT_VERNEED and DT_VERDEF, which the dynamic linker reads.
  llvm::Error checkVersionTables();
  /// Kernels start where a function starts (see checkKernelStarts in the .cpp).
  llvm::Error checkKernelStarts() const;
  /// The kernel at vaddr `At`, if any covers it.
  const KernelSymbol *kernelAt(uint64_t At) const;
  /// The number of dynamic symbols by DT_GNU_HASH: one past the last symbol
  /// of the longest-reaching hash chain (symbols below symoffset are unhashed).
  llvm::Expected<uint64_t> gnuHashSymbolCount() const;
  llvm::Expected<llvm::StringRef> string(uint64_t Offset, const llvm::Twine &What) const;
  llvm::Error readSymbols();
  llvm::Expected<uint64_t> symbolValue(uint64_t Index, uint64_t Reloc, const char *Table, uint32_t RelType);
  llvm::Error relocate(uint64_t Table, uint64_t Bytes, const char *TableName);
  llvm::Error protect(bool WithRelro);
  void applyIrelative();
  llvm::Error registerEhFrame(Elf *Elf);
  llvm::Error checkEhFrame(uint64_t Begin, uint64_t Size);
  llvm::Error collectInitFini(std::vector<uint64_t> &Init);
  bool executable(uint64_t Vaddr) const { return Executable.contains(Vaddr); }

  llvm::StringRef Name;
  const ElfLoadEnvironment &Env;
  bool CheckOnly = false;
  std::vector<GElf_Phdr> Phdrs;
  std::vector<Segment> Segments;
  /// Vaddrs of segments with PF_X / PF_W / PF_R: their pages get at least that access.
  RangeSet Executable, Writable, Readable;
  std::optional<GElf_Phdr> DynamicPh, RelroPh, EhFrameHdrPh;
  uint64_t Lo = UINT64_MAX, Hi = 0;
  std::unique_ptr<LoadedElfImage> Img;
  std::optional<ImageSpan> Span;

  // Dynamic section.
  uint64_t Strtab = 0, Strsz = 0, Symtab = 0, Nsyms = 0, Hash = 0, GnuHash = 0, Versym = 0;
  uint64_t Verneed = 0, Verneednum = 0, Verdef = 0, Verdefnum = 0;
  /// DT_TEXTREL (or DF_TEXTREL): relocations may write read-only segments.
  bool TextRel = false;
  /// Symbol indices a relocation may use: nsyms_, or with only DT_GNU_HASH
  /// (which counts just the hashed, defined symbols) every whole entry
  /// between DT_SYMTAB and the next table the dynamic section names.
  uint64_t SymLimit = 0;
  std::optional<uint64_t> Syment, Relaent;
  uint64_t Rela = 0, Relasz = 0, Jmprel = 0, Pltrelsz = 0;
  uint64_t Init = 0, InitArray = 0, InitArraySz = 0, Fini = 0, FiniArray = 0, FiniArraySz = 0;
  bool HaveStrsz = false;
  std::vector<uint64_t> NeededOffsets;
  /// Defined kernels, by vaddr (readSymbols).
  std::vector<KernelSymbol> Kernels;
  /// [start, end) of each FDE in .eh_frame (checkEhFrame): where functions start.
  std::vector<std::pair<uint64_t, uint64_t>> FdeRanges;
  /// IRELATIVE relocations (where, resolver vaddr), applied once code is executable.
  std::vector<std::pair<uint64_t, uint64_t>> Irelative;
};

} // namespace ompsim::sim

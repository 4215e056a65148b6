// ompsim simulator: loads clang-22's x86-64 ET_DYN device images into device memory.
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ompsim::sim {

class ImageLoad; // one load in progress (ElfImageLoader.cpp)

/// What the loader needs from the process it loads into.
struct ElfLoadEnvironment {
  /// Returns `size` bytes of page-aligned read-write memory for the image.
  std::function<llvm::Expected<uint8_t *>(uint64_t Size)> Allocate;
  /// Gives memory from `Allocate` back (after a failed load or at unload).
  std::function<void(uint8_t *Base)> Release;
  /// Makes a NEEDED library's symbols resolvable (libomptarget and ld.so are
  /// never passed here).
  std::function<llvm::Error(llvm::StringRef Soname)> LoadNeeded;
  /// Address of an undefined symbol, or nullptr if nothing defines it.
  std::function<void *(llvm::StringRef Name)> Resolve;
};

/// One image mapped, relocated and initialized in the current process.
///
/// Destruction runs nothing; call runFini() first to run DT_FINI_ARRAY and
/// DT_FINI, then the memory goes back through the environment's `Release`.
class LoadedElfImage {
public:
  ~LoadedElfImage();
  LoadedElfImage(const LoadedElfImage &) = delete;
  LoadedElfImage &operator=(const LoadedElfImage &) = delete;

  /// Load address (the image's vaddr 0).
  uint64_t base() const { return Base; }
  /// Bytes the image spans from base().
  uint64_t size() const { return Size; }
  /// Name the image was loaded as (for messages).
  const std::string &name() const { return Name; }
  /// Address of a defined dynamic symbol, or 0 when the image defines none by that name.
  uint64_t lookup(llvm::StringRef Symbol) const;
  /// DT_NEEDED entries in order.
  const std::vector<std::string> &needed() const { return Needed; }
  /// Runs DT_FINI_ARRAY (in reverse) and DT_FINI once.
  void runFini();

private:
  friend class ImageLoad;
  LoadedElfImage() = default;

  std::string Name;
  uint64_t Base = 0, Size = 0;
  uint8_t *Start = nullptr; ///< what the environment's allocate returned (base_ + lowest vaddr)
  std::vector<std::string> Needed;
  /// Entries bump-allocated: an image with 100 Ki symbols makes one
  /// allocation per slab instead of an aligned allocation per symbol.
  llvm::StringMap<uint64_t, llvm::BumpPtrAllocator> Symbols;
  std::vector<uint64_t> Fini; ///< in call order
  void *EhFrame = nullptr;
  bool FiniDone = false;
  std::function<void(uint8_t *)> Release;
};

/// Maps PT_LOAD segments, applies dynamic relocations, resolves imports,
/// applies protections, registers .eh_frame and runs DT_INIT/DT_INIT_ARRAY.
class ElfImageLoader {
public:
  /// Largest span (lowest to highest PT_LOAD address) an image may have.
  static constexpr uint64_t kMaxImageSpan = 1ull << 30;

  /// Loads `Bytes` (an x86-64 ET_DYN ELF) named `name`. Errors name the image
  /// and the problem (bad header, unknown relocation type, undefined symbol).
  ///
  /// The bytes are untrusted: every size, offset, index and address the image
  /// gives is checked against the file or the loaded span before use, code is
  /// only called (initializers, IRELATIVE resolvers) at addresses inside an
  /// executable PT_LOAD segment, and a failed load gives its memory back.
  ///
  /// With `Exclusive` the caller vouches that nothing else writes `Bytes`
  /// until load() returns (a buffer received for this very load): they are
  /// parsed in place instead of copied first, which for an image of 100 Ki
  /// functions is tens of megabytes of fresh memory.
  static llvm::Expected<std::unique_ptr<LoadedElfImage>> load(llvm::ArrayRef<char> Bytes,
                                                              llvm::StringRef Name,
                                                              const ElfLoadEnvironment &Env,
                                                              bool Exclusive = false);

  /// Checks `Bytes` as load() would, with the same checks and messages, but
  /// runs and registers nothing: no initializer, IRELATIVE resolver or NEEDED
  /// library, no unwind registration; imports are left unresolved. For a
  /// loader that hands the image to another (the dynamic linker, in the
  /// in-process host plugin) and must not let a corrupt image reach it.
  static llvm::Error validate(llvm::ArrayRef<char> Bytes, llvm::StringRef Name);

  /// The R_X86_64_* name of a relocation type ("R_X86_64_RELATIVE"), or "type N".
  static std::string relocationName(uint32_t Type);
};

} // namespace ompsim::sim

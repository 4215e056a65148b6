// ompsim simulator: what stock libomptarget's JIT variables do to a bitcode image's module (host side).
#pragma once

#include "ompsim/Config.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
} // namespace llvm

namespace ompsim::sim {

/// The stages stock libomptarget 22's JIT puts a bitcode image through before
/// code generation, as its LIBOMPTARGET_JIT_* variables ask: read a
/// replacement module instead of the image, write the module as loaded
/// (pre-opt), run LLVM's IR pipeline at a level unless told to skip it,
/// write the module as compiled (post-opt), and save the compiled object.
///
/// ompsim's DeviceJIT applies them to the image's module before its own
/// rewrites, so the files show the user's module, not ompsim's stubs. Unlike
/// stock, the IR pipeline runs only when LIBOMPTARGET_JIT_OPT_LEVEL is set:
/// the device link has optimized the image already. A file that cannot be
/// written costs one `ompsim:` line naming the variable and the file; the
/// run goes on. Thread-safe: devices loading images at once write one file
/// at a time.
class StockJitPipeline {
public:
  explicit StockJitPipeline(Config::StockJit Options) : Opts(std::move(Options)) {}

  /// True when an image's module must be parsed whole (not lazily): a file
  /// is to be written, the module replaced or the IR pipeline run.
  bool needsWholeModule() const;
  /// True when the IR pipeline runs (a level is set and not skipped).
  bool optimizes() const { return Opts.OptLevel >= 0 && !Opts.SkipOpt; }
  /// What the JIT cache's keys must add for the stages: the IR pipeline's
  /// level when it runs, else "" (the module compiled is the image's own).
  std::string cacheSalt() const;
  /// True when the compiled object is to be saved.
  bool savesImage() const { return !Opts.SaveImage.empty(); }

  /// The module to compile instead of every bitcode image
  /// (LIBOMPTARGET_JIT_REPLACEMENT_MODULE, text or bitcode IR), or null when
  /// none is set. An unreadable file is an error naming the variable.
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> replacement() const;
  /// Parses the replacement read by replacement(); an error names the variable and the file.
  llvm::Expected<std::unique_ptr<llvm::Module>> parseReplacement(llvm::MemoryBufferRef Buffer,
                                                                 llvm::LLVMContext &Ctx) const;

  /// Writes the pre-opt module, runs the IR pipeline (optimizes()) with
  /// `Tm`'s target, and writes the post-opt module.
  void run(llvm::Module &M, llvm::TargetMachine &Tm) const;
  /// Writes `Object` to LIBOMPTARGET_JIT_SAVE_IMAGE_FILENAME.
  void saveImage(llvm::StringRef Object) const;

  /// Compiles the whole of `M` (left unchanged) into one relocatable object
  /// with `Tm`, as the image's code generation does.
  static llvm::Expected<std::string> emitObject(const llvm::Module &M, llvm::TargetMachine &Tm);

private:
  Config::StockJit Opts;
};

} // namespace ompsim::sim

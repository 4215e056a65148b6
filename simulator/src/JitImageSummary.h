// ompsim simulator: what the JIT needs to know of a bitcode image's function bodies, kept apart from them.
#pragma once

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class Function;
class Module;
} // namespace llvm

namespace ompsim::sim {

/// The facts DeviceJIT derives from an image's function bodies: which
/// functions have their address taken, and for each function its size and
/// the functions it calls directly.
///
/// A run that finds an image's compiled code in the JIT cache needs no body
/// but to decide its partitions and rewrite address uses the same way as the
/// run that filled the cache; with this summary (kept in the cache beside
/// the objects) it loads the image lazily and never parses the bodies whose
/// code it reads back. Names are those the image's module had when add()
/// analysed it.
struct JitImageSummary {
  /// How a function's first call partitions: its instructions, and the
  /// defined functions it calls directly whose address is not taken.
  struct FunctionInfo {
    uint32_t Instructions = 0;
    std::vector<std::string> Callees;
  };
  /// Defined functions whose address is used other than by calls (before
  /// add() rewrites those uses).
  std::vector<std::string> AddressTaken;
  /// Every defined function of the rewritten module.
  llvm::StringMap<FunctionInfo> Functions;

  /// The summary's bytes; parse() reads them back.
  std::string serialize() const;
  /// A summary from serialize()'s bytes, or nothing when they are not one.
  static std::optional<JitImageSummary> parse(llvm::StringRef Bytes);

  /// Defined functions of `M` (whose bodies must all be materialized) whose
  /// address is used other than by a call, llvm.used or llvm.compiler.used.
  static std::vector<llvm::Function *> addressTaken(llvm::Module &M);
  /// The callees of `F` (materialized) that partitioning follows: defined
  /// functions it calls directly whose address is not taken.
  static std::vector<const llvm::Function *> directCallees(const llvm::Function &F);
};

} // namespace ompsim::sim

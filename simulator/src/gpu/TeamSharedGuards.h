//===- TeamSharedGuards.h - Team-shared globals between guard pages -------===//
//
// A GPU lays a block's team-shared globals side by side: a thread that
// indexes past one array writes the next, and nothing says so. Under the
// checker (OMPSIM_CHECK) the simulated GPU places each team-shared global
// so that it ends where an inaccessible page begins, and hands the device
// runtime a table of them (runtime/device/memcheck/TeamSharedGuards.cpp),
// which protects those pages in every block and names the global, the
// element and the thread of an access that reaches one.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_SIMULATOR_GPU_TEAMSHAREDGUARDS_H
#define OMPSIM_SIMULATOR_GPU_TEAMSHAREDGUARDS_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace llvm {
class Constant;
class DataLayout;
class GlobalVariable;
class Module;
} // namespace llvm

namespace ompsim::sim::gpu {

/// The page the guards are made of: x86-64's (the runtime checks its own).
inline constexpr uint64_t GuardPageBytes = 4096;

/// The device runtime's entry for a team's block under the checker:
/// `void *(uint64_t Bytes, const ompsim_team_shared_var *Vars, uint64_t Count)`.
inline constexpr const char *GuardedTeamSharedEntry = "__ompsim_gpu_team_shared_checked";

/// Where each of `Shared` lies in the team's block, and the table for the
/// device runtime.
struct GuardedTeamShared {
  std::vector<uint64_t> Offsets; ///< one per global, in order
  uint64_t Bytes = 0;            ///< the block, its guard pages included
  llvm::Constant *Vars = nullptr;
  uint64_t Count = 0;
};

/// Places `Shared` (the module's team-shared globals, sizes and alignments
/// of `Layout`) each ending at a page boundary of `PageBytes` with a guard
/// page after it, and adds to `M` the table that names them (their source
/// names from debug information where there is some).
GuardedTeamShared placeBetweenGuards(llvm::Module &M, llvm::ArrayRef<llvm::GlobalVariable *> Shared,
                                     const llvm::DataLayout &Layout, uint64_t PageBytes);

} // namespace ompsim::sim::gpu

#endif // OMPSIM_SIMULATOR_GPU_TEAMSHAREDGUARDS_H

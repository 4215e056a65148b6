//===- TeamSharedReach.h - The team-shared memory each GPU kernel reaches --===//
//
// A GPU's build checks a block's static shared memory kernel by kernel:
// ptxas and the AMDGPU backend count the addrspace(3) globals a kernel and
// the functions it calls use, not every such global of the image. The
// simulated GPU checks the same, before GpuImageRetarget lays the globals
// out in one block per team.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_SIMULATOR_GPU_TEAMSHAREDREACH_H
#define OMPSIM_SIMULATOR_GPU_TEAMSHAREDREACH_H

#include "llvm/Support/Alignment.h"

#include <cstdint>
#include <vector>

namespace llvm {
class DataLayout;
class Function;
class GlobalVariable;
class Module;
} // namespace llvm

namespace ompsim::sim::gpu {

/// The address space of team-shared memory (CUDA's shared memory, LDS).
inline constexpr unsigned TeamSharedAddressSpace = 3;

/// True for a GPU kernel: nvptx64's `ptx_kernel`, amdgcn's `amdgpu_kernel`
/// (or a function with the "kernel" attribute).
bool isGpuKernel(const llvm::Function &F);

/// The alignment a team-shared global gets in a team's block under `Layout`.
llvm::Align teamSharedAlign(const llvm::GlobalVariable &G, const llvm::DataLayout &Layout);

/// The team-shared memory one kernel reaches.
struct KernelTeamShared {
  const llvm::Function *Kernel = nullptr;
  /// The bytes its team-shared globals take laid out one after another in
  /// module order, each at its alignment.
  uint64_t Bytes = 0;
};

/// Each kernel of GPU module `M`, in module order, with the team-shared
/// globals it may reach: those it uses, and those of every function it may
/// call, transitively. A function may call its direct callees and the
/// functions whose address it takes (the device runtime calls a parallel
/// region's function for the kernel that passed it); a function that makes
/// an indirect call may call every function whose address is taken
/// anywhere. A use of a global outside any function counts for every kernel.
/// Sizes and alignments are `Layout`'s.
std::vector<KernelTeamShared> teamSharedPerKernel(const llvm::Module &M, const llvm::DataLayout &Layout);

} // namespace ompsim::sim::gpu

#endif // OMPSIM_SIMULATOR_GPU_TEAMSHAREDREACH_H

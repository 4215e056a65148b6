//===- BlockLoops.h - GPU kernels whose blocks run as loops ---------------===//
//
// The virtual GPU runs a block's threads as fibers, each until its next
// barrier: every GPU thread pays a fiber and the device runtime's start,
// schedules and end. Most OpenMP kernels need none of that. An SPMD kernel
// of clang's combined constructs (`target teams distribute parallel for`)
// runs the same code outside its parallel regions on every thread (a
// distribute loop's bounds, each thread's own), and its threads meet only
// at each region's end. Fibers run such a block in thread order: thread 0's
// share of a region, thread 1's, ..., then the next region. So does a loop
// over the threads at each region, with the code outside the regions run
// once, by thread 0: the same accesses in the same order, without a fiber.
//
// A generic-mode kernel is simpler still: its main thread alone runs the
// code outside regions, and its workers run each region from the runtime's
// state machine, in thread order, up to the region's end. As loops, thread
// 0's fiber runs the kernel as the main thread (with its ids) and each
// region's workers one after the other.
//
// planBlockLoops() decides kernel by kernel, on a retargeted image with
// ompsim's GPU device runtime linked in (GpuDeviceRuntime.h). A generic-mode
// kernel (with the runtime's state machine, not one of the compiler's) runs
// as loops when neither its main thread's code but the kernel's start and
// end nor any region's function can reach a barrier, a warp collective or a
// spin. An SPMD kernel, or a Generic-SPMD one (flang-22's, and clang's at
// -O1 and above, whose every thread runs the sequential part), runs as
// loops when
//  - its code outside parallel regions (the kernel and the program's
//    functions it calls) stores only to its own stack, calls only the
//    runtime's kernel start and end, the distribute schedule and the team
//    queries, and does not branch on the thread's id: each thread's run of
//    it would do what thread 0's does;
//  - it shares none of its own stack variables with a region by address,
//    and passes none of the thread's id to one (each thread would pass its
//    own);
//  - no region's function can reach a barrier, a warp collective or a spin
//    (a lock), through direct or indirect calls, but its own `barrier`s:
//    a region with those runs its threads in rounds (BlockRounds.h).
// Each such kernel gets a call of __ompsim_vgpu_run_as_loops at its start
// (runtime/device/vgpu/VirtualGpu.h); the runtime then runs each region as
// a loop over its threads (runtime/gpu-device/src/Kernel.cpp). An ompx_bare
// kernel whose only waits are its own calls of a block barrier runs in
// rounds instead (BlockRounds.h). Every other kernel keeps fibers, and its
// plan says why.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_SIMULATOR_GPU_BLOCKLOOPS_H
#define OMPSIM_SIMULATOR_GPU_BLOCKLOOPS_H

#include <string>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm

namespace ompsim::sim::gpu {

/// The attribute linkGpuDeviceRuntime() gives every function of ompsim's GPU
/// device runtime it links into an image.
inline constexpr const char *GpuRuntimeAttribute = "ompsim-gpu-runtime";

/// The entry a kernel whose blocks run as loops calls first.
inline constexpr const char *RunAsLoopsEntry = "__ompsim_vgpu_run_as_loops";

/// How a kernel's blocks run on the virtual GPU: each thread a fiber; as
/// loops over the threads; or in rounds, each thread a coroutine that the
/// block's barriers suspend (an ompx_bare kernel, BlockRounds.h).
enum class BlockMode { Fibers, Loops, Rounds };

/// How one kernel's blocks run on the virtual GPU.
struct KernelBlockPlan {
  std::string Kernel;
  BlockMode Mode = BlockMode::Fibers;
  /// Why its threads run as fibers (empty when they do not).
  std::string Reason;
  /// Its parallel regions whose threads run in rounds, split at their
  /// barriers (a kernel that runs as loops, BlockRounds.h).
  std::vector<std::string> RoundRegions;
};

/// The trace's name of `Mode`: fibers, loops or rounds.
const char *blockModeName(BlockMode Mode);

/// Decides, for each OpenMP kernel of `M` (a function with a kernel
/// environment), how its blocks run; splits those that run in rounds at
/// their barriers (splitAtBarriers()), and adds the call of
/// RunAsLoopsEntry to those that run as loops. `M` is a retargeted GPU image with the
/// GPU device runtime linked in. With `Enabled` false (OMPSIM_GPU_BLOCK_LOOPS=0)
/// every kernel keeps fibers, and its plan says so.
std::vector<KernelBlockPlan> planBlockLoops(llvm::Module &M, bool Enabled);

} // namespace ompsim::sim::gpu

#endif // OMPSIM_SIMULATOR_GPU_BLOCKLOOPS_H

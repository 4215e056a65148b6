//===- BlockRounds.h - ompx_bare kernels whose blocks run in rounds -------===//
//
// An ompx_bare kernel has CUDA's shape: each thread computes from its own
// ids, and the block's threads meet at block barriers
// (ompx_sync_block_acq_rel). As fibers, each thread of each block switches
// stacks at every barrier: 1,000 barriers of a 1024-thread block are a
// million switches, each missing the cache on another thread's stack.
//
// A block of such a kernel runs in rounds instead, as hierarchical collapsing
// (COX) and continuation-based synchronization (AdaptiveCpp) run a GPU's
// block on a CPU. The executor makes each thread's run of the kernel an
// LLVM switch-resumed coroutine that suspends at each of the kernel's own
// block barriers; what a thread keeps across a barrier lives in its
// coroutine frame. The virtual GPU starts every thread's coroutine in
// thread order, each running to its first barrier or its end, and then
// resumes, round by round, every thread that has not finished, to its next
// barrier (runtime/device/vgpu/BlockLoops.cpp). Fibers run the block in
// exactly that order (thread 0 to its barrier, thread 1, ..., then again
// from thread 0 once all arrived), so the accesses are the same, in the
// same order, without a switch of stacks.
//
// planBlockLoops() (BlockLoops.h) decides which kernels qualify: an
// ompx_bare kernel whose every wait (barrier, warp collective, spin) is one
// of its own direct calls of a block barrier, with no variable-length
// array. Its threads then run on thread 0's stack, each with its own ids,
// and a wait the analysis did not see ends the launch with one line
// (__ompsim_vgpu_run_in_rounds, runtime/device/vgpu/VirtualGpu.h).
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_SIMULATOR_GPU_BLOCKROUNDS_H
#define OMPSIM_SIMULATOR_GPU_BLOCKROUNDS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace llvm {
class CallInst;
class Function;
class Module;
} // namespace llvm

namespace ompsim::sim::gpu {

/// The entry a kernel split at its barriers calls first, on thread 0, with
/// the function that starts a thread's coroutine, its context, and where a
/// thread leaves the barrier it suspends at.
inline constexpr const char *RunInRoundsEntry = "__ompsim_vgpu_run_in_rounds";
/// The GPU device runtime's entry a region's call becomes, with the function
/// that starts a thread's coroutine of the region.
inline constexpr const char *ParallelInRoundsEntry = "__ompsim_gpu_parallel_in_rounds";
/// The entry that gives a thread's coroutine its frame.
inline constexpr const char *RoundFrameEntry = "__ompsim_vgpu_round_frame";
/// The GPU device runtime's barrier of a parallel reduction's threads (its
/// ident, the thread count), which its reduction entry calls itself.
inline constexpr const char *ReductionBarrierEntry = "__ompsim_gpu_reduction_barrier";

/// Whether `Name` is an entry of the ompx API that is the block's barrier
/// and nothing else the threads of a round could tell apart (its memory
/// ordering aside).
bool blockBarrierEntry(llvm::StringRef Name);

/// Readies `Kernel` for splitAtBarriers(): inlines the program's functions
/// it calls that reach a block barrier (an ompx_bare region's outlined
/// function, in a build without optimization), so that the barriers are its
/// own calls, and gives those calls in `Barriers`. Says why the kernel
/// cannot be split (a variable-length array, a barrier it cannot inline),
/// or nothing. Whether anything else it reaches waits is the caller's
/// question (BlockLoops.h).
std::optional<std::string> splittableAtBarriers(llvm::Function &Kernel,
                                                llvm::SmallVectorImpl<llvm::CallInst *> &Barriers);

/// Makes `Kernel` run in rounds: its code moves into a coroutine of the
/// same arguments that suspends where it called each of `Barriers` (calls
/// of a blockBarrierEntry() in `Kernel` itself), and `Kernel` itself calls
/// RunInRoundsEntry with a function that starts a thread's coroutine from
/// its arguments. lowerRounds() then lowers the coroutines.
void splitAtBarriers(llvm::Function &Kernel, llvm::ArrayRef<llvm::CallInst *> Barriers);

/// Whether `Name` is an OpenMP barrier entry a parallel region's threads
/// meet at (`barrier`, a worksharing construct's implicit one, a parallel
/// reduction's): its first argument is the construct's ident.
bool regionBarrierEntry(llvm::StringRef Name);

/// A parallel region's call whose threads run in rounds, and the region's
/// coroutine-to-be (splitRegion()).
struct RegionSplit {
  llvm::CallBase *Call;
  llvm::Function *Rounds;
};

/// The parallel region `Region` that `Call` (__kmpc_parallel_60 or _51)
/// hands its threads, as a function of its own that a thread's coroutine
/// will run: `Region` inlined, with the program's functions it calls that
/// reach an OpenMP barrier (and the runtime's parallel reduction), so that
/// its barriers are the function's own calls. Null where the region's form does not allow it (its arguments'
/// count or types). The caller asks whether anything else it reaches waits,
/// then erases it or hands it to runRegionInRounds().
llvm::Function *splitRegion(llvm::CallBase &Call, llvm::Function &Region);

/// Makes the region `Call` hands its threads run in rounds: `Rounds`
/// (splitRegion()) becomes a coroutine suspended at each of its barriers,
/// and `Call` becomes a call of __ompsim_gpu_parallel_in_rounds (the GPU
/// device runtime, runtime/gpu-device/src/Kernel.cpp) with a function that
/// starts a thread's coroutine.
void runRegionInRounds(llvm::CallBase &Call, llvm::Function &Rounds);

/// Lowers the coroutines of `M` that splitAtBarriers() made (LLVM's
/// coroutine passes: each gets its frame's layout, and resume and destroy
/// functions).
void lowerRounds(llvm::Module &M);

} // namespace ompsim::sim::gpu

#endif // OMPSIM_SIMULATOR_GPU_BLOCKROUNDS_H

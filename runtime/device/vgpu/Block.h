//===- Block.h - what a running block's threads ask of it -------*- C++ -*-===//
//
// The calling GPU thread's view of the virtual GPU while it runs a block of
// a grid (Grid.h): its ids, the block's barriers, its warp's collectives,
// and the block's memories. Outside a block each answers as for thread 0 of
// a block of one (ids 0, extents 1, barriers that return at once) or with
// null where there is nothing to give. The ompx API (ompx/), the GPU
// device runtime's hardware layer (VirtualGpu.cpp) and the GPU ABI's
// team-shared memory (gpu-abi/) call these.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_VGPU_BLOCK_H
#define OMPSIM_DEVICE_VGPU_BLOCK_H

#include "VirtualGpu.h"

#include <cstdint>

namespace ompsim::vgpu {

/// The calling GPU thread, in three dimensions.
struct ThreadView {
  uint32_t ThreadId[3];
  uint32_t BlockDim[3];
  uint32_t BlockId[3];
  uint32_t GridDim[3];
  uint32_t LinearThread; ///< x + y * dim.x + z * dim.x * dim.y
  uint32_t Threads;      ///< threads in the block
  uint32_t WarpSize;     ///< lanes of a warp (the grid's)
};

/// The calling thread's view when it runs a block's thread; else false.
bool current(ThreadView &View);

/// The calling thread's registers, found through its device thread (out of
/// a block: ids 0, extents 1, warps of 32, no block state). A fiber reads
/// its own faster, with laneRegisters() (VirtualGpu.h).
const LaneRegisters &runnerRegisters();

/// The calling thread's block and thread, each as one number (x first).
uint32_t linearBlock();
uint32_t linearThread();

/// Nanoseconds of the monotonic clock.
uint64_t nanoseconds();

/// A barrier of the block's threads (the calling fiber waits until every
/// thread of its block that has not finished reached it); `Site` is the
/// program's barrier, null for a runtime's own (BarrierSite.h).
void syncBlock(const BarrierSite *Site = nullptr);

/// The lanes of the calling thread's warp that run (neither finished nor
/// waiting at the block's barrier).
uint64_t warpActiveMask();

/// A barrier of the lanes of `Mask` in the caller's warp that run.
void syncWarp(uint64_t Mask);

/// Lane `SourceLane`'s `Value`, exchanged by the lanes of `Mask` that run.
/// `Program`: the call of a program's collective, whose mask must name
/// only lanes that make it (null: the runtime's own).
uint64_t warpShuffle(uint64_t Mask, uint64_t Value, uint32_t SourceLane, const void *Program = nullptr);

/// The lanes of `Mask` that took part with a true `Predicate`.
uint64_t warpBallot(uint64_t Mask, bool Predicate, const void *Program = nullptr);

/// Lets the block's other threads run (a spinning thread's turn).
void pause();

/// A barrier of `Count` of the block's threads: the calling thread waits
/// until that many arrived.
void syncThreads(uint32_t Count, const BarrierSite *Site = nullptr);

/// Makes the calling block run as loops (thread 0, before anything else it
/// runs): its other threads never start; see __ompsim_vgpu_run_as_loops.
void runAsLoops();
/// Whether the calling thread's block runs as loops.
bool blockRunsAsLoops();
/// In a block that runs as loops, the calling code goes on as thread `T`.
void runAsThread(uint32_t T);
/// In a block that runs as loops, `Fn(Context, T)` for each thread T below
/// `Count` in turn, as thread T (__ompsim_vgpu_for_each_thread).
void forEachThread(uint32_t Count, void (*Fn)(void *, uint32_t), void *Context);
/// Runs the calling block in rounds (thread 0, before anything else it
/// runs; __ompsim_vgpu_run_in_rounds).
void runInRounds(void *(*Start)(void *), void *Context, const BarrierSite *const *Site);
/// In a block that runs as loops, a parallel region's threads below `Count`
/// in rounds (__ompsim_vgpu_for_each_thread_in_rounds).
void forEachThreadInRounds(uint32_t Count, void *(*Start)(void *, uint32_t, const BarrierSite **),
                           void *Context, const RoundEnd &End);
/// The calling thread's coroutine frame of `Bytes`, aligned to `Align`, in
/// a block run in rounds.
void *roundFrame(uint64_t Bytes, uint64_t Align);
/// The calling block's state of `Bytes` (the GPU device runtime's team
/// state), or null outside a block. Not cleared between blocks.
void *blockState(uint64_t Bytes);

/// The block's exchange buffer for warp collectives: one slot per thread,
/// valid between two syncBlock() calls of the whole block; null outside a
/// block.
uint64_t *exchangeSlots();

/// The calling block's shared memory of `Bytes` (a GPU image's team-shared
/// globals), or null outside a block. Like a GPU's, it holds nothing to
/// count on until the block writes it: each block finds every byte 0x7f.
void *blockShared(uint64_t Bytes);

/// The calling block's shared memory of `Bytes` on whole pages of its own,
/// which the checker protects in part (memcheck/TeamSharedGuards.cpp), or
/// null outside a block. `Fresh` says whether the block asks for the first
/// time: the caller fills it then.
void *blockSharedPages(uint64_t Bytes, bool &Fresh);

/// The calling block's dynamic shared memory (null when the launch asked
/// for none); `InBlock` says whether the caller runs a block at all.
void *blockDynamicShared(bool &InBlock);

} // namespace ompsim::vgpu

#endif // OMPSIM_DEVICE_VGPU_BLOCK_H

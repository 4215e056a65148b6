//===- BareLaunch.h - ompx_bare regions run as a GPU runs them -----------===//
//
// A GPU runs an ompx_bare region on every thread of every block; clang-22's
// x86_64 code runs it once per team. ompsim's pass plugin hands a bare
// kernel's region to __ompsim_bare_fork_teams (BareLaunch.cpp), which runs a
// block's threads as fibers of one device thread. What the ompx API answers
// inside such a region comes from here.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_BARE_BARELAUNCH_H
#define OMPSIM_DEVICE_BARE_BARELAUNCH_H

#include "../vgpu/VirtualGpu.h"
#include "ompsim/device_runtime.h"

#include <cstdint>

namespace ompsim::device::bare {

/// The calling GPU thread of a bare region, in three dimensions.
struct ThreadView {
  uint32_t ThreadId[3];
  uint32_t BlockDim[3];
  uint32_t BlockId[3];
  uint32_t GridDim[3];
  uint32_t LinearThread; ///< x + y * dim.x + z * dim.x * dim.y
  uint32_t Threads;      ///< threads in the block
  uint32_t WarpSize;     ///< lanes of a warp (the GPU image's, else 32)
};

/// The calling thread's view when it runs a bare region's body; else false.
bool current(ThreadView &View);

/// The calling thread's registers (out of a block: ids 0, extents 1, warps
/// of 32, no block state).
const vgpu::LaneRegisters &laneRegisters();

/// The calling thread's block and thread, each as one number (x first).
uint32_t linearBlock();
uint32_t linearThread();

/// Nanoseconds of the monotonic clock.
uint64_t nanoseconds();

/// A barrier of the block's threads (the calling fiber waits until every
/// thread of its block that has not finished reached it).
void syncBlock();

/// The lanes of the calling thread's warp that run (neither finished nor
/// waiting at the block's barrier).
uint64_t warpActiveMask();

/// A barrier of the lanes of `Mask` in the caller's warp that run.
void syncWarp(uint64_t Mask);

/// Lane `SourceLane`'s `Value`, exchanged by the lanes of `Mask` that run.
uint64_t warpShuffle(uint64_t Mask, uint64_t Value, uint32_t SourceLane);

/// The lanes of `Mask` that took part with a true `Predicate`.
uint64_t warpBallot(uint64_t Mask, bool Predicate);

/// Lets the block's other threads run (a spinning thread's turn).
void pause();

/// A barrier of `Count` of the block's threads: the calling thread waits
/// until that many arrived.
void syncThreads(uint32_t Count);

/// The calling block's state of `Bytes` (the GPU device runtime's team
/// state), or null outside a block. Not cleared between blocks.
void *blockState(uint64_t Bytes);

/// The block's exchange buffer for warp collectives: one slot per thread,
/// valid between two syncBlock() calls of the whole block.
uint64_t *exchangeSlots();

/// The calling block's shared memory of `Bytes` (a GPU image's team-shared
/// globals), or null outside a bare region. Like a GPU's, it is not cleared
/// between the blocks a device thread runs.
void *blockShared(uint64_t Bytes);

/// The calling block's dynamic shared memory (null when the launch asked
/// for none); `InBare` says whether the caller runs a bare region at all.
void *blockDynamicShared(bool &InBare);

/// Runs a GPU image's bare kernel as a GPU does: every thread of every
/// block of `Launch`'s grid calls the kernel (Launch.gpu_warp_size lanes a
/// warp).
void runGpuKernel(const ompsim_kernel_launch &Launch);

} // namespace ompsim::device::bare

#endif // OMPSIM_DEVICE_BARE_BARELAUNCH_H

//===- Grid.h - a launch's grid on the virtual GPU --------------*- C++ -*-===//
//
// The virtual GPU runs a launch's grid block by block on a few device
// threads (a libomp team each, so a block's code may call libomp), and a
// block's threads as fibers of the device thread that runs the block
// (BlockRunner.h). Blocks never wait for each other (on a GPU they cannot
// either). Its users are above it and call down only: a GPU image's kernel
// (gpu-abi/GridLaunch.cpp) and an ompx_bare region (bare/BareFork.cpp),
// each of which keeps its own state of a device thread around the blocks
// that thread runs (Grid::DeviceThread).
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_VGPU_GRID_H
#define OMPSIM_DEVICE_VGPU_GRID_H

#include "../libomp/Libomp.h"
#include "ompsim/device_runtime.h"

#include <atomic>
#include <cstdint>

namespace ompsim::vgpu {

/// The most threads a block has (every GPU's limit).
inline constexpr uint32_t MaxBlockThreads = OMPSIM_BARE_MAX_BLOCK_THREADS;

/// What every thread of every block runs: libomp's microtask shape, the
/// arguments in `Argv`.
using ThreadBody = ompsim_bare_body;

/// One launch's grid, alive while runGrid() runs it.
struct Grid {
  uint32_t GridDim[3];
  uint32_t BlockDim[3];
  uint32_t Blocks;   ///< blocks in the grid
  uint32_t Threads;  ///< threads in a block
  uint32_t WarpSize; ///< lanes of a warp (32 nvptx64, 64 amdgcn)
  /// Bytes of each block's dynamic shared memory (0: none).
  uint64_t DynamicSharedBytes = 0;
  ThreadBody Body = nullptr;
  void **Argv = nullptr;
  /// When set, each device thread of the grid calls this instead of
  /// runBlocks(): the grid's user keeps its own state of the device thread
  /// (the GPU ABI's place in its launch, from `User`) around the blocks,
  /// and calls runBlocks(G, Gtid) inside it.
  void (*DeviceThread)(Grid &G, int32_t *Gtid) = nullptr;
  void *User = nullptr;
  /// The next block a device thread takes.
  std::atomic<uint32_t> NextBlock{0};
  /// This grid's number among the process's grids (from 1): the checker
  /// tells one launch's accesses from the last one's by it.
  uint64_t Serial;

  /// A grid of `GridExtents` blocks of `BlockExtents` threads (x, y, z; 0
  /// reads as 1), in warps of `WarpSize` lanes. A grid the virtual GPU
  /// cannot run (more than MaxBlockThreads threads a block, 2^32 blocks)
  /// ends the process with one line.
  Grid(const uint32_t GridExtents[3], const uint32_t BlockExtents[3], uint32_t WarpSize);
  Grid(const Grid &) = delete;
  Grid &operator=(const Grid &) = delete;
};

/// Whether grids run their blocks one at a time, in order, on the launching
/// thread: the checker's (memcheck/), so that the first bad access a run
/// reports is the same in every run. Off: the blocks run on a device thread
/// per CPU.
void setBlocksInOrder(bool InOrder);
bool blocksInOrder();

/// Runs every block of `G` to its end on up to `Workers` device threads (0:
/// one per CPU), no more than the grid's blocks or the thread limit libomp
/// keeps for the caller.
void runGrid(device::Ident *Loc, Grid &G, uint32_t Workers);

/// Runs blocks of `G` on the calling device thread until none is left.
void runBlocks(Grid &G, int32_t *Gtid);

} // namespace ompsim::vgpu

#endif // OMPSIM_DEVICE_VGPU_GRID_H

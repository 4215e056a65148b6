//===- Grid.cpp - a launch's grid on the virtual GPU ----------------------===//
#include "Grid.h"

#include "BlockRunner.h"

#include "ompsim/TsanHandover.h"

#include <unistd.h>

#include <atomic>

namespace ompsim::vgpu {

namespace {
std::atomic<uint64_t> LastGridSerial{0};
} // namespace

Grid::Grid(const uint32_t GridExtents[3], const uint32_t BlockExtents[3], uint32_t Warp)
    : Serial(LastGridSerial.fetch_add(1, std::memory_order_relaxed) + 1) {
  uint64_t AllBlocks = 1, AllThreads = 1;
  for (int D = 0; D < 3; ++D) {
    GridDim[D] = GridExtents[D] ? GridExtents[D] : 1;
    BlockDim[D] = BlockExtents[D] ? BlockExtents[D] : 1;
    AllBlocks *= GridDim[D];
    AllThreads *= BlockDim[D];
  }
  if (AllBlocks > UINT32_MAX)
    failLaunch("more blocks than the device runs", AllBlocks);
  if (AllThreads > MaxBlockThreads)
    failLaunch("more threads in a block than the device's 1024", AllThreads);
  Blocks = uint32_t(AllBlocks);
  Threads = uint32_t(AllThreads);
  WarpSize = Warp;
}

void runBlocks(Grid &G, int32_t *Gtid) {
  BlockRunner &R = BlockRunner::ofThisThread();
  R.reserve(G.Threads);
  for (uint32_t B; (B = G.NextBlock.fetch_add(1, std::memory_order_relaxed)) < G.Blocks;)
    R.run(G, B, Gtid);
}

namespace {

/// One device thread of the grid: runs blocks until none is left.
void deviceThreadMicrotask(int32_t *Gtid, int32_t *, Grid *G) {
  // libomp's fork hands the grid (and the arguments the launching thread
  // wrote) to this device thread, and its join hands back what the blocks
  // wrote; the blocks' fibers have no libomp frame that tsan.supp would match.
  tsanAcquire(G);
  if (G->DeviceThread)
    G->DeviceThread(*G, Gtid);
  else
    runBlocks(*G, Gtid);
  tsanRelease(G);
}

std::atomic<bool> BlocksInOrder{false};

uint32_t processors() {
  static const uint32_t N = [] {
    long Online = ::sysconf(_SC_NPROCESSORS_ONLN);
    return Online > 0 ? uint32_t(Online) : 1u;
  }();
  return N;
}

} // namespace

void setBlocksInOrder(bool InOrder) { BlocksInOrder.store(InOrder, std::memory_order_relaxed); }

bool blocksInOrder() { return BlocksInOrder.load(std::memory_order_relaxed); }

void runGrid(device::Ident *Loc, Grid &G, uint32_t Workers) {
  const device::Libomp &Omp = device::Libomp::get();
  if (BlocksInOrder.load(std::memory_order_relaxed))
    Workers = 1;
  // Device threads for the blocks: the CPUs, within the thread limit the
  // kernel's own __kmpc_push_num_teams left (libomp would warn past it).
  if (!Workers)
    Workers = processors();
  if (G.Blocks < Workers)
    Workers = G.Blocks;
  if (int Limit = Omp.GetThreadLimit(); Limit > 0 && uint32_t(Limit) < Workers)
    Workers = uint32_t(Limit);
  int32_t Gtid = Omp.GlobalThreadNum(Loc);
  if (Workers <= 1) {
    int32_t Zero = 0;
    deviceThreadMicrotask(&Gtid, &Zero, &G);
    return;
  }
  // One libomp team per device thread (a team, not a parallel region: the
  // kernel may run inside the host program's parallel region on ours-host).
  Omp.PushNumTeams(Loc, Gtid, int32_t(Workers), 1);
  tsanRelease(&G);
  Omp.ForkTeams(Loc, 1, reinterpret_cast<device::Microtask>(&deviceThreadMicrotask), &G);
  tsanAcquire(&G);
}

} // namespace ompsim::vgpu

//===- BlockLoops.cpp - a block's threads as loops ------------------------===//
//
// A block of a kernel whose threads meet only at its parallel regions' ends
// (the executor's analysis, simulator/src/gpu/BlockLoops.h) runs as loops:
// thread 0 alone runs the kernel, and each region's threads run one after
// the other on its stack, as fibers would run them up to the region's end.
// The block's other fibers never start.
//
//===----------------------------------------------------------------------===//
#include "BlockRunner.h"

#include "../DeviceStop.h"

namespace ompsim::vgpu {

void BlockRunner::runAsLoops() {
  // Thread 0 runs first, until it first waits: no other thread started.
  if (Current != 0 || Loops || Live != TheGrid->Threads || Fibers[0].Wait != Fiber::Runs)
    failLaunch("a block can run as loops only from its thread 0's start; thread", Current);
  for (uint32_t T = 1; T < TheGrid->Threads; ++T)
    Fibers[T].Done = true;
  for (uint32_t W = 0; W < kMaxWarps; ++W)
    Running[W] = 0;
  Running[0] = laneBit(0);
  Live = 1;
  Loops = true;
}

void BlockRunner::forEachThread(uint32_t Count, void (*Fn)(void *, uint32_t), void *Context) {
  if (!Loops)
    failLaunch("a parallel region's threads as loops in a block of fibers, threads", Count);
  // The code runs on thread 0's stack, whose registers it reads: they say
  // thread T's ids while T runs.
  LaneRegisters &Own = Stacks.registers(0);
  const uint32_t Self = Current;
  const uint32_t Threads = Count < TheGrid->Threads ? Count : TheGrid->Threads;
  const uint32_t *Dim = TheGrid->BlockDim;
  const uint32_t Lanes = TheGrid->WarpSize;
  // Where the region's threads would take it (a generic-mode region's
  // hand-over from the main thread).
  ++BarrierEpoch;
  // The ids step along with T (split() divides three times a thread).
  uint32_t Id[3] = {0, 0, 0};
  for (uint32_t T = 0, Lane = 0; T < Threads; ++T) {
    for (int D = 0; D < 3; ++D)
      Own.ThreadId[D] = Id[D];
    Own.LaneId = uint16_t(Lane);
    Current = T;
    Fn(Context, T);
    if (++Lane == Lanes)
      Lane = 0;
    if (++Id[0] == Dim[0]) {
      Id[0] = 0;
      if (++Id[1] == Dim[1]) {
        Id[1] = 0;
        ++Id[2];
      }
    }
  }
  setThread(Own, Self);
  Current = Self;
  // Where the region's threads would meet at its end.
  ++BarrierEpoch;
}

void BlockRunner::runAsThread(uint32_t T) {
  if (!Loops || T >= TheGrid->Threads)
    failLaunch("a block that does not run as loops, or a thread it does not have, goes on as thread", T);
  setThread(Stacks.registers(0), T);
  Current = T;
}

void BlockRunner::waitInLoops(const char *What) const {
  device::stopDevice("block %u runs as loops, and its thread %u %s, which the executor found it never does: "
                     "set OMPSIM_GPU_BLOCK_LOOPS=0 to run its threads as fibers, and report the kernel",
                     Block, Current, What);
}

} // namespace ompsim::vgpu

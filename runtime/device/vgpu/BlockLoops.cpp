//===- BlockLoops.cpp - a block's threads as loops ------------------------===//
//
// A block of a kernel whose threads meet only at its parallel regions' ends
// (the executor's analysis, simulator/src/gpu/BlockLoops.h) runs as loops:
// thread 0 alone runs the kernel, and each region's threads run one after
// the other on its stack, as fibers would run them up to the region's end.
// The block's other fibers never start.
//
// A kernel whose threads meet at block barriers (an ompx_bare kernel, the
// executor's split of it, simulator/src/gpu/BlockRounds.h) runs in rounds:
// each thread's run of it is a coroutine that suspends at each barrier, and
// each round runs every thread to its next, in thread order, as fibers
// would run them from one release of the barrier to the next.
//
//===----------------------------------------------------------------------===//
#include "BlockRunner.h"

#include "../DeviceStop.h"

#include <coroutine>

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

template <typename Body> void BlockRunner::asEachThread(uint32_t Count, Body &&Run) {
  // The code runs on thread 0's stack, whose registers it reads: they say
  // thread T's ids while T runs.
  LaneRegisters &Own = Stacks.registers(0);
  const uint32_t Threads = Count < TheGrid->Threads ? Count : TheGrid->Threads;
  const uint32_t *Dim = TheGrid->BlockDim;
  const uint32_t Lanes = TheGrid->WarpSize;
  // The ids step along with T (split() divides three times a thread).
  uint32_t Id[3] = {0, 0, 0};
  for (uint32_t T = 0, Lane = 0; T < Threads; ++T) {
    for (int D = 0; D < 3; ++D)
      Own.ThreadId[D] = Id[D];
    Own.LaneId = uint16_t(Lane);
    Current = T;
    Run(T);
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
}

template <typename Body> void BlockRunner::asRegion(uint32_t Count, Body &&Run) {
  if (!Loops)
    failLaunch("a parallel region's threads as loops in a block of fibers, threads", Count);
  const uint32_t Self = Current;
  // Where the region's threads would take it (a generic-mode region's
  // hand-over from the main thread).
  ++BarrierEpoch;
  Run();
  setThread(Stacks.registers(0), Self);
  Current = Self;
  // Where the region's threads would meet at its end.
  ++BarrierEpoch;
}

void BlockRunner::forEachThread(uint32_t Count, void (*Fn)(void *, uint32_t), void *Context) {
  asRegion(Count, [&] { asEachThread(Count, [&](uint32_t T) { Fn(Context, T); }); });
}

template <typename StartFn>
void BlockRunner::runRounds(uint32_t Count, StartFn &&Start, const BarrierSite *const *Site,
                            const RoundEnd &End) {
  auto **Handles = static_cast<void **>(RoundHandles.atLeast(sizeof(void *) * TheGrid->Threads));
  if (!Handles)
    failLaunch("no memory for the coroutine handles of a block's threads:", TheGrid->Threads);
  const uint32_t Threads = Count < TheGrid->Threads ? Count : TheGrid->Threads;
  BlockSite = nullptr;
  BlockDiverged = false;
  // Each thread runs to its first barrier or its end; each round then
  // releases the barrier and runs every thread that waits there to its
  // next, in thread order, as fibers would.
  uint32_t Waiting = 0;
  asEachThread(Threads, [&](uint32_t T) {
    Handles[T] = Start(T);
    if (!roundFinished(Handles[T])) {
      ++Waiting;
      waitInRound(*Site);
    }
  });
  while (Waiting) {
    // A region's thread that finished waits at the region's end, another
    // barrier than the one the others wait at.
    if (BlockDiverged || (End.Site && Waiting < Threads))
      roundsApart(Handles, Threads, Waiting < Threads, End);
    BlockSite = nullptr;
    ++BarrierEpoch;
    asEachThread(Threads, [&](uint32_t T) {
      if (roundFinished(Handles[T]))
        return;
      std::coroutine_handle<>::from_address(Handles[T]).resume();
      if (roundFinished(Handles[T]))
        --Waiting;
      else
        waitInRound(*Site);
    });
  }
}

bool BlockRunner::roundFinished(void *Handle) { return std::coroutine_handle<>::from_address(Handle).done(); }

void BlockRunner::roundsApart(void *const *Handles, uint32_t Threads, bool SomeFinished,
                              const RoundEnd &End) {
  // Where fibers would be: a region's threads at its barrier (the block's,
  // or one of its thread count) or its end, the block's other threads at
  // a barrier of the runtime or finished; a kernel's at its barrier or
  // finished.
  const auto AtBarrier = End.BarrierCount ? Fiber::AtGroup : Fiber::AtBlock;
  for (uint32_t T = 0; T < TheGrid->Threads; ++T) {
    Fiber &F = Fibers[T];
    if (T < Threads) {
      bool Done = roundFinished(Handles[T]);
      F.Done = Done && !End.Site;
      F.Wait = F.Done ? Fiber::Runs : (Done ? Fiber::AtBlock : AtBarrier);
      if (Done && End.Site)
        F.Site = End.Site;
      else if (!Done)
        Current = T; // a thread at the barrier names it last
    } else {
      F.Done = T >= End.WaitingOutside;
      F.Wait = F.Done ? Fiber::Runs : Fiber::AtBlock;
      F.Site = nullptr;
    }
  }
  GroupCount = End.BarrierCount;
  // A barrier of a thread count some of its threads never reach can never
  // complete; the block's barrier, reached apart, names both.
  if (SomeFinished && End.Site && End.BarrierCount)
    stuck(0);
  diverged(SomeFinished ? Fiber::AtBlock : AtBarrier);
}

void BlockRunner::runInRounds(void *(*Start)(void *), void *Context, const BarrierSite *const *Site) {
  runAsLoops();
  runRounds(TheGrid->Threads, [&](uint32_t) { return Start(Context); }, Site, RoundEnd{});
  setThread(Stacks.registers(0), 0);
  Current = 0;
}

void BlockRunner::forEachThreadInRounds(uint32_t Count, RoundStart Start, void *Context,
                                        const RoundEnd &End) {
  asRegion(Count, [&] {
    const BarrierSite *Site = nullptr;
    runRounds(Count, [&](uint32_t T) { return Start(Context, T, &Site); }, &Site, End);
  });
}

void *BlockRunner::roundFrame(uint64_t Bytes, uint64_t Align) {
  // Frames start on pages (pagesAtLeast), each on its own cache lines.
  constexpr uint64_t PageBytes = 4096;
  if (Align > PageBytes || (Align & (Align - 1)))
    failLaunch("a coroutine frame of an alignment the virtual GPU cannot give, bytes", Align);
  const uint64_t Unit = Align > CacheLineBytes ? Align : CacheLineBytes;
  const uint64_t Stride = (Bytes + Unit - 1) & ~(Unit - 1);
  if (Current == 0)
    RoundStride = Stride;
  if (!Loops || Stride != RoundStride)
    failLaunch("a coroutine frame outside a block run in rounds, or of another size, bytes", Bytes);
  auto *Frames = static_cast<char *>(RoundFrames.pagesAtLeast(Stride * TheGrid->Threads));
  if (!Frames)
    failLaunch("no memory for the coroutine frames of a block's threads, bytes each:", Bytes);
  return Frames + Stride * Current;
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

//===- BlockRunner.cpp - a block's threads as fibers ----------------------===//
#include "BlockRunner.h"

#include "../DeviceStop.h"
#include "BarrierReport.h"
#include "WarpCheck.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#ifdef OMPSIM_VGPU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef OMPSIM_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace ompsim::vgpu {

namespace ctx = boost::context::detail;

void failLaunch(const char *Message, uint64_t Value) {
  device::stopDevice("launch on the virtual GPU: %s (%llu)", Message, static_cast<unsigned long long>(Value));
}

void *BlockMemory::atLeast(uint64_t Bytes) {
  if (Bytes <= Capacity && Base)
    return Base;
  uint64_t Size = (std::max<uint64_t>(Bytes, 16) + 15) & ~uint64_t(15);
  void *New = std::aligned_alloc(16, Size);
  if (!New)
    return nullptr;
  std::memset(New, 0, Size);
  std::free(Base);
  Base = New;
  Capacity = Size;
  return Base;
}

void *BlockMemory::pagesAtLeast(uint64_t Bytes) {
  if (Bytes <= Capacity && Base)
    return Base;
  uint64_t Page = uint64_t(::sysconf(_SC_PAGESIZE));
  uint64_t Size = (std::max<uint64_t>(Bytes, 1) + Page - 1) / Page * Page;
  void *New = ::mmap(nullptr, Size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (New == MAP_FAILED)
    return nullptr;
  if (Base)
    ::munmap(Base, Capacity);
  Base = New;
  Capacity = Size;
  return Base;
}

// Initial-exec: the runtime is loaded at the executor's start (and never
// unloaded), and a block's fibers ask for it at every collective.
__attribute__((tls_model("initial-exec"))) thread_local BlockRunner *BlockRunner::TRunner = nullptr;

BlockRunner &BlockRunner::ofThisThread() {
  // Trivially destructible on purpose: no thread-exit hook (the runtime keeps
  // libstdc++ out of its dependencies); a libomp thread lives as long as the
  // process.
  static thread_local BlockRunner *Runner = nullptr;
  if (!Runner) {
    Runner = static_cast<BlockRunner *>(std::calloc(1, sizeof(BlockRunner)));
    if (!Runner)
      failLaunch("cannot allocate a block runner", sizeof(BlockRunner));
    new (Runner) BlockRunner();
  }
  return *Runner;
}

void BlockRunner::reserve(uint32_t Threads) {
  if (Threads <= Capacity)
    return;
  auto *NewFibers = static_cast<Fiber *>(std::calloc(Threads, sizeof(Fiber)));
  auto *NewSlots = static_cast<uint64_t *>(std::calloc(Threads, sizeof(uint64_t)));
  if (!Stacks.reserve(Threads) || !NewFibers || !NewSlots)
    failLaunch("cannot allocate the stacks of a block's threads", Threads);
#ifdef OMPSIM_TSAN
  for (uint32_t T = 0; T < Threads; ++T)
    NewFibers[T].TsanFiber = __tsan_create_fiber(0);
  for (uint32_t T = 0; T < Capacity; ++T)
    __tsan_destroy_fiber(Fibers[T].TsanFiber);
#endif
  std::free(Fibers);
  std::free(Slots);
  Fibers = NewFibers;
  Slots = NewSlots;
  Capacity = Threads;
}

namespace {

/// `Linear` (x first) as an index in the extents `Dim`.
void split(uint32_t Linear, const uint32_t *Dim, uint32_t *Out) {
  Out[0] = Linear % Dim[0];
  Out[1] = (Linear / Dim[0]) % Dim[1];
  Out[2] = Linear / (Dim[0] * Dim[1]);
}

} // namespace

void BlockRunner::run(Grid &G, uint32_t BlockNum, int32_t *GlobalTid) {
  TheGrid = &G;
  Block = BlockNum;
  Gtid = GlobalTid;
  LaneRegisters &Regs = BlockRegisters;
  split(BlockNum, G.GridDim, Regs.BlockId);
  for (int D = 0; D < 3; ++D) {
    Regs.ThreadId[D] = 0;
    Regs.BlockDim[D] = G.BlockDim[D];
    Regs.GridDim[D] = G.GridDim[D];
  }
  Regs.LaneId = 0;
  Regs.WarpSize = uint16_t(G.WarpSize);
  Regs.BlockState = State.Base;
  Regs.BlockStateBytes = State.registerBytes();
  // A fiber's stack and registers are set up when it first runs
  // (startFiber): a block that runs as loops starts only thread 0.
  for (uint32_t T = 0; T < G.Threads; ++T) {
    Fiber &F = Fibers[T];
    F.Done = false;
    F.Wait = Fiber::Runs;
    F.Site = nullptr;
    F.Context = nullptr;
  }
#ifdef OMPSIM_TSAN
  HomeTsan = __tsan_get_current_fiber();
#endif
  BlockRunner *Outer = TRunner;
  TRunner = this;
  Live = G.Threads;
  Loops = false;
  RoundStride = 0;
  BlockArrived = GroupArrived = GroupCount = 0;
  BlockSite = GroupSite = nullptr;
  BlockDiverged = GroupDiverged = false;
  SharedFresh = DynamicFresh = SharedPagesFresh = false;
  ++BlockSerial;
  RestartPass = false;
  for (uint32_t W = 0; W < kMaxWarps; ++W) {
    WarpArrived[W] = WarpMask[W] = WarpReleased[W] = Running[W] = 0;
    WarpProgram[W] = nullptr;
  }
  for (uint32_t T = 0; T < G.Threads; ++T)
    Running[T / G.WarpSize] |= laneBit(T);
  uint64_t IdlePasses = 0;
  uint64_t IdleSince = 0;
  while (Live) {
    bool Ran = false;
    Progress = false;
    for (uint32_t T = 0; T < G.Threads; ++T) {
      if (Fibers[T].Done || Fibers[T].Wait != Fiber::Runs)
        continue;
      Ran = true;
      Current = T;
      if (!Fibers[T].Context)
        startFiber(T);
      if (T + 1 < G.Threads)
        prefetchFiber(T + 1);
      switchToFiber(T);
      if (Fibers[T].Done)
        exited(T);
      if (RestartPass)
        break;
    }
    RestartPass = false;
    if (!Ran)
      stuck(0);
    // A pass in which every thread that ran only spun (no barrier, no end):
    // after many such passes for long enough, nothing the block does can
    // release it (a lock or a team barrier some threads never reach, or a
    // wait on a block that has not run).
    if (Progress) {
      IdlePasses = 0;
      continue;
    }
    if (++IdlePasses == kIdlePassesBeforeClock)
      IdleSince = nanoseconds();
    else if (IdlePasses % kIdlePassesBeforeClock == 0 && nanoseconds() - IdleSince > kSpinLimitNs)
      stuck(kSpinLimitNs / 1000000000);
  }
  TRunner = Outer;
}

namespace {

/// A thread arrives at a barrier whose first program site is `First`.
void noteSite(const BarrierSite *Site, const BarrierSite *&First, bool &Diverged) {
  if (!Site)
    return;
  if (!First)
    First = Site;
  else if (!sameBarrier(*First, *Site))
    Diverged = true;
}

} // namespace

void BlockRunner::startFiber(uint32_t T) {
  Fibers[T].Context = ctx::make_fcontext(Stacks.stackTop(T), Stacks.stackBytes(T), &fiberEntry);
  LaneRegisters &Regs = Stacks.registers(T);
  Regs = BlockRegisters;
  setThread(Regs, T);
}

void BlockRunner::setThread(LaneRegisters &Regs, uint32_t T) const {
  split(T, TheGrid->BlockDim, Regs.ThreadId);
  Regs.LaneId = uint16_t(T % TheGrid->WarpSize);
}

void BlockRunner::syncBlock(const BarrierSite *Site) {
  if (Loops)
    waitInLoops("meets a block barrier");
  Progress = true;
  Fibers[Current].Site = Site;
  noteSite(Site, BlockSite, BlockDiverged);
  if (++BlockArrived == Live) {
    // The last to arrive waits its turn too: after a barrier the block's
    // threads go on in thread order, whichever came last (a GPU's run
    // them at once; a fiber that spins on another's write without a
    // runtime call would otherwise keep that one from running).
    releaseBlock();
    yield();
    return;
  }
  waitAway(Fiber::AtBlock);
}

void BlockRunner::noteBlockSite(const BarrierSite *Site) { noteSite(Site, BlockSite, BlockDiverged); }

void BlockRunner::syncThreads(uint32_t Count, const BarrierSite *Site) {
  if (Loops)
    waitInLoops("meets a barrier of a thread count");
  Progress = true;
  if (Count <= 1)
    return;
  Fibers[Current].Site = Site;
  noteSite(Site, GroupSite, GroupDiverged);
  if (++GroupArrived == Count) {
    if (GroupDiverged)
      diverged(Fiber::AtGroup);
    releaseAll(Fiber::AtGroup);
    GroupArrived = 0;
    GroupSite = nullptr;
    yield(); // in thread order, as after the block's barrier
    return;
  }
  GroupCount = Count;
  waitAway(Fiber::AtGroup);
}

void BlockRunner::syncWarp(uint64_t Mask, const void *Program) {
  if (Loops)
    waitInLoops("meets a warp barrier or collective");
  uint32_t W = Current / TheGrid->WarpSize;
  Progress = true;
  // A GPU reads as many bits of the mask as its warp has lanes.
  Mask &= firstLanes(TheGrid->WarpSize);
  if (Program)
    checkWarpMask(Mask, Program);
  WarpArrived[W] |= laneBit(Current);
  WarpMask[W] |= Mask;
  if (releaseWarpIfComplete(W))
    return;
  Fibers[Current].Wait = Fiber::AtWarp;
  yield();
}

uint64_t BlockRunner::shuffle(uint64_t Mask, uint64_t Value, uint32_t Source, const void *Program) {
  uint32_t WarpSize = TheGrid->WarpSize, Base = Current - Current % WarpSize;
  Slots[Current] = Value;
  syncWarp(Mask, Program);
  uint32_t From = Base + (Source < WarpSize ? Source : Current - Base);
  if (Program && From != Current)
    checkShuffleRead(Mask, From, Program);
  uint64_t Result = From < TheGrid->Threads ? Slots[From] : Value;
  syncWarp(Mask, Program);
  return Result;
}

uint64_t BlockRunner::ballot(uint64_t Mask, bool Predicate, const void *Program) {
  uint32_t WarpSize = TheGrid->WarpSize, W = Current / WarpSize, Base = W * WarpSize;
  Slots[Current] = Predicate;
  syncWarp(Mask, Program);
  uint64_t Took = WarpReleased[W] & Mask, Result = 0;
  for (uint32_t Lane = 0; Lane < WarpSize && Base + Lane < TheGrid->Threads; ++Lane)
    if ((Took >> Lane & 1) && Slots[Base + Lane])
      Result |= uint64_t(1) << Lane;
  syncWarp(Mask, Program);
  return Result;
}

void BlockRunner::view(ThreadView &V) const {
  const LaneRegisters &R = registers();
  for (int D = 0; D < 3; ++D) {
    V.ThreadId[D] = R.ThreadId[D];
    V.BlockDim[D] = R.BlockDim[D];
    V.BlockId[D] = R.BlockId[D];
    V.GridDim[D] = R.GridDim[D];
  }
  V.LinearThread = Current;
  V.Threads = TheGrid->Threads;
  V.WarpSize = R.WarpSize;
}

void *BlockRunner::shared(uint64_t Bytes) {
  void *Memory = Shared.atLeast(Bytes);
  if (!Memory)
    failLaunch("cannot allocate a block's shared memory of bytes", Bytes);
  if (!SharedFresh) {
    std::memset(Memory, UnwrittenSharedByte, Bytes);
    SharedFresh = true;
  }
  return Memory;
}

void *BlockRunner::sharedPages(uint64_t Bytes, bool &Fresh) {
  void *Memory = SharedPages.pagesAtLeast(Bytes);
  if (!Memory)
    failLaunch("cannot allocate a block's shared memory of bytes", Bytes);
  Fresh = !SharedPagesFresh;
  SharedPagesFresh = true;
  return Memory;
}

void *BlockRunner::dynamicShared() {
  uint64_t Bytes = TheGrid->DynamicSharedBytes;
  if (!Bytes)
    return nullptr;
  // Blocks run in order only under the checker, which places this memory.
  if (blocksInOrder())
    return checkedDynamicShared(Bytes);
  void *Memory = Dynamic.atLeast(Bytes);
  if (!Memory)
    failLaunch("cannot allocate a block's dynamic shared memory of bytes", Bytes);
  if (!DynamicFresh) {
    std::memset(Memory, UnwrittenSharedByte, Bytes);
    DynamicFresh = true;
  }
  return Memory;
}

void *BlockRunner::checkedDynamicShared(uint64_t Bytes) {
  const uint64_t Page = uint64_t(::sysconf(_SC_PAGESIZE));
  const uint64_t Used = (Bytes + 15) & ~uint64_t(15);
  const uint64_t Pages = (Used + Page - 1) / Page * Page;
  void *Memory = DynamicPages.pagesAtLeast(Pages + Page);
  if (!Memory)
    failLaunch("cannot allocate a block's dynamic shared memory of bytes", Bytes);
  const uint64_t Base = reinterpret_cast<uint64_t>(Memory);
  if (DynamicGuard != Base + Pages) {
    // A guard of a smaller launch's memory opens again (one of a mapping
    // that grew is gone with it).
    if (DynamicGuard >= Base && DynamicGuard < Base + DynamicPages.Capacity)
      ::mprotect(reinterpret_cast<void *>(DynamicGuard), Page, PROT_READ | PROT_WRITE);
    if (::mprotect(reinterpret_cast<void *>(Base + Pages), Page, PROT_NONE) != 0)
      failLaunch("cannot protect the guard page after a block's dynamic shared memory of bytes", Bytes);
    DynamicGuard = Base + Pages;
  }
  DynamicStart = Base + Pages - Used;
  if (!DynamicFresh) {
    std::memset(reinterpret_cast<void *>(DynamicStart), UnwrittenSharedByte, Used);
    DynamicFresh = true;
  }
  return reinterpret_cast<void *>(DynamicStart);
}

void *BlockRunner::state(uint64_t Bytes) {
  void *Memory = State.atLeast(Bytes);
  if (!Memory)
    failLaunch("cannot allocate a block's state of bytes", Bytes);
  // The block's threads read it from their registers from now on (those
  // that have not started get it when they do).
  BlockRegisters.BlockState = State.Base;
  BlockRegisters.BlockStateBytes = State.registerBytes();
  for (uint32_t T = 0; T < TheGrid->Threads; ++T) {
    if (!Fibers[T].Context)
      continue;
    Stacks.registers(T).BlockState = State.Base;
    Stacks.registers(T).BlockStateBytes = State.registerBytes();
  }
  return Memory;
}

/// From the running fiber back to the block's scheduler; returns when the
/// scheduler resumes it.
void BlockRunner::yield() {
#ifdef OMPSIM_VGPU_ASAN
  void *Fake = nullptr;
  __sanitizer_start_switch_fiber(&Fake, HomeBottom, HomeSize);
#endif
#ifdef OMPSIM_TSAN
  __tsan_switch_to_fiber(HomeTsan, 0);
#endif
  // The scheduler's context is new at every switch into a fiber.
  Home = ctx::jump_fcontext(Home, nullptr).fctx;
#ifdef OMPSIM_VGPU_ASAN
  __sanitizer_finish_switch_fiber(Fake, &HomeBottom, &HomeSize);
#endif
}

/// Fiber `T` leaves its warp's running lanes (it waits at a barrier of the
/// block, or finished): a warp barrier may now be complete.
void BlockRunner::leaveWarp(uint32_t T) {
  uint32_t W = T / TheGrid->WarpSize;
  Running[W] &= ~laneBit(T);
  // A program's collective that names the lane waits for it in vain, unless
  // it finished (CUDA: the mask's lanes that have not exited make the call).
  if (WarpProgram[W] && !Fibers[T].Done && (WarpMask[W] & laneBit(T)) && !(WarpArrived[W] & laneBit(T)))
    reportLaneLeft({Block, TheGrid->WarpSize, WarpMask[W], WarpProgram[W]}, T, WarpArrived[W]);
  releaseWarpIfComplete(W);
}

/// The calling fiber waits at a barrier of the block (`Wait`) until it is
/// released.
void BlockRunner::waitAway(decltype(Fiber::Wait) Wait) {
  Fibers[Current].Wait = Wait;
  leaveWarp(Current);
  yield();
}

/// Releases every fiber waiting at `Wait` (a barrier of the block): they
/// run in their warps again.
void BlockRunner::releaseAll(decltype(Fiber::Wait) Wait) {
  for (uint32_t T = 0; T < TheGrid->Threads; ++T)
    if (Fibers[T].Wait == Wait) {
      Fibers[T].Wait = Fiber::Runs;
      Running[T / TheGrid->WarpSize] |= laneBit(T);
    }
  ++BarrierEpoch;
  // The next pass over the block starts from its first thread.
  RestartPass = true;
}

void BlockRunner::releaseBlock() {
  if (BlockDiverged)
    diverged(Fiber::AtBlock);
  releaseAll(Fiber::AtBlock);
  BlockArrived = 0;
  BlockSite = nullptr;
}

/// Releases warp `W`'s barrier if every running lane it waits for arrived.
bool BlockRunner::releaseWarpIfComplete(uint32_t W) {
  uint64_t Arrived = WarpArrived[W];
  if (!Arrived)
    return false;
  uint64_t Expected = (WarpMask[W] | Arrived) & Running[W];
  if ((Arrived & Expected) != Expected)
    return false;
  uint32_t Base = W * TheGrid->WarpSize;
  for (uint64_t Left = Arrived; Left; Left &= Left - 1) {
    Fiber &F = Fibers[Base + uint32_t(__builtin_ctzll(Left))];
    if (F.Wait == Fiber::AtWarp)
      F.Wait = Fiber::Runs;
  }
  WarpReleased[W] = Arrived;
  ++WarpEpoch[W];
  WarpArrived[W] = WarpMask[W] = 0;
  WarpProgram[W] = nullptr;
  return true;
}

/// A program's warp collective, called from `Program` by the running fiber
/// with `Mask` (of its warp's lanes, WarpCheck.h): its mask names the
/// caller, and no lane it names waits at a barrier of the block.
void BlockRunner::checkWarpMask(uint64_t Mask, const void *Program) {
  uint32_t WarpSize = TheGrid->WarpSize, W = Current / WarpSize, Base = W * WarpSize;
  if (!(Mask & laneBit(Current)))
    reportUnnamedCaller({Block, WarpSize, Mask, Program}, Current);
  uint64_t There = firstLanes(std::min(WarpSize, TheGrid->Threads - Base));
  for (uint64_t Away = Mask & There & ~Running[W]; Away; Away &= Away - 1) {
    uint32_t T = Base + uint32_t(__builtin_ctzll(Away));
    if (!Fibers[T].Done)
      reportNamedLaneAtBarrier({Block, WarpSize, Mask, Program}, Current, T);
  }
  WarpProgram[W] = Program;
}

/// The running fiber's shuffle, called from `Program`, reads thread `From`
/// of its warp: a lane its mask names that took part (WarpCheck.h).
void BlockRunner::checkShuffleRead(uint64_t Mask, uint32_t From, const void *Program) const {
  uint32_t WarpSize = TheGrid->WarpSize, W = Current / WarpSize, Lane = From - W * WarpSize;
  const char *Why = nullptr;
  if (From >= TheGrid->Threads)
    Why = "is not there (the block has fewer threads)";
  else if (!(Mask >> Lane & 1))
    Why = "is not in the mask";
  else if (Fibers[From].Done)
    Why = "has finished";
  else if (!(WarpReleased[W] & laneBit(From)))
    Why = "did not take part";
  if (Why)
    reportShuffleRead({Block, WarpSize, Mask, Program}, Current, Lane, Why);
}

/// Fiber `T` finished: the barriers it will not come to may be complete.
void BlockRunner::exited(uint32_t T) {
  Progress = true;
  --Live;
  leaveWarp(T);
  if (BlockArrived && BlockArrived == Live)
    releaseBlock();
}

/// The block can never go on: no thread can run, or (`SpunSeconds`) the
/// threads that run have only spun that long. Names where they are.
void BlockRunner::stuck(uint64_t SpunSeconds) const {
  BarrierReport Report(Fibers, TheGrid->Threads);
  if (SpunSeconds)
    device::stopDevice(
        "block %u can never finish: for %llu s its running threads have only spun (a lock, or a "
        "barrier some threads never reach): %s",
        Block, static_cast<unsigned long long>(SpunSeconds), Report.whereThreadsAre(GroupCount));
  device::stopDevice("block %u: a barrier can never complete: %s", Block, Report.whereThreadsAre(GroupCount));
}

/// The threads of the barrier `Wait` about to be released wait at
/// different program barriers: a GPU hangs or passes them wrongly.
void BlockRunner::diverged(decltype(Fiber::Wait) Wait) const {
  BarrierReport Report(Fibers, TheGrid->Threads);
  // The last to arrive has not marked its wait.
  Report.treatAsWaiting(Current, Wait);
  device::stopDevice(
      "block %u: its threads wait at different barriers, which a GPU hangs on or passes wrongly: %s; "
      "every thread of a team must meet the same barriers in the same order",
      Block, Report.whereThreadsAre(GroupCount));
}

/// Brings fiber `T`'s saved context and the frames above it toward the
/// cache while another fiber runs: a block's fibers take turns, and each
/// one's stack is cold when its turn comes.
void BlockRunner::prefetchFiber(uint32_t T) const {
  const char *Saved = static_cast<const char *>(Fibers[T].Context);
  if (!Saved)
    return;
  for (int Line = 0; Line < kPrefetchLines; ++Line)
    __builtin_prefetch(Saved + Line * 64, /*rw=*/1);
}

void BlockRunner::switchToFiber(uint32_t T) {
#ifdef OMPSIM_VGPU_ASAN
  void *Fake = nullptr;
  __sanitizer_start_switch_fiber(&Fake, Stacks.stackBottom(T), Stacks.stackBytes(T));
#endif
#ifdef OMPSIM_TSAN
  __tsan_switch_to_fiber(Fibers[T].TsanFiber, 0);
#endif
  // Back here when the fiber waits or ends: where it stopped.
  Fibers[T].Context = ctx::jump_fcontext(Fibers[T].Context, nullptr).fctx;
#ifdef OMPSIM_VGPU_ASAN
  __sanitizer_finish_switch_fiber(Fake, nullptr, nullptr);
#endif
}

void BlockRunner::fiberEntry(ctx::transfer_t From) {
  BlockRunner &R = *TRunner;
  R.Home = From.fctx;
#ifdef OMPSIM_VGPU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &R.HomeBottom, &R.HomeSize);
#endif
  // The fiber's own thread: a block that runs as loops may go on as another.
  const uint32_t Self = R.Current;
  R.TheGrid->Body(R.Gtid, &R.Btid, R.TheGrid->Argv);
  R.Fibers[Self].Done = true;
#ifdef OMPSIM_VGPU_ASAN
  __sanitizer_start_switch_fiber(nullptr, R.HomeBottom, R.HomeSize);
#endif
#ifdef OMPSIM_TSAN
  __tsan_switch_to_fiber(R.HomeTsan, 0);
#endif
  // A context function must not return: back to the scheduler for good.
  ctx::jump_fcontext(R.Home, nullptr);
  __builtin_unreachable();
}

} // namespace ompsim::vgpu

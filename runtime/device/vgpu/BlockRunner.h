//===- BlockRunner.h - a block's threads as fibers --------------*- C++ -*-===//
//
// A block's threads are fibers of the device thread that runs the block:
// each fiber runs until its next barrier or its end, then the next one
// runs. A barrier is a switch back to the block's scheduler, which resumes
// the fibers in thread order once every fiber that has not finished reached
// it, so no thread passes a barrier before all its block's threads arrived
// (threads that finished do not count, as on a GPU). Thread 0 starts first
// and runs until it first waits (a barrier, a spin, its end) before any
// other thread starts: the GPU device runtime counts on it
// (hw::ThreadZeroRunsFirst). Warp collectives
// exchange values through the block's slots between two such barriers, and
// a block that can never finish (a barrier some threads never reach, a
// spin nothing releases) ends the process with one line saying where its
// threads are.
//
// Each device thread has one runner, which keeps its fibers' stacks, the
// block's memories and its scheduler state from one block to the next; it
// serves one grid's block at a time (BlockRunner::TRunner while it runs).
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_VGPU_BLOCKRUNNER_H
#define OMPSIM_DEVICE_VGPU_BLOCKRUNNER_H

#include "BarrierSite.h"
#include "Block.h"
#include "FiberSlots.h"
#include "Grid.h"

#include "ompsim/TsanHandover.h"

#include <boost/context/detail/fcontext.hpp>

#include <cstddef>
#include <cstdint>

#if defined(__SANITIZE_ADDRESS__)
#define OMPSIM_VGPU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OMPSIM_VGPU_ASAN 1
#endif
#endif

namespace ompsim::vgpu {

/// What every byte of a block's shared memory holds until the block writes
/// it: a GPU's holds what the last block left, never zeros to count on, so
/// a program that reads it unwritten fails here as there (0x7f... is a huge
/// int, float and double, and no pointer).
inline constexpr unsigned char UnwrittenSharedByte = 0x7f;

/// Ends the process with one line: a launch the virtual GPU cannot run.
[[noreturn]] void failLaunch(const char *Message, uint64_t Value);

/// A block's memory that persists across the blocks one device thread runs.
struct BlockMemory {
  void *Base = nullptr;
  uint64_t Capacity = 0;

  /// At least `Bytes` (16-aligned, zeroed when it grows); null if it cannot.
  void *atLeast(uint64_t Bytes);

  /// At least `Bytes` on whole pages of their own (mapped, page-aligned, so
  /// the checker may protect some); null if it cannot. Use one BlockMemory
  /// with atLeast() or with this, not both.
  void *pagesAtLeast(uint64_t Bytes);

  /// The bytes a thread's registers say the block has (at most 4 GiB).
  uint32_t registerBytes() const { return Capacity > UINT32_MAX ? UINT32_MAX : uint32_t(Capacity); }
};

/// A GPU thread: its stack's saved context while it waits (Boost.Context's
/// fcontext: a switch saves a few registers, with no system call, so a
/// barrier of a 1024-thread block costs microseconds).
struct Fiber {
  /// Null until the fiber first runs (BlockRunner::startFiber).
  boost::context::detail::fcontext_t Context;
  bool Done;
  /// What the fiber waits for: nothing (it runs when its turn comes), the
  /// block's barrier, its warp's, or a barrier of a thread count.
  enum : uint8_t { Runs, AtBlock, AtWarp, AtGroup } Wait;
  /// The program's barrier it waits at (AtBlock, AtGroup), in its own
  /// frame; null for a barrier of the runtime.
  const BarrierSite *Site;
#ifdef OMPSIM_TSAN
  void *TsanFiber;
#endif
};

/// The blocks one device thread runs. Never destroyed: libomp keeps its
/// threads, and the next launch reuses the stacks.
class BlockRunner {
public:
  /// The calling device thread's runner, made at its first block.
  static BlockRunner &ofThisThread();

  /// The runner whose block the calling thread is running, if any.
  static thread_local BlockRunner *TRunner;

  /// Stacks and fibers for blocks of `Threads` threads.
  void reserve(uint32_t Threads);

  /// Runs block `BlockNum` of `G` to its end.
  void run(Grid &G, uint32_t BlockNum, int32_t *GlobalTid);

  /// A spinning thread's turn: the block's other threads run.
  void pause() {
    if (Loops)
      waitInLoops("spins (a lock, or a wait on another thread)");
    yield();
  }

  /// The block's barrier: the calling fiber waits until every fiber of the
  /// block that has not finished arrived. `Site` is the program's barrier
  /// (null: the runtime's): threads at different ones end the launch.
  void syncBlock(const BarrierSite *Site = nullptr);

  /// A barrier of `Count` of the block's threads (a GPU's named barrier with
  /// a thread count: a generic-mode parallel region's threads).
  void syncThreads(uint32_t Count, const BarrierSite *Site = nullptr);

  /// The lanes of the caller's warp that run.
  uint64_t activeMask() const {
    if (Loops)
      waitInLoops("asks for its warp's running lanes");
    return Running[Current / TheGrid->WarpSize];
  }

  /// Makes the block run as loops; thread 0 calls it before anything else
  /// it runs, so no other thread has started. The others never start as
  /// fibers: thread 0 runs the kernel's code outside parallel regions, and
  /// forEachThread() each region's threads in turn (the executor found the
  /// kernel meets no barrier, warp collective or spin but at its regions'
  /// ends, simulator/src/gpu/BlockLoops.h).
  void runAsLoops();
  bool runsAsLoops() const { return Loops; }

  /// `Fn(Context, T)` for threads T below `Count` in turn, each with thread
  /// T's ids, on thread 0's stack; the barriers at the region's start (a
  /// generic-mode region's hand-over) and end count as released
  /// (barrierEpoch()). A block that runs as loops only.
  void forEachThread(uint32_t Count, void (*Fn)(void *, uint32_t), void *Context);

  /// In a block that runs as loops, the running code goes on as thread `T`
  /// (a generic-mode kernel's main thread): its ids, and current().
  void runAsThread(uint32_t T);

  /// Runs the block in rounds (thread 0, before anything else it runs): the
  /// kernel is a coroutine that suspends at each block barrier (the
  /// executor split it there, simulator/src/gpu/BlockRounds.h). `Start`
  /// starts thread T's run of it, which goes until its first barrier or
  /// its end, and gives its handle; each round then resumes every thread
  /// that has not finished, in thread order, to its next barrier. A thread
  /// that suspends leaves the barrier it waits at in *Site (null: one that
  /// any barrier completes): threads at different ones end the launch, as
  /// syncBlock() does. The block runs as loops meanwhile: its other fibers
  /// never start.
  void runInRounds(void *(*Start)(void *), void *Context, const BarrierSite *const *Site);

  /// Starts thread T's run of a parallel region split at its barriers,
  /// which leaves the barrier it suspends at in *Site; gives its handle.
  using RoundStart = void *(*)(void *Context, uint32_t T, const BarrierSite **Site);

  /// In a block that runs as loops: runs the threads below `Count` of a
  /// parallel region split at its barriers in rounds, as runInRounds()
  /// runs a kernel's, each from `Start(Context, T, ...)`. The region's
  /// start and end count as released barriers; threads at different
  /// barriers, or one that finished the region while others wait at a
  /// barrier, end the launch with the line fibers give (`End`).
  void forEachThreadInRounds(uint32_t Count, RoundStart Start, void *Context, const RoundEnd &End);

  /// The running thread's coroutine frame of `Bytes`, aligned to `Align`
  /// (runInRounds()).
  void *roundFrame(uint64_t Bytes, uint64_t Align);

  /// A barrier of the running lanes of `Mask` in the caller's warp.
  /// `Program`: the call of a program's warp collective (null: the
  /// runtime's own), whose mask must name only lanes that make the call.
  void syncWarp(uint64_t Mask, const void *Program = nullptr);

  /// Lane `Source`'s value of the warp's exchange, for every lane that calls.
  uint64_t shuffle(uint64_t Mask, uint64_t Value, uint32_t Source, const void *Program = nullptr);

  /// The lanes of `Mask` that took part and passed a true predicate.
  uint64_t ballot(uint64_t Mask, bool Predicate, const void *Program = nullptr);

  void view(ThreadView &V) const;

  /// The running thread's registers (a block that runs as loops runs each
  /// thread on thread 0's stack, with its registers).
  const LaneRegisters &registers() const { return Stacks.registers(Loops ? 0 : Current); }

  uint64_t *slots() const { return Slots; }
  void *shared(uint64_t Bytes);
  /// The block's team-shared memory on whole pages; `Fresh`: the block's
  /// first call (the caller fills it).
  void *sharedPages(uint64_t Bytes, bool &Fresh);
  void *dynamicShared();
  void *state(uint64_t Bytes);

  /// The checker's placement of the dynamic shared memory (0 before any):
  /// where it starts, and the inaccessible page after it, its padding to 16
  /// bytes between; the bytes the launch asked for once the block asked for
  /// it (0: not yet). memcheck/TeamSharedAccesses.h checks accesses there.
  uint64_t dynamicSharedStart() const { return DynamicStart; }
  uint64_t dynamicSharedGuard() const { return DynamicGuard; }
  uint64_t dynamicSharedBytes() const {
    return DynamicFresh && DynamicStart ? TheGrid->DynamicSharedBytes : 0;
  }
  /// Counts the blocks this runner started: a block's own number among them.
  uint64_t blockSerial() const { return BlockSerial; }

  uint32_t blockNum() const { return Block; }
  const Grid &grid() const { return *TheGrid; }
  uint32_t current() const { return Current; }

  /// Barriers of the block released so far (the block's, and those of a
  /// thread count), and of thread `T`'s warp: an access that happened at a
  /// smaller count than now is ordered before what a thread does now (the
  /// checker's team-shared races, memcheck/TeamSharedAccesses.h).
  uint32_t barrierEpoch() const { return BarrierEpoch; }
  uint32_t warpEpoch(uint32_t T) const { return WarpEpoch[T / TheGrid->WarpSize]; }
  bool sameWarp(uint32_t T, uint32_t U) const { return T / TheGrid->WarpSize == U / TheGrid->WarpSize; }

private:
  /// The most warps a block has (1024 threads in warps of 32).
  static constexpr uint32_t kMaxWarps = MaxBlockThreads / 32;

  /// Passes without progress before the clock is read, and how long the
  /// block's threads may only spin.
  static constexpr uint64_t kIdlePassesBeforeClock = 1 << 16;
  static constexpr uint64_t kSpinLimitNs = uint64_t(10) * 1000000000u;
  static constexpr int kPrefetchLines = 8;

  /// Fiber `T`'s bit in its warp's lane masks.
  uint64_t laneBit(uint32_t T) const { return uint64_t(1) << (T % TheGrid->WarpSize); }

  /// The mask of a warp's first `Lanes` lanes.
  static uint64_t firstLanes(uint32_t Lanes) {
    return Lanes >= 64 ? ~uint64_t(0) : (uint64_t(1) << Lanes) - 1;
  }

  void yield();
  void leaveWarp(uint32_t T);
  void waitAway(decltype(Fiber::Wait) Wait);
  void releaseAll(decltype(Fiber::Wait) Wait);
  void releaseBlock();
  bool releaseWarpIfComplete(uint32_t W);
  void exited(uint32_t T);
  [[noreturn]] void stuck(uint64_t SpunSeconds) const;
  /// A thread of a block that runs as loops would wait (`What`), which the
  /// executor's analysis ruled out: ends the launch rather than pass it.
  [[noreturn]] void waitInLoops(const char *What) const;
  [[noreturn]] void diverged(decltype(Fiber::Wait) Wait) const;
  void checkWarpMask(uint64_t Mask, const void *Program);
  void checkShuffleRead(uint64_t Mask, uint32_t From, const void *Program) const;
  void prefetchFiber(uint32_t T) const;
  /// Fiber `T`'s context and registers, before it first runs.
  void startFiber(uint32_t T);
  /// `Regs` say thread `T`'s ids.
  void setThread(LaneRegisters &Regs, uint32_t T) const;
  /// The running thread waits at the block's barrier `Site` (a block run
  /// in rounds), for the release at the round's end.
  void waitInRound(const BarrierSite *Site) {
    Fibers[Current].Site = Site;
    if (Site && Site != BlockSite)
      noteBlockSite(Site);
  }
  /// A thread arrives at the block's barrier `Site`: the first site of the
  /// barrier, or a divergence from it.
  void noteBlockSite(const BarrierSite *Site);
  /// `Run(T)` for threads T below `Count` in turn, on thread 0's stack with
  /// thread T's ids (a block that runs as loops, BlockLoops.cpp).
  template <typename Body> void asEachThread(uint32_t Count, Body &&Run);
  /// `Run()` as a parallel region of `Count` threads of a block that runs as
  /// loops: its start and end count as released barriers, and the running
  /// code goes on as the thread it was.
  template <typename Body> void asRegion(uint32_t Count, Body &&Run);
  /// Runs the threads below `Count` in rounds, thread T's coroutine from
  /// `Start(T)` (runInRounds(), forEachThreadInRounds()).
  template <typename StartFn>
  void runRounds(uint32_t Count, StartFn &&Start, const BarrierSite *const *Site, const RoundEnd &End);
  static bool roundFinished(void *Handle);
  /// The threads of a round wait apart (at different barriers, or some at
  /// a region's end): ends the launch with the line fibers give there.
  [[noreturn]] void roundsApart(void *const *Handles, uint32_t Threads, bool SomeFinished,
                                const RoundEnd &End);
  /// The checker's dynamic shared memory: its end at a page that faults,
  /// its bytes filled with UnwrittenSharedByte in each block.
  void *checkedDynamicShared(uint64_t Bytes);
  void switchToFiber(uint32_t T);
  static void fiberEntry(boost::context::detail::transfer_t From);

  Grid *TheGrid = nullptr;
  uint32_t Block = 0;
  uint32_t Current = 0;
  int32_t *Gtid = nullptr;
  int32_t Btid = 0;
  Fiber *Fibers = nullptr;
  uint64_t *Slots = nullptr;
  FiberSlots Stacks;
  /// Thread 0's registers in the running block: a fiber's, with its own
  /// ids, when it starts.
  LaneRegisters BlockRegisters = {};
  uint32_t Capacity = 0;
  BlockMemory Shared, Dynamic, State, SharedPages, DynamicPages;
  /// A block run in rounds: its threads' coroutine frames (on pages,
  /// RoundStride bytes apart, 0 before the first), and their handles.
  BlockMemory RoundFrames, RoundHandles;
  uint64_t RoundStride = 0;
  /// Under the checker: the page after the dynamic shared memory that is
  /// inaccessible (0: none), and where that memory starts.
  uint64_t DynamicGuard = 0;
  uint64_t DynamicStart = 0;
  uint64_t BlockSerial = 0;
  /// The block's shared memories got their unwritten pattern.
  bool SharedFresh = false;
  bool DynamicFresh = false;
  bool SharedPagesFresh = false;
  /// Fibers that have not finished.
  uint32_t Live = 0;
  /// The threads at the barrier of a count (syncThreads), and its count.
  uint32_t GroupArrived = 0;
  uint32_t GroupCount = 0;
  /// The block runs as loops (runAsLoops()).
  bool Loops = false;
  /// A barrier was met or a fiber finished in the current pass.
  bool Progress = false;
  /// A barrier of the block released its threads: the pass starts again
  /// from the first thread.
  bool RestartPass = false;
  /// The threads at the block's barrier.
  uint32_t BlockArrived = 0;
  /// The first program barrier a thread waits at, of the block's barrier
  /// and of the counted one, and whether a thread waits at another.
  const BarrierSite *BlockSite = nullptr;
  const BarrierSite *GroupSite = nullptr;
  bool BlockDiverged = false;
  bool GroupDiverged = false;
  /// Each warp's barrier: the lanes that arrived, the masks they named, and
  /// the lanes its last release let go.
  uint64_t WarpArrived[kMaxWarps];
  uint64_t WarpMask[kMaxWarps];
  uint64_t WarpReleased[kMaxWarps];
  /// The call of the program's warp collective a warp's lanes wait at (null:
  /// none, or the runtime's).
  const void *WarpProgram[kMaxWarps];
  /// Each warp's lanes that run (neither finished nor at the block's barrier).
  uint64_t Running[kMaxWarps];
  /// Releases of the block's barriers and of each warp's (barrierEpoch()).
  uint32_t BarrierEpoch = 0;
  uint32_t WarpEpoch[kMaxWarps] = {};
  boost::context::detail::fcontext_t Home = nullptr; ///< the scheduler, while a fiber runs
#ifdef OMPSIM_VGPU_ASAN
  const void *HomeBottom = nullptr;
  size_t HomeSize = 0;
#endif
#ifdef OMPSIM_TSAN
  void *HomeTsan = nullptr;
#endif
};

} // namespace ompsim::vgpu

#endif // OMPSIM_DEVICE_VGPU_BLOCKRUNNER_H

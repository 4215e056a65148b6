//===- BareLaunch.cpp - ompx_bare regions run as a GPU runs them ---------===//
//
// clang-22 emits the same x86_64 kernel with and without ompx_bare: it forks
// the teams through libomp and runs the region once on each team's initial
// thread. On a GPU every thread of every block runs a bare region, and the
// region's code is written for that (it indexes by ompx_thread_id_x(),
// meets its block at ompx_sync_block, exchanges values in shuffles).
//
// ompsim's pass plugin (runtime/pass/BareKernels.cpp) finds the bare regions
// of a device compile, outlines each one's call of the region into a body
// that takes the region's arguments from an array, and replaces the
// kernel's __kmpc_fork_teams with __ompsim_bare_fork_teams. Here, on an
// ompsim device, the launch's grid is run block by block on a few device
// threads (libomp's, so the region may call libomp), and a block's threads
// are fibers of the device thread that runs the block: each fiber runs until
// its next barrier or its end, then the next one runs. A barrier is a switch
// back to the block's scheduler, which resumes the fibers in thread order
// once every fiber that has not finished reached it, so no thread passes a
// barrier before all its block's threads arrived (threads that finished do
// not count, as on a GPU). Warp collectives exchange values through the
// block's slots between two such barriers. Blocks never wait for each other
// (on a GPU they cannot either).
//
//===----------------------------------------------------------------------===//
#include "BareLaunch.h"

#include "FiberSlots.h"

#include "../gpu-abi/KernelLaunchState.h"
#include "../gpu-abi/Libomp.h"
#include "ompsim/device_runtime.h"

#include <boost/context/detail/fcontext.hpp>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define OMPSIM_BARE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OMPSIM_BARE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define OMPSIM_BARE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define OMPSIM_BARE_TSAN 1
#endif
#endif
#ifdef OMPSIM_BARE_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef OMPSIM_BARE_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

namespace ompsim::device::bare {

uint64_t nanoseconds() {
  timespec Now;
  clock_gettime(CLOCK_MONOTONIC, &Now);
  return uint64_t(Now.tv_sec) * 1000000000u + uint64_t(Now.tv_nsec);
}

namespace {

constexpr uint32_t kMaxBlockThreads = OMPSIM_BARE_MAX_BLOCK_THREADS;

[[noreturn]] void fail(const char *Message, uint64_t Value) {
  std::fprintf(stderr, "ompsim: device runtime: ompx_bare launch: %s (%llu)\n", Message,
               static_cast<unsigned long long>(Value));
  std::fflush(stderr);
  std::_Exit(1);
}

/// One launch of a bare region.
struct LaunchContext {
  uint32_t Grid[3];
  uint32_t Block[3];
  uint32_t Blocks;   ///< blocks in the grid
  uint32_t Threads;  ///< threads in a block
  uint32_t WarpSize; ///< lanes of a warp
  uint64_t DynamicSharedBytes;
  ompsim_bare_body Body;
  void **Argv;
  std::atomic<uint32_t> NextBlock;
  /// The launch's state, which every device thread of the grid shares.
  KernelLaunch *Owner;
};

/// A block's memory that persists across the blocks one device thread runs.
struct BlockMemory {
  void *Base = nullptr;
  uint64_t Capacity = 0;

  /// At least `Bytes` (16-aligned, zeroed when it grows); null if it cannot.
  void *atLeast(uint64_t Bytes) {
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

  /// The bytes a thread's registers say the block has (at most 4 GiB).
  uint32_t registerBytes() const { return Capacity > UINT32_MAX ? UINT32_MAX : uint32_t(Capacity); }
};

namespace ctx = boost::context::detail;

/// A GPU thread: its stack's saved context while it waits (Boost.Context's
/// fcontext: a switch saves a few registers, with no system call, so a
/// barrier of a 1024-thread block costs microseconds).
struct Fiber {
  ctx::fcontext_t Context;
  bool Done;
  /// What the fiber waits for: nothing (it runs when its turn comes), the
  /// block's barrier, or its warp's.
  enum : uint8_t { Runs, AtBlock, AtWarp, AtGroup } Wait;
#ifdef OMPSIM_BARE_TSAN
  void *TsanFiber;
#endif
};

/// The blocks one device thread runs. Never destroyed: libomp keeps its
/// threads, and the next launch reuses the stacks.
class BlockRunner {
public:
  /// Stacks and fibers for blocks of `Threads` threads.
  void reserve(uint32_t Threads) {
    if (Threads <= Capacity)
      return;
    auto *NewFibers = static_cast<Fiber *>(std::calloc(Threads, sizeof(Fiber)));
    auto *NewSlots = static_cast<uint64_t *>(std::calloc(Threads, sizeof(uint64_t)));
    if (!Stacks.reserve(Threads) || !NewFibers || !NewSlots)
      fail("cannot allocate the stacks of a block's threads", Threads);
#ifdef OMPSIM_BARE_TSAN
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

  /// Runs block `BlockNum` of `L` to its end.
  void run(LaunchContext &L, uint32_t BlockNum, int32_t *GlobalTid) {
    Launch = &L;
    Block = BlockNum;
    Gtid = GlobalTid;
    vgpu::LaneRegisters Regs;
    split(BlockNum, L.Grid, Regs.BlockId);
    for (int D = 0; D < 3; ++D) {
      Regs.BlockDim[D] = L.Block[D];
      Regs.GridDim[D] = L.Grid[D];
    }
    Regs.WarpSize = uint16_t(L.WarpSize);
    Regs.BlockState = State.Base;
    Regs.BlockStateBytes = State.registerBytes();
    for (uint32_t T = 0; T < L.Threads; ++T) {
      Fiber &F = Fibers[T];
      F.Done = false;
      F.Wait = Fiber::Runs;
      F.Context = ctx::make_fcontext(Stacks.stackTop(T), Stacks.stackBytes(T), &fiberEntry);
      split(T, L.Block, Regs.ThreadId);
      Regs.LaneId = uint16_t(T % L.WarpSize);
      Stacks.registers(T) = Regs;
    }
#ifdef OMPSIM_BARE_TSAN
    HomeTsan = __tsan_get_current_fiber();
#endif
    BlockRunner *Outer = TRunner;
    TRunner = this;
    Live = L.Threads;
    BlockArrived = GroupArrived = GroupCount = 0;
    RestartPass = false;
    for (uint32_t W = 0; W < kMaxWarps; ++W)
      WarpArrived[W] = WarpMask[W] = WarpReleased[W] = Running[W] = 0;
    for (uint32_t T = 0; T < L.Threads; ++T)
      Running[T / L.WarpSize] |= laneBit(T);
    uint64_t IdlePasses = 0;
    uint64_t IdleSince = 0;
    while (Live) {
      bool Ran = false;
      Progress = false;
      for (uint32_t T = 0; T < L.Threads; ++T) {
        if (Fibers[T].Done || Fibers[T].Wait != Fiber::Runs)
          continue;
        Ran = true;
        Current = T;
        if (T + 1 < L.Threads)
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

  /// A spinning thread's turn: the block's other threads run.
  void pause() { yield(); }

  /// The block's barrier: the calling fiber waits until every fiber of the
  /// block that has not finished arrived (finished ones do not count, as on
  /// a GPU).
  void syncBlock() {
    Progress = true;
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

  /// A barrier of `Count` of the block's threads (a GPU's named barrier with
  /// a thread count: a generic-mode parallel region's threads).
  void syncThreads(uint32_t Count) {
    Progress = true;
    if (Count <= 1)
      return;
    if (++GroupArrived == Count) {
      releaseAll(Fiber::AtGroup);
      GroupArrived = 0;
      yield(); // in thread order, as after the block's barrier
      return;
    }
    GroupCount = Count;
    waitAway(Fiber::AtGroup);
  }

  /// The lanes of the caller's warp that run (neither finished nor waiting at
  /// the block's barrier).
  uint64_t activeMask() const { return runningLanes(Current / Launch->WarpSize); }

  /// A barrier of the running lanes of `Mask` in the caller's warp.
  void syncWarp(uint64_t Mask) {
    uint32_t W = Current / Launch->WarpSize;
    Progress = true;
    WarpArrived[W] |= laneBit(Current);
    WarpMask[W] |= Mask;
    if (releaseWarpIfComplete(W))
      return;
    Fibers[Current].Wait = Fiber::AtWarp;
    yield();
  }

  /// Lane `Source`'s value of the warp's exchange, for every lane that calls.
  uint64_t shuffle(uint64_t Mask, uint64_t Value, uint32_t Source) {
    uint32_t WarpSize = Launch->WarpSize, Base = Current - Current % WarpSize;
    Slots[Current] = Value;
    syncWarp(Mask);
    uint32_t From = Base + (Source < WarpSize ? Source : Current - Base);
    uint64_t Result = From < Launch->Threads ? Slots[From] : Value;
    syncWarp(Mask);
    return Result;
  }

  /// The lanes of `Mask` that took part and passed a true predicate.
  uint64_t ballot(uint64_t Mask, bool Predicate) {
    uint32_t WarpSize = Launch->WarpSize, W = Current / WarpSize, Base = W * WarpSize;
    Slots[Current] = Predicate;
    syncWarp(Mask);
    uint64_t Took = WarpReleased[W] & Mask, Result = 0;
    for (uint32_t Lane = 0; Lane < WarpSize && Base + Lane < Launch->Threads; ++Lane)
      if ((Took >> Lane & 1) && Slots[Base + Lane])
        Result |= uint64_t(1) << Lane;
    syncWarp(Mask);
    return Result;
  }

  /// From the running fiber back to the block's scheduler; returns when the
  /// scheduler resumes it.
  void yield() {
#ifdef OMPSIM_BARE_ASAN
    void *Fake = nullptr;
    __sanitizer_start_switch_fiber(&Fake, HomeBottom, HomeSize);
#endif
#ifdef OMPSIM_BARE_TSAN
    __tsan_switch_to_fiber(HomeTsan, 0);
#endif
    // The scheduler's context is new at every switch into a fiber.
    Home = ctx::jump_fcontext(Home, nullptr).fctx;
#ifdef OMPSIM_BARE_ASAN
    __sanitizer_finish_switch_fiber(Fake, &HomeBottom, &HomeSize);
#endif
  }

  void view(ThreadView &V) const {
    const vgpu::LaneRegisters &R = registers();
    for (int D = 0; D < 3; ++D) {
      V.ThreadId[D] = R.ThreadId[D];
      V.BlockDim[D] = R.BlockDim[D];
      V.BlockId[D] = R.BlockId[D];
      V.GridDim[D] = R.GridDim[D];
    }
    V.LinearThread = Current;
    V.Threads = Launch->Threads;
    V.WarpSize = R.WarpSize;
  }

  /// The running fiber's registers.
  const vgpu::LaneRegisters &registers() const { return Stacks.registers(Current); }
  const LaunchContext &launch() const { return *Launch; }

  uint64_t *slots() const { return Slots; }

  void *shared(uint64_t Bytes) {
    void *Block = Shared.atLeast(Bytes);
    if (!Block)
      fail("cannot allocate a block's shared memory of bytes", Bytes);
    return Block;
  }

  void *dynamicShared() {
    if (!Launch->DynamicSharedBytes)
      return nullptr;
    void *Block = Dynamic.atLeast(Launch->DynamicSharedBytes);
    if (!Block)
      fail("cannot allocate a block's dynamic shared memory of bytes", Launch->DynamicSharedBytes);
    return Block;
  }

  /// The runner whose block the calling thread is running, if any.
  static thread_local BlockRunner *TRunner;

  void *state(uint64_t Bytes) {
    void *Block = State.atLeast(Bytes);
    if (!Block)
      fail("cannot allocate a block's state of bytes", Bytes);
    // The block's threads read it from their registers from now on.
    for (uint32_t T = 0; T < Launch->Threads; ++T) {
      Stacks.registers(T).BlockState = State.Base;
      Stacks.registers(T).BlockStateBytes = State.registerBytes();
    }
    return Block;
  }

  uint32_t blockNum() const { return Block; }
  uint32_t current() const { return Current; }

private:
  /// The most warps a block has (1024 threads in warps of 32).
  static constexpr uint32_t kMaxWarps = kMaxBlockThreads / 32;

  /// `Linear` (x first) as an index in the extents `Dim`.
  static void split(uint32_t Linear, const uint32_t *Dim, uint32_t *Out) {
    Out[0] = Linear % Dim[0];
    Out[1] = (Linear / Dim[0]) % Dim[1];
    Out[2] = Linear / (Dim[0] * Dim[1]);
  }

  uint64_t runningLanes(uint32_t W) const { return Running[W]; }

  /// Fiber `T`'s bit in its warp's lane masks.
  uint64_t laneBit(uint32_t T) const { return uint64_t(1) << (T % Launch->WarpSize); }

  /// Fiber `T` leaves its warp's running lanes (it waits at a barrier of the
  /// block, or finished): a warp barrier may now be complete.
  void leaveWarp(uint32_t T) {
    Running[T / Launch->WarpSize] &= ~laneBit(T);
    releaseWarpIfComplete(T / Launch->WarpSize);
  }

  /// The calling fiber waits at a barrier of the block (`Wait`) until it is
  /// released.
  void waitAway(decltype(Fiber::Wait) Wait) {
    Fibers[Current].Wait = Wait;
    leaveWarp(Current);
    yield();
  }

  /// Releases every fiber waiting at `Wait` (a barrier of the block): they
  /// run in their warps again.
  void releaseAll(decltype(Fiber::Wait) Wait) {
    for (uint32_t T = 0; T < Launch->Threads; ++T)
      if (Fibers[T].Wait == Wait) {
        Fibers[T].Wait = Fiber::Runs;
        Running[T / Launch->WarpSize] |= laneBit(T);
      }
    // The next pass over the block starts from its first thread.
    RestartPass = true;
  }

  void releaseBlock() {
    releaseAll(Fiber::AtBlock);
    BlockArrived = 0;
  }

  /// Releases warp `W`'s barrier if every running lane it waits for arrived.
  bool releaseWarpIfComplete(uint32_t W) {
    uint64_t Arrived = WarpArrived[W];
    if (!Arrived)
      return false;
    uint64_t Expected = (WarpMask[W] | Arrived) & runningLanes(W);
    if ((Arrived & Expected) != Expected)
      return false;
    uint32_t Base = W * Launch->WarpSize;
    for (uint64_t Left = Arrived; Left; Left &= Left - 1) {
      Fiber &F = Fibers[Base + uint32_t(__builtin_ctzll(Left))];
      if (F.Wait == Fiber::AtWarp)
        F.Wait = Fiber::Runs;
    }
    WarpReleased[W] = Arrived;
    WarpArrived[W] = WarpMask[W] = 0;
    return true;
  }

  /// Fiber `T` finished: the barriers it will not come to may be complete.
  void exited(uint32_t T) {
    Progress = true;
    --Live;
    leaveWarp(T);
    if (BlockArrived && BlockArrived == Live)
      releaseBlock();
  }

  /// The block can never go on: no thread can run, or (`SpunSeconds`) the
  /// threads that run have only spun that long. Names where they are.
  [[noreturn]] void stuck(uint64_t SpunSeconds) const {
    uint32_t AtBlock = 0, AtWarp = 0, AtGroup = 0, Spinning = 0, Done = 0;
    for (uint32_t T = 0; T < Launch->Threads; ++T) {
      const Fiber &F = Fibers[T];
      Done += F.Done;
      AtBlock += !F.Done && F.Wait == Fiber::AtBlock;
      AtWarp += !F.Done && F.Wait == Fiber::AtWarp;
      AtGroup += !F.Done && F.Wait == Fiber::AtGroup;
      Spinning += !F.Done && F.Wait == Fiber::Runs;
    }
    if (SpunSeconds)
      std::fprintf(stderr,
                   "ompsim: device runtime: block %u can never finish: for %llu s its %u running threads "
                   "have only spun (a lock, or a team barrier some threads never reach), while %u wait at "
                   "the block's barrier, %u at a warp's, and %u have finished\n",
                   Block, static_cast<unsigned long long>(SpunSeconds), Spinning, AtBlock, AtWarp, Done);
    else if (AtGroup)
      std::fprintf(stderr,
                   "ompsim: device runtime: block %u: a barrier can never complete: %u of the %u threads a "
                   "team barrier waits for arrived, while %u wait at the block's barrier, %u at a warp's, "
                   "and %u have finished\n",
                   Block, AtGroup, GroupCount, AtBlock, AtWarp, Done);
    else
      std::fprintf(stderr,
                   "ompsim: device runtime: block %u: a barrier can never complete: %u threads wait at the "
                   "block's barrier and %u at a warp's\n",
                   Block, AtBlock, AtWarp);
    std::fflush(stderr);
    std::_Exit(1);
  }

  /// Passes without progress before the clock is read, and how long the
  /// block's threads may only spin.
  static constexpr uint64_t kIdlePassesBeforeClock = 1 << 16;
  static constexpr uint64_t kSpinLimitNs = uint64_t(10) * 1000000000u;

  /// Brings fiber `T`'s saved context and the frames above it toward the
  /// cache while another fiber runs: a block's fibers take turns, and each
  /// one's stack is cold when its turn comes.
  void prefetchFiber(uint32_t T) const {
    const char *Saved = static_cast<const char *>(Fibers[T].Context);
    for (int Line = 0; Line < kPrefetchLines; ++Line)
      __builtin_prefetch(Saved + Line * 64, /*rw=*/1);
  }
  static constexpr int kPrefetchLines = 8;

  void switchToFiber(uint32_t T) {
#ifdef OMPSIM_BARE_ASAN
    void *Fake = nullptr;
    __sanitizer_start_switch_fiber(&Fake, Stacks.stackBottom(T), Stacks.stackBytes(T));
#endif
#ifdef OMPSIM_BARE_TSAN
    __tsan_switch_to_fiber(Fibers[T].TsanFiber, 0);
#endif
    // Back here when the fiber waits or ends: where it stopped.
    Fibers[T].Context = ctx::jump_fcontext(Fibers[T].Context, nullptr).fctx;
#ifdef OMPSIM_BARE_ASAN
    __sanitizer_finish_switch_fiber(Fake, nullptr, nullptr);
#endif
  }

  static void fiberEntry(ctx::transfer_t From) {
    BlockRunner &R = *TRunner;
    R.Home = From.fctx;
#ifdef OMPSIM_BARE_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &R.HomeBottom, &R.HomeSize);
#endif
    R.Launch->Body(R.Gtid, &R.Btid, R.Launch->Argv);
    R.Fibers[R.Current].Done = true;
#ifdef OMPSIM_BARE_ASAN
    __sanitizer_start_switch_fiber(nullptr, R.HomeBottom, R.HomeSize);
#endif
#ifdef OMPSIM_BARE_TSAN
    __tsan_switch_to_fiber(R.HomeTsan, 0);
#endif
    // A context function must not return: back to the scheduler for good.
    ctx::jump_fcontext(R.Home, nullptr);
    __builtin_unreachable();
  }

  LaunchContext *Launch = nullptr;
  uint32_t Block = 0;
  uint32_t Current = 0;
  int32_t *Gtid = nullptr;
  int32_t Btid = 0;
  Fiber *Fibers = nullptr;
  uint64_t *Slots = nullptr;
  FiberSlots Stacks;
  uint32_t Capacity = 0;
  BlockMemory Shared, Dynamic, State;
  /// Fibers that have not finished, and those at the block's barrier.
  uint32_t Live = 0;
  /// The threads at the barrier of a count (syncThreads), and its count.
  uint32_t GroupArrived = 0;
  uint32_t GroupCount = 0;
  /// A barrier was met or a fiber finished in the current pass.
  bool Progress = false;
  /// A barrier of the block released its threads: the pass starts again
  /// from the first thread.
  bool RestartPass = false;
  uint32_t BlockArrived = 0;
  /// Each warp's barrier: the lanes that arrived, the masks they named, and
  /// the lanes its last release let go.
  uint64_t WarpArrived[kMaxWarps];
  uint64_t WarpMask[kMaxWarps];
  uint64_t WarpReleased[kMaxWarps];
  /// Each warp's lanes that run (neither finished nor at the block's barrier).
  uint64_t Running[kMaxWarps];
  ctx::fcontext_t Home = nullptr; ///< the scheduler, while a fiber runs
#ifdef OMPSIM_BARE_ASAN
  const void *HomeBottom = nullptr;
  size_t HomeSize = 0;
#endif
#ifdef OMPSIM_BARE_TSAN
  void *HomeTsan = nullptr;
#endif
};

// Initial-exec: the runtime is loaded at the executor's start (and never
// unloaded), and a block's fibers ask for it at every collective.
__attribute__((tls_model("initial-exec"))) thread_local BlockRunner *BlockRunner::TRunner = nullptr;

BlockRunner &runnerOfThisThread() {
  // Trivially destructible on purpose: no thread-exit hook (the runtime keeps
  // libstdc++ out of its dependencies); a libomp thread lives as long as the
  // process.
  static thread_local BlockRunner *Runner = nullptr;
  if (!Runner) {
    Runner = static_cast<BlockRunner *>(std::calloc(1, sizeof(BlockRunner)));
    if (!Runner)
      fail("cannot allocate a block runner", sizeof(BlockRunner));
    new (Runner) BlockRunner();
  }
  return *Runner;
}

/// One device thread of the launch: runs blocks until none is left.
void workerMicrotask(int32_t *Gtid, int32_t *, LaunchContext *L) {
  ThreadPlace Place = currentPlace();
  Place.Launch = L->Owner;
  ScopedPlace Scope(Place);
  BlockRunner &R = runnerOfThisThread();
  R.reserve(L->Threads);
  for (uint32_t B; (B = L->NextBlock.fetch_add(1, std::memory_order_relaxed)) < L->Blocks;)
    R.run(*L, B, Gtid);
}

/// Stock's host plugin (no ompsim launch): each team's initial thread runs
/// the body once, as clang-22's own kernel does.
void fallbackTeamMicrotask(int32_t *Gtid, int32_t *Btid, ompsim_bare_body Body, void **Argv) {
  Body(Gtid, Btid, Argv);
}

uint32_t processors() {
  static const uint32_t N = [] {
    long Online = ::sysconf(_SC_NPROCESSORS_ONLN);
    return Online > 0 ? uint32_t(Online) : 1u;
  }();
  return N;
}

} // namespace

bool current(ThreadView &View) {
  const BlockRunner *R = BlockRunner::TRunner;
  if (!R)
    return false;
  R->view(View);
  return true;
}

void syncBlock() {
  if (BlockRunner *R = BlockRunner::TRunner)
    R->syncBlock();
}

const vgpu::LaneRegisters &laneRegisters() {
  // Code outside a block: thread 0 of a block of one, warps of 32.
  static const vgpu::LaneRegisters Outside = {{0, 0, 0}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 0, 32, 0, nullptr};
  const BlockRunner *R = BlockRunner::TRunner;
  return R ? R->registers() : Outside;
}

uint32_t linearBlock() {
  const BlockRunner *R = BlockRunner::TRunner;
  return R ? R->blockNum() : 0;
}
uint32_t linearThread() {
  const BlockRunner *R = BlockRunner::TRunner;
  return R ? R->current() : 0;
}

uint64_t warpActiveMask() {
  const BlockRunner *R = BlockRunner::TRunner;
  return R ? R->activeMask() : 1;
}

void syncWarp(uint64_t Mask) {
  if (BlockRunner *R = BlockRunner::TRunner)
    R->syncWarp(Mask);
}

uint64_t warpShuffle(uint64_t Mask, uint64_t Value, uint32_t SourceLane) {
  BlockRunner *R = BlockRunner::TRunner;
  return R ? R->shuffle(Mask, Value, SourceLane) : Value;
}

uint64_t warpBallot(uint64_t Mask, bool Predicate) {
  BlockRunner *R = BlockRunner::TRunner;
  return R ? R->ballot(Mask, Predicate) : uint64_t(Predicate);
}

void pause() {
  if (BlockRunner *R = BlockRunner::TRunner)
    R->pause();
}

void syncThreads(uint32_t Count) {
  if (BlockRunner *R = BlockRunner::TRunner)
    R->syncThreads(Count);
}

void *blockState(uint64_t Bytes) {
  BlockRunner *R = BlockRunner::TRunner;
  return R ? R->state(Bytes) : nullptr;
}

uint64_t *exchangeSlots() {
  const BlockRunner *R = BlockRunner::TRunner;
  return R ? R->slots() : nullptr;
}

void *blockShared(uint64_t Bytes) {
  BlockRunner *R = BlockRunner::TRunner;
  return R ? R->shared(Bytes) : nullptr;
}

void *blockDynamicShared(bool &InBare) {
  BlockRunner *R = BlockRunner::TRunner;
  InBare = R != nullptr;
  return R ? R->dynamicShared() : nullptr;
}

} // namespace ompsim::device::bare

using namespace ompsim::device;

namespace ompsim::device::bare {
namespace {

/// Runs the grid of launch `R`, each of its threads calling `Body(Argv)`.
void runGrid(Ident *Loc, const ompsim_kernel_launch &R, ompsim_bare_body Body, void **Argv,
             uint32_t WarpSize) {
  const Libomp &Omp = Libomp::get();
  auto Extent = [](uint32_t V) { return V ? V : 1u; };
  LaunchContext L;
  L.Grid[0] = Extent(R.num_teams);
  L.Grid[1] = Extent(R.num_teams_yz[0]);
  L.Grid[2] = Extent(R.num_teams_yz[1]);
  L.Block[0] = Extent(R.thread_limit);
  L.Block[1] = Extent(R.thread_limit_yz[0]);
  L.Block[2] = Extent(R.thread_limit_yz[1]);
  uint64_t Blocks = uint64_t(L.Grid[0]) * L.Grid[1] * L.Grid[2];
  uint64_t Threads = uint64_t(L.Block[0]) * L.Block[1] * L.Block[2];
  if (Blocks > UINT32_MAX)
    fail("more blocks than the device runs", Blocks);
  if (Threads > kMaxBlockThreads)
    fail("more threads in a block than the device's 1024", Threads);
  L.Blocks = uint32_t(Blocks);
  L.Threads = uint32_t(Threads);
  L.WarpSize = WarpSize;
  L.DynamicSharedBytes = R.dynamic_shared_bytes;
  L.Body = Body;
  L.Argv = Argv;
  L.NextBlock.store(0, std::memory_order_relaxed);
  L.Owner = currentPlace().Launch;
  // Device threads for the blocks: the CPUs, within the thread limit the
  // kernel's own __kmpc_push_num_teams left (libomp would warn past it).
  uint32_t Workers = R.bare_workers ? R.bare_workers : processors();
  if (L.Blocks < Workers)
    Workers = L.Blocks;
  if (int Limit = Omp.GetThreadLimit(); Limit > 0 && uint32_t(Limit) < Workers)
    Workers = uint32_t(Limit);
  int32_t Gtid = Omp.GlobalThreadNum(Loc);
  if (Workers <= 1) {
    int32_t Zero = 0;
    workerMicrotask(&Gtid, &Zero, &L);
    return;
  }
  // One libomp team per device thread (a team, not a parallel region: the
  // kernel may run inside the host program's parallel region on ours-host).
  Omp.PushNumTeams(Loc, Gtid, int32_t(Workers), 1);
  Omp.ForkTeams(Loc, 1, reinterpret_cast<Microtask>(&workerMicrotask), &L);
}

/// A thread of a GPU image's bare kernel: calls the kernel.
void gpuKernelBody(int32_t *, int32_t *, void **Argv) {
  const auto *R = reinterpret_cast<const ompsim_kernel_launch *>(Argv);
  R->invoke(R->invoke_context);
}

} // namespace

void runGpuKernel(const ompsim_kernel_launch &R) {
  runGrid(runtimeIdent(), R, &gpuKernelBody,
          reinterpret_cast<void **>(const_cast<ompsim_kernel_launch *>(&R)), R.gpu_warp_size);
}

} // namespace ompsim::device::bare

OMPSIM_DEVICE_API void __ompsim_bare_fork_teams(void *Loc, ompsim_bare_body Body, void **Argv) {
  const Libomp &Omp = Libomp::get();
  auto *Ident = Loc ? static_cast<ompsim::device::Ident *>(Loc) : runtimeIdent();
  const ThreadPlace &Place = currentPlace();
  if (!Place.Launch) {
    // The teams clang's kernel pushed before this call.
    Omp.ForkTeams(Ident, 2, reinterpret_cast<Microtask>(&bare::fallbackTeamMicrotask), Body, Argv);
    return;
  }
  // Warps of NVIDIA's 32 lanes (DeviceRTL's default for nvptx64).
  bare::runGrid(Ident, *Place.Launch->Request, Body, Argv, 32);
}

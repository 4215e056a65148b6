// Unit tests of the simulated GPU's hardware (vgpu/VirtualGpu.cpp over the
// block runner): warps in lockstep at their collectives, lanes that finished
// or wait at the block's barrier out of a warp's running lanes, the block's
// barrier counting finished threads out, a block's own state, the line
// that names the program barriers a block's threads wait at apart, and
// blocks run as loops and in rounds.
#include "../vgpu/VirtualGpu.h"

#include "ompsim/device_runtime.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <set>
#include <string>

namespace {

constexpr uint32_t GridBlocks = 3, BlockThreads = 96, Warp = 32;

struct Results {
  int32_t Shuffled[GridBlocks][BlockThreads];
  uint64_t Ballot[GridBlocks][BlockThreads];
  uint64_t MaskAfterExits[GridBlocks][BlockThreads];
  int BlockStateSeen[GridBlocks][BlockThreads];
  std::atomic<int> EarlyPasses{0};
  int Arrived[GridBlocks][BlockThreads];
  /// The registers read from the fiber's slot, and whether the frame lies
  /// in the process's slots and the runtime's call agrees.
  uint32_t Ids[GridBlocks][BlockThreads][4];
  bool SameAsCall[GridBlocks][BlockThreads];
};

Results *R;

/// Every thread of the grid: lanes do different amounts of work before each
/// collective, which must still meet in lockstep.
void laneKernel(void *) {
  const ompsim::vgpu::LaneRegisters &Regs = ompsim::vgpu::laneRegisters();
  uint32_t B = Regs.BlockId[0], T = Regs.ThreadId[0];
  uint32_t Lane = Regs.LaneId;
  R->Ids[B][T][0] = Regs.BlockDim[0];
  R->Ids[B][T][1] = Regs.GridDim[0];
  R->Ids[B][T][2] = Regs.WarpSize;
  R->Ids[B][T][3] = Regs.ThreadId[1] + Regs.BlockId[1] + Regs.BlockDim[1] + Regs.GridDim[2];
  // The fiber's frame lies in the process's slots, so the read took no call.
  uintptr_t Frame = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  R->SameAsCall[B][T] = &Regs == __ompsim_vgpu_registers() &&
                        Frame - __ompsim_vgpu_fiber_slots.Base < __ompsim_vgpu_fiber_slots.Size;
  for (uint32_t Spin = 0; Spin < Lane % 5; ++Spin)
    __ompsim_vgpu_pause(); // lanes reach the shuffle at different turns
  R->Shuffled[B][T] = __ompsim_vgpu_shuffle(~0ULL, int32_t(1000 * B + T), (Lane + 1) % Warp);
  R->Ballot[B][T] = __ompsim_vgpu_ballot(~0ULL, Lane % 3 == 0);
  // The block's state is the block's own.
  auto *State = static_cast<uint32_t *>(__ompsim_vgpu_block_state(64));
  if (T == 0)
    *State = B + 1;
  R->Arrived[B][T] = 1;
  __ompsim_vgpu_sync_block();
  for (uint32_t Other = 0; Other < BlockThreads; ++Other)
    if (!R->Arrived[B][Other])
      R->EarlyPasses.fetch_add(1);
  R->BlockStateSeen[B][T] = int(*State);
  __ompsim_vgpu_sync_block();
  // The odd lanes of the first warp finish; the even ones meet at a warp
  // barrier of the whole warp's mask, which their finished lanes leave.
  if (T < Warp && T % 2)
    return;
  if (T < Warp) {
    __ompsim_vgpu_sync_warp(~0ULL);
    R->MaskAfterExits[B][T] = __ompsim_vgpu_active_mask();
  }
  // Finished lanes do not count at the block's barrier.
  __ompsim_vgpu_sync_block();
}

} // namespace

TEST(VirtualGpuTest, WarpsMeetInLockstepAndBarriersCountTheThreadsThatRun) {
  R = new Results{};
  ompsim_kernel_launch Launch{};
  Launch.num_teams = GridBlocks;
  Launch.thread_limit = BlockThreads;
  Launch.bare_workers = 2;
  Launch.invoke = &laneKernel;
  Launch.gpu_warp_size = Warp;
  Launch.bare = 1;
  ASSERT_EQ(__ompsim_device_run_kernel(&Launch), 0);
  for (uint32_t B = 0; B < GridBlocks; ++B)
    for (uint32_t T = 0; T < BlockThreads; ++T) {
      uint32_t Base = T - T % Warp, Lane = T % Warp;
      EXPECT_EQ(R->Shuffled[B][T], int32_t(1000 * B + Base + (Lane + 1) % Warp)) << B << " " << T;
      EXPECT_EQ(R->Ballot[B][T], 0x9249249249249249ULL & 0xffffffffULL) << B << " " << T;
      EXPECT_EQ(R->BlockStateSeen[B][T], int(B + 1)) << B << " " << T;
      EXPECT_EQ(R->Ids[B][T][0], BlockThreads);
      EXPECT_EQ(R->Ids[B][T][1], GridBlocks);
      EXPECT_EQ(R->Ids[B][T][2], Warp);
      EXPECT_EQ(R->Ids[B][T][3], 0u + 0u + 1u + 1u);
      EXPECT_TRUE(R->SameAsCall[B][T]) << B << " " << T;
      // Never a finished lane; the first lane to run after the barrier sees
      // every lane that met it (the others then see fewer, as lanes ahead of
      // them wait at the block's barrier).
      if (T < Warp && T % 2 == 0) {
        EXPECT_EQ(R->MaskAfterExits[B][T] & 0xaaaaaaaaULL, 0u) << B << " " << T;
        EXPECT_NE(R->MaskAfterExits[B][T] & (1ULL << T), 0u) << B << " " << T;
      }
    }
  for (uint32_t B = 0; B < GridBlocks; ++B)
    EXPECT_EQ(R->MaskAfterExits[B][0], 0x55555555ULL) << B;
  EXPECT_EQ(R->EarlyPasses.load(), 0);
  delete R;
}

TEST(VirtualGpuTest, RegistersOutsideABlockAreThoseOfAThreadAlone) {
  // The test's own stack is no fiber's: the read goes to the call, which
  // answers as for a block of one thread.
  const ompsim::vgpu::LaneRegisters &Regs = ompsim::vgpu::laneRegisters();
  EXPECT_EQ(&Regs, __ompsim_vgpu_registers());
  EXPECT_EQ(Regs.ThreadId[0], 0u);
  EXPECT_EQ(Regs.BlockDim[0], 1u);
  EXPECT_EQ(Regs.GridDim[2], 1u);
  EXPECT_EQ(Regs.WarpSize, 32u);
  EXPECT_EQ(Regs.BlockState, nullptr);
}

namespace {

using ompsim::vgpu::BarrierSite;

/// Two program barriers and a launch of one block of four threads whose
/// threads 0-1 meet the first and 2-3 the second.
BarrierSite FirstSite, SecondSite;
std::atomic<int> PassedApart{0};

void apartKernel(void *) {
  const BarrierSite &Site = ompsim::vgpu::laneRegisters().ThreadId[0] < 2 ? FirstSite : SecondSite;
  __ompsim_vgpu_sync_block_at(&Site);
  PassedApart.fetch_add(1);
}

int runApart() {
  ompsim_kernel_launch Launch{};
  Launch.num_teams = 1;
  Launch.thread_limit = 4;
  Launch.bare_workers = 1;
  Launch.invoke = &apartKernel;
  Launch.gpu_warp_size = Warp;
  Launch.bare = 1;
  return __ompsim_device_run_kernel(&Launch);
}

const char *const CodeA = "a", *const CodeB = "b";

/// libomp's registration files in /dev/shm of processes that have exited.
std::set<std::string> registrationsOfExitedProcesses() {
  std::set<std::string> Found;
  DIR *Dir = ::opendir("/dev/shm");
  if (!Dir)
    return Found;
  while (const dirent *Entry = ::readdir(Dir)) {
    int Pid = 0;
    if (std::sscanf(Entry->d_name, "__KMP_REGISTERED_LIB_%d_", &Pid) == 1 && ::kill(Pid, 0) != 0 &&
        errno == ESRCH)
      Found.insert(Entry->d_name);
  }
  ::closedir(Dir);
  return Found;
}

} // namespace

TEST(VirtualGpuDeathTest, ThreadsAtDifferentBarriersEndTheLaunchNamingEachAndItsThreads) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The launch runs on libomp's threads: each stop ends a process libomp
  // registered, whose file the stop must remove.
  std::set<std::string> Before = registrationsOfExitedProcesses();
  FirstSite = {CodeA, ";f.c;k;3;5;;", BarrierSite::Construct, 0x20};
  SecondSite = {CodeB, ";f.c;k;7;9;;", BarrierSite::Construct, 0x40};
  EXPECT_EXIT(
      runApart(), testing::ExitedWithCode(1),
      "ompsim: device runtime: block 0: its threads wait at different barriers, which a GPU hangs on or "
      "passes wrongly: threads 0-1 wait at the barrier at f.c:3:5; threads 2-3 wait at the implicit "
      "barrier at f.c:7:9; every thread of a team must meet the same barriers in the same order\n");
  // Without a source location (no -g) the call names each.
  FirstSite = {CodeA, ";unknown;unknown;0;0;;", BarrierSite::Construct, 0x20};
  SecondSite = {CodeB, ";unknown;unknown;0;0;;", BarrierSite::Construct, 0x20};
  EXPECT_EXIT(runApart(), testing::ExitedWithCode(1),
              "threads 0-1 wait at the barrier called from 0x[0-9a-f]+ \\(build with -g to name its line\\); "
              "threads 2-3 wait at the barrier called from 0x[0-9a-f]+ \\(build");
  // The end of a region and ompx_sync_block.
  FirstSite = {CodeA, ";f.c;k;3;5;;", BarrierSite::RegionEnd, 0};
  SecondSite = {CodeB, nullptr, BarrierSite::BlockBarrier, 0};
  EXPECT_EXIT(runApart(), testing::ExitedWithCode(1),
              "threads 0-1 wait at the end of the parallel region at f.c:3:5; threads 2-3 wait at "
              "ompx_sync_block called from 0x[0-9a-f]+; every");
  for (const std::string &Name : registrationsOfExitedProcesses())
    EXPECT_TRUE(Before.count(Name)) << "a stopped launch left /dev/shm/" << Name;
}

TEST(VirtualGpuTest, OneConstructTheCompilerCopiedIsOneBarrier) {
  // Two calls of one construct's source location: one barrier.
  FirstSite = {CodeA, ";f.c;k;3;5;;", BarrierSite::Construct, 0x20};
  SecondSite = {CodeB, ";f.c;k;3;5;;", BarrierSite::Construct, 0x20};
  PassedApart = 0;
  ASSERT_EQ(runApart(), 0);
  EXPECT_EQ(PassedApart.load(), 4);
  // One call without a location: one barrier.
  FirstSite = SecondSite = {CodeA, ";unknown;unknown;0;0;;", BarrierSite::Construct, 0x20};
  PassedApart = 0;
  ASSERT_EQ(runApart(), 0);
  EXPECT_EQ(PassedApart.load(), 4);
}

namespace {

/// Blocks of 2 x 48 threads (two dimensions, warps of 32) that run as
/// loops: what each block's kernel and each region's threads saw.
constexpr uint32_t LoopBlocks = 2, LoopX = 2, LoopY = 48, LoopThreads = LoopX * LoopY;

struct LoopResults {
  std::atomic<int> KernelStarts[LoopBlocks];
  bool RunsAsLoops[LoopBlocks];
  /// Each region's threads, in the order they ran, with the ids they read.
  uint32_t Order[LoopBlocks][2][LoopThreads];
  uint32_t Seen[LoopBlocks][2][LoopThreads][4];
  uint32_t Ran[LoopBlocks][2];
  uint32_t AfterRegions[LoopBlocks][2];
};

LoopResults *L;

void loopThread(void *Context, uint32_t T) {
  const ompsim::vgpu::LaneRegisters &Regs = ompsim::vgpu::laneRegisters();
  uint32_t B = Regs.BlockId[0], Region = *static_cast<int *>(Context);
  uint32_t &N = L->Ran[B][Region];
  L->Order[B][Region][N] = T;
  L->Seen[B][Region][N][0] = Regs.ThreadId[0];
  L->Seen[B][Region][N][1] = Regs.ThreadId[1];
  L->Seen[B][Region][N][2] = Regs.LaneId;
  L->Seen[B][Region][N][3] = Regs.BlockDim[1];
  ++N;
}

void loopKernel(void *) {
  uint32_t B = ompsim::vgpu::laneRegisters().BlockId[0];
  L->KernelStarts[B].fetch_add(1);
  __ompsim_vgpu_run_as_loops();
  L->RunsAsLoops[B] = __ompsim_vgpu_block_runs_as_loops() != 0;
  // As a generic-mode kernel's main thread: thread 5 (x 1, y 2) from here on.
  __ompsim_vgpu_run_as_thread(5);
  int Regions[2] = {0, 1};
  __ompsim_vgpu_for_each_thread(LoopThreads, &loopThread, &Regions[0]);
  // A region of fewer threads than the block (num_threads).
  __ompsim_vgpu_for_each_thread(5, &loopThread, &Regions[1]);
  const ompsim::vgpu::LaneRegisters &Regs = ompsim::vgpu::laneRegisters();
  L->AfterRegions[B][0] = Regs.ThreadId[0] + Regs.ThreadId[1];
  L->AfterRegions[B][1] = Regs.LaneId;
}

int runLoops(void (*Kernel)(void *)) {
  ompsim_kernel_launch Launch{};
  Launch.num_teams = LoopBlocks;
  Launch.thread_limit = LoopX;
  Launch.thread_limit_yz[0] = LoopY;
  Launch.bare_workers = 2;
  Launch.invoke = Kernel;
  Launch.gpu_warp_size = Warp;
  Launch.bare = 1;
  return __ompsim_device_run_kernel(&Launch);
}

void barrierInLoopsKernel(void *) {
  __ompsim_vgpu_run_as_loops();
  int Region = 0;
  __ompsim_vgpu_for_each_thread(
      LoopThreads,
      [](void *, uint32_t T) {
        if (T == 3)
          __ompsim_vgpu_sync_block();
      },
      &Region);
}

} // namespace

TEST(VirtualGpuTest, ABlockThatRunsAsLoopsRunsEachRegionsThreadsInTurnWithTheirIds) {
  L = new LoopResults{};
  ASSERT_EQ(runLoops(&loopKernel), 0);
  for (uint32_t B = 0; B < LoopBlocks; ++B) {
    // Thread 0 alone ran the kernel; the others ran only their regions.
    EXPECT_EQ(L->KernelStarts[B].load(), 1) << B;
    EXPECT_TRUE(L->RunsAsLoops[B]) << B;
    ASSERT_EQ(L->Ran[B][0], LoopThreads) << B;
    ASSERT_EQ(L->Ran[B][1], 5u) << B;
    for (uint32_t Region = 0; Region < 2; ++Region)
      for (uint32_t N = 0; N < L->Ran[B][Region]; ++N) {
        EXPECT_EQ(L->Order[B][Region][N], N);
        EXPECT_EQ(L->Seen[B][Region][N][0], N % LoopX) << B << " " << N;
        EXPECT_EQ(L->Seen[B][Region][N][1], N / LoopX) << B << " " << N;
        EXPECT_EQ(L->Seen[B][Region][N][2], N % Warp) << B << " " << N;
        EXPECT_EQ(L->Seen[B][Region][N][3], LoopY);
      }
    // Back to the ids of the thread the code went on as, after the regions.
    EXPECT_EQ(L->AfterRegions[B][0], 1u + 2u);
    EXPECT_EQ(L->AfterRegions[B][1], 5u);
  }
  delete L;
}

TEST(VirtualGpuDeathTest, ABarrierInABlockThatRunsAsLoopsEndsTheLaunchNamingIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      runLoops(&barrierInLoopsKernel), testing::ExitedWithCode(1),
      "ompsim: device runtime: block [01] runs as loops, and its thread 3 meets a block barrier, which "
      "the executor found it never does: set OMPSIM_GPU_BLOCK_LOOPS=0");
}

namespace {

/// A thread's run of a kernel split at its block barriers: a coroutine
/// whose frame is the virtual GPU's (runtime/device/vgpu/BlockLoops.cpp).
struct RoundRun {
  // The names C++ gives a coroutine's promise and its members.
  // NOLINTBEGIN(readability-identifier-naming)
  struct promise_type {
    static void *operator new(size_t Bytes) {
      return __ompsim_vgpu_round_frame(Bytes, alignof(std::max_align_t));
    }
    static void operator delete(void *) {} // the block's, until its end
    RoundRun get_return_object() { return {std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::terminate(); }
  };
  // NOLINTEND(readability-identifier-naming)
  std::coroutine_handle<promise_type> Handle;
};

/// What each block's threads did, in the order they did it: the thread,
/// the round, and the ids it read.
struct RoundLog {
  uint32_t Steps[LoopBlocks];
  uint32_t Step[LoopBlocks][3 * LoopThreads][4];
};

RoundLog *Log;
bool DivergeInRounds = false;

/// Thread T meets T % 3 barriers, then finishes; each of its steps reads its
/// ids afresh (another thread ran in between).
RoundRun roundThread(const BarrierSite **Site) {
  for (uint32_t Round = 0;; ++Round) {
    const ompsim::vgpu::LaneRegisters &Regs = ompsim::vgpu::laneRegisters();
    uint32_t B = Regs.BlockId[0], T = Regs.ThreadId[0] + LoopX * Regs.ThreadId[1];
    uint32_t (&Step)[4] = Log->Step[B][Log->Steps[B]++];
    Step[0] = T;
    Step[1] = Round;
    Step[2] = Regs.LaneId;
    Step[3] = Regs.ThreadId[0];
    if (Round == T % 3)
      co_return;
    *Site = DivergeInRounds && T % 2 ? &SecondSite : &FirstSite;
    co_await std::suspend_always{};
  }
}

void *startRoundThread(void *Site) {
  return roundThread(static_cast<const BarrierSite **>(Site)).Handle.address();
}

void roundKernel(void *) {
  const BarrierSite *Site = nullptr;
  __ompsim_vgpu_run_in_rounds(&startRoundThread, &Site, &Site);
}

} // namespace

TEST(VirtualGpuTest, ABlockRunInRoundsRunsEachThreadToItsNextBarrierInThreadOrder) {
  Log = new RoundLog{};
  FirstSite = {CodeA, nullptr, BarrierSite::BlockBarrier, 0};
  DivergeInRounds = false;
  ASSERT_EQ(runLoops(&roundKernel), 0);
  for (uint32_t B = 0; B < LoopBlocks; ++B) {
    // As fibers: every thread to its first barrier or its end, then, round
    // by round, those that wait, in thread order, with their own ids.
    uint32_t N = 0;
    for (uint32_t Round = 0; Round < 3; ++Round)
      for (uint32_t T = 0; T < LoopThreads; ++T) {
        if (T % 3 < Round)
          continue;
        ASSERT_LT(N, Log->Steps[B]);
        EXPECT_EQ(Log->Step[B][N][0], T) << B << " " << N;
        EXPECT_EQ(Log->Step[B][N][1], Round) << B << " " << N;
        EXPECT_EQ(Log->Step[B][N][2], T % Warp) << B << " " << N;
        EXPECT_EQ(Log->Step[B][N][3], T % LoopX) << B << " " << N;
        ++N;
      }
    EXPECT_EQ(Log->Steps[B], N) << B;
  }
  delete Log;
}

TEST(VirtualGpuDeathTest, ThreadsOfARoundAtDifferentBarriersEndTheLaunchNamingEach) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Log = new RoundLog{};
  FirstSite = {CodeA, ";f.c;k;3;5;;", BarrierSite::BlockBarrier, 0};
  SecondSite = {CodeB, ";f.c;k;7;9;;", BarrierSite::BlockBarrier, 0};
  DivergeInRounds = true;
  EXPECT_EXIT(
      runLoops(&roundKernel), testing::ExitedWithCode(1),
      "ompsim: device runtime: block [01]: its threads wait at different barriers, which a GPU hangs on "
      "or passes wrongly: threads 0, 3, 6, 9 and 28 more have finished; threads 1, 5, 7, 11 and 28 "
      "more wait at ompx_sync_block at f.c:7:9; threads 2, 4, 8, 10 and 28 more wait at "
      "ompx_sync_block at f.c:3:5; every thread");
  delete Log;
}

namespace {

/// A parallel region's thread split at its barriers: threads below 4 wait
/// at the region's barrier, the others end the region at once.
RoundRun regionThread(uint32_t T, const BarrierSite **Site) {
  if (T < 4) {
    *Site = &FirstSite;
    co_await std::suspend_always{};
  }
}

void *startRegionThread(void *, uint32_t T, const BarrierSite **Site) {
  return regionThread(T, Site).Handle.address();
}

BarrierSite RegionEndSite;

void regionRoundsKernel(void *) {
  __ompsim_vgpu_run_as_loops();
  // A region of 8 threads whose barriers count them; 50 of the block's
  // threads wait outside it, the rest finished.
  const ompsim::vgpu::RoundEnd End = {&RegionEndSite, 8, 50};
  __ompsim_vgpu_for_each_thread_in_rounds(8, &startRegionThread, nullptr, &End);
}

} // namespace

TEST(VirtualGpuDeathTest, ARegionsThreadThatEndsItWhileOthersWaitInARoundIsNamedAsWithFibers) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  FirstSite = {CodeA, ";f.c;k;3;5;;", BarrierSite::Construct, 0};
  RegionEndSite = {CodeB, ";f.c;k;1;1;;", BarrierSite::RegionEnd, 0};
  EXPECT_EXIT(
      runLoops(&regionRoundsKernel), testing::ExitedWithCode(1),
      "ompsim: device runtime: block [01]: a barrier can never complete: threads 0-3 wait at the barrier "
      "at f.c:3:5 \\(a barrier of 8 threads\\); threads 4-7 wait at the end of the parallel region at "
      "f.c:1:1; threads 8-49 wait at a barrier of the GPU device runtime; threads 50-95 have finished");
}

// Unit tests of the GPU device-runtime ABI in libompsim-device: launches over
// teams, parallel regions and the static loop entry points, called the way
// flang-22's device code calls them, on libomp's teams and threads.
#include "DeviceTestSupport.h"
#include "ompsim/device_runtime.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <set>
#include <vector>

using ompsim::test::entry;

#define OMPSIM_ENTRY(NAME, TYPE) static const auto NAME##Fn = entry<TYPE>(#NAME)

OMPSIM_ENTRY(__kmpc_for_static_loop_4,
             void (*)(void *, void (*)(int32_t, void *), void *, int32_t, int32_t, int32_t, uint8_t));
OMPSIM_ENTRY(__kmpc_for_static_loop_8u,
             void (*)(void *, void (*)(uint64_t, void *), void *, uint64_t, uint64_t, uint64_t, uint8_t));
OMPSIM_ENTRY(__kmpc_distribute_static_loop_4u,
             void (*)(void *, void (*)(uint32_t, void *), void *, uint32_t, uint32_t, uint8_t));
OMPSIM_ENTRY(__kmpc_distribute_for_static_loop_8, void (*)(void *, void (*)(int64_t, void *), void *, int64_t,
                                                           int64_t, int64_t, int64_t, uint8_t));
OMPSIM_ENTRY(__kmpc_parallel_60,
             void (*)(void *, int32_t, int32_t, int32_t, int32_t, void *, void *, void **, int64_t, int32_t));
OMPSIM_ENTRY(__kmpc_alloc_shared, void *(*)(uint64_t));
OMPSIM_ENTRY(__kmpc_free_shared, void (*)(void *, uint64_t));

namespace {

constexpr int kIters = 103;

/// libomp caps teams x threads and a team's threads at the machine's CPUs;
/// the expectations below need 2 teams of 2 threads whatever the machine.
/// Set before libomp initializes (at the first OpenMP call, in a test).
[[maybe_unused]] const bool LibompLimitsRaised = [] {
  setenv("KMP_TEAMS_THREAD_LIMIT", "64", 0);
  setenv("OMP_NUM_THREADS", "4", 0);
  return true;
}();

/// Which thread (or team * 100 + thread) ran each iteration, and how often.
struct Record {
  std::atomic<int> Hits[kIters];
  std::atomic<int> Owner[kIters];
  Record() {
    for (int I = 0; I < kIters; ++I) {
      Hits[I] = 0;
      Owner[I] = -1;
    }
  }
};

template <typename T> void recordThread(T Iv, void *Arg) {
  auto *R = static_cast<Record *>(Arg);
  R->Hits[Iv]++;
  R->Owner[Iv] = omp_get_team_num() * 100 + omp_get_thread_num();
}

TEST(GpuAbiTest, ForLoopHandsThreadChunksRoundRobin) {
  Record R;
#pragma omp parallel num_threads(4)
  __kmpc_for_static_loop_4Fn(nullptr, recordThread<int32_t>, &R, kIters, omp_get_num_threads(), 3, 0);
  for (int I = 0; I < kIters; ++I) {
    EXPECT_EQ(R.Hits[I], 1) << I;
    EXPECT_EQ(R.Owner[I], (I / 3) % 4) << I;
  }
}

TEST(GpuAbiTest, ForLoopDefaultChunkIsOneIteration) {
  Record R;
#pragma omp parallel num_threads(3)
  __kmpc_for_static_loop_8uFn(nullptr, recordThread<uint64_t>, &R, kIters, omp_get_num_threads(), 0, 0);
  for (int I = 0; I < kIters; ++I) {
    EXPECT_EQ(R.Hits[I], 1) << I;
    EXPECT_EQ(R.Owner[I], I % 3) << I;
  }
}

TEST(GpuAbiTest, EmptyAndNegativeLoopsRunNothing) {
  Record R;
  __kmpc_for_static_loop_4Fn(nullptr, recordThread<int32_t>, &R, 0, 1, 0, 0);
  __kmpc_for_static_loop_4Fn(nullptr, recordThread<int32_t>, &R, -5, 1, 0, 0);
  for (int I = 0; I < kIters; ++I)
    EXPECT_EQ(R.Hits[I], 0);
}

TEST(GpuAbiTest, DistributeOutsideALaunchIsOneTeam) {
  Record R;
  __kmpc_distribute_static_loop_4uFn(nullptr, recordThread<uint32_t>, &R, kIters, 7, 0);
  for (int I = 0; I < kIters; ++I)
    EXPECT_EQ(R.Hits[I], 1) << I;
}

void countThreads(int32_t *, int32_t *, void *Counter, void *Ids) {
  static_cast<std::atomic<int> *>(Counter)->fetch_add(1);
  static_cast<std::atomic<int> *>(Ids)->fetch_or(1 << omp_get_thread_num());
}

TEST(GpuAbiTest, ParallelRunsEveryThreadWithItsArguments) {
  std::atomic<int> Counter{0}, Ids{0};
  void *Args[] = {&Counter, &Ids};
  __kmpc_parallel_60Fn(nullptr, omp_get_thread_num(), 1, 3, -1, reinterpret_cast<void *>(&countThreads),
                       nullptr, Args, 2, 0);
  EXPECT_EQ(Counter, 3);
  EXPECT_EQ(Ids, 0b111);
  Counter = 0;
  Ids = 0;
  // if(.false.): the encountering thread alone.
  __kmpc_parallel_60Fn(nullptr, omp_get_thread_num(), 0, 3, -1, reinterpret_cast<void *>(&countThreads),
                       nullptr, Args, 2, 0);
  EXPECT_EQ(Counter, 1);
  EXPECT_EQ(Ids, 0b1);
}

/// A kernel as flang-22 writes one: user code only where __kmpc_target_init
/// says -1; the user code is a distribute parallel do over kIters.
struct FakeKernel {
  std::atomic<int> Calls{0}, UserCode{0};
  std::mutex Mu;
  std::set<int> Teams;
  Record R;
};

void distributeForBody(int32_t *, int32_t *, void *K) {
  auto *Kernel = static_cast<FakeKernel *>(K);
  __kmpc_distribute_for_static_loop_8Fn(nullptr, recordThread<int64_t>, &Kernel->R, kIters,
                                        omp_get_num_threads(), 0, 0, 0);
}

void fakeKernel(void *Ctx) {
  auto *K = static_cast<FakeKernel *>(Ctx);
  K->Calls++;
  if (__kmpc_target_init(nullptr, nullptr) != -1)
    return;
  K->UserCode++;
  {
    std::lock_guard<std::mutex> Lock(K->Mu);
    K->Teams.insert(omp_get_team_num());
  }
  void *Args[] = {K};
  __kmpc_parallel_60Fn(nullptr, omp_get_thread_num(), 1, 2, -1, reinterpret_cast<void *>(&distributeForBody),
                       nullptr, Args, 1, 0);
  __kmpc_target_deinit();
}

TEST(GpuAbiTest, LaunchRunsEveryTeamOnceAndDistributesOverTeamsAndThreads) {
  FakeKernel K;
  ompsim_kernel_launch Launch{5, 2, 2, 0, fakeKernel, &K, {0, 0}, {0, 0}, 0, 0, 0};
  ASSERT_EQ(__ompsim_device_run_kernel(&Launch), 0);
  EXPECT_EQ(K.Calls, 3); // the launching call, then one per team
  EXPECT_EQ(K.UserCode, 2);
  EXPECT_EQ(K.Teams, (std::set<int>{0, 1}));
  // Default chunks: a block of 2 iterations per team, one per thread.
  for (int I = 0; I < kIters; ++I) {
    EXPECT_EQ(K.R.Hits[I], 1) << I;
    EXPECT_EQ(K.R.Owner[I], ((I / 2) % 2) * 100 + I % 2) << I;
  }
}

TEST(GpuAbiTest, KernelOutsideALaunchRunsItsUserCodeOnce) {
  // A launch on device 5 first (ctest runs each test in a process of its own).
  FakeKernel K;
  ompsim_kernel_launch Launch{5, 1, 1, 0, fakeKernel, &K, {0, 0}, {0, 0}, 0, 0, 0};
  ASSERT_EQ(__ompsim_device_run_kernel(&Launch), 0);
  EXPECT_EQ(__kmpc_target_init(nullptr, nullptr), -1);
  EXPECT_EQ(__ompsim_device_current_device(), 5); // the last launch's device
}

TEST(GpuAbiTest, SharedAllocationsAreDistinctAndAligned) {
  void *A = __kmpc_alloc_sharedFn(24);
  void *B = __kmpc_alloc_sharedFn(0);
  EXPECT_NE(A, B);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(A) % 16, 0u);
  __kmpc_free_sharedFn(B, 0);
  __kmpc_free_sharedFn(A, 24);
}

} // namespace

// Unit tests of ompx_bare launches in libompsim-device (bare/BareFork.cpp, on the virtual GPU of vgpu/):
// the body runs once on every thread of every block of a three-dimensional
// grid, the ompx ids answer in x, y and z, and a barrier holds every thread
// of a block until all of them reached it.
#include "DeviceTestSupport.h"
#include "ompsim/device_runtime.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

using ompsim::test::entry;

namespace {

const auto BareForkTeams = entry<void (*)(void *, ompsim_bare_body, void **)>("__ompsim_bare_fork_teams");
const auto ThreadId = entry<int (*)(int)>("ompx_thread_id");
const auto BlockId = entry<int (*)(int)>("ompx_block_id");
const auto BlockDim = entry<int (*)(int)>("ompx_block_dim");
const auto GridDim = entry<int (*)(int)>("ompx_grid_dim");
const auto SyncBlock = entry<void (*)(int)>("ompx_sync_block");
const auto ShuffleDown = entry<int (*)(uint64_t, int, unsigned, int)>("ompx_shfl_down_sync_i");
const auto GlobalThreadNum = entry<int32_t (*)(void *)>("__kmpc_global_thread_num");
const auto PushNumTeams = entry<void (*)(void *, int32_t, int32_t, int32_t)>("__kmpc_push_num_teams");

/// libomp's ident_t for the calls the test makes itself.
struct Ident {
  int32_t Reserved1, Flags, Reserved2, Reserved3;
  const char *Source;
} Loc = {0, 2, 0, 0, ";BareForkTest;unknown;0;0;;"};

constexpr int GX = 3, GY = 2, GZ = 1, BX = 4, BY = 3, BZ = 2;
constexpr int Blocks = GX * GY * GZ, Threads = BX * BY * BZ;

struct Grid {
  std::atomic<int> Runs[Blocks][Threads];
  int Ids[Blocks][Threads][6];
  int Dims[Blocks][Threads][6];
  int Arrived[Blocks][Threads];
  std::atomic<int> EarlyPasses{0}; ///< threads that passed the barrier before their block arrived
  int Shuffled[Blocks][Threads];
};

void body(int32_t *, int32_t *, void **Argv) {
  auto *G = static_cast<Grid *>(Argv[0]);
  int B = BlockId(0) + GX * (BlockId(1) + GY * BlockId(2));
  int T = ThreadId(0) + BX * (ThreadId(1) + BY * ThreadId(2));
  G->Runs[B][T].fetch_add(1);
  for (int D = 0; D < 3; ++D) {
    G->Ids[B][T][D] = BlockId(D);
    G->Ids[B][T][3 + D] = ThreadId(D);
    G->Dims[B][T][D] = GridDim(D);
    G->Dims[B][T][3 + D] = BlockDim(D);
  }
  G->Arrived[B][T] = 1;
  SyncBlock(0);
  for (int Other = 0; Other < Threads; ++Other)
    if (!G->Arrived[B][Other])
      G->EarlyPasses.fetch_add(1);
  // Segments of 8 lanes: a block of 24 threads has no lane past its own
  // segment to read (a shuffle that reads one ends the launch, as CUDA
  // leaves its value undefined).
  G->Shuffled[B][T] = ShuffleDown(~0ULL, 100 * B + T, 1, 8);
}

struct KernelCall {
  Grid *G;
};

void kernel(void *Ctx) {
  void *Argv[1] = {static_cast<KernelCall *>(Ctx)->G};
  BareForkTeams(nullptr, &body, Argv);
}

} // namespace

TEST(BareForkTest, EveryThreadOfEveryBlockRunsTheBodyOnceInThreeDimensions) {
  auto *G = new Grid{};
  KernelCall Call{G};
  ompsim_kernel_launch Launch{5, GX, BX, 0, &kernel, &Call, {GY, GZ}, {BY, BZ}, 0, 0, 0};
  ASSERT_EQ(__ompsim_device_run_kernel(&Launch), 0);
  for (int B = 0; B < Blocks; ++B)
    for (int T = 0; T < Threads; ++T) {
      EXPECT_EQ(G->Runs[B][T].load(), 1) << B << " " << T;
      EXPECT_EQ(G->Ids[B][T][0], B % GX);
      EXPECT_EQ(G->Ids[B][T][1], B / GX % GY);
      EXPECT_EQ(G->Ids[B][T][2], B / (GX * GY));
      EXPECT_EQ(G->Ids[B][T][3], T % BX);
      EXPECT_EQ(G->Ids[B][T][4], T / BX % BY);
      EXPECT_EQ(G->Ids[B][T][5], T / (BX * BY));
      int Expected[6] = {GX, GY, GZ, BX, BY, BZ};
      for (int D = 0; D < 6; ++D)
        EXPECT_EQ(G->Dims[B][T][D], Expected[D]);
      // The last lane of each segment of 8 keeps its own value.
      EXPECT_EQ(G->Shuffled[B][T], 100 * B + (T % 8 + 1 < 8 ? T + 1 : T));
    }
  EXPECT_EQ(G->EarlyPasses.load(), 0);
  delete G;
}

namespace {
std::atomic<int> OncePerTeam{0};
void countBody(int32_t *, int32_t *, void **) { OncePerTeam.fetch_add(1); }
} // namespace

TEST(BareForkTest, OutsideAnOmpsimLaunchTheBodyRunsOncePerTeamAsClangsKernelDoes) {
  // Stock's host plugin calls the kernel itself: no ompsim launch, so the
  // teams the kernel pushed run the body once each.
  PushNumTeams(&Loc, GlobalThreadNum(&Loc), 2, 1);
  BareForkTeams(&Loc, &countBody, nullptr);
  EXPECT_EQ(OncePerTeam.load(), 2);
}

namespace {
void noBody(int32_t *, int32_t *, void **) {}
void bigKernel(void *) { BareForkTeams(nullptr, &noBody, nullptr); }
} // namespace

TEST(BareForkDeathTest, ABlockOfMoreThan1024ThreadsEndsWithOneLine) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ompsim_kernel_launch Launch{0, 1, 64, 0, &bigKernel, nullptr, {0, 0}, {32, 1}, 0, 0, 0};
  EXPECT_EXIT(__ompsim_device_run_kernel(&Launch), testing::ExitedWithCode(1),
              "launch on the virtual GPU: more threads in a block than the device's 1024 \\(2048\\)");
}

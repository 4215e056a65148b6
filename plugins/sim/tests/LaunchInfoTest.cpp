// The sim plugin's launch geometry and stock's launch line (LaunchInfo.h), without a device.
#include "../LaunchInfo.h"

#include "ompsim/StockPluginInfo.h"

#include "llvm/Frontend/OpenMP/OMPDeviceConstants.h"

#include <gtest/gtest.h>

using namespace ompsim::sim;

namespace {

LaunchDefaults twoCpus() {
  LaunchDefaults D;
  D.Processors = 2;
  D.ThreadBudget = 256;
  return D;
}

KernelConfiguration flangKernel(int32_t MaxTeams, int32_t MaxThreads) {
  KernelConfiguration C;
  C.ExecMode = llvm::omp::OMP_TGT_EXEC_MODE_SPMD;
  C.MaxTeams = MaxTeams;
  C.MaxThreads = MaxThreads;
  return C;
}

} // namespace

TEST(LaunchInfoTest, ClausesAreHonouredUpToTheBudgetSharedByTheTeams) {
  LaunchShape S = launchShape(3, 5, std::nullopt, twoCpus());
  EXPECT_EQ(S.Blocks[0], 3u);
  EXPECT_EQ(S.Threads[0], 5u);
  S = launchShape(64, 32, std::nullopt, twoCpus()); // 256 / 64 = 4 each
  EXPECT_EQ(S.Blocks[0], 64u);
  EXPECT_EQ(S.Threads[0], 4u);
  S = launchShape(1024, 1, std::nullopt, twoCpus()); // never below one thread
  EXPECT_EQ(S.Threads[0], 1u);
}

TEST(LaunchInfoTest, UnspecifiedIsLibompsDefault) {
  LaunchShape S = launchShape(0, 0, std::nullopt, twoCpus());
  EXPECT_EQ(S.Blocks[0], 1u);
  EXPECT_EQ(S.Threads[0], 2u); // the CPUs
  LaunchDefaults D = twoCpus();
  D.NumTeams = 2;
  D.TeamsThreadLimit = 1;
  S = launchShape(0, 0, std::nullopt, D);
  EXPECT_EQ(S.Blocks[0], 2u);
  EXPECT_EQ(S.Threads[0], 1u);
  D = twoCpus();
  D.NumThreads = 3; // the user's OMP_NUM_THREADS caps a team instead of the budget
  S = launchShape(2, 8, std::nullopt, D);
  EXPECT_EQ(S.Threads[0], 3u);
}

TEST(LaunchInfoTest, AKernelEnvironmentGivesTeamsAndThreads) {
  // flang's num_teams(4) thread_limit(6) live in the kernel environment only.
  LaunchShape S = launchShape(0, 0, flangKernel(4, 6), twoCpus());
  EXPECT_EQ(S.Blocks[0], 4u);
  EXPECT_EQ(S.Threads[0], 6u);
  // MaxThreads 256 is OpenMPIRBuilder's default, not a clause; OMP_NUM_TEAMS is not read then.
  LaunchDefaults D = twoCpus();
  D.NumTeams = 7;
  S = launchShape(0, 0, flangKernel(-1, 256), D);
  EXPECT_EQ(S.Blocks[0], 1u);
  EXPECT_EQ(S.Threads[0], 2u);
}

TEST(LaunchInfoTest, ABareKernelRunsItsGridAndBlocksAsAsked) {
  // No budget, no cap: every thread of every block, in three dimensions.
  KernelConfiguration Bare;
  Bare.ExecMode = uint8_t(llvm::omp::OMP_TGT_EXEC_MODE_BARE);
  ompsim::LaunchOptions YZ;
  YZ.TeamsYZ[0] = 16;
  YZ.ThreadsYZ[0] = 4;
  YZ.ThreadsYZ[1] = 2;
  LaunchShape S = launchShape(64, 32, Bare, twoCpus(), YZ);
  EXPECT_EQ(S.Blocks[0], 64u);
  EXPECT_EQ(S.Blocks[1], 16u);
  EXPECT_EQ(S.Blocks[2], 1u);
  EXPECT_EQ(S.Threads[0], 32u);
  EXPECT_EQ(S.Threads[1], 4u);
  EXPECT_EQ(S.Threads[2], 2u);
  EXPECT_TRUE(isBare(Bare));
  // The same extents for a kernel in another mode: x only, capped as before.
  EXPECT_FALSE(isBare(std::nullopt));
  S = launchShape(64, 32, std::nullopt, twoCpus(), YZ);
  EXPECT_EQ(S.Blocks[1], 1u);
  EXPECT_EQ(S.Threads[0], 4u);
}

TEST(LaunchInfoTest, ModeNamesAreStocks) {
  using namespace llvm::omp;
  EXPECT_STREQ(executionModeName(std::nullopt), "Generic");
  KernelConfiguration C;
  for (auto [Mode, Name] : {std::pair{OMP_TGT_EXEC_MODE_SPMD, "SPMD"},
                            {OMP_TGT_EXEC_MODE_GENERIC, "Generic"},
                            {OMP_TGT_EXEC_MODE_GENERIC_SPMD, "Generic-SPMD"},
                            {OMP_TGT_EXEC_MODE_BARE, "BARE"},
                            {OMP_TGT_EXEC_MODE_SPMD_NO_LOOP, "SPMD-No-Loop"}}) {
    C.ExecMode = uint8_t(Mode);
    EXPECT_STREQ(executionModeName(C), Name);
  }
}

TEST(LaunchInfoTest, LineIsStocksWordForWord) {
  EXPECT_EQ(
      ompsim::stock_plugin::launchLine(0, "__omp_offloading_fe00_1_main_l5", 3, 5, "Generic"),
      "\"PluginInterface\" device 0 info: Launching kernel __omp_offloading_fe00_1_main_l5 with [3,1,1] "
      "blocks and [5,1,1] threads in Generic mode");
}

TEST(LaunchInfoTest, AGpuGridComesFromTheTripCountAsStocksPluginsChooseIt) {
  constexpr uint8_t Spmd = llvm::omp::OMP_TGT_EXEC_MODE_SPMD, Generic = llvm::omp::OMP_TGT_EXEC_MODE_GENERIC;
  LaunchDefaults D = twoCpus();
  auto Grid = [&](uint64_t TripCount, uint32_t Threads, bool FromUser, uint8_t Mode, uint32_t Warp = 32) {
    GpuGrid G = gpuGrid(TripCount, Threads, FromUser, Mode, Warp, D);
    return std::make_pair(G.Blocks, G.Threads);
  };
  // Few iterations: the minimum threads a block (32), more blocks.
  EXPECT_EQ(Grid(128, 128, false, Spmd), std::make_pair(4u, 32u));
  EXPECT_EQ(Grid(129, 128, false, Spmd), std::make_pair(5u, 32u));
  // A thread_limit of the user's is kept.
  EXPECT_EQ(Grid(128, 4, true, Spmd), std::make_pair(32u, 4u));
  EXPECT_EQ(Grid(1024, 256, true, Spmd), std::make_pair(4u, 256u));
  // Between: the default blocks' share of the iterations rounded up to a power of
  // two (40 -> 64) threads a block.
  EXPECT_EQ(Grid(3200 * 40, 128, false, Spmd), std::make_pair(2000u, 64u));
  // Many: a block per 128 iterations, at most the default 3200 blocks
  // (440 on AMD's GPU) unless the blocks are not to be reused.
  EXPECT_EQ(Grid(819200, 128, false, Spmd), std::make_pair(3200u, 128u));
  EXPECT_EQ(Grid(819200, 256, false, Spmd, 64), std::make_pair(440u, 256u));
  D.ReuseBlocksForHighTripCount = false;
  EXPECT_EQ(Grid(819200, 128, false, Spmd), std::make_pair(6400u, 128u));
  D.ReuseBlocksForHighTripCount = true;
  D.MinThreadsForLowTripCount = 8;
  EXPECT_EQ(Grid(128, 128, false, Spmd), std::make_pair(16u, 8u));
  // A generic kernel: a block per iteration of its distribute loop.
  EXPECT_EQ(Grid(100, 128, false, Generic), std::make_pair(100u, 128u));
  // No trip count: the default blocks, within OMP_NUM_TEAMS.
  EXPECT_EQ(Grid(0, 128, false, Generic), std::make_pair(3200u, 128u));
  D.NumTeams = 7;
  EXPECT_EQ(Grid(0, 128, false, Generic), std::make_pair(7u, 128u));
}

TEST(LaunchInfoTest, AGpuImagesBlocksOnFibersKeepTheirThreads) {
  // On fibers (OMPSIM_GPU_FIBERS) they run in waves, not all at once: the device's thread
  // budget is not shared among them.
  ompsim::LaunchOptions Options;
  Options.GpuWarpSize = 32;
  Options.Bare = true;
  KernelConfiguration Spmd = flangKernel(0, 128);
  LaunchShape S = launchShape(3200, 128, Spmd, twoCpus(), Options);
  EXPECT_EQ(S.Blocks[0], 3200u);
  EXPECT_EQ(S.Threads[0], 128u);
}

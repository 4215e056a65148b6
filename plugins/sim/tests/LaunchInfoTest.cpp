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

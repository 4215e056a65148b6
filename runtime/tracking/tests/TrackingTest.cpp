//===- TrackingTest.cpp - stock's allocation and kernel launch traces -----===//
#include "../AllocationTraces.h"
#include "../KernelLaunchTraces.h"
#include "../StackTraces.h"

#include "ompsim/plugin_api.h"

#include "llvm/ADT/StringExtras.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>

using namespace ompsim::tracking;

namespace {

/// The lines of `Text` that are not stack traces': neither a frame,
/// symbolized ("    #0 0x...") or not ("0  libLLVM.so.22.1 0x..."), nor the
/// note LLVM starts an unsymbolized trace with.
std::string withoutFrames(const std::string &Text) {
  std::string Out;
  llvm::SmallVector<llvm::StringRef> Lines;
  llvm::StringRef(Text).split(Lines, '\n');
  for (llvm::StringRef L : Lines)
    if (!L.empty() && !L.starts_with("    #") && !L.starts_with("Stack dump without symbol names") &&
        !llvm::isDigit(L.front()))
      Out += L.str() + "\n";
  return Out;
}

std::string describe(AllocationTraces &T, uint64_t Addr) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  T.describeAddress(OS, Addr);
  return withoutFrames(S);
}

class AllocationTracesTest : public ::testing::Test {
protected:
  void SetUp() override { ::setenv("LLVM_DISABLE_SYMBOLIZATION", "1", 1); }
  void TearDown() override { ::unsetenv("LLVM_DISABLE_SYMBOLIZATION"); }
};
using KernelLaunchTracesTest = AllocationTracesTest;

} // namespace

TEST_F(AllocationTracesTest, AGoodFreeIsRecordedAndASecondOneIsADoubleFree) {
  AllocationTraces T;
  T.allocated(0x1000, 100, nullptr, OMPSIM_ALLOC_DEFAULT);
  EXPECT_EQ(T.deallocating(0x1000, OMPSIM_ALLOC_DEFAULT), std::nullopt);
  std::optional<std::string> Report = T.deallocating(0x1000, OMPSIM_ALLOC_DEFAULT);
  ASSERT_TRUE(Report);
  EXPECT_EQ(withoutFrames(*Report), "OFFLOAD ERROR: double-free of device memory: 0x1000\n"
                                    "Last deallocation:\n"
                                    "Last allocation of size 100 -> device pointer 0x1000:\n");
}

TEST_F(AllocationTracesTest, AFreeOfMemoryNeverAllocatedIsNamed) {
  AllocationTraces T;
  std::optional<std::string> Report = T.deallocating(0x2000, OMPSIM_ALLOC_DEFAULT);
  ASSERT_TRUE(Report);
  EXPECT_EQ(withoutFrames(*Report), "OFFLOAD ERROR: deallocation of non-allocated device memory: 0x2000\n");
}

TEST_F(AllocationTracesTest, AFreeOfAnotherKindIsNamedButDeviceKindsAgree) {
  AllocationTraces T;
  T.allocated(0x1000, 8, nullptr, OMPSIM_ALLOC_HOST);
  std::optional<std::string> Report = T.deallocating(0x1000, OMPSIM_ALLOC_DEFAULT);
  ASSERT_TRUE(Report);
  EXPECT_EQ(
      withoutFrames(*Report),
      "OFFLOAD ERROR: deallocation requires device memory but allocation was pinned host memory: 0x1000\n"
      "Last allocation of size 8 -> device pointer 0x1000:\n");
  // omp_target_alloc's memory freed by llvm_omp_target_free_device is fine.
  T.allocated(0x3000, 8, nullptr, OMPSIM_ALLOC_DEFAULT);
  EXPECT_EQ(T.deallocating(0x3000, OMPSIM_ALLOC_DEVICE), std::nullopt);
}

TEST_F(AllocationTracesTest, AnAllocationAtAFreedAddressKeepsThePriorOnes) {
  AllocationTraces T;
  int Host = 0;
  T.allocated(0x1000, 8, nullptr, OMPSIM_ALLOC_DEFAULT);
  ASSERT_EQ(T.deallocating(0x1000, OMPSIM_ALLOC_DEFAULT), std::nullopt);
  T.allocated(0x1000, 16, &Host, OMPSIM_ALLOC_DEFAULT);
  ASSERT_EQ(T.deallocating(0x1000, OMPSIM_ALLOC_DEFAULT), std::nullopt);
  std::optional<std::string> Report = T.deallocating(0x1000, OMPSIM_ALLOC_DEFAULT);
  ASSERT_TRUE(Report);
  std::string HostText = fmt::format("{:#x}", reinterpret_cast<uintptr_t>(&Host));
  EXPECT_EQ(withoutFrames(*Report), "OFFLOAD ERROR: double-free of device memory: 0x1000\n"
                                    "Last deallocation:\n"
                                    "Last allocation of size 16 for host pointer " +
                                        HostText +
                                        " -> device pointer 0x1000:\n"
                                        "Prior allocations with the same base pointer:\n"
                                        " #0 Prior deallocation of size 8:\n"
                                        " #0 Prior allocation -> device pointer 0x1000:\n");
}

TEST_F(AllocationTracesTest, AFaultAddressNamesItsAllocationOrTheClosestOne) {
  AllocationTraces T;
  EXPECT_EQ(
      describe(T, 0x1000),
      "No host-issued allocations; device pointer 0x1000 might be a global, stack, or shared location\n");
  T.allocated(0x1000, 64, nullptr, OMPSIM_ALLOC_DEFAULT);
  T.allocated(0x100000, 64, nullptr, OMPSIM_ALLOC_DEFAULT);
  EXPECT_EQ(describe(T, 0x1010), "Device pointer 0x1010 points into host-issued allocation:\n"
                                 "Last allocation of size 64 -> device pointer 0x1000:\n");
  // Past the end: counted from the last byte, as stock counts.
  EXPECT_EQ(describe(T, 0x1044),
            "Device pointer 0x1044 does not point into any (current or prior) host-issued allocation.\n"
            "Closest host-issued allocation (distance 5 bytes; might be by page):\n"
            "Last allocation of size 64 -> device pointer 0x1000:\n");
  EXPECT_EQ(describe(T, 0xfffff),
            "Device pointer 0xfffff does not point into any (current or prior) host-issued allocation.\n"
            "Closest host-issued allocation (distance 1 byte; might be by page):\n"
            "Last allocation of size 64 -> device pointer 0x100000:\n");
  ASSERT_EQ(T.deallocating(0x1000, OMPSIM_ALLOC_DEFAULT), std::nullopt);
  EXPECT_EQ(describe(T, 0x1000), "Device pointer 0x1000 points into prior host-issued allocation:\n"
                                 "Last deallocation:\n"
                                 "Last allocation of size 64 -> device pointer 0x1000:\n");
  // 512 MiB away or more, it may be no allocation's at all.
  EXPECT_TRUE(
      llvm::StringRef(describe(T, 0x40000000))
          .starts_with("Device pointer 0x40000000 does not point into any (current or prior) host-issued "
                       "allocation (might be a global, stack, or shared location).\n"));
}

TEST_F(KernelLaunchTracesTest, AFaultListsTheLastLaunchesNewestFirst) {
  KernelLaunchTraces T;
  std::string S;
  llvm::raw_string_ostream OS(S);
  T.print(OS, 0);
  EXPECT_EQ(S, "No kernel launches known\n");
  T.launched("__omp_offloading_fd00_1_main_l5", false);
  S.clear();
  T.print(OS, 0);
  EXPECT_EQ(S, "Display only launched kernel:\n"
               "Kernel 'omp target in main @ 5 (__omp_offloading_fd00_1_main_l5)'\n");
  T.launched("__omp_offloading_fd00_1_main_l9", false);
  S.clear();
  T.print(OS, 0);
  EXPECT_EQ(
      S, "Display last 2 kernels launched:\n"
         "Kernel 0: 'omp target in main @ 9 (__omp_offloading_fd00_1_main_l9)'\n"
         "Kernel 1: 'omp target in main @ 5 (__omp_offloading_fd00_1_main_l5)'\n"
         "Use 'OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES=<num>' to adjust the number of shown stack traces (0 "
         "now, up to 8)\n");
}

TEST_F(KernelLaunchTracesTest, TheRecordKeepsEightAndShowsTheTracesAskedFor) {
  KernelLaunchTraces T;
  for (int Line = 1; Line <= 10; ++Line)
    T.launched("__omp_offloading_fd00_1_main_l" + std::to_string(Line), true);
  std::string S;
  llvm::raw_string_ostream OS(S);
  T.print(OS, 2);
  llvm::StringRef Text(S);
  EXPECT_TRUE(
      Text.starts_with("Display 2 of the 8 last kernel launch traces:\n"
                       "Kernel 0: 'omp target in main @ 10 (__omp_offloading_fd00_1_main_l10)'\nStack dump"))
      << S;
  EXPECT_TRUE(Text.contains("Kernel 7: 'omp target in main @ 3 (")) << S;
  EXPECT_FALSE(Text.contains("main @ 2 (")) << S;
  // Kernels 2 to 7 come without their traces.
  EXPECT_TRUE(Text.contains("main_l8)'\nKernel 3: ")) << S;
  EXPECT_TRUE(
      Text.contains("Kernel 1: 'omp target in main @ 9 (__omp_offloading_fd00_1_main_l9)'\nStack dump"))
      << S;
}

TEST(StackTraces, FramesAreNumberedAsStocksAreWithoutThisFoldersOwn) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  printStackTrace(OS, "#0 0x1 a() x.c:1\n#1 0x2 b() x.c:2\nnot a frame\n");
  EXPECT_EQ(S, "    #0 0x1 a() x.c:1\n    #1 0x2 b() x.c:2\nnot a frame\n\n");
  S.clear();
  printStackTrace(OS, "");
  EXPECT_EQ(S, "");
  // Symbolized, the trace starts at its caller.
  std::string Trace = captureStackTrace();
  EXPECT_FALSE(llvm::StringRef(Trace).contains("ompsim::tracking::")) << Trace;
  EXPECT_TRUE(llvm::StringRef(Trace).contains("FramesAreNumberedAsStocksAreWithoutThisFoldersOwn")) << Trace;
}

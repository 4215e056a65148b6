//===- BareKernelsTest.cpp - finding ompx_bare directives and kernels -----===//
#include "../BareKernels.h"

#include <gtest/gtest.h>

using namespace ompsim::pass;

TEST(BareKernelsTest, DirectiveLinesAreThoseOfOmpPragmasWithTheClause) {
  const char *Source = "#include <ompx.h>\n"                                                         // 1
                       "int main() {\n"                                                              // 2
                       "#pragma omp target teams ompx_bare num_teams(4) thread_limit(32)\n"          // 3
                       "  {}\n"                                                                      // 4
                       "  #  pragma   omp target teams num_teams(2) \\\n"                            // 5
                       "      thread_limit(8) ompx_bare\n"                                           // 6
                       "  {}\n"                                                                      // 7
                       "#pragma omp target teams num_teams(2)\n"                                     // 8
                       "  {}\n"                                                                      // 9
                       "#pragma clang loop ompx_bare\n"                                              // 10
                       "  int ompx_bare_count = 0; // ompx_bare\n"                                   // 11
                       "#pragma omp target teams ompx_bare_like(1)\n"                                // 12
                       "  _Pragma(\"omp target teams ompx_bare num_teams(1) thread_limit(1)\") {}\n" // 13
                       "}\n";
  auto Lines = bareDirectiveLines(Source);
  // A continued directive counts from its first line, as clang counts it.
  EXPECT_EQ(std::vector<unsigned>(Lines.begin(), Lines.end()), (std::vector<unsigned>{3, 5, 13}));
}

TEST(BareKernelsTest, KernelNamesGiveTheFileIdAndLine) {
  auto Site = parseKernelName("__omp_offloading_fe00_a8400c_main_l3");
  ASSERT_TRUE(Site);
  EXPECT_EQ(Site->Device, 0xfe00u);
  EXPECT_EQ(Site->File, 0xa8400cu);
  EXPECT_EQ(Site->Line, 3u);
  // A mangled function name holding `_l`, and a count suffix.
  Site = parseKernelName("__omp_offloading_10303_4c0_ZN1S4callIlEEvv_l12_1");
  ASSERT_TRUE(Site);
  EXPECT_EQ(Site->File, 0x4c0u);
  EXPECT_EQ(Site->Line, 12u);
  EXPECT_FALSE(parseKernelName("__omp_offloading_fe00_a8400c_main_l3.omp_outlined"));
  EXPECT_FALSE(parseKernelName("main_l3"));
  EXPECT_FALSE(parseKernelName("__omp_offloading_xyz_1_main_l3"));
}

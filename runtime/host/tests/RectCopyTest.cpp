// The runs of omp_target_memcpy_rect: few pieces, right offsets.
#include "RectCopy.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace ompsim::host;

namespace {

TEST(RectCopy, WholeRowsAreOneRun) {
  size_t Volume[2] = {3, 8}, Zero[2] = {0, 0}, Dims[2] = {3, 8};
  auto Runs = rectCopyRuns(4, 2, Volume, Zero, Zero, Dims, Dims);
  ASSERT_EQ(Runs.size(), 1u);
  EXPECT_EQ(Runs[0].Size, 3u * 8 * 4);
}

TEST(RectCopy, SubRectangleIsOneRunPerRow) {
  // 2x3 block at (1, 2) of a 4x6 source into (0, 1) of a 3x5 destination.
  size_t Volume[2] = {2, 3}, DstOff[2] = {0, 1}, SrcOff[2] = {1, 2}, DstDims[2] = {3, 5}, SrcDims[2] = {4, 6};
  auto Runs = rectCopyRuns(8, 2, Volume, DstOff, SrcOff, DstDims, SrcDims);
  ASSERT_EQ(Runs.size(), 2u);
  EXPECT_EQ(Runs[0].Src, (1u * 6 + 2) * 8);
  EXPECT_EQ(Runs[0].Dst, (0u * 5 + 1) * 8);
  EXPECT_EQ(Runs[1].Src, (2u * 6 + 2) * 8);
  EXPECT_EQ(Runs[1].Dst, (1u * 5 + 1) * 8);
  EXPECT_EQ(Runs[1].Size, 3u * 8);
}

TEST(RectCopy, RunsCopyExactlyTheRectangle) {
  // Apply the runs with memcpy and compare with an element-by-element copy (3-D).
  int Src[4][5][6], Dst[3][4][7], Want[3][4][7];
  for (int I = 0; I < 4 * 5 * 6; ++I)
    (&Src[0][0][0])[I] = I + 1;
  std::memset(Dst, 0, sizeof(Dst));
  std::memset(Want, 0, sizeof(Want));
  size_t Volume[3] = {2, 3, 4}, DstOff[3] = {1, 0, 2}, SrcOff[3] = {1, 2, 1}, DstDims[3] = {3, 4, 7},
         SrcDims[3] = {4, 5, 6};
  for (size_t I = 0; I < 2; ++I)
    for (size_t J = 0; J < 3; ++J)
      for (size_t K = 0; K < 4; ++K)
        Want[DstOff[0] + I][DstOff[1] + J][DstOff[2] + K] = Src[SrcOff[0] + I][SrcOff[1] + J][SrcOff[2] + K];
  auto Runs = rectCopyRuns(sizeof(int), 3, Volume, DstOff, SrcOff, DstDims, SrcDims);
  EXPECT_EQ(Runs.size(), 6u);
  for (const CopyRun &R : Runs)
    std::memcpy(reinterpret_cast<char *>(Dst) + R.Dst, reinterpret_cast<const char *>(Src) + R.Src, R.Size);
  EXPECT_EQ(std::memcmp(Dst, Want, sizeof(Dst)), 0);
}

TEST(RectCopy, EmptyVolumeCopiesNothing) {
  size_t Volume[2] = {0, 4}, Zero[2] = {0, 0}, Dims[2] = {2, 4};
  EXPECT_TRUE(rectCopyRuns(4, 2, Volume, Zero, Zero, Dims, Dims).empty());
}

} // namespace

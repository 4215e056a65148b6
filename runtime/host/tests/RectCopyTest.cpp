// The runs of omp_target_memcpy_rect: few pieces, right offsets.
#include "RectCopy.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace ompsim::host;

namespace {

TEST(RectCopy, WholeRowsAreOneRun) {
  size_t volume[2] = {3, 8}, zero[2] = {0, 0}, dims[2] = {3, 8};
  auto runs = rectCopyRuns(4, 2, volume, zero, zero, dims, dims);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].size, 3u * 8 * 4);
}

TEST(RectCopy, SubRectangleIsOneRunPerRow) {
  // 2x3 block at (1, 2) of a 4x6 source into (0, 1) of a 3x5 destination.
  size_t volume[2] = {2, 3}, dstOff[2] = {0, 1}, srcOff[2] = {1, 2}, dstDims[2] = {3, 5}, srcDims[2] = {4, 6};
  auto runs = rectCopyRuns(8, 2, volume, dstOff, srcOff, dstDims, srcDims);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].src, (1u * 6 + 2) * 8);
  EXPECT_EQ(runs[0].dst, (0u * 5 + 1) * 8);
  EXPECT_EQ(runs[1].src, (2u * 6 + 2) * 8);
  EXPECT_EQ(runs[1].dst, (1u * 5 + 1) * 8);
  EXPECT_EQ(runs[1].size, 3u * 8);
}

TEST(RectCopy, RunsCopyExactlyTheRectangle) {
  // Apply the runs with memcpy and compare with an element-by-element copy (3-D).
  int src[4][5][6], dst[3][4][7], want[3][4][7];
  for (int i = 0; i < 4 * 5 * 6; ++i)
    (&src[0][0][0])[i] = i + 1;
  std::memset(dst, 0, sizeof(dst));
  std::memset(want, 0, sizeof(want));
  size_t volume[3] = {2, 3, 4}, dstOff[3] = {1, 0, 2}, srcOff[3] = {1, 2, 1}, dstDims[3] = {3, 4, 7},
         srcDims[3] = {4, 5, 6};
  for (size_t i = 0; i < 2; ++i)
    for (size_t j = 0; j < 3; ++j)
      for (size_t k = 0; k < 4; ++k)
        want[dstOff[0] + i][dstOff[1] + j][dstOff[2] + k] = src[srcOff[0] + i][srcOff[1] + j][srcOff[2] + k];
  auto runs = rectCopyRuns(sizeof(int), 3, volume, dstOff, srcOff, dstDims, srcDims);
  EXPECT_EQ(runs.size(), 6u);
  for (const CopyRun &r : runs)
    std::memcpy(reinterpret_cast<char *>(dst) + r.dst, reinterpret_cast<const char *>(src) + r.src, r.size);
  EXPECT_EQ(std::memcmp(dst, want, sizeof(dst)), 0);
}

TEST(RectCopy, EmptyVolumeCopiesNothing) {
  size_t volume[2] = {0, 4}, zero[2] = {0, 0}, dims[2] = {2, 4};
  EXPECT_TRUE(rectCopyRuns(4, 2, volume, zero, zero, dims, dims).empty());
}

} // namespace

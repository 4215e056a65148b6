#include "GuardedArena.h"

#include <gtest/gtest.h>

using ompsim::sim::GuardedArena;
using ompsim::sim::PageProtection;
using ompsim::sim::RangeAllocator;

namespace {
constexpr uint64_t kPage = 4096;
constexpr uint64_t kBase = 0x100000;
} // namespace

TEST(GuardedArena, BlockEndsAtItsGuardPage) {
  RangeAllocator Heap(kBase, kBase + 64 * kPage);
  GuardedArena Arena(Heap, kPage);
  uint64_t A = Arena.allocate(256, 16);
  EXPECT_EQ(A, kBase + kPage - 256) << "the block's end must touch the guard page";
  std::vector<PageProtection> P = Arena.takeProtections();
  ASSERT_EQ(P.size(), 1u);
  EXPECT_EQ(P[0].Begin, kBase + kPage);
  EXPECT_EQ(P[0].End, kBase + 2 * kPage);
  EXPECT_FALSE(P[0].Accessible);
  EXPECT_EQ(Arena.describe(A + 256),
            "at offset 256 of the 256-byte device block at 0x100f00, past its end (in its guard page: an "
            "access outside the mapped section)");
  EXPECT_EQ(Arena.describe(A + 8), "") << "inside the block is no fault of the checker's";
  // A size that is not a multiple of the alignment ends within 15 bytes of the guard.
  uint64_t B = Arena.allocate(12, 16);
  EXPECT_EQ((B + 16) % kPage, 0u);
}

TEST(GuardedArena, FreedBlockStaysInQuarantineUntilEvictedAndApplied) {
  RangeAllocator Heap(kBase, kBase + 4 * kPage);
  GuardedArena Arena(Heap, kPage);
  uint64_t A = Arena.allocate(100, 16);
  ASSERT_TRUE(Arena.release(A));
  EXPECT_FALSE(Arena.release(A)) << "a quarantined block is not live";
  EXPECT_EQ(
      Arena.describe(A),
      "in the 100-byte device block at 0x100f90, freed earlier (its mapping had ended: a use after unmap)");
  (void)Arena.takeProtections();
  // The freed pages are not handed out again while quarantined.
  uint64_t B = Arena.allocate(100, 16);
  EXPECT_NE(B, A);
  // A full heap gives the quarantine back, once its pages were made accessible.
  EXPECT_EQ(Arena.allocate(3 * kPage, 16), 0u);
  EXPECT_TRUE(Arena.wantsFlush());
  std::vector<PageProtection> P = Arena.takeProtections();
  ASSERT_FALSE(P.empty());
  EXPECT_TRUE(P.back().Accessible);
  Arena.releaseEvicted();
  EXPECT_EQ(Arena.allocate(100, 16), A) << "after eviction the first fit is the old block again";
}

// The map checker's record of which bytes of a block a transfer made known.
#include "../MapChecker.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

using ompsim::check::BlockShadow;

namespace {

std::vector<std::pair<uint64_t, uint64_t>> known(const BlockShadow &S) {
  return {S.Known.begin(), S.Known.end()};
}

using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

TEST(BlockShadow, MarkKnownMergesRangesThatTouchOrOverlap) {
  BlockShadow S;
  S.markKnown(0, 4);
  S.markKnown(8, 12);
  EXPECT_EQ(known(S), (Ranges{{0, 4}, {8, 12}}));
  S.markKnown(4, 8);
  EXPECT_EQ(known(S), (Ranges{{0, 12}}));
}

TEST(BlockShadow, ForgetSplitsTrimsAndRemoves) {
  BlockShadow S;
  S.markKnown(0, 32);
  S.forget(8, 16); // inside: split
  EXPECT_EQ(known(S), (Ranges{{0, 8}, {16, 32}}));
  S.forget(4, 20); // over both ends
  EXPECT_EQ(known(S), (Ranges{{0, 4}, {20, 32}}));
  S.forget(0, 4); // a whole range
  EXPECT_EQ(known(S), (Ranges{{20, 32}}));
  S.forget(32, 40); // past the end: nothing
  S.forget(10, 10); // empty: nothing
  EXPECT_EQ(known(S), (Ranges{{20, 32}}));
  S.forget(0, 64);
  EXPECT_TRUE(S.Known.empty());
}

} // namespace

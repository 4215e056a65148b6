#include "RangeAllocator.h"

#include <gtest/gtest.h>

using ompsim::sim::RangeAllocator;

TEST(RangeAllocator, SameCallsGiveSameAddresses) {
  RangeAllocator A(0x1000, 0x100000), B(0x1000, 0x100000);
  for (uint64_t Size : {24u, 4096u, 1u, 100u})
    EXPECT_EQ(A.allocate(Size, 16), B.allocate(Size, 16));
}

TEST(RangeAllocator, FirstFitReusesFreedBlockAndCoalesces) {
  RangeAllocator A(0x1000, 0x1000 + 4 * 64);
  uint64_t X = A.allocate(64, 16), Y = A.allocate(64, 16), Z = A.allocate(64, 16);
  EXPECT_EQ(X, 0x1000u);
  EXPECT_EQ(Y, 0x1040u);
  ASSERT_TRUE(A.release(X));
  ASSERT_TRUE(A.release(Y));
  EXPECT_EQ(A.allocate(128, 16), 0x1000u) << "two freed neighbours must merge into one block";
  EXPECT_NE(Z, 0u);
  EXPECT_FALSE(A.release(0x1234));
}

TEST(RangeAllocator, ExhaustionReturnsZero) {
  RangeAllocator A(0x1000, 0x2000);
  EXPECT_EQ(A.allocate(0x2000, 16), 0u);
  EXPECT_NE(A.allocate(0x1000, 0x1000), 0u);
  EXPECT_EQ(A.allocate(16, 16), 0u);
}

TEST(RangeAllocator, HonoursAlignment) {
  RangeAllocator A(0x1010, 0x100000);
  EXPECT_EQ(A.allocate(8, 0x1000) % 0x1000, 0u);
}

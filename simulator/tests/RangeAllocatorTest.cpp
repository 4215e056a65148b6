#include "RangeAllocator.h"

#include <gtest/gtest.h>

using ompsim::sim::RangeAllocator;

TEST(RangeAllocator, SameCallsGiveSameAddresses) {
  RangeAllocator a(0x1000, 0x100000), b(0x1000, 0x100000);
  for (uint64_t size : {24u, 4096u, 1u, 100u})
    EXPECT_EQ(a.allocate(size, 16), b.allocate(size, 16));
}

TEST(RangeAllocator, FirstFitReusesFreedBlockAndCoalesces) {
  RangeAllocator a(0x1000, 0x1000 + 4 * 64);
  uint64_t x = a.allocate(64, 16), y = a.allocate(64, 16), z = a.allocate(64, 16);
  EXPECT_EQ(x, 0x1000u);
  EXPECT_EQ(y, 0x1040u);
  ASSERT_TRUE(a.release(x));
  ASSERT_TRUE(a.release(y));
  EXPECT_EQ(a.allocate(128, 16), 0x1000u) << "two freed neighbours must merge into one block";
  EXPECT_NE(z, 0u);
  EXPECT_FALSE(a.release(0x1234));
}

TEST(RangeAllocator, ExhaustionReturnsZero) {
  RangeAllocator a(0x1000, 0x2000);
  EXPECT_EQ(a.allocate(0x2000, 16), 0u);
  EXPECT_NE(a.allocate(0x1000, 0x1000), 0u);
  EXPECT_EQ(a.allocate(16, 16), 0u);
}

TEST(RangeAllocator, HonoursAlignment) {
  RangeAllocator a(0x1010, 0x100000);
  EXPECT_EQ(a.allocate(8, 0x1000) % 0x1000, 0u);
}

// Unit tests of the device heap under the checker (memcheck/CheckedHeap.cpp),
// through the entry points a GPU image's renamed malloc and free call and the
// one the executor's fault handler calls.
#include "ompsim/device_runtime.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>

extern "C" {
void *__ompsim_heap_malloc(uint64_t Size);
void __ompsim_heap_free(void *Ptr);
void *__ompsim_heap_calloc(uint64_t Count, uint64_t Size);
void *__ompsim_heap_realloc(void *Ptr, uint64_t Size);
}

namespace {

/// What the fault handler would report for `Addr` ("" when the heap does not know it).
std::string describe(const void *Addr, std::string *Note = nullptr) {
  char What[1024] = {0}, Advice[512] = {0};
  if (!__ompsim_device_describe_address(reinterpret_cast<uint64_t>(Addr), What, sizeof What, Advice,
                                        sizeof Advice))
    return "";
  if (Note)
    *Note = Advice;
  return What;
}

const uint64_t Page = uint64_t(::sysconf(_SC_PAGESIZE));

} // namespace

TEST(CheckedHeapTest, ABlockEndsAtItsGuardPageAndHoldsThePattern) {
  auto *Block = static_cast<unsigned char *>(__ompsim_heap_malloc(64));
  ASSERT_NE(Block, nullptr);
  EXPECT_EQ(reinterpret_cast<uint64_t>(Block) % 16, 0u);
  EXPECT_EQ(reinterpret_cast<uint64_t>(Block + 64) % Page, 0u);
  for (int I = 0; I < 64; ++I)
    ASSERT_EQ(Block[I], 0x7f) << I;
  // A live block's own bytes are not the heap's to name.
  EXPECT_EQ(describe(Block + 10), "");
  std::string Note;
  std::string Past = describe(Block + 64 + 8, &Note);
  EXPECT_NE(Past.find(" (8 bytes past the end of the 64-byte device-heap block at 0x"), std::string::npos)
      << Past;
  EXPECT_NE(Past.find("that device malloc returned to block 0, thread 0 called from 0x"), std::string::npos)
      << Past;
  EXPECT_EQ(Note.rfind("note: the kernel indexes past the end of a device malloc block", 0), 0u) << Note;
  __ompsim_heap_free(Block);
}

TEST(CheckedHeapTest, AFreedBlockIsNamedWithItsFreeAndNeverHandedOutAgain) {
  auto *Block = static_cast<char *>(__ompsim_heap_malloc(32));
  __ompsim_heap_free(Block);
  std::string What = describe(Block + 12);
  EXPECT_EQ(What.rfind("freed device-heap memory at 0x", 0), 0u) << What;
  EXPECT_NE(What.find("(12 bytes from the start of the 32-byte device-heap block"), std::string::npos)
      << What;
  EXPECT_NE(What.find("(freed by block 0, thread 0 called from 0x"), std::string::npos) << What;
  for (int I = 0; I < 16; ++I) {
    void *Other = __ompsim_heap_malloc(32);
    EXPECT_NE(Other, Block);
    __ompsim_heap_free(Other);
  }
  // Memory the heap never placed is not its to name.
  int Local = 0;
  EXPECT_EQ(describe(&Local), "");
}

TEST(CheckedHeapTest, CallocZeroesAndReallocKeepsTheBytes) {
  auto *Zeros = static_cast<unsigned char *>(__ompsim_heap_calloc(5, 7));
  for (int I = 0; I < 35; ++I)
    ASSERT_EQ(Zeros[I], 0) << I;
  std::memcpy(Zeros, "abcdefgh", 8);
  auto *Grown = static_cast<char *>(__ompsim_heap_realloc(Zeros, 100));
  EXPECT_EQ(std::memcmp(Grown, "abcdefgh", 8), 0);
  EXPECT_NE(describe(Zeros).find("freed device-heap memory"), std::string::npos);
  __ompsim_heap_free(Grown);
  __ompsim_heap_free(nullptr);
}

TEST(CheckedHeapDeathTest, BadFreesEndWithOneLineNamingTheBlock) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        void *Block = __ompsim_heap_malloc(24);
        __ompsim_heap_free(Block);
        __ompsim_heap_free(Block);
      },
      testing::ExitedWithCode(1),
      "ompsim: device runtime: block 0, thread 0: free\\(0x[0-9a-f]+\\) called from 0x[0-9a-f]+ of a block "
      "freed "
      "before: the 24-byte device-heap block at 0x[0-9a-f]+ that device malloc returned to block 0, thread 0 "
      "called from 0x[0-9a-f]+ \\(freed by block 0, thread 0 called from 0x[0-9a-f]+\\)\n");
  EXPECT_EXIT(
      {
        int Local = 0;
        __ompsim_heap_free(&Local);
      },
      testing::ExitedWithCode(1), "of a pointer device malloc did not return");
  EXPECT_EXIT(
      {
        auto *Block = static_cast<char *>(__ompsim_heap_malloc(40));
        __ompsim_heap_free(Block + 8);
      },
      testing::ExitedWithCode(1), "of a pointer 8 bytes from the start of the 40-byte device-heap block");
  EXPECT_EXIT(
      {
        auto *Block = static_cast<char *>(__ompsim_heap_malloc(13));
        Block[14] = 0;
        __ompsim_heap_free(Block);
      },
      testing::ExitedWithCode(1), "found a write past the end of the 13-byte .* \\(byte 14 of 13 changed\\)");
}

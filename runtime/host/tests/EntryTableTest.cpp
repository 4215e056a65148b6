// Entry parsing in both compiler formats.
#include "EntryTable.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <sys/mman.h>
#include <vector>

using namespace ompsim::host;

namespace {

int hostGlobal;
int hostFunction(int x) { return x + 1; }
char vtableBytes[48];
char regionId;

std::string errorText(llvm::Error err) { return llvm::toString(std::move(err)); }

TEST(EntryTable, ParsesCurrentFormat) {
  __tgt_offload_entry entries[] = {
      {0, 1, 1, OMPSIM_ENTRY_INDIRECT, reinterpret_cast<void *>(&hostFunction),
       const_cast<char *>("__omp_offloading_1_2_add1_l4"), 8, 0, nullptr},
      {0, 1, 1, OMPSIM_ENTRY_INDIRECT_VTABLE, vtableBytes,
       const_cast<char *>("__omp_offloading_1_2__ZTV3Der_l8addr"), 48, 0, nullptr},
      {0, 1, 1, 0, &hostGlobal, const_cast<char *>("hostGlobal"), 4, 0, nullptr},
      {0, 1, 1, 0, &regionId, const_cast<char *>("__omp_offloading_1_2_main_l11"), 0, 0, nullptr},
      {0, 1, 1, OMPSIM_ENTRY_REQUIRES, nullptr, nullptr, 0, OMPSIM_REQ_UNIFIED_ADDRESS, nullptr},
  };
  EXPECT_EQ(detectEntryFormat(entries, entries + 5), EntryFormat::Current);
  auto parsed = parseEntryTable(entries, entries + 5, "test image");
  ASSERT_TRUE(static_cast<bool>(parsed)) << errorText(parsed.takeError());
  ASSERT_EQ(parsed->size(), 5u);
  EXPECT_EQ((*parsed)[0].kind, EntryKind::Indirect);
  EXPECT_EQ((*parsed)[0].name, "__omp_offloading_1_2_add1_l4");
  EXPECT_EQ((*parsed)[0].address, reinterpret_cast<void *>(&hostFunction));
  EXPECT_EQ((*parsed)[1].kind, EntryKind::IndirectVtable);
  EXPECT_EQ((*parsed)[1].size, 48u);
  EXPECT_EQ((*parsed)[2].kind, EntryKind::Global);
  EXPECT_EQ((*parsed)[3].kind, EntryKind::Kernel);
  EXPECT_EQ((*parsed)[4].kind, EntryKind::Requires);
  EXPECT_EQ((*parsed)[4].data, static_cast<uint64_t>(OMPSIM_REQ_UNIFIED_ADDRESS));
}

TEST(EntryTable, ParsesLegacyFormat) {
  __tgt_offload_entry_legacy entries[] = {
      {reinterpret_cast<void *>(&hostFunction), const_cast<char *>("fn_entry"), 8, OMPSIM_ENTRY_INDIRECT, 0},
      {&regionId, const_cast<char *>("kernel_entry"), 0, 0, 0},
      {&hostGlobal, const_cast<char *>("global_entry"), 4, 0, 0},
  };
  EXPECT_EQ(detectEntryFormat(entries, entries + 3), EntryFormat::Legacy);
  auto parsed = parseEntryTable(entries, entries + 3, "legacy image");
  ASSERT_TRUE(static_cast<bool>(parsed)) << errorText(parsed.takeError());
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[0].kind, EntryKind::Indirect);
  EXPECT_EQ((*parsed)[0].name, "fn_entry");
  EXPECT_EQ((*parsed)[1].kind, EntryKind::Kernel);
  EXPECT_EQ((*parsed)[1].address, &regionId);
  EXPECT_EQ((*parsed)[2].kind, EntryKind::Global);
  EXPECT_EQ((*parsed)[2].size, 4u);
}

TEST(EntryTable, EmptyTableIsValid) {
  auto parsed = parseEntryTable(nullptr, nullptr, "empty");
  ASSERT_TRUE(static_cast<bool>(parsed));
  EXPECT_TRUE(parsed->empty());
}

TEST(EntryTable, NullNameIsAnErrorNamingTheEntry) {
  __tgt_offload_entry entries[] = {
      {0, 1, 1, 0, &regionId, const_cast<char *>("ok_kernel"), 0, 0, nullptr},
      {0, 1, 1, OMPSIM_ENTRY_INDIRECT, reinterpret_cast<void *>(&hostFunction), nullptr, 8, 0, nullptr},
  };
  auto parsed = parseEntryTable(entries, entries + 2, "image X");
  ASSERT_FALSE(static_cast<bool>(parsed));
  std::string msg = errorText(parsed.takeError());
  EXPECT_NE(msg.find("entry 1 of image X"), std::string::npos) << msg;
  EXPECT_NE(msg.find("null symbol name"), std::string::npos) << msg;
}

TEST(EntryTable, NullAddressIsAnErrorNamingTheSymbol) {
  __tgt_offload_entry entries[] = {
      {0, 1, 1, OMPSIM_ENTRY_INDIRECT, nullptr, const_cast<char *>("lost_fn"), 8, 0, nullptr},
  };
  auto parsed = parseEntryTable(entries, entries + 1, "image Y");
  ASSERT_FALSE(static_cast<bool>(parsed));
  std::string msg = errorText(parsed.takeError());
  EXPECT_NE(msg.find("'lost_fn' has a null address"), std::string::npos) << msg;
}

TEST(EntryTable, LegacyNullAddressIsAnError) {
  __tgt_offload_entry_legacy entries[] = {
      {&hostGlobal, const_cast<char *>("fine"), 4, 0, 0},
      {nullptr, const_cast<char *>("broken"), 4, 0, 0},
  };
  auto parsed = parseEntryTable(entries, entries + 2, "legacy");
  ASSERT_FALSE(static_cast<bool>(parsed));
  EXPECT_NE(errorText(parsed.takeError()).find("'broken'"), std::string::npos);
}

TEST(EntryTable, UnknownVersionIsAnError) {
  __tgt_offload_entry entries[] = {
      {0, 7, 1, 0, &regionId, const_cast<char *>("k"), 0, 0, nullptr},
  };
  auto parsed = parseEntryTable(entries, entries + 1, "image Z");
  ASSERT_FALSE(static_cast<bool>(parsed));
  EXPECT_NE(errorText(parsed.takeError()).find("unsupported entry version 7"), std::string::npos);
}

TEST(EntryTable, RaggedRangeIsAnError) {
  __tgt_offload_entry entries[2] = {
      {0, 1, 1, 0, &regionId, const_cast<char *>("k"), 0, 0, nullptr},
      {0, 1, 1, 0, &regionId, const_cast<char *>("k2"), 0, 0, nullptr},
  };
  const char *end = reinterpret_cast<const char *>(entries) + sizeof(__tgt_offload_entry) + 8;
  auto parsed = parseEntryTable(entries, end, "image R");
  ASSERT_FALSE(static_cast<bool>(parsed));
  EXPECT_NE(errorText(parsed.takeError()).find("not a whole number"), std::string::npos);
}

/// Two pages of names, the second made unreadable: a name written up to the
/// end of the first runs into it.
class NamePages : public ::testing::Test {
protected:
  static constexpr size_t kPage = 4096;
  char *pages = nullptr;

  void SetUp() override {
    void *p = mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    pages = static_cast<char *>(p);
    ASSERT_EQ(mprotect(pages + kPage, kPage, PROT_NONE), 0);
  }
  void TearDown() override { munmap(pages, 2 * kPage); }

  /// `count` indirect entries whose names ("fn0", "fn1", ...) lie 16 bytes
  /// apart at the start of the first page.
  std::vector<__tgt_offload_entry> entries(size_t count) {
    std::vector<__tgt_offload_entry> out;
    for (size_t i = 0; i < count; ++i) {
      char *name = pages + 16 * i;
      std::snprintf(name, 16, "fn%zu", i);
      out.push_back(
          {0, 1, 1, OMPSIM_ENTRY_INDIRECT, reinterpret_cast<void *>(&hostFunction), name, 8, 0, nullptr});
    }
    return out;
  }
};

TEST_F(NamePages, ManyNamesAreReadInFull) {
  auto table = entries(64);
  // One long name as well, ending on the last byte before the unreadable page.
  char *last = pages + kPage - 101;
  std::memset(last, 'x', 100);
  last[100] = 0;
  table[63].SymbolName = last;
  auto parsed = parseEntryTable(table.data(), table.data() + table.size(), "image N");
  ASSERT_TRUE(static_cast<bool>(parsed)) << errorText(parsed.takeError());
  ASSERT_EQ(parsed->size(), 64u);
  EXPECT_EQ((*parsed)[0].name, "fn0");
  EXPECT_EQ((*parsed)[41].name, "fn41");
  EXPECT_EQ((*parsed)[63].name, std::string(100, 'x'));
}

TEST_F(NamePages, NameRunningIntoUnreadableMemoryIsAnErrorNamingTheEntry) {
  auto table = entries(20);
  char *last = pages + kPage - 8;
  std::memset(last, 'y', 8); // no NUL before the unreadable page
  table[17].SymbolName = last;
  auto parsed = parseEntryTable(table.data(), table.data() + table.size(), "image U");
  ASSERT_FALSE(static_cast<bool>(parsed));
  std::string msg = errorText(parsed.takeError());
  EXPECT_NE(msg.find("entry 17 of image U"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unterminated: it runs into unreadable memory"), std::string::npos) << msg;
}

TEST_F(NamePages, UnreadableNamePointerAmongManyIsAnErrorNamingTheEntry) {
  auto table = entries(20);
  table[9].SymbolName = pages + kPage + 32; // inside the unreadable page
  auto parsed = parseEntryTable(table.data(), table.data() + table.size(), "image V");
  ASSERT_FALSE(static_cast<bool>(parsed));
  std::string msg = errorText(parsed.takeError());
  EXPECT_NE(msg.find("entry 9 of image V"), std::string::npos) << msg;
  EXPECT_NE(msg.find("is unreadable"), std::string::npos) << msg;
  // A stray pointer far from the others is found the same way.
  table[9].SymbolName = reinterpret_cast<char *>(uintptr_t(0x10));
  parsed = parseEntryTable(table.data(), table.data() + table.size(), "image W");
  ASSERT_FALSE(static_cast<bool>(parsed));
  msg = errorText(parsed.takeError());
  EXPECT_NE(msg.find("entry 9 of image W"), std::string::npos) << msg;
  EXPECT_NE(msg.find("is unreadable"), std::string::npos) << msg;
}

} // namespace

// Entry parsing in both compiler formats.
#include "EntryTable.h"

#include <gtest/gtest.h>

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

} // namespace

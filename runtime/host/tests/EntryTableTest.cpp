// Entry parsing in both compiler formats.
#include "EntryTable.h"
#include "MapTestItems.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <sys/mman.h>
#include <vector>

using namespace ompsim::host;
using namespace ompsim::host::testing;

namespace {

int HostGlobal;
int hostFunction(int X) { return X + 1; }
char VtableBytes[48];
char RegionId;

TEST(EntryTable, ParsesCurrentFormat) {
  __tgt_offload_entry Entries[] = {
      {0, 1, 1, OMPSIM_ENTRY_INDIRECT, reinterpret_cast<void *>(&hostFunction),
       const_cast<char *>("__omp_offloading_1_2_add1_l4"), 8, 0, nullptr},
      {0, 1, 1, OMPSIM_ENTRY_INDIRECT_VTABLE, VtableBytes,
       const_cast<char *>("__omp_offloading_1_2__ZTV3Der_l8addr"), 48, 0, nullptr},
      {0, 1, 1, 0, &HostGlobal, const_cast<char *>("hostGlobal"), 4, 0, nullptr},
      {0, 1, 1, 0, &RegionId, const_cast<char *>("__omp_offloading_1_2_main_l11"), 0, 0, nullptr},
      {0, 1, 1, OMPSIM_ENTRY_REQUIRES, nullptr, nullptr, 0, OMPSIM_REQ_UNIFIED_ADDRESS, nullptr},
  };
  EXPECT_EQ(detectEntryFormat(Entries, Entries + 5), EntryFormat::Current);
  auto Parsed = parseEntryTable(Entries, Entries + 5, "test image");
  ASSERT_TRUE(static_cast<bool>(Parsed)) << errorText(Parsed.takeError());
  ASSERT_EQ(Parsed->size(), 5u);
  EXPECT_EQ((*Parsed)[0].Kind, EntryKind::Indirect);
  EXPECT_EQ((*Parsed)[0].Name, "__omp_offloading_1_2_add1_l4");
  EXPECT_EQ((*Parsed)[0].Address, reinterpret_cast<void *>(&hostFunction));
  EXPECT_EQ((*Parsed)[1].Kind, EntryKind::IndirectVtable);
  EXPECT_EQ((*Parsed)[1].Size, 48u);
  EXPECT_EQ((*Parsed)[2].Kind, EntryKind::Global);
  EXPECT_EQ((*Parsed)[3].Kind, EntryKind::Kernel);
  EXPECT_EQ((*Parsed)[4].Kind, EntryKind::Requires);
  EXPECT_EQ((*Parsed)[4].Data, static_cast<uint64_t>(OMPSIM_REQ_UNIFIED_ADDRESS));
}

TEST(EntryTable, ParsesLegacyFormat) {
  __tgt_offload_entry_legacy Entries[] = {
      {reinterpret_cast<void *>(&hostFunction), const_cast<char *>("fn_entry"), 8, OMPSIM_ENTRY_INDIRECT, 0},
      {&RegionId, const_cast<char *>("kernel_entry"), 0, 0, 0},
      {&HostGlobal, const_cast<char *>("global_entry"), 4, 0, 0},
  };
  EXPECT_EQ(detectEntryFormat(Entries, Entries + 3), EntryFormat::Legacy);
  auto Parsed = parseEntryTable(Entries, Entries + 3, "legacy image");
  ASSERT_TRUE(static_cast<bool>(Parsed)) << errorText(Parsed.takeError());
  ASSERT_EQ(Parsed->size(), 3u);
  EXPECT_EQ((*Parsed)[0].Kind, EntryKind::Indirect);
  EXPECT_EQ((*Parsed)[0].Name, "fn_entry");
  EXPECT_EQ((*Parsed)[1].Kind, EntryKind::Kernel);
  EXPECT_EQ((*Parsed)[1].Address, &RegionId);
  EXPECT_EQ((*Parsed)[2].Kind, EntryKind::Global);
  EXPECT_EQ((*Parsed)[2].Size, 4u);
}

TEST(EntryTable, EmptyTableIsValid) {
  auto Parsed = parseEntryTable(nullptr, nullptr, "empty");
  ASSERT_TRUE(static_cast<bool>(Parsed));
  EXPECT_TRUE(Parsed->empty());
}

TEST(EntryTable, NullNameIsAnErrorNamingTheEntry) {
  __tgt_offload_entry Entries[] = {
      {0, 1, 1, 0, &RegionId, const_cast<char *>("ok_kernel"), 0, 0, nullptr},
      {0, 1, 1, OMPSIM_ENTRY_INDIRECT, reinterpret_cast<void *>(&hostFunction), nullptr, 8, 0, nullptr},
  };
  auto Parsed = parseEntryTable(Entries, Entries + 2, "image X");
  ASSERT_FALSE(static_cast<bool>(Parsed));
  std::string Msg = errorText(Parsed.takeError());
  EXPECT_NE(Msg.find("entry 1 of image X"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("null symbol name"), std::string::npos) << Msg;
}

TEST(EntryTable, NullAddressIsAnErrorNamingTheSymbol) {
  __tgt_offload_entry Entries[] = {
      {0, 1, 1, OMPSIM_ENTRY_INDIRECT, nullptr, const_cast<char *>("lost_fn"), 8, 0, nullptr},
  };
  auto Parsed = parseEntryTable(Entries, Entries + 1, "image Y");
  ASSERT_FALSE(static_cast<bool>(Parsed));
  std::string Msg = errorText(Parsed.takeError());
  EXPECT_NE(Msg.find("'lost_fn' has a null address"), std::string::npos) << Msg;
}

TEST(EntryTable, LegacyNullAddressIsAnError) {
  __tgt_offload_entry_legacy Entries[] = {
      {&HostGlobal, const_cast<char *>("fine"), 4, 0, 0},
      {nullptr, const_cast<char *>("broken"), 4, 0, 0},
  };
  auto Parsed = parseEntryTable(Entries, Entries + 2, "legacy");
  ASSERT_FALSE(static_cast<bool>(Parsed));
  EXPECT_NE(errorText(Parsed.takeError()).find("'broken'"), std::string::npos);
}

TEST(EntryTable, UnknownVersionIsAnError) {
  __tgt_offload_entry Entries[] = {
      {0, 7, 1, 0, &RegionId, const_cast<char *>("k"), 0, 0, nullptr},
  };
  auto Parsed = parseEntryTable(Entries, Entries + 1, "image Z");
  ASSERT_FALSE(static_cast<bool>(Parsed));
  EXPECT_NE(errorText(Parsed.takeError()).find("unsupported entry version 7"), std::string::npos);
}

TEST(EntryTable, RaggedRangeIsAnError) {
  __tgt_offload_entry Entries[2] = {
      {0, 1, 1, 0, &RegionId, const_cast<char *>("k"), 0, 0, nullptr},
      {0, 1, 1, 0, &RegionId, const_cast<char *>("k2"), 0, 0, nullptr},
  };
  const char *End = reinterpret_cast<const char *>(Entries) + sizeof(__tgt_offload_entry) + 8;
  auto Parsed = parseEntryTable(Entries, End, "image R");
  ASSERT_FALSE(static_cast<bool>(Parsed));
  EXPECT_NE(errorText(Parsed.takeError()).find("not a whole number"), std::string::npos);
}

/// Two pages of names, the second made unreadable: a name written up to the
/// end of the first runs into it.
class NamePages : public ::testing::Test {
protected:
  static constexpr size_t kPage = 4096;
  char *Pages = nullptr;

  void SetUp() override {
    void *P = mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(P, MAP_FAILED);
    Pages = static_cast<char *>(P);
    ASSERT_EQ(mprotect(Pages + kPage, kPage, PROT_NONE), 0);
  }
  void TearDown() override { munmap(Pages, 2 * kPage); }

  /// `Count` indirect entries whose names ("fn0", "fn1", ...) lie 16 bytes
  /// apart at the start of the first page.
  std::vector<__tgt_offload_entry> entries(size_t Count) {
    std::vector<__tgt_offload_entry> Out;
    for (size_t I = 0; I < Count; ++I) {
      char *Name = Pages + 16 * I;
      std::snprintf(Name, 16, "fn%zu", I);
      Out.push_back(
          {0, 1, 1, OMPSIM_ENTRY_INDIRECT, reinterpret_cast<void *>(&hostFunction), Name, 8, 0, nullptr});
    }
    return Out;
  }
};

TEST_F(NamePages, ManyNamesAreReadInFull) {
  auto Table = entries(64);
  // One long name as well, ending on the last byte before the unreadable page.
  char *Last = Pages + kPage - 101;
  std::memset(Last, 'x', 100);
  Last[100] = 0;
  Table[63].SymbolName = Last;
  auto Parsed = parseEntryTable(Table.data(), Table.data() + Table.size(), "image N");
  ASSERT_TRUE(static_cast<bool>(Parsed)) << errorText(Parsed.takeError());
  ASSERT_EQ(Parsed->size(), 64u);
  EXPECT_EQ((*Parsed)[0].Name, "fn0");
  EXPECT_EQ((*Parsed)[41].Name, "fn41");
  EXPECT_EQ((*Parsed)[63].Name, std::string(100, 'x'));
}

TEST_F(NamePages, NameRunningIntoUnreadableMemoryIsAnErrorNamingTheEntry) {
  auto Table = entries(20);
  char *Last = Pages + kPage - 8;
  std::memset(Last, 'y', 8); // no NUL before the unreadable page
  Table[17].SymbolName = Last;
  auto Parsed = parseEntryTable(Table.data(), Table.data() + Table.size(), "image U");
  ASSERT_FALSE(static_cast<bool>(Parsed));
  std::string Msg = errorText(Parsed.takeError());
  EXPECT_NE(Msg.find("entry 17 of image U"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("unterminated: it runs into unreadable memory"), std::string::npos) << Msg;
}

TEST_F(NamePages, UnreadableNamePointerAmongManyIsAnErrorNamingTheEntry) {
  auto Table = entries(20);
  Table[9].SymbolName = Pages + kPage + 32; // inside the unreadable page
  auto Parsed = parseEntryTable(Table.data(), Table.data() + Table.size(), "image V");
  ASSERT_FALSE(static_cast<bool>(Parsed));
  std::string Msg = errorText(Parsed.takeError());
  EXPECT_NE(Msg.find("entry 9 of image V"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("is unreadable"), std::string::npos) << Msg;
  // A stray pointer far from the others is found the same way.
  Table[9].SymbolName = reinterpret_cast<char *>(uintptr_t(0x10));
  Parsed = parseEntryTable(Table.data(), Table.data() + Table.size(), "image W");
  ASSERT_FALSE(static_cast<bool>(Parsed));
  Msg = errorText(Parsed.takeError());
  EXPECT_NE(Msg.find("entry 9 of image W"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("is unreadable"), std::string::npos) << Msg;
}

} // namespace

// The mapping table's permanent entries (an image's declare-target globals
// and indirect functions): lookups, unloading an image, and map clauses on them.
#include "MappingTable.h"
#include "FakeDeviceMemory.h"
#include "MapClauseProcessor.h"
#include "MapFlags.h"
#include "MapTestItems.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace ompsim::host;
using namespace ompsim::host::testing;

namespace {

// Permanent entries (an image's declare-target globals and indirect
// functions) live in flat per-image batches; lookups must see them and the
// map-clause entries as one table.

MapEntry permanentEntry(uintptr_t Begin, uint64_t Size, uint64_t Tgt, const char *Name) {
  MapEntry E;
  E.HstBegin = Begin;
  E.HstEnd = Begin + Size;
  E.TgtBegin = Tgt;
  E.DynamicRef = MapEntry::Infinite;
  E.Name = Name;
  return E;
}

class PermanentEntries : public ::testing::Test {
protected:
  MappingTable Table;
  static constexpr uint64_t ImageA = 1, ImageB = 2;

  void SetUp() override {
    // Image A: two globals with a gap between them, given out of order.
    Table.insertPermanent(
        ImageA, {permanentEntry(0x1020, 0x10, 0xa020, "a2"), permanentEntry(0x1000, 0x10, 0xa000, "a1")});
    // A map-clause entry in the gap after a2, then image B around it.
    MapEntry Mapped;
    Mapped.HstBegin = 0x1040;
    Mapped.HstEnd = 0x1050;
    Mapped.TgtBegin = 0xc040;
    Mapped.DynamicRef = 1;
    Mapped.Name = "mapped";
    Table.insert(Mapped);
    Table.insertPermanent(
        ImageB, {permanentEntry(0x1010, 0x8, 0xb010, "b1"), permanentEntry(0x1060, 0x8, 0xb060, "b2")});
  }
  std::string nameAt(uintptr_t Begin, uint64_t Size) {
    MapLookup Found = Table.lookup(Begin, Size);
    return Found.Entry ? Found.Entry->Name : std::string("none");
  }
};

TEST_F(PermanentEntries, LookupInsideAnEntryTranslates) {
  MapLookup Found = Table.lookup(0x1024, 4);
  ASSERT_NE(Found.Entry, nullptr);
  EXPECT_EQ(Found.Entry->Name, "a2");
  EXPECT_TRUE(Found.Contained);
  EXPECT_FALSE(Found.Extends);
  EXPECT_EQ(Found.Entry->translate(0x1024), 0xa024u);
  EXPECT_TRUE(Found.Entry->isInfinite());
  EXPECT_EQ(nameAt(0x1000, 0), "a1");
  EXPECT_EQ(nameAt(0x100f, 1), "a1");
  EXPECT_EQ(nameAt(0x1010, 8), "b1"); // another image's batch, right after a1
  EXPECT_EQ(nameAt(0x1048, 0), "mapped");
  EXPECT_EQ(nameAt(0x1067, 1), "b2");
  EXPECT_EQ(Table.size(), 5u);
}

TEST_F(PermanentEntries, LookupBetweenEntriesFindsNothing) {
  EXPECT_EQ(nameAt(0x1018, 8), "none"); // after b1, before a2
  EXPECT_EQ(nameAt(0x1018, 0), "none");
  EXPECT_EQ(nameAt(0x1030, 0x10), "none");  // after a2, before the mapped entry
  EXPECT_EQ(nameAt(0x1050, 0x10), "none");  // after the mapped entry, before b2
  EXPECT_EQ(nameAt(0x0ff0, 0x10), "none");  // before everything
  EXPECT_EQ(nameAt(0x1068, 0x100), "none"); // after everything
}

TEST_F(PermanentEntries, OverlappingLookupsReportTheOverlappedEntry) {
  // Starts inside a1 and runs into b1: a1 holds the start.
  MapLookup Found = Table.lookup(0x1008, 0x10);
  ASSERT_NE(Found.Entry, nullptr);
  EXPECT_EQ(Found.Entry->Name, "a1");
  EXPECT_TRUE(Found.Extends);
  EXPECT_FALSE(Found.Contained);
  // Starts in a gap and runs into the next entry, whatever structure holds it.
  Found = Table.lookup(0x1018, 0x10);
  ASSERT_NE(Found.Entry, nullptr);
  EXPECT_EQ(Found.Entry->Name, "a2");
  EXPECT_TRUE(Found.Extends);
  EXPECT_EQ(nameAt(0x1038, 0x10), "mapped");
  EXPECT_EQ(nameAt(0x1058, 0x10), "b2");
  EXPECT_EQ(nameAt(0x0ff8, 0x10), "a1");
  // A range covering several entries reports the first one it reaches.
  EXPECT_EQ(nameAt(0x0f00, 0x1000), "a1");
}

TEST_F(PermanentEntries, UnloadingAnImageRemovesExactlyItsEntries) {
  MapEntry *B1 = Table.lookup(0x1010, 8).Entry;
  MapEntry *Mapped = Table.lookup(0x1040, 0x10).Entry;
  ASSERT_NE(B1, nullptr);
  ASSERT_NE(Mapped, nullptr);
  EXPECT_EQ(Table.erasePermanent(ImageA), 2u);
  EXPECT_EQ(Table.size(), 3u);
  EXPECT_EQ(nameAt(0x1000, 0x10), "none");
  EXPECT_EQ(nameAt(0x1020, 0x10), "none");
  // The others stay, at the same addresses (references held across stay valid).
  EXPECT_EQ(Table.lookup(0x1010, 8).Entry, B1);
  EXPECT_EQ(Table.lookup(0x1040, 0x10).Entry, Mapped);
  EXPECT_EQ(nameAt(0x1060, 8), "b2");
  EXPECT_EQ(Table.erasePermanent(ImageA), 0u) << "nothing left of image A";
  // The freed range can be mapped again.
  Table.insert(permanentEntry(0x1000, 0x10, 0xd000, "remapped"));
  EXPECT_EQ(Table.lookup(0x1004, 4).Entry->translate(0x1004), 0xd004u);
  EXPECT_EQ(Table.erasePermanent(ImageB), 2u);
  EXPECT_EQ(Table.size(), 2u);
  EXPECT_EQ(nameAt(0x1010, 8), "none");
  EXPECT_EQ(nameAt(0x1040, 0x10), "mapped");
}

TEST_F(PermanentEntries, ForEachVisitsBothStructuresInAddressOrder) {
  std::vector<std::string> Names;
  Table.forEach([&](MapEntry &E) { Names.push_back(E.Name); });
  EXPECT_EQ(Names, (std::vector<std::string>{"a1", "b1", "a2", "mapped", "b2"}));
}

TEST_F(PermanentEntries, ErasingOnePermanentEntryKeepsTheRestOfItsBatch) {
  MapEntry *A1 = Table.lookup(0x1000, 0x10).Entry;
  ASSERT_NE(A1, nullptr);
  Table.erase(*A1);
  EXPECT_EQ(nameAt(0x1000, 0x10), "none");
  EXPECT_EQ(nameAt(0x1020, 0x10), "a2");
  EXPECT_EQ(Table.size(), 4u);
  EXPECT_EQ(Table.erasePermanent(ImageA), 1u);
}

TEST(PermanentEntriesRules, UpdateAndPresenceWorkOnAPermanentGlobal) {
  // target update to/from on a declare-target global, as a program does.
  MappingTable Table;
  FakeDeviceMemory Device;
  static int Global[4] = {1, 2, 3, 4};
  auto Tgt = Device.allocate(sizeof(Global), nullptr);
  ASSERT_TRUE(static_cast<bool>(Tgt));
  Table.insertPermanent(
      7, {permanentEntry(reinterpret_cast<uintptr_t>(Global), sizeof(Global), *Tgt, "global")});
  MapClauseProcessor P(Table, Device);
  ASSERT_FALSE(static_cast<bool>(P.update({item(Global, sizeof(Global), TO)})));
  EXPECT_EQ(Device.read<int>(*Tgt + 8), 3);
  Device.write<int>(*Tgt + 4, 42);
  ASSERT_FALSE(static_cast<bool>(P.update({item(&Global[1], sizeof(int), FROM)})));
  EXPECT_EQ(Global[1], 42);
  // A map clause neither copies into nor counts on an infinite entry, and
  // exit data with delete keeps it.
  Global[0] = 99;
  ASSERT_FALSE(static_cast<bool>(P.enter({item(Global, sizeof(Global), TO)}, nullptr)));
  EXPECT_EQ(Device.read<int>(*Tgt), 1);
  ASSERT_FALSE(static_cast<bool>(P.exit({item(Global, sizeof(Global), DELETE)})));
  MapLookup Found = Table.lookup(reinterpret_cast<uintptr_t>(Global), sizeof(Global));
  ASSERT_NE(Found.Entry, nullptr);
  EXPECT_TRUE(Found.Entry->isInfinite());
  EXPECT_EQ(Table.size(), 1u);
  Global[0] = 1;
  Global[1] = 2;
}

} // namespace

// The merged, sorted function-pointer table.
#include "FunctionPointerTable.h"
#include "MapTestItems.h"

#include <gtest/gtest.h>

using namespace ompsim::host;
using namespace ompsim::host::testing;

namespace {

std::vector<__omp_offloading_fptr_map_ty> built(const FunctionPointerTable &T) {
  auto Table = T.build();
  EXPECT_TRUE(static_cast<bool>(Table)) << (Table ? "" : errorText(Table.takeError()));
  return Table ? *Table : std::vector<__omp_offloading_fptr_map_ty>{};
}

TEST(FunctionPointerTable, SortsByHostPointer) {
  FunctionPointerTable T;
  ASSERT_FALSE(static_cast<bool>(
      T.addImage(1, "img", {{"c", 0x3000, 0x30}, {"a", 0x1000, 0x10}, {"b", 0x2000, 0x20}})));
  auto Table = built(T);
  ASSERT_EQ(Table.size(), 3u);
  EXPECT_EQ(Table[0].host_ptr, 0x1000u);
  EXPECT_EQ(Table[0].tgt_ptr, 0x10u);
  EXPECT_EQ(Table[1].host_ptr, 0x2000u);
  EXPECT_EQ(Table[2].host_ptr, 0x3000u);
}

TEST(FunctionPointerTable, VtableExpandsToOnePairPerSlot) {
  FunctionPointerTable T;
  IndirectTarget Vt{"__ZTV3Der_l8addr", 0x5000, 0x9000, 48, true};
  ASSERT_FALSE(static_cast<bool>(T.addImage(1, "img", {Vt, {"f", 0x5100, 0x9100}})));
  auto Table = built(T);
  ASSERT_EQ(Table.size(), 7u);
  for (int K = 0; K < 6; ++K) {
    EXPECT_EQ(Table[K].host_ptr, 0x5000u + 8 * K);
    EXPECT_EQ(Table[K].tgt_ptr, 0x9000u + 8 * K);
  }
  EXPECT_EQ(Table[6].host_ptr, 0x5100u);
}

TEST(FunctionPointerTable, VtableSizeNotMultipleOf8IsAnErrorNamingTheEntry) {
  FunctionPointerTable T;
  llvm::Error Err = T.addImage(1, "image of ./prog", {{"__ZTV1X_l3addr", 0x5000, 0x9000, 20, true}});
  ASSERT_TRUE(static_cast<bool>(Err));
  std::string Msg = errorText(std::move(Err));
  EXPECT_NE(Msg.find("__ZTV1X_l3addr"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("20"), std::string::npos) << Msg;
}

TEST(FunctionPointerTable, MergesAcrossLibrariesAndLateRegistration) {
  FunctionPointerTable T;
  ASSERT_FALSE(static_cast<bool>(T.addImage(1, "prog", {{"a", 0x4000, 0x40}, {"b", 0x1000, 0x10}})));
  EXPECT_EQ(built(T).size(), 2u);
  // A library registered later (dlopen) joins the same table, still sorted.
  ASSERT_FALSE(static_cast<bool>(T.addImage(2, "libfoo.so", {{"c", 0x2000, 0x20}})));
  auto Table = built(T);
  ASSERT_EQ(Table.size(), 3u);
  EXPECT_EQ(Table[0].host_ptr, 0x1000u);
  EXPECT_EQ(Table[1].host_ptr, 0x2000u);
  EXPECT_EQ(Table[1].tgt_ptr, 0x20u);
  EXPECT_EQ(Table[2].host_ptr, 0x4000u);
}

TEST(FunctionPointerTable, UnregistrationRemovesOnlyThatLibrary) {
  FunctionPointerTable T;
  ASSERT_FALSE(static_cast<bool>(T.addImage(1, "prog", {{"a", 0x1000, 0x10}})));
  ASSERT_FALSE(static_cast<bool>(T.addImage(2, "lib", {{"b", 0x2000, 0x20}})));
  EXPECT_TRUE(T.removeImage(1));
  EXPECT_FALSE(T.removeImage(1));
  auto Table = built(T);
  ASSERT_EQ(Table.size(), 1u);
  EXPECT_EQ(Table[0].host_ptr, 0x2000u);
}

TEST(FunctionPointerTable, IdenticalDuplicatesCollapse) {
  FunctionPointerTable T;
  ASSERT_FALSE(static_cast<bool>(T.addImage(1, "prog", {{"a", 0x1000, 0x10}})));
  ASSERT_FALSE(static_cast<bool>(T.addImage(2, "lib", {{"a", 0x1000, 0x10}})));
  EXPECT_EQ(built(T).size(), 1u);
}

TEST(FunctionPointerTable, ConflictingDuplicatesNameBothEntries) {
  FunctionPointerTable T;
  ASSERT_FALSE(static_cast<bool>(T.addImage(1, "prog", {{"first_entry", 0x1000, 0x10}})));
  ASSERT_FALSE(static_cast<bool>(T.addImage(2, "libx.so", {{"second_entry", 0x1000, 0x99}})));
  auto Table = T.build();
  ASSERT_FALSE(static_cast<bool>(Table));
  std::string Msg = errorText(Table.takeError());
  EXPECT_NE(Msg.find("first_entry"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("second_entry"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("libx.so"), std::string::npos) << Msg;
}

TEST(FunctionPointerTable, EmptyTable) {
  FunctionPointerTable T;
  EXPECT_TRUE(built(T).empty());
}

} // namespace

// The merged, sorted function-pointer table.
#include "FunctionPointerTable.h"

#include <gtest/gtest.h>

using namespace ompsim::host;

namespace {

std::string errorText(llvm::Error err) { return llvm::toString(std::move(err)); }

std::vector<__omp_offloading_fptr_map_ty> built(const FunctionPointerTable &t) {
  auto table = t.build();
  EXPECT_TRUE(static_cast<bool>(table)) << (table ? "" : errorText(table.takeError()));
  return table ? *table : std::vector<__omp_offloading_fptr_map_ty>{};
}

TEST(FunctionPointerTable, SortsByHostPointer) {
  FunctionPointerTable t;
  ASSERT_FALSE(static_cast<bool>(
      t.addImage(1, "img", {{"c", 0x3000, 0x30}, {"a", 0x1000, 0x10}, {"b", 0x2000, 0x20}})));
  auto table = built(t);
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[0].host_ptr, 0x1000u);
  EXPECT_EQ(table[0].tgt_ptr, 0x10u);
  EXPECT_EQ(table[1].host_ptr, 0x2000u);
  EXPECT_EQ(table[2].host_ptr, 0x3000u);
}

TEST(FunctionPointerTable, VtableExpandsToOnePairPerSlot) {
  FunctionPointerTable t;
  IndirectTarget vt{"__ZTV3Der_l8addr", 0x5000, 0x9000, 48, true};
  ASSERT_FALSE(static_cast<bool>(t.addImage(1, "img", {vt, {"f", 0x5100, 0x9100}})));
  auto table = built(t);
  ASSERT_EQ(table.size(), 7u);
  for (int k = 0; k < 6; ++k) {
    EXPECT_EQ(table[k].host_ptr, 0x5000u + 8 * k);
    EXPECT_EQ(table[k].tgt_ptr, 0x9000u + 8 * k);
  }
  EXPECT_EQ(table[6].host_ptr, 0x5100u);
}

TEST(FunctionPointerTable, VtableSizeNotMultipleOf8IsAnErrorNamingTheEntry) {
  FunctionPointerTable t;
  llvm::Error err = t.addImage(1, "image of ./prog", {{"__ZTV1X_l3addr", 0x5000, 0x9000, 20, true}});
  ASSERT_TRUE(static_cast<bool>(err));
  std::string msg = errorText(std::move(err));
  EXPECT_NE(msg.find("__ZTV1X_l3addr"), std::string::npos) << msg;
  EXPECT_NE(msg.find("20"), std::string::npos) << msg;
}

TEST(FunctionPointerTable, MergesAcrossLibrariesAndLateRegistration) {
  FunctionPointerTable t;
  ASSERT_FALSE(static_cast<bool>(t.addImage(1, "prog", {{"a", 0x4000, 0x40}, {"b", 0x1000, 0x10}})));
  EXPECT_EQ(built(t).size(), 2u);
  // A library registered later (dlopen) joins the same table, still sorted.
  ASSERT_FALSE(static_cast<bool>(t.addImage(2, "libfoo.so", {{"c", 0x2000, 0x20}})));
  auto table = built(t);
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[0].host_ptr, 0x1000u);
  EXPECT_EQ(table[1].host_ptr, 0x2000u);
  EXPECT_EQ(table[1].tgt_ptr, 0x20u);
  EXPECT_EQ(table[2].host_ptr, 0x4000u);
}

TEST(FunctionPointerTable, UnregistrationRemovesOnlyThatLibrary) {
  FunctionPointerTable t;
  ASSERT_FALSE(static_cast<bool>(t.addImage(1, "prog", {{"a", 0x1000, 0x10}})));
  ASSERT_FALSE(static_cast<bool>(t.addImage(2, "lib", {{"b", 0x2000, 0x20}})));
  EXPECT_TRUE(t.removeImage(1));
  EXPECT_FALSE(t.removeImage(1));
  auto table = built(t);
  ASSERT_EQ(table.size(), 1u);
  EXPECT_EQ(table[0].host_ptr, 0x2000u);
}

TEST(FunctionPointerTable, IdenticalDuplicatesCollapse) {
  FunctionPointerTable t;
  ASSERT_FALSE(static_cast<bool>(t.addImage(1, "prog", {{"a", 0x1000, 0x10}})));
  ASSERT_FALSE(static_cast<bool>(t.addImage(2, "lib", {{"a", 0x1000, 0x10}})));
  EXPECT_EQ(built(t).size(), 1u);
}

TEST(FunctionPointerTable, ConflictingDuplicatesNameBothEntries) {
  FunctionPointerTable t;
  ASSERT_FALSE(static_cast<bool>(t.addImage(1, "prog", {{"first_entry", 0x1000, 0x10}})));
  ASSERT_FALSE(static_cast<bool>(t.addImage(2, "libx.so", {{"second_entry", 0x1000, 0x99}})));
  auto table = t.build();
  ASSERT_FALSE(static_cast<bool>(table));
  std::string msg = errorText(table.takeError());
  EXPECT_NE(msg.find("first_entry"), std::string::npos) << msg;
  EXPECT_NE(msg.find("second_entry"), std::string::npos) << msg;
  EXPECT_NE(msg.find("libx.so"), std::string::npos) << msg;
}

TEST(FunctionPointerTable, EmptyTable) {
  FunctionPointerTable t;
  EXPECT_TRUE(built(t).empty());
}

} // namespace

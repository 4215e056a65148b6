// Map-clause rules (OpenMP 5.1) on the mapping table, against a fake device.
#include "FakeDeviceMemory.h"
#include "MapClauseProcessor.h"
#include "MapFlags.h"

#include "ompsim/offload_abi.h"

#include <gtest/gtest.h>

using namespace ompsim::host;
using ompsim::host::testing::FakeDeviceMemory;

namespace {

namespace flag = ompsim::host::mapflag;
constexpr int64_t TO = flag::To, FROM = flag::From, ALWAYS = flag::Always, DELETE = flag::Delete,
                  PTR_AND_OBJ = flag::PtrAndObj, PARAM = flag::TargetParam, RETURN_PARAM = flag::ReturnParam,
                  PRIVATE = flag::Private, LITERAL = flag::Literal, IMPLICIT = flag::Implicit,
                  PRESENT = flag::Present, HOLD = flag::OmpxHold, ATTACH = flag::Attach;
constexpr int64_t memberOf(int parentIndex1) { return static_cast<int64_t>(uint64_t(parentIndex1) << 48); }

MapArg item(void *p, int64_t size, int64_t type, const char *name = nullptr) {
  return MapArg{p, p, size, type, const_cast<char *>(name), nullptr};
}

std::string errorText(llvm::Error err) { return llvm::toString(std::move(err)); }

class MapRules : public ::testing::Test {
protected:
  MappingTable table;
  FakeDeviceMemory device;

  void enter(std::vector<MapArg> args, void **bases = nullptr) {
    MapClauseProcessor p(table, device);
    ASSERT_FALSE(static_cast<bool>(p.enter(args, bases)));
  }
  void exit(std::vector<MapArg> args) {
    MapClauseProcessor p(table, device);
    ASSERT_FALSE(static_cast<bool>(p.exit(args)));
  }
  MapEntry *find(const void *p) { return table.lookup(reinterpret_cast<uintptr_t>(p), 0).entry; }
  uint64_t tgt(const void *p) { return find(p)->translate(reinterpret_cast<uintptr_t>(p)); }
};

TEST_F(MapRules, ToCopiesInFromCopiesOutOnLastRelease) {
  int a[4] = {1, 2, 3, 4};
  enter({item(a, sizeof(a), TO | FROM)});
  ASSERT_NE(find(a), nullptr);
  EXPECT_EQ(device.read<int>(tgt(&a[2])), 3);
  device.write<int>(tgt(&a[2]), 42);
  exit({item(a, sizeof(a), TO | FROM)});
  EXPECT_EQ(a[2], 42);
  EXPECT_EQ(find(a), nullptr);
  EXPECT_EQ(device.liveBlocks(), 0u);
}

TEST_F(MapRules, AllocDoesNotCopyAndReleaseKeepsHost) {
  int a[2] = {5, 6};
  enter({item(a, sizeof(a), 0)});
  EXPECT_EQ(device.read<int>(tgt(a)), 0);
  device.write<int>(tgt(a), 9);
  exit({item(a, sizeof(a), 0)}); // release
  EXPECT_EQ(a[0], 5);
  EXPECT_EQ(find(a), nullptr);
}

TEST_F(MapRules, ReferenceCountDelaysCopyBackUntilLast) {
  int x = 1;
  enter({item(&x, 4, TO)});        // target enter data map(to: x)
  enter({item(&x, 4, TO | FROM)}); // target region map(tofrom: x): present, count 2
  EXPECT_EQ(find(&x)->dynamicRef, 2u);
  device.write<int>(tgt(&x), 7);
  exit({item(&x, 4, TO | FROM)}); // count 1: no copy back
  EXPECT_EQ(x, 1);
  EXPECT_EQ(find(&x)->dynamicRef, 1u);
  exit({item(&x, 4, FROM)}); // target exit data map(from: x): last, copies
  EXPECT_EQ(x, 7);
  EXPECT_EQ(find(&x), nullptr);
}

TEST_F(MapRules, ToOnPresentItemDoesNotCopyUnlessAlways) {
  int x = 1;
  enter({item(&x, 4, TO)});
  x = 2;
  enter({item(&x, 4, TO)});
  EXPECT_EQ(device.read<int>(tgt(&x)), 1);
  enter({item(&x, 4, TO | ALWAYS)});
  EXPECT_EQ(device.read<int>(tgt(&x)), 2);
}

TEST_F(MapRules, AlwaysFromCopiesBeforeLastRelease) {
  int x = 1;
  enter({item(&x, 4, TO)});
  enter({item(&x, 4, TO)});
  device.write<int>(tgt(&x), 5);
  exit({item(&x, 4, FROM | ALWAYS)});
  EXPECT_EQ(x, 5);
  EXPECT_NE(find(&x), nullptr);
}

TEST_F(MapRules, DeleteDropsEntryWhateverTheCount) {
  int x = 1;
  enter({item(&x, 4, TO)});
  enter({item(&x, 4, TO)});
  enter({item(&x, 4, TO)});
  device.write<int>(tgt(&x), 8);
  exit({item(&x, 4, DELETE)});
  EXPECT_EQ(find(&x), nullptr);
  EXPECT_EQ(x, 1); // delete does not copy
  EXPECT_EQ(device.liveBlocks(), 0u);
}

TEST_F(MapRules, HoldCountSurvivesDelete) {
  int x = 1;
  enter({item(&x, 4, TO | HOLD)});
  enter({item(&x, 4, TO)});
  EXPECT_EQ(find(&x)->holdRef, 1u);
  EXPECT_EQ(find(&x)->dynamicRef, 1u);
  exit({item(&x, 4, DELETE)});
  ASSERT_NE(find(&x), nullptr) << "ompx_hold keeps the entry alive";
  EXPECT_EQ(find(&x)->dynamicRef, 0u);
  exit({item(&x, 4, HOLD)});
  EXPECT_EQ(find(&x), nullptr);
}

TEST_F(MapRules, PresentMissingIsAnErrorNamingVariableAndAddress) {
  int x = 1;
  MapClauseProcessor p(table, device);
  llvm::Error err = p.enter({item(&x, 4, TO | PRESENT, ";x;t.c;3;1;;")}, nullptr);
  ASSERT_TRUE(static_cast<bool>(err));
  std::string msg = errorText(std::move(err));
  EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not present"), std::string::npos) << msg;
  EXPECT_NE(msg.find("0x"), std::string::npos) << msg;
  EXPECT_EQ(find(&x), nullptr);
}

TEST_F(MapRules, PresentOnExitAndUpdate) {
  int x = 1;
  MapClauseProcessor p(table, device);
  EXPECT_TRUE(static_cast<bool>(p.exit({item(&x, 4, FROM | PRESENT)})));
  EXPECT_TRUE(static_cast<bool>(p.update({item(&x, 4, FROM | PRESENT)})));
  EXPECT_FALSE(static_cast<bool>(p.update({item(&x, 4, FROM)}))) << "absent item: update is a no-op";
}

TEST_F(MapRules, ExtendingAMappedSectionIsAnError) {
  int a[8] = {};
  enter({item(a, 4 * sizeof(int), TO)});
  MapClauseProcessor p(table, device);
  llvm::Error err = p.enter({item(&a[2], 4 * sizeof(int), TO)}, nullptr);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_NE(errorText(std::move(err)).find("extends"), std::string::npos);
}

TEST_F(MapRules, SubsectionOfMappedBlockTranslatesInside) {
  int a[8] = {};
  enter({item(a, sizeof(a), TO)});
  enter({item(&a[3], 2 * sizeof(int), TO)});
  EXPECT_EQ(tgt(&a[3]), tgt(a) + 3 * sizeof(int));
  EXPECT_EQ(find(a)->dynamicRef, 2u);
}

TEST_F(MapRules, UpdateToAndFrom) {
  int x = 1;
  enter({item(&x, 4, TO)});
  x = 3;
  MapClauseProcessor p(table, device);
  ASSERT_FALSE(static_cast<bool>(p.update({item(&x, 4, TO)})));
  EXPECT_EQ(device.read<int>(tgt(&x)), 3);
  device.write<int>(tgt(&x), 11);
  ASSERT_FALSE(static_cast<bool>(p.update({item(&x, 4, FROM)})));
  EXPECT_EQ(x, 11);
}

TEST_F(MapRules, PointerAttachmentAndShadowRestore) {
  struct S {
    int n;
    int *p;
  };
  int data[3] = {1, 2, 3};
  S s{3, data};
  // map(tofrom: s, s.p[0:3]): combined struct entry, then the pointee as
  // PTR_AND_OBJ member of it.
  std::vector<MapArg> args = {
      MapArg{&s, &s, sizeof(S), PARAM | TO | FROM, nullptr, nullptr},
      MapArg{&s.p, data, sizeof(data), memberOf(1) | PTR_AND_OBJ | TO | FROM, nullptr, nullptr},
  };
  enter(args);
  uint64_t devS = tgt(&s);
  uint64_t devData = tgt(data);
  EXPECT_EQ(device.read<uint64_t>(devS + offsetof(S, p)), devData) << "device s.p points at device data";
  EXPECT_EQ(device.read<int>(devData + 4), 2);
  device.write<int>(devData + 4, 20);
  device.write<int>(devS, 30);
  exit(args);
  EXPECT_EQ(s.p, data) << "the host pointer keeps its host value after copy-back";
  EXPECT_EQ(s.n, 30);
  EXPECT_EQ(data[1], 20);
  EXPECT_EQ(device.liveBlocks(), 0u);
}

TEST_F(MapRules, PointerAttachmentForStandalonePointer) {
  int data[2] = {4, 5};
  int *ptr = data;
  // map(to: ptr[0:2]) where ptr is itself a mapped variable (PTR_AND_OBJ, no parent).
  std::vector<MapArg> args = {MapArg{&ptr, data, sizeof(data), PTR_AND_OBJ | TO, nullptr, nullptr}};
  enter(args);
  ASSERT_NE(find(&ptr), nullptr) << "the pointer itself is mapped";
  EXPECT_EQ(device.read<uint64_t>(tgt(&ptr)), tgt(data));
  exit(args);
  EXPECT_NE(find(&ptr), nullptr) << "as in stock libomptarget, the exit releases only the pointee";
  EXPECT_EQ(find(data), nullptr);
  EXPECT_EQ(ptr, data);
}

TEST_F(MapRules, MemberOfSharesParentCountAndCopiesOnlyMembers) {
  struct T {
    int a, b, c;
  };
  T t{1, 2, 3};
  // map(to: t.a) map(from: t.c): combined entry spanning a..c, members.
  std::vector<MapArg> args = {
      MapArg{&t, &t.a, offsetof(T, c) + sizeof(int), PARAM, nullptr, nullptr},
      MapArg{&t, &t.a, sizeof(int), memberOf(1) | TO, nullptr, nullptr},
      MapArg{&t, &t.c, sizeof(int), memberOf(1) | FROM, nullptr, nullptr},
  };
  enter(args);
  EXPECT_EQ(find(&t)->dynamicRef, 1u) << "members do not count";
  EXPECT_EQ(device.read<int>(tgt(&t.a)), 1);
  EXPECT_EQ(device.read<int>(tgt(&t.c)), 0) << "from-only member is not copied in";
  device.write<int>(tgt(&t.b), 50);
  device.write<int>(tgt(&t.c), 60);
  exit(args);
  EXPECT_EQ(t.c, 60);
  EXPECT_EQ(t.b, 2) << "b is not a mapped member";
  EXPECT_EQ(find(&t), nullptr);
}

TEST_F(MapRules, ZeroLengthSectionLooksUpTheTable) {
  int a[4] = {};
  int unmapped = 0;
  enter({item(a, sizeof(a), TO)});
  MapClauseProcessor p(table, device);
  std::vector<uint64_t> privates;
  // A pointer into a mapped block translates, even past its start.
  MapArg inside{&a[2], &a[2], 0, PARAM | IMPLICIT, nullptr, nullptr};
  ASSERT_FALSE(static_cast<bool>(p.enter({inside}, nullptr)));
  auto v = p.kernelArgument(inside, privates);
  ASSERT_TRUE(static_cast<bool>(v));
  EXPECT_EQ(*v, tgt(a) + 2 * sizeof(int));
  EXPECT_EQ(find(a)->dynamicRef, 2u) << "a present zero-length section counts like any item";
  ASSERT_FALSE(static_cast<bool>(p.exit({inside})));
  EXPECT_EQ(find(a)->dynamicRef, 1u) << "and releases its count at the end";
  // An unmapped pointer keeps its host value (OpenMP 5.1) and maps nothing.
  MapArg outside{&unmapped, &unmapped, 0, PARAM | IMPLICIT, nullptr, nullptr};
  ASSERT_FALSE(static_cast<bool>(p.enter({outside}, nullptr)));
  auto w = p.kernelArgument(outside, privates);
  ASSERT_TRUE(static_cast<bool>(w));
  EXPECT_EQ(*w, reinterpret_cast<uint64_t>(&unmapped));
  EXPECT_EQ(find(&unmapped), nullptr);
}

TEST_F(MapRules, PermanentEntryTranslatesFunctionPointerValue) {
  // What image registration does for an indirect function: an infinite entry.
  static char hostFn[16];
  MapEntry e;
  e.hstBegin = reinterpret_cast<uintptr_t>(hostFn);
  e.hstEnd = e.hstBegin + 8;
  e.tgtBegin = 0x200000001000ULL;
  e.dynamicRef = MapEntry::Infinite;
  table.insert(e);
  MapArg fp{hostFn, hostFn, 0, PARAM | IMPLICIT, nullptr, nullptr};
  MapClauseProcessor p(table, device);
  std::vector<uint64_t> privates;
  ASSERT_FALSE(static_cast<bool>(p.enter({fp}, nullptr)));
  auto v = p.kernelArgument(fp, privates);
  ASSERT_TRUE(static_cast<bool>(v));
  EXPECT_EQ(*v, 0x200000001000ULL);
  ASSERT_FALSE(static_cast<bool>(p.exit({fp})));
  // delete never removes an infinite entry
  ASSERT_FALSE(static_cast<bool>(p.exit({MapArg{hostFn, hostFn, 8, DELETE, nullptr, nullptr}})));
  EXPECT_NE(find(hostFn), nullptr);
}

TEST_F(MapRules, LiteralAndFirstprivateArguments) {
  int x = 77;
  MapClauseProcessor p(table, device);
  std::vector<uint64_t> privates;
  MapArg literal{reinterpret_cast<void *>(uintptr_t(1234)),
                 reinterpret_cast<void *>(uintptr_t(1234)),
                 0,
                 PARAM | LITERAL,
                 nullptr,
                 nullptr};
  MapArg first{&x, &x, 4, PARAM | PRIVATE | TO, nullptr, nullptr};
  ASSERT_FALSE(static_cast<bool>(p.enter({literal, first}, nullptr)));
  EXPECT_EQ(table.size(), 0u) << "literals and firstprivates are not mapped";
  auto l = p.kernelArgument(literal, privates);
  auto f = p.kernelArgument(first, privates);
  ASSERT_TRUE(l && f);
  EXPECT_EQ(*l, 1234u);
  ASSERT_EQ(privates.size(), 1u);
  EXPECT_EQ(*f, privates[0]);
  EXPECT_EQ(device.read<int>(*f), 77);
}

TEST_F(MapRules, UseDevicePtrReturnsDeviceAddress) {
  int a[4] = {};
  enter({item(a, sizeof(a), TO)});
  int *ptr = &a[1];
  void *bases[1] = {ptr};
  enter({MapArg{ptr, ptr, 0, RETURN_PARAM, nullptr, nullptr}}, bases);
  EXPECT_EQ(reinterpret_cast<uint64_t>(bases[0]), tgt(a) + sizeof(int));
}

void pushTwoComponents(void *handle, void *base, void *begin, int64_t size, int64_t type, void *name) {
  // What a declare mapper for struct { int n; int *p; } with map(s, s.p[0:n]) pushes.
  struct S {
    int n;
    int *p;
  };
  auto *s = static_cast<S *>(begin);
  auto &list = static_cast<MapperComponents *>(handle)->components;
  // MEMBER_OF is 1-based within the component list: the struct goes next.
  int64_t memberBits = static_cast<int64_t>((list.size() + 1) << 48);
  list.push_back(MapArg{base, begin, size, type & ~PARAM, name, nullptr});
  list.push_back(MapArg{&s->p, s->p, s->n * int64_t(sizeof(int)),
                        memberBits | PTR_AND_OBJ | (type & (TO | FROM)), name, nullptr});
}

TEST_F(MapRules, DeclareMapperComponentsAreMapped) {
  struct S {
    int n;
    int *p;
  };
  int data[2] = {8, 9};
  S s{2, data};
  MapArg withMapper{
      &s, &s, sizeof(S), PARAM | TO | FROM, nullptr, reinterpret_cast<void *>(&pushTwoComponents)};
  enter({withMapper});
  ASSERT_NE(find(data), nullptr) << "the mapper's pointee component is mapped";
  EXPECT_EQ(device.read<int>(tgt(&data[1])), 9);
  EXPECT_EQ(device.read<uint64_t>(tgt(&s.p)), tgt(data));
  device.write<int>(tgt(data), 80);
  exit({withMapper});
  EXPECT_EQ(data[0], 80);
  EXPECT_EQ(s.p, data);
  EXPECT_EQ(find(data), nullptr);
  // Stock libomptarget neither counts nor releases a mapper's first
  // component (the struct itself), so it stays mapped; ompsim does the same.
  EXPECT_NE(find(&s), nullptr);
}

TEST_F(MapRules, AttachDoesNotCountAndExitFromCopiesBack) {
  // target enter data map(to: p[:4]); target exit data map(from: p[:4]), as
  // clang-22 lowers them: the section, then an ATTACH item for the pointer.
  int data[4] = {1, 2, 3, 4};
  int *p = data;
  enter({MapArg{p, p, sizeof(data), TO, nullptr, nullptr},
         MapArg{&p, p, sizeof(void *), ATTACH, nullptr, nullptr}});
  ASSERT_NE(find(data), nullptr);
  EXPECT_EQ(find(data)->totalRef(), 1u) << "ATTACH adds no reference";
  EXPECT_EQ(find(&p), nullptr) << "p itself is not mapped, so nothing is attached";
  device.write<int>(tgt(&data[3]), 40);
  exit({MapArg{p, p, sizeof(data), FROM, nullptr, nullptr}});
  EXPECT_EQ(data[3], 40) << "the last release copies back";
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(device.liveBlocks(), 0u);
}

TEST_F(MapRules, AttachPointsTheDeviceStructMemberAtTheDevicePointee) {
  struct S {
    int n;
    int *data;
  };
  int data[3] = {1, 2, 3};
  S s{3, data};
  // map(tofrom: s, s.data[:3])
  std::vector<MapArg> args = {
      MapArg{&s, &s, sizeof(S), PARAM | TO | FROM, nullptr, nullptr},
      MapArg{data, data, sizeof(data), TO | FROM, nullptr, nullptr},
      MapArg{&s.data, data, sizeof(void *), ATTACH, nullptr, nullptr},
  };
  enter(args);
  EXPECT_EQ(device.read<uint64_t>(tgt(&s.data)), tgt(data)) << "device s.data is the device copy";
  EXPECT_EQ(find(data)->totalRef(), 1u);
  device.write<int>(tgt(&data[2]), 30);
  exit(args);
  EXPECT_EQ(s.data, data) << "the host pointer keeps its host value after copy-back";
  EXPECT_EQ(data[2], 30);
  EXPECT_EQ(table.size(), 0u);
}

TEST_F(MapRules, AttachOfAnOffsetSectionPointsAtTheBase) {
  int data[8] = {};
  int *p = data;
  int **pp = &p;
  // map(to: pp[0]) map(to: p[2:3]): device p must hold the device address of data[0].
  enter({MapArg{pp, pp, sizeof(int *), TO, nullptr, nullptr},
         MapArg{p, &p[2], 3 * sizeof(int), TO, nullptr, nullptr},
         MapArg{&p, &p[2], sizeof(void *), ATTACH, nullptr, nullptr}});
  EXPECT_EQ(device.read<uint64_t>(tgt(&p)), tgt(&data[2]) - 2 * sizeof(int));
  // A zero-length lookup of the pointee's base finds the block through its base.
  EXPECT_NE(table.lookup(reinterpret_cast<uintptr_t>(data), 0).entry, nullptr);
}

TEST_F(MapRules, UnimplementedMapTypeBitIsAnErrorNamingBitAndVariable) {
  int x = 0;
  MapClauseProcessor p(table, device);
  std::string msg = errorText(p.enter({item(&x, 4, TO | 0x800, ";x;f.c;1;1;;")}, nullptr));
  EXPECT_NE(msg.find("0x800"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
  EXPECT_EQ(table.size(), 0u) << "nothing is mapped";
  msg = errorText(p.enter({item(&x, 4, TO | flag::NonContig, ";x;f.c;1;1;;")}, nullptr));
  EXPECT_NE(msg.find("OMP_MAP_NON_CONTIG"), std::string::npos) << msg;
}

TEST_F(MapRules, NonContiguousUpdateMovesMergedRuns) {
  int a[6][8] = {};
  enter({item(a, sizeof(a), 0)});
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 8; ++j)
      device.write<int>(tgt(&a[i][j]), 100 + 10 * i + j);
  MapClauseProcessor p(table, device);
  // update from(a[1:3][2:4]) as clang-22 describes it.
  NonContigDim rows[3] = {{1, 3, 32}, {2, 4, 4}, {0, 1, 4}};
  int before = device.retrieves;
  ASSERT_FALSE(static_cast<bool>(
      p.update({MapArg{a, rows, 3, FROM | static_cast<int64_t>(flag::NonContig), nullptr, nullptr}})));
  EXPECT_EQ(device.retrieves - before, 3) << "one transfer per row";
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 8; ++j)
      EXPECT_EQ(a[i][j], (i >= 1 && i <= 3 && j >= 2 && j <= 5) ? 100 + 10 * i + j : 0) << i << "," << j;
  // update from(a[0][1:3:3]): strided elements 1, 4, 7 of row 0.
  NonContigDim strided[2] = {{1, 3, 12}, {0, 1, 4}};
  ASSERT_FALSE(static_cast<bool>(
      p.update({MapArg{a, strided, 2, FROM | static_cast<int64_t>(flag::NonContig), nullptr, nullptr}})));
  EXPECT_EQ(a[0][1], 101);
  EXPECT_EQ(a[0][4], 104);
  EXPECT_EQ(a[0][7], 107);
  EXPECT_EQ(a[0][2], 0);
  // update from(a[0:6][0:8]) in descriptor form is one transfer.
  NonContigDim whole[3] = {{0, 6, 32}, {0, 8, 4}, {0, 1, 4}};
  before = device.retrieves;
  ASSERT_FALSE(static_cast<bool>(
      p.update({MapArg{a, whole, 3, FROM | static_cast<int64_t>(flag::NonContig), nullptr, nullptr}})));
  EXPECT_EQ(device.retrieves - before, 1);
  EXPECT_EQ(a[5][0], 150);
}

// Permanent entries (an image's declare-target globals and indirect
// functions) live in flat per-image batches; lookups must see them and the
// map-clause entries as one table.

MapEntry permanentEntry(uintptr_t begin, uint64_t size, uint64_t tgt, const char *name) {
  MapEntry e;
  e.hstBegin = begin;
  e.hstEnd = begin + size;
  e.tgtBegin = tgt;
  e.dynamicRef = MapEntry::Infinite;
  e.name = name;
  return e;
}

class PermanentEntries : public ::testing::Test {
protected:
  MappingTable table;
  static constexpr uint64_t ImageA = 1, ImageB = 2;

  void SetUp() override {
    // Image A: two globals with a gap between them, given out of order.
    table.insertPermanent(
        ImageA, {permanentEntry(0x1020, 0x10, 0xa020, "a2"), permanentEntry(0x1000, 0x10, 0xa000, "a1")});
    // A map-clause entry in the gap after a2, then image B around it.
    MapEntry mapped;
    mapped.hstBegin = 0x1040;
    mapped.hstEnd = 0x1050;
    mapped.tgtBegin = 0xc040;
    mapped.dynamicRef = 1;
    mapped.name = "mapped";
    table.insert(mapped);
    table.insertPermanent(
        ImageB, {permanentEntry(0x1010, 0x8, 0xb010, "b1"), permanentEntry(0x1060, 0x8, 0xb060, "b2")});
  }
  std::string nameAt(uintptr_t begin, uint64_t size) {
    MapLookup found = table.lookup(begin, size);
    return found.entry ? found.entry->name : std::string("none");
  }
};

TEST_F(PermanentEntries, LookupInsideAnEntryTranslates) {
  MapLookup found = table.lookup(0x1024, 4);
  ASSERT_NE(found.entry, nullptr);
  EXPECT_EQ(found.entry->name, "a2");
  EXPECT_TRUE(found.contained);
  EXPECT_FALSE(found.extends);
  EXPECT_EQ(found.entry->translate(0x1024), 0xa024u);
  EXPECT_TRUE(found.entry->isInfinite());
  EXPECT_EQ(nameAt(0x1000, 0), "a1");
  EXPECT_EQ(nameAt(0x100f, 1), "a1");
  EXPECT_EQ(nameAt(0x1010, 8), "b1"); // another image's batch, right after a1
  EXPECT_EQ(nameAt(0x1048, 0), "mapped");
  EXPECT_EQ(nameAt(0x1067, 1), "b2");
  EXPECT_EQ(table.size(), 5u);
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
  MapLookup found = table.lookup(0x1008, 0x10);
  ASSERT_NE(found.entry, nullptr);
  EXPECT_EQ(found.entry->name, "a1");
  EXPECT_TRUE(found.extends);
  EXPECT_FALSE(found.contained);
  // Starts in a gap and runs into the next entry, whatever structure holds it.
  found = table.lookup(0x1018, 0x10);
  ASSERT_NE(found.entry, nullptr);
  EXPECT_EQ(found.entry->name, "a2");
  EXPECT_TRUE(found.extends);
  EXPECT_EQ(nameAt(0x1038, 0x10), "mapped");
  EXPECT_EQ(nameAt(0x1058, 0x10), "b2");
  EXPECT_EQ(nameAt(0x0ff8, 0x10), "a1");
  // A range covering several entries reports the first one it reaches.
  EXPECT_EQ(nameAt(0x0f00, 0x1000), "a1");
}

TEST_F(PermanentEntries, UnloadingAnImageRemovesExactlyItsEntries) {
  MapEntry *b1 = table.lookup(0x1010, 8).entry;
  MapEntry *mapped = table.lookup(0x1040, 0x10).entry;
  ASSERT_NE(b1, nullptr);
  ASSERT_NE(mapped, nullptr);
  EXPECT_EQ(table.erasePermanent(ImageA), 2u);
  EXPECT_EQ(table.size(), 3u);
  EXPECT_EQ(nameAt(0x1000, 0x10), "none");
  EXPECT_EQ(nameAt(0x1020, 0x10), "none");
  // The others stay, at the same addresses (references held across stay valid).
  EXPECT_EQ(table.lookup(0x1010, 8).entry, b1);
  EXPECT_EQ(table.lookup(0x1040, 0x10).entry, mapped);
  EXPECT_EQ(nameAt(0x1060, 8), "b2");
  EXPECT_EQ(table.erasePermanent(ImageA), 0u) << "nothing left of image A";
  // The freed range can be mapped again.
  table.insert(permanentEntry(0x1000, 0x10, 0xd000, "remapped"));
  EXPECT_EQ(table.lookup(0x1004, 4).entry->translate(0x1004), 0xd004u);
  EXPECT_EQ(table.erasePermanent(ImageB), 2u);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(nameAt(0x1010, 8), "none");
  EXPECT_EQ(nameAt(0x1040, 0x10), "mapped");
}

TEST_F(PermanentEntries, ForEachVisitsBothStructuresInAddressOrder) {
  std::vector<std::string> names;
  table.forEach([&](MapEntry &e) { names.push_back(e.name); });
  EXPECT_EQ(names, (std::vector<std::string>{"a1", "b1", "a2", "mapped", "b2"}));
}

TEST_F(PermanentEntries, ErasingOnePermanentEntryKeepsTheRestOfItsBatch) {
  MapEntry *a1 = table.lookup(0x1000, 0x10).entry;
  ASSERT_NE(a1, nullptr);
  table.erase(*a1);
  EXPECT_EQ(nameAt(0x1000, 0x10), "none");
  EXPECT_EQ(nameAt(0x1020, 0x10), "a2");
  EXPECT_EQ(table.size(), 4u);
  EXPECT_EQ(table.erasePermanent(ImageA), 1u);
}

TEST(PermanentEntriesRules, UpdateAndPresenceWorkOnAPermanentGlobal) {
  // target update to/from on a declare-target global, as a program does.
  MappingTable table;
  FakeDeviceMemory device;
  static int global[4] = {1, 2, 3, 4};
  auto tgt = device.allocate(sizeof(global), nullptr);
  ASSERT_TRUE(static_cast<bool>(tgt));
  table.insertPermanent(
      7, {permanentEntry(reinterpret_cast<uintptr_t>(global), sizeof(global), *tgt, "global")});
  MapClauseProcessor p(table, device);
  ASSERT_FALSE(static_cast<bool>(p.update({item(global, sizeof(global), TO)})));
  EXPECT_EQ(device.read<int>(*tgt + 8), 3);
  device.write<int>(*tgt + 4, 42);
  ASSERT_FALSE(static_cast<bool>(p.update({item(&global[1], sizeof(int), FROM)})));
  EXPECT_EQ(global[1], 42);
  // A map clause neither copies into nor counts on an infinite entry, and
  // exit data with delete keeps it.
  global[0] = 99;
  ASSERT_FALSE(static_cast<bool>(p.enter({item(global, sizeof(global), TO)}, nullptr)));
  EXPECT_EQ(device.read<int>(*tgt), 1);
  ASSERT_FALSE(static_cast<bool>(p.exit({item(global, sizeof(global), DELETE)})));
  MapLookup found = table.lookup(reinterpret_cast<uintptr_t>(global), sizeof(global));
  ASSERT_NE(found.entry, nullptr);
  EXPECT_TRUE(found.entry->isInfinite());
  EXPECT_EQ(table.size(), 1u);
  global[0] = 1;
  global[1] = 2;
}

} // namespace

// Map-clause rules (OpenMP 5.1) on the mapping table, against a fake device,
// and the names of map arguments.
#include "MapClauseProcessor.h"
#include "FakeDeviceMemory.h"
#include "MapFlags.h"
#include "MapTestItems.h"
#include "TwoComponentMapper.h"

#include "ompsim/offload_abi.h"

#include <gtest/gtest.h>

using namespace ompsim::host;
using namespace ompsim::host::testing;

namespace {

class MapRules : public ::testing::Test {
protected:
  MappingTable Table;
  FakeDeviceMemory Device;

  void enter(std::vector<MapArg> Args, void **Bases = nullptr) {
    MapClauseProcessor P(Table, Device);
    ASSERT_FALSE(static_cast<bool>(P.enter(Args, Bases)));
  }
  void exit(std::vector<MapArg> Args) {
    MapClauseProcessor P(Table, Device);
    ASSERT_FALSE(static_cast<bool>(P.exit(Args)));
  }
  MapEntry *find(const void *P) { return Table.lookup(reinterpret_cast<uintptr_t>(P), 0).Entry; }
  uint64_t tgt(const void *P) { return find(P)->translate(reinterpret_cast<uintptr_t>(P)); }
};

TEST_F(MapRules, ToCopiesInFromCopiesOutOnLastRelease) {
  int A[4] = {1, 2, 3, 4};
  enter({item(A, sizeof(A), TO | FROM)});
  ASSERT_NE(find(A), nullptr);
  EXPECT_EQ(Device.read<int>(tgt(&A[2])), 3);
  Device.write<int>(tgt(&A[2]), 42);
  exit({item(A, sizeof(A), TO | FROM)});
  EXPECT_EQ(A[2], 42);
  EXPECT_EQ(find(A), nullptr);
  EXPECT_EQ(Device.liveBlocks(), 0u);
}

TEST_F(MapRules, AllocDoesNotCopyAndReleaseKeepsHost) {
  int A[2] = {5, 6};
  enter({item(A, sizeof(A), 0)});
  EXPECT_EQ(Device.read<int>(tgt(A)), 0);
  Device.write<int>(tgt(A), 9);
  exit({item(A, sizeof(A), 0)}); // release
  EXPECT_EQ(A[0], 5);
  EXPECT_EQ(find(A), nullptr);
}

TEST_F(MapRules, ReferenceCountDelaysCopyBackUntilLast) {
  int X = 1;
  enter({item(&X, 4, TO)});        // target enter data map(to: x)
  enter({item(&X, 4, TO | FROM)}); // target region map(tofrom: x): present, count 2
  EXPECT_EQ(find(&X)->DynamicRef, 2u);
  Device.write<int>(tgt(&X), 7);
  exit({item(&X, 4, TO | FROM)}); // count 1: no copy back
  EXPECT_EQ(X, 1);
  EXPECT_EQ(find(&X)->DynamicRef, 1u);
  exit({item(&X, 4, FROM)}); // target exit data map(from: x): last, copies
  EXPECT_EQ(X, 7);
  EXPECT_EQ(find(&X), nullptr);
}

TEST_F(MapRules, ToOnPresentItemDoesNotCopyUnlessAlways) {
  int X = 1;
  enter({item(&X, 4, TO)});
  X = 2;
  enter({item(&X, 4, TO)});
  EXPECT_EQ(Device.read<int>(tgt(&X)), 1);
  enter({item(&X, 4, TO | ALWAYS)});
  EXPECT_EQ(Device.read<int>(tgt(&X)), 2);
}

TEST_F(MapRules, AlwaysFromCopiesBeforeLastRelease) {
  int X = 1;
  enter({item(&X, 4, TO)});
  enter({item(&X, 4, TO)});
  Device.write<int>(tgt(&X), 5);
  exit({item(&X, 4, FROM | ALWAYS)});
  EXPECT_EQ(X, 5);
  EXPECT_NE(find(&X), nullptr);
}

TEST_F(MapRules, DeleteDropsEntryWhateverTheCount) {
  int X = 1;
  enter({item(&X, 4, TO)});
  enter({item(&X, 4, TO)});
  enter({item(&X, 4, TO)});
  Device.write<int>(tgt(&X), 8);
  exit({item(&X, 4, DELETE)});
  EXPECT_EQ(find(&X), nullptr);
  EXPECT_EQ(X, 1); // delete does not copy
  EXPECT_EQ(Device.liveBlocks(), 0u);
}

TEST_F(MapRules, HoldCountSurvivesDelete) {
  int X = 1;
  enter({item(&X, 4, TO | HOLD)});
  enter({item(&X, 4, TO)});
  EXPECT_EQ(find(&X)->HoldRef, 1u);
  EXPECT_EQ(find(&X)->DynamicRef, 1u);
  exit({item(&X, 4, DELETE)});
  ASSERT_NE(find(&X), nullptr) << "ompx_hold keeps the entry alive";
  EXPECT_EQ(find(&X)->DynamicRef, 0u);
  exit({item(&X, 4, HOLD)});
  EXPECT_EQ(find(&X), nullptr);
}

TEST_F(MapRules, PresentMissingIsAnErrorNamingVariableAndAddress) {
  int X = 1;
  MapClauseProcessor P(Table, Device);
  llvm::Error Err = P.enter({item(&X, 4, TO | PRESENT, ";x;t.c;3;1;;")}, nullptr);
  ASSERT_TRUE(static_cast<bool>(Err));
  std::string Msg = errorText(std::move(Err));
  EXPECT_NE(Msg.find("'x'"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("not present"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("0x"), std::string::npos) << Msg;
  EXPECT_EQ(find(&X), nullptr);
}

TEST_F(MapRules, PresentOnExitAndUpdate) {
  int X = 1;
  MapClauseProcessor P(Table, Device);
  EXPECT_TRUE(static_cast<bool>(P.exit({item(&X, 4, FROM | PRESENT)})));
  EXPECT_TRUE(static_cast<bool>(P.update({item(&X, 4, FROM | PRESENT)})));
  EXPECT_FALSE(static_cast<bool>(P.update({item(&X, 4, FROM)}))) << "absent item: update is a no-op";
}

TEST_F(MapRules, ExtendingAMappedSectionIsAnError) {
  int A[8] = {};
  enter({item(A, 4 * sizeof(int), TO)});
  MapClauseProcessor P(Table, Device);
  llvm::Error Err = P.enter({item(&A[2], 4 * sizeof(int), TO)}, nullptr);
  ASSERT_TRUE(static_cast<bool>(Err));
  EXPECT_NE(errorText(std::move(Err)).find("extends"), std::string::npos);
}

TEST_F(MapRules, SubsectionOfMappedBlockTranslatesInside) {
  int A[8] = {};
  enter({item(A, sizeof(A), TO)});
  enter({item(&A[3], 2 * sizeof(int), TO)});
  EXPECT_EQ(tgt(&A[3]), tgt(A) + 3 * sizeof(int));
  EXPECT_EQ(find(A)->DynamicRef, 2u);
}

TEST_F(MapRules, UpdateToAndFrom) {
  int X = 1;
  enter({item(&X, 4, TO)});
  X = 3;
  MapClauseProcessor P(Table, Device);
  ASSERT_FALSE(static_cast<bool>(P.update({item(&X, 4, TO)})));
  EXPECT_EQ(Device.read<int>(tgt(&X)), 3);
  Device.write<int>(tgt(&X), 11);
  ASSERT_FALSE(static_cast<bool>(P.update({item(&X, 4, FROM)})));
  EXPECT_EQ(X, 11);
}

TEST_F(MapRules, PointerAttachmentAndShadowRestore) {
  struct S {
    int N;
    int *P;
  };
  int Data[3] = {1, 2, 3};
  S Obj{3, Data};
  // map(tofrom: s, s.p[0:3]): combined struct entry, then the pointee as
  // PTR_AND_OBJ member of it.
  std::vector<MapArg> Args = {
      MapArg{&Obj, &Obj, sizeof(S), PARAM | TO | FROM, nullptr, nullptr},
      MapArg{&Obj.P, Data, sizeof(Data), memberOf(1) | PtrAndObj | TO | FROM, nullptr, nullptr},
  };
  enter(Args);
  uint64_t DevS = tgt(&Obj);
  uint64_t DevData = tgt(Data);
  EXPECT_EQ(Device.read<uint64_t>(DevS + offsetof(S, P)), DevData) << "device s.p points at device data";
  EXPECT_EQ(Device.read<int>(DevData + 4), 2);
  Device.write<int>(DevData + 4, 20);
  Device.write<int>(DevS, 30);
  exit(Args);
  EXPECT_EQ(Obj.P, Data) << "the host pointer keeps its host value after copy-back";
  EXPECT_EQ(Obj.N, 30);
  EXPECT_EQ(Data[1], 20);
  EXPECT_EQ(Device.liveBlocks(), 0u);
}

TEST_F(MapRules, PointerAttachmentForStandalonePointer) {
  int Data[2] = {4, 5};
  int *Ptr = Data;
  // map(to: ptr[0:2]) where ptr is itself a mapped variable (PTR_AND_OBJ, no parent).
  std::vector<MapArg> Args = {MapArg{&Ptr, Data, sizeof(Data), PtrAndObj | TO, nullptr, nullptr}};
  enter(Args);
  ASSERT_NE(find(&Ptr), nullptr) << "the pointer itself is mapped";
  EXPECT_EQ(Device.read<uint64_t>(tgt(&Ptr)), tgt(Data));
  exit(Args);
  EXPECT_NE(find(&Ptr), nullptr) << "as in stock libomptarget, the exit releases only the pointee";
  EXPECT_EQ(find(Data), nullptr);
  EXPECT_EQ(Ptr, Data);
}

TEST_F(MapRules, MemberOfSharesParentCountAndCopiesOnlyMembers) {
  struct T {
    int A, B, C;
  };
  T Obj{1, 2, 3};
  // map(to: t.a) map(from: t.c): combined entry spanning a..c, members.
  std::vector<MapArg> Args = {
      MapArg{&Obj, &Obj.A, offsetof(T, C) + sizeof(int), PARAM, nullptr, nullptr},
      MapArg{&Obj, &Obj.A, sizeof(int), memberOf(1) | TO, nullptr, nullptr},
      MapArg{&Obj, &Obj.C, sizeof(int), memberOf(1) | FROM, nullptr, nullptr},
  };
  enter(Args);
  EXPECT_EQ(find(&Obj)->DynamicRef, 1u) << "members do not count";
  EXPECT_EQ(Device.read<int>(tgt(&Obj.A)), 1);
  EXPECT_EQ(Device.read<int>(tgt(&Obj.C)), 0) << "from-only member is not copied in";
  Device.write<int>(tgt(&Obj.B), 50);
  Device.write<int>(tgt(&Obj.C), 60);
  exit(Args);
  EXPECT_EQ(Obj.C, 60);
  EXPECT_EQ(Obj.B, 2) << "b is not a mapped member";
  EXPECT_EQ(find(&Obj), nullptr);
}

TEST_F(MapRules, ZeroLengthSectionLooksUpTheTable) {
  int A[4] = {};
  int Unmapped = 0;
  enter({item(A, sizeof(A), TO)});
  MapClauseProcessor P(Table, Device);
  std::vector<uint64_t> Privates;
  // A pointer into a mapped block translates, even past its start.
  MapArg Inside{&A[2], &A[2], 0, PARAM | IMPLICIT, nullptr, nullptr};
  ASSERT_FALSE(static_cast<bool>(P.enter({Inside}, nullptr)));
  auto V = P.kernelArgument(Inside, Privates);
  ASSERT_TRUE(static_cast<bool>(V));
  EXPECT_EQ(*V, tgt(A) + 2 * sizeof(int));
  EXPECT_EQ(find(A)->DynamicRef, 2u) << "a present zero-length section counts like any item";
  ASSERT_FALSE(static_cast<bool>(P.exit({Inside})));
  EXPECT_EQ(find(A)->DynamicRef, 1u) << "and releases its count at the end";
  // An unmapped pointer keeps its host value (OpenMP 5.1) and maps nothing.
  MapArg Outside{&Unmapped, &Unmapped, 0, PARAM | IMPLICIT, nullptr, nullptr};
  ASSERT_FALSE(static_cast<bool>(P.enter({Outside}, nullptr)));
  auto W = P.kernelArgument(Outside, Privates);
  ASSERT_TRUE(static_cast<bool>(W));
  EXPECT_EQ(*W, reinterpret_cast<uint64_t>(&Unmapped));
  EXPECT_EQ(find(&Unmapped), nullptr);
}

TEST_F(MapRules, PermanentEntryTranslatesFunctionPointerValue) {
  // What image registration does for an indirect function: an infinite entry.
  static char HostFn[16];
  MapEntry E;
  E.HstBegin = reinterpret_cast<uintptr_t>(HostFn);
  E.HstEnd = E.HstBegin + 8;
  E.TgtBegin = 0x200000001000ULL;
  E.DynamicRef = MapEntry::Infinite;
  Table.insert(E);
  MapArg Fp{HostFn, HostFn, 0, PARAM | IMPLICIT, nullptr, nullptr};
  MapClauseProcessor P(Table, Device);
  std::vector<uint64_t> Privates;
  ASSERT_FALSE(static_cast<bool>(P.enter({Fp}, nullptr)));
  auto V = P.kernelArgument(Fp, Privates);
  ASSERT_TRUE(static_cast<bool>(V));
  EXPECT_EQ(*V, 0x200000001000ULL);
  ASSERT_FALSE(static_cast<bool>(P.exit({Fp})));
  // delete never removes an infinite entry
  ASSERT_FALSE(static_cast<bool>(P.exit({MapArg{HostFn, HostFn, 8, DELETE, nullptr, nullptr}})));
  EXPECT_NE(find(HostFn), nullptr);
}

TEST_F(MapRules, LiteralAndFirstprivateArguments) {
  int X = 77;
  MapClauseProcessor P(Table, Device);
  std::vector<uint64_t> Privates;
  MapArg Literal{reinterpret_cast<void *>(uintptr_t(1234)),
                 reinterpret_cast<void *>(uintptr_t(1234)),
                 0,
                 PARAM | LITERAL,
                 nullptr,
                 nullptr};
  MapArg First{&X, &X, 4, PARAM | PRIVATE | TO, nullptr, nullptr};
  ASSERT_FALSE(static_cast<bool>(P.enter({Literal, First}, nullptr)));
  EXPECT_EQ(Table.size(), 0u) << "literals and firstprivates are not mapped";
  auto L = P.kernelArgument(Literal, Privates);
  auto F = P.kernelArgument(First, Privates);
  ASSERT_TRUE(L && F);
  EXPECT_EQ(*L, 1234u);
  ASSERT_EQ(Privates.size(), 1u);
  EXPECT_EQ(*F, Privates[0]);
  EXPECT_EQ(Device.read<int>(*F), 77);
}

TEST_F(MapRules, UseDevicePtrReturnsDeviceAddress) {
  int A[4] = {};
  enter({item(A, sizeof(A), TO)});
  int *Ptr = &A[1];
  void *Bases[1] = {Ptr};
  enter({MapArg{Ptr, Ptr, 0, ReturnParam, nullptr, nullptr}}, Bases);
  EXPECT_EQ(reinterpret_cast<uint64_t>(Bases[0]), tgt(A) + sizeof(int));
}

TEST_F(MapRules, DeclareMapperComponentsAreMapped) {
  int Data[2] = {8, 9};
  CountedArray Obj{2, Data};
  MapArg WithMapper{&Obj,
                    &Obj,
                    sizeof(CountedArray),
                    PARAM | TO | FROM,
                    nullptr,
                    reinterpret_cast<void *>(&pushTwoComponents)};
  enter({WithMapper});
  ASSERT_NE(find(Data), nullptr) << "the mapper's pointee component is mapped";
  EXPECT_EQ(Device.read<int>(tgt(&Data[1])), 9);
  EXPECT_EQ(Device.read<uint64_t>(tgt(&Obj.P)), tgt(Data));
  Device.write<int>(tgt(Data), 80);
  exit({WithMapper});
  EXPECT_EQ(Data[0], 80);
  EXPECT_EQ(Obj.P, Data);
  EXPECT_EQ(find(Data), nullptr);
  // Stock libomptarget neither counts nor releases a mapper's first
  // component (the struct itself), so it stays mapped; ompsim does the same.
  EXPECT_NE(find(&Obj), nullptr);
}

TEST_F(MapRules, AttachDoesNotCountAndExitFromCopiesBack) {
  // target enter data map(to: p[:4]); target exit data map(from: p[:4]), as
  // clang-22 lowers them: the section, then an ATTACH item for the pointer.
  int Data[4] = {1, 2, 3, 4};
  int *P = Data;
  enter({MapArg{P, P, sizeof(Data), TO, nullptr, nullptr},
         MapArg{&P, P, sizeof(void *), ATTACH, nullptr, nullptr}});
  ASSERT_NE(find(Data), nullptr);
  EXPECT_EQ(find(Data)->totalRef(), 1u) << "ATTACH adds no reference";
  EXPECT_EQ(find(&P), nullptr) << "p itself is not mapped, so nothing is attached";
  Device.write<int>(tgt(&Data[3]), 40);
  exit({MapArg{P, P, sizeof(Data), FROM, nullptr, nullptr}});
  EXPECT_EQ(Data[3], 40) << "the last release copies back";
  EXPECT_EQ(Table.size(), 0u);
  EXPECT_EQ(Device.liveBlocks(), 0u);
}

TEST_F(MapRules, AttachPointsTheDeviceStructMemberAtTheDevicePointee) {
  struct S {
    int N;
    int *Data;
  };
  int Data[3] = {1, 2, 3};
  S Obj{3, Data};
  // map(tofrom: s, s.data[:3])
  std::vector<MapArg> Args = {
      MapArg{&Obj, &Obj, sizeof(S), PARAM | TO | FROM, nullptr, nullptr},
      MapArg{Data, Data, sizeof(Data), TO | FROM, nullptr, nullptr},
      MapArg{&Obj.Data, Data, sizeof(void *), ATTACH, nullptr, nullptr},
  };
  enter(Args);
  EXPECT_EQ(Device.read<uint64_t>(tgt(&Obj.Data)), tgt(Data)) << "device s.data is the device copy";
  EXPECT_EQ(find(Data)->totalRef(), 1u);
  Device.write<int>(tgt(&Data[2]), 30);
  exit(Args);
  EXPECT_EQ(Obj.Data, Data) << "the host pointer keeps its host value after copy-back";
  EXPECT_EQ(Data[2], 30);
  EXPECT_EQ(Table.size(), 0u);
}

TEST_F(MapRules, AttachOfAnOffsetSectionPointsAtTheBase) {
  int Data[8] = {};
  int *P = Data;
  int **Pp = &P;
  // map(to: pp[0]) map(to: p[2:3]): device p must hold the device address of data[0].
  enter({MapArg{Pp, Pp, sizeof(int *), TO, nullptr, nullptr},
         MapArg{P, &P[2], 3 * sizeof(int), TO, nullptr, nullptr},
         MapArg{&P, &P[2], sizeof(void *), ATTACH, nullptr, nullptr}});
  EXPECT_EQ(Device.read<uint64_t>(tgt(&P)), tgt(&Data[2]) - 2 * sizeof(int));
  // A zero-length lookup of the pointee's base finds the block through its base.
  EXPECT_NE(Table.lookup(reinterpret_cast<uintptr_t>(Data), 0).Entry, nullptr);
}

TEST_F(MapRules, UnimplementedMapTypeBitIsAnErrorNamingBitAndVariable) {
  int X = 0;
  MapClauseProcessor P(Table, Device);
  std::string Msg = errorText(P.enter({item(&X, 4, TO | 0x800, ";x;f.c;1;1;;")}, nullptr));
  EXPECT_NE(Msg.find("0x800"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("'x'"), std::string::npos) << Msg;
  EXPECT_EQ(Table.size(), 0u) << "nothing is mapped";
  Msg = errorText(P.enter({item(&X, 4, TO | mapflag::NonContig, ";x;f.c;1;1;;")}, nullptr));
  EXPECT_NE(Msg.find("OMP_MAP_NON_CONTIG"), std::string::npos) << Msg;
}

TEST_F(MapRules, NonContiguousUpdateMovesMergedRuns) {
  int A[6][8] = {};
  enter({item(A, sizeof(A), 0)});
  for (int I = 0; I < 6; ++I)
    for (int J = 0; J < 8; ++J)
      Device.write<int>(tgt(&A[I][J]), 100 + 10 * I + J);
  MapClauseProcessor P(Table, Device);
  // update from(a[1:3][2:4]) as clang-22 describes it.
  NonContigDim Rows[3] = {{1, 3, 32}, {2, 4, 4}, {0, 1, 4}};
  int Before = Device.Retrieves;
  ASSERT_FALSE(static_cast<bool>(
      P.update({MapArg{A, Rows, 3, FROM | static_cast<int64_t>(mapflag::NonContig), nullptr, nullptr}})));
  EXPECT_EQ(Device.Retrieves - Before, 3) << "one transfer per row";
  for (int I = 0; I < 6; ++I)
    for (int J = 0; J < 8; ++J)
      EXPECT_EQ(A[I][J], (I >= 1 && I <= 3 && J >= 2 && J <= 5) ? 100 + 10 * I + J : 0) << I << "," << J;
  // update from(a[0][1:3:3]): strided elements 1, 4, 7 of row 0.
  NonContigDim Strided[2] = {{1, 3, 12}, {0, 1, 4}};
  ASSERT_FALSE(static_cast<bool>(
      P.update({MapArg{A, Strided, 2, FROM | static_cast<int64_t>(mapflag::NonContig), nullptr, nullptr}})));
  EXPECT_EQ(A[0][1], 101);
  EXPECT_EQ(A[0][4], 104);
  EXPECT_EQ(A[0][7], 107);
  EXPECT_EQ(A[0][2], 0);
  // update from(a[0:6][0:8]) in descriptor form is one transfer.
  NonContigDim Whole[3] = {{0, 6, 32}, {0, 8, 4}, {0, 1, 4}};
  Before = Device.Retrieves;
  ASSERT_FALSE(static_cast<bool>(
      P.update({MapArg{A, Whole, 3, FROM | static_cast<int64_t>(mapflag::NonContig), nullptr, nullptr}})));
  EXPECT_EQ(Device.Retrieves - Before, 1);
  EXPECT_EQ(A[5][0], 150);
}

TEST(MapNames, StockNameIsTheFirstFieldAndTheVariableIsFoundInEitherCompilersOrder) {
  // clang-22 (with -g): ";variable;file;line;col;;"; flang-22: ";file;variable;...".
  EXPECT_EQ(mapArgName(";arr[0:n];cm.c;3;24;;"), "arr[0:n]");
  EXPECT_EQ(mapArgVariable(";arr[0:n];cm.c;3;24;;"), "arr[0:n]");
  EXPECT_EQ(mapArgName(";/tmp/fm.f90;arr;2;14;;"), "/tmp/fm.f90");
  EXPECT_EQ(mapArgVariable(";/tmp/fm.f90;arr;2;14;;"), "arr");
  EXPECT_EQ(mapArgVariable(";t.F90;s%x;9;1;;"), "s%x");
  // A C member spelled like a Fortran file is followed by its C file.
  EXPECT_EQ(mapArgVariable(";s.f90;cm.c;3;24;;"), "s.f90");
  EXPECT_EQ(mapArgVariable(nullptr), "");
  EXPECT_EQ(mapArgVariable("plain"), "plain");
}

} // namespace

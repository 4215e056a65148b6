// What the fault advisor says of a device address whose mapping ended or lies
// past a mapped section: the runtime's half of the line, without a device.
#include "DataFaultAdvisor.h"
#include "FakeDeviceMemory.h"
#include "MapClauseProcessor.h"
#include "MapFlags.h"
#include "MapTestItems.h"

#include "ompsim/offload_abi.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <vector>

using namespace ompsim::host;
using namespace ompsim::host::testing;

namespace {

DataFaultSite deviceFault(uint64_t Addr) {
  DataFaultSite F;
  F.Addr = Addr;
  F.Device = 0;
  F.OwnerDevice = 0;
  F.Context = "kernel K";
  F.Instruction = "dev:K+0x10 (0x100010)";
  return F;
}

TEST(DataFaultAdvisor, FreedDeviceCopyNamesTheMappingAndTheConstructThatEndedIt) {
  MappingTable Table;
  FakeDeviceMemory Memory;
  std::vector<int> A(64);
  std::vector<MapArg> Args{
      {A.data(), A.data(), 256, TO, const_cast<char *>(";a[0:64];prog.c;9;1;;"), nullptr}};
  MapClauseProcessor Enter(Table, Memory);
  static const ompsim_ident EnterAt{0, 0, 0, 0, ";prog.c;main;9;1;;"},
      ExitAt{0, 0, 0, 0, ";prog.c;main;12;1;;"};
  Enter.setConstruct({"data construct", &EnterAt, nullptr});
  ASSERT_FALSE(Enter.enter(Args, nullptr));
  uint64_t Tgt = Table.lookup(reinterpret_cast<uintptr_t>(A.data()), 4).Entry->TgtBegin;
  Args[0].Type = DELETE;
  MapClauseProcessor Exit(Table, Memory);
  Exit.setConstruct({"data construct", &ExitAt, nullptr});
  ASSERT_FALSE(Exit.exit(Args));
  ASSERT_EQ(Table.size(), 0u);

  std::string Line = DataFaultAdvisor(Table, {}).describe(deviceFault(Tgt + 8));
  EXPECT_EQ(Line,
            fmt::format("device 0: kernel K read freed device memory at dev:{:#x} (8 bytes into the old "
                        "device copy of 'a[0:64]' (256 bytes), mapped by the data construct at "
                        "prog.c:9; freed when the data construct at prog.c:12 ended its mapping) from "
                        "dev:K+0x10 (0x100010); note: a device pointer outlived its mapping: keep "
                        "'a[0:64]' mapped while device code uses its device address ('target enter "
                        "data' with the matching 'exit data' after the last region, or a longer "
                        "'target data')",
                        Tgt + 8));
}

TEST(DataFaultAdvisor, PastTheEndOfASectionAsksForALongerOne) {
  MappingTable Table;
  FakeDeviceMemory Memory;
  std::vector<int> A(64);
  std::vector<MapArg> Args{
      {A.data(), A.data(), 40, TO, const_cast<char *>(";a[0:10];prog.c;9;1;;"), nullptr}};
  MapClauseProcessor Enter(Table, Memory);
  ASSERT_FALSE(Enter.enter(Args, nullptr));
  uint64_t Tgt = Table.lookup(reinterpret_cast<uintptr_t>(A.data()), 4).Entry->TgtBegin;

  std::string Line = DataFaultAdvisor(Table, {}).describe(deviceFault(Tgt + 48));
  EXPECT_EQ(Line,
            fmt::format("device 0: kernel K read device memory at dev:{:#x} (8 bytes past the end of the "
                        "device copy of 'a[0:10]' (40 bytes at dev:{:#x})) from dev:K+0x10 (0x100010); "
                        "note: the kernel indexes past the mapped section: map a longer array section "
                        "of 'a'",
                        Tgt + 48, Tgt));
}

TEST(DataFaultAdvisor, AnotherDevicesMemoryAndNull) {
  MappingTable Table;
  DataFaultSite F = deviceFault(0x30000000000);
  F.OwnerDevice = 1;
  EXPECT_EQ(
      DataFaultAdvisor(Table, {}).describe(F),
      "device 0: kernel K read device 1's memory at dev:0x30000000000 from dev:K+0x10 (0x100010); note: "
      "device 0 cannot reach the memory of device 1: run the region on device 1 or copy the data "
      "(omp_target_memcpy)");
  F.Addr = 8;
  F.OwnerDevice = -1;
  EXPECT_EQ(
      DataFaultAdvisor(Table, {}).describe(F),
      "device 0: kernel K read a null pointer (address 0x8) from dev:K+0x10 (0x100010); note: a pointer "
      "the kernel dereferences is null on the device: map its pointee ('map(to: p[0:n])') or set it "
      "before the region");
}

TEST(DataFaultAdvisor, AFaultInsideALibraryFunctionNamesItAndSuggestsNoMapClause) {
  MappingTable Table;
  DataFaultSite F = deviceFault(0);
  F.OwnerDevice = -1;
  F.Write = true;
  F.Instruction = "memset+0x40 in libc.so.6 (0x7f0000001040)";
  F.Library = "libc.so.6";
  F.LibraryFunction = "memset";
  EXPECT_EQ(DataFaultAdvisor(Table, {}).describe(F),
            "device 0: kernel K wrote a null pointer (address 0x0) from memset+0x40 in libc.so.6 "
            "(0x7f0000001040); note: the fault is inside the library function 'memset' (libc.so.6), which "
            "the kernel called: a pointer the kernel passes it (an out-pointer, a buffer) does not hold "
            "device memory of the size the function uses");
  // A function no symbol of the library names: its code, by the library.
  F.LibraryFunction.clear();
  F.Library = "libm.so.6";
  F.Instruction = "libm.so.6+0x716a1 (0x7f00000716a1)";
  EXPECT_EQ(DataFaultAdvisor(Table, {}).describe(F),
            "device 0: kernel K wrote a null pointer (address 0x0) from libm.so.6+0x716a1 (0x7f00000716a1); "
            "note: the fault is inside a function of libm.so.6, which the kernel called: a pointer the "
            "kernel passes it (an out-pointer, a buffer) does not hold device memory of the size the "
            "function uses");
}

} // namespace

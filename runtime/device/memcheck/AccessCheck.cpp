//===- AccessCheck.cpp - each checked access of a GPU image's code --------===//
//
// Under the checker the JIT puts a call of __ompsim_check_access before each
// access of a GPU image's code (simulator/src/gpu/CheckedAccesses.h). An
// access of a block's thread on the virtual GPU goes to the team-shared
// check when it is the block's team-shared memory, to the device heap's
// when it is the checked heap's, else to the check between teams.
//
//===----------------------------------------------------------------------===//
#include "CheckedHeap.h"
#include "TeamRaces.h"
#include "TeamSharedAccesses.h"

#include "../vgpu/BlockRunner.h"

#include "ompsim/device_runtime.h"

extern "C" __attribute__((visibility("default"))) void
__ompsim_check_access(const void *Addr, uint64_t Bytes, uint32_t Kind, const char *Site, uint64_t Value) {
  using namespace ompsim::device;
  const ompsim::vgpu::BlockRunner *R = ompsim::vgpu::BlockRunner::TRunner;
  if (!R || !Bytes)
    return;
  if (!Site)
    Site = "?";
  if (!checkTeamSharedAccess(*R, Addr, Bytes, Kind, Site, Value) && !checkHeapAccess(Addr, Bytes, Kind, Site))
    checkTeamRace(*R, Addr, Bytes, Kind, Site, Value);
}

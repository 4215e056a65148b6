//===- FaultAddress.cpp - the checker's device side, to the executor ------===//
//
// The executor turns the device's checks on (with the device memory whose
// races between teams are checked), and its fault handler asks
// what a faulting data address is; the memory the checker places knows: a
// device-heap block (CheckedHeap.h), a team-shared global's guard page or
// the one after the dynamic shared memory (TeamSharedGuards.h).
//
//===----------------------------------------------------------------------===//
#include "CheckedHeap.h"
#include "HeldLocks.h"
#include "TeamRaces.h"
#include "TeamSharedGuards.h"

#include "../vgpu/Grid.h"

#include "ompsim/device_runtime.h"

extern "C" __attribute__((visibility("default"))) int32_t __ompsim_device_describe_address(
    uint64_t Addr, char *What, uint64_t WhatSize, char *Note, uint64_t NoteSize) {
  using namespace ompsim::device;
  return describeHeapAddress(Addr, What, WhatSize, Note, NoteSize) ||
                 describeTeamSharedAddress(Addr, What, WhatSize, Note, NoteSize) ||
                 describeDynamicSharedAddress(Addr, What, WhatSize, Note, NoteSize)
             ? 1
             : 0;
}

extern "C" __attribute__((visibility("default"))) void
__ompsim_device_set_check(int32_t On, uint64_t MemoryBase, uint64_t MemoryBytes) {
  ompsim::vgpu::setBlocksInOrder(On != 0);
  ompsim::device::watchDeviceMemory(On ? MemoryBase : 0, On ? MemoryBytes : 0);
  ompsim::device::trackLocks(On != 0);
}

//===- HeldLocks.h - the locks each GPU thread holds, for the checker -*- C++ -*-===//
//
// The GPU device runtime tells the checker when a thread of a block takes or
// gives back a lock (a `critical` region's, an OpenMP lock:
// __ompsim_vgpu_lock_taken, __ompsim_vgpu_lock_given). Two accesses made
// under one lock are no race, in a block's team-shared memory
// (TeamSharedAccesses.h) or between teams (TeamRaces.h).
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_MEMCHECK_HELDLOCKS_H
#define OMPSIM_DEVICE_MEMCHECK_HELDLOCKS_H

#include <cstdint>

namespace ompsim::device {

/// Whether the hooks keep count (under the checker only: the executor turns
/// it on at start-up, __ompsim_device_set_check).
void trackLocks(bool On);

/// The outermost lock thread `Thread` of the block the calling device
/// thread runs holds, or null.
const void *outermostLock(uint32_t Thread);

} // namespace ompsim::device

#endif // OMPSIM_DEVICE_MEMCHECK_HELDLOCKS_H

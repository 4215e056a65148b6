//===- TeamSharedGuards.h - team-shared globals between guard pages -*- C++ -*-===//
//
// Under the checker a GPU image's team-shared globals each end where an
// inaccessible page begins (the JIT's layout, simulator/src/gpu/
// TeamSharedGuards.h). In every block the calling device thread protects
// those pages of the block's memory, and a fault on one is named: the
// global by its source name, the element, the block and the thread.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_MEMCHECK_TEAMSHAREDGUARDS_H
#define OMPSIM_DEVICE_MEMCHECK_TEAMSHAREDGUARDS_H

#include <cstddef>
#include <cstdint>

namespace ompsim::device {

/// When `Addr` lies in a guard page of the team-shared memory of the block
/// the calling device thread runs (the faulting thread's, in a fault
/// handler): writes what it is and the fix, and returns true.
/// Async-signal-safe.
bool describeTeamSharedAddress(uint64_t Addr, char *What, size_t WhatSize, char *Note, size_t NoteSize);

} // namespace ompsim::device

#endif // OMPSIM_DEVICE_MEMCHECK_TEAMSHAREDGUARDS_H

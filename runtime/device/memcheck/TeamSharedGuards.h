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

#include "ompsim/device_runtime.h"

#include <cstddef>
#include <cstdint>

namespace ompsim::device {

/// The team-shared layout the calling device thread's block memory holds
/// (all zero before its first checked block): the block's memory, and the
/// JIT's table of its globals.
struct TeamSharedLayout {
  uint64_t Base = 0, Bytes = 0;
  const ompsim_team_shared_var *Vars = nullptr;
  uint64_t Count = 0;
};

extern __attribute__((tls_model("initial-exec"))) thread_local TeamSharedLayout TTeamShared;

/// The global of `L` that byte `Offset` of the block belongs to, or null (a
/// byte of padding or of a guard page).
const ompsim_team_shared_var *teamSharedVarAt(const TeamSharedLayout &L, uint64_t Offset);

/// "'slot at shared.c:7' (64 elements of 4 bytes)" or "'x' (8 bytes)",
/// snprintf-style.
int teamSharedVarText(char *Out, size_t Size, const ompsim_team_shared_var &V);

/// When `Addr` lies in a guard page of the team-shared memory of the block
/// the calling device thread runs (the faulting thread's, in a fault
/// handler): writes what it is and the fix, and returns true.
/// Async-signal-safe.
bool describeTeamSharedAddress(uint64_t Addr, char *What, size_t WhatSize, char *Note, size_t NoteSize);

/// The same for the guard page after the dynamic shared memory of the
/// calling device thread's block (vgpu's placement under the checker).
/// Async-signal-safe.
bool describeDynamicSharedAddress(uint64_t Addr, char *What, size_t WhatSize, char *Note, size_t NoteSize);

} // namespace ompsim::device

#endif // OMPSIM_DEVICE_MEMCHECK_TEAMSHAREDGUARDS_H

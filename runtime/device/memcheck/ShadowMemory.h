//===- ShadowMemory.h - the checker's own tables, mapped zeroed -*- C++ -*-===//
//
// The checker's tables of a device thread (team-shared histories, the
// shadow between teams, the locks threads hold) are anonymous mappings,
// zero-filled and committed page by page as they are touched, so a table
// sized for the worst case costs only what a launch uses.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_MEMCHECK_SHADOWMEMORY_H
#define OMPSIM_DEVICE_MEMCHECK_SHADOWMEMORY_H

#include "../DeviceStop.h"

#include <sys/mman.h>

#include <cinttypes>
#include <cstdint>

namespace ompsim::device {

/// `Bytes` of zeros for the checker's table `What`; a mapping that fails
/// ends the launch with one line naming the table.
inline void *mapShadow(uint64_t Bytes, const char *What) {
  void *P =
      ::mmap(nullptr, Bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (P == MAP_FAILED)
    stopDevice("%s under OMPSIM_CHECK: cannot map %" PRIu64 " bytes", What, Bytes);
  return P;
}

} // namespace ompsim::device

#endif // OMPSIM_DEVICE_MEMCHECK_SHADOWMEMORY_H

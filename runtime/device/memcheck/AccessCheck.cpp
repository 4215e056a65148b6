//===- AccessCheck.cpp - each checked access of a GPU image's code --------===//
//
// Under the checker the JIT puts a call of __ompsim_check_access before each
// access of a GPU image's code (simulator/src/gpu/CheckedAccesses.h). An
// access of a block's thread on the virtual GPU goes to the team-shared
// check when it is the block's team-shared memory (its globals or its
// dynamic shared memory), else to the device heap's when it is the checked
// heap's, and to the check between teams (device memory and the heap).
//
//===----------------------------------------------------------------------===//
#include "CheckedHeap.h"
#include "TeamRaces.h"
#include "TeamSharedAccesses.h"

#include "../vgpu/BlockRunner.h"

#include "ompsim/device_runtime.h"

#include <cstring>

namespace {

/// The access the calling thread's checks look at, while they do: they read
/// the bytes a store would change, so a store to memory that is gone faults
/// in the checker, and the fault handler asks whose access that was.
struct AccessInCheck {
  const char *Site = nullptr; ///< null: no check runs
  uint32_t Kind = 0;
  uint64_t Addr = 0, Bytes = 0;
};
__attribute__((tls_model("initial-exec"))) thread_local AccessInCheck TInCheck;

} // namespace

extern "C" __attribute__((visibility("default"))) void
__ompsim_check_access(const void *Addr, uint64_t Bytes, uint32_t Kind, const char *Site, uint64_t Value) {
  using namespace ompsim::device;
  const ompsim::vgpu::BlockRunner *R = ompsim::vgpu::BlockRunner::TRunner;
  if (!R || !Bytes)
    return;
  if (!Site)
    Site = "?";
  TInCheck = {Site, Kind, reinterpret_cast<uint64_t>(Addr), Bytes};
  if (!checkTeamSharedAccess(*R, Addr, Bytes, Kind, Site, Value) &&
      !checkDynamicSharedAccess(*R, Addr, Bytes, Kind, Site, Value) &&
      checkHeapAccess(Addr, Bytes, Kind, Site) != HeapAccess::Unowned)
    checkTeamRace(*R, Addr, Bytes, Kind, Site, Value);
  TInCheck = {};
}

extern "C" __attribute__((visibility("default"))) int32_t __ompsim_device_checked_access(uint64_t FaultAddr,
                                                                                         char *Site,
                                                                                         uint64_t SiteSize,
                                                                                         int32_t *Write) {
  const AccessInCheck &A = TInCheck;
  if (!A.Site || !SiteSize)
    return 0;
  size_t Len = strnlen(A.Site, SiteSize - 1);
  std::memcpy(Site, A.Site, Len);
  Site[Len] = 0;
  // A copy's source is read whatever the access does to its destination.
  bool InDestination = FaultAddr - A.Addr < A.Bytes;
  *Write = InDestination && (A.Kind & OMPSIM_ACCESS_WRITE) ? 1 : 0;
  return 1;
}

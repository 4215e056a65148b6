//===- AllocationTraces.h - stock's OFFLOAD_TRACK_ALLOCATION_TRACES -*- C++ -*-===//
//
// With OFFLOAD_TRACK_ALLOCATION_TRACES a device keeps the host's stack at
// each allocation and free of its memory, as stock's GPU plugins do: a free
// stock refuses (of memory never allocated, a second one, one of another
// kind) is reported with the allocation's and the earlier free's traces and
// ends the process, and a device fault names the allocation its address
// points into, or the closest one.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_TRACKING_ALLOCATIONTRACES_H
#define OMPSIM_TRACKING_ALLOCATIONTRACES_H

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace ompsim::tracking {

/// One allocation of device memory, and those before it at its address.
struct AllocationTrace {
  uint64_t DevicePtr = 0;
  uint64_t Size = 0;
  const void *HostPtr = nullptr; ///< the mapped host object it is for, if any
  int32_t Kind = 0;              ///< OMPSIM_ALLOC_*
  std::string Allocated;         ///< the stack at the allocation
  std::string Deallocated;       ///< the stack at its free; "" while it lives
  std::unique_ptr<AllocationTrace> Prior;
};

/// The allocation traces of one device.
class AllocationTraces {
public:
  /// Records an allocation of `Size` bytes at `DevicePtr`, of `Kind`, for
  /// the host object at `HostPtr` (null for none).
  void allocated(uint64_t DevicePtr, uint64_t Size, const void *HostPtr, int32_t Kind);

  /// Checks a free of `DevicePtr` as `Kind` before the device frees it: the
  /// report stock prints for a free it refuses (then ends the process), or
  /// nothing when the free is good, which is recorded.
  std::optional<std::string> deallocating(uint64_t DevicePtr, int32_t Kind);

  /// Stock's lines on a device address a kernel faulted at: the allocation
  /// it points into (live or freed), or the closest one, with their traces.
  void describeAddress(llvm::raw_ostream &OS, uint64_t Addr);

private:
  std::mutex Mu;
  std::map<uint64_t, std::unique_ptr<AllocationTrace>> Latest; ///< by device address
};

/// The name stock's reports give memory of `Kind` ("device memory", ...).
const char *allocationKindName(int32_t Kind);

/// Stock's hint on a device fault while the traces are off.
void printTrackingHint(llvm::raw_ostream &OS);

} // namespace ompsim::tracking

#endif // OMPSIM_TRACKING_ALLOCATIONTRACES_H

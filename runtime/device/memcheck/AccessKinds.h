//===- AccessKinds.h - what an instrumented access tells the checker -*- C++ -*-===//
//
// The JIT's instrumentation tells the device runtime each access of a GPU
// image's code under the checker (__ompsim_check_access, with the kinds of
// ompsim/device_runtime.h). Both of its checks, team-shared memory's
// (TeamSharedAccesses.h) and device memory's between teams (TeamRaces.h),
// ask the same of a store first.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_MEMCHECK_ACCESSKINDS_H
#define OMPSIM_DEVICE_MEMCHECK_ACCESSKINDS_H

#include "ompsim/device_runtime.h"

#include <cstdint>
#include <cstring>

namespace ompsim::device {

/// Whether the store of `Kind` (its value, memset byte or copy source in
/// `Value`) leaves the `Bytes` at `Addr` as they are: then no reader sees
/// it, and it races with no one (clang's SPMD kernels have every thread
/// store one value).
inline bool storeChangesNothing(const void *Addr, uint64_t Bytes, uint32_t Kind, uint64_t Value) {
  if (Kind & OMPSIM_ACCESS_VALUE)
    return Bytes <= sizeof Value && !std::memcmp(Addr, &Value, Bytes);
  if (Kind & OMPSIM_ACCESS_FROM)
    return !std::memcmp(Addr, reinterpret_cast<const void *>(Value), Bytes);
  if (Kind & OMPSIM_ACCESS_FILL) {
    const auto *P = static_cast<const unsigned char *>(Addr);
    for (uint64_t I = 0; I < Bytes; ++I)
      if (P[I] != static_cast<unsigned char>(Value))
        return false;
    return true;
  }
  return false;
}

/// How a line names an access: "write", "atomic read", ...
inline const char *accessText(bool Atomic, bool Write) {
  if (Atomic)
    return Write ? "atomic write" : "atomic read";
  return Write ? "write" : "read";
}

} // namespace ompsim::device

#endif // OMPSIM_DEVICE_MEMCHECK_ACCESSKINDS_H

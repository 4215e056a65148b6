//===- DeviceMemory.cpp - team-shared allocations of GPU-ABI device code --===//
//
// A GPU keeps variables that a team's threads share (a local of the team's
// initial thread that a parallel region uses) in a per-block stack;
// __kmpc_alloc_shared/__kmpc_free_shared push and pop it. A host-offload
// team's threads share one address space, so the heap serves, with the
// alignment DeviceRTL gives (16 bytes, what malloc returns on x86-64).
//
//===----------------------------------------------------------------------===//
#include "../DeviceStop.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

OMPSIM_DEVICE_API void *__kmpc_alloc_shared(uint64_t Bytes) {
  void *Ptr = std::malloc(Bytes ? Bytes : 1);
  if (!Ptr)
    ompsim::device::stopDevice("__kmpc_alloc_shared(%llu): out of memory",
                               static_cast<unsigned long long>(Bytes));
  return Ptr;
}

OMPSIM_DEVICE_API void __kmpc_free_shared(void *Ptr, uint64_t) { std::free(Ptr); }

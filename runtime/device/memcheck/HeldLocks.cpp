//===- HeldLocks.cpp - the locks each GPU thread holds, for the checker ---===//
#include "HeldLocks.h"

#include "ShadowMemory.h"

#include "../vgpu/BlockRunner.h"

#include <atomic>

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

namespace ompsim::device {
namespace {

/// The locks each thread of the calling device thread's block holds, the
/// outermost first (a few nest; deeper ones are not kept).
constexpr int MaxHeld = 4;
struct HeldLocks {
  const void *Locks[MaxHeld];
  uint32_t Count;
};
__attribute__((tls_model("initial-exec"))) thread_local HeldLocks *THeld;

HeldLocks &heldBy(uint32_t Thread) {
  if (!THeld)
    THeld = static_cast<HeldLocks *>(
        mapShadow(sizeof(HeldLocks) * vgpu::MaxBlockThreads, "the table of the locks GPU threads hold"));
  return THeld[Thread];
}

std::atomic<bool> Tracking{false};

} // namespace

void trackLocks(bool On) { Tracking.store(On, std::memory_order_relaxed); }

const void *outermostLock(uint32_t Thread) {
  const HeldLocks &Held = heldBy(Thread);
  return Held.Count ? Held.Locks[0] : nullptr;
}

} // namespace ompsim::device

using namespace ompsim::device;

OMPSIM_DEVICE_API void __ompsim_vgpu_lock_taken(const void *Lock) {
  if (!Tracking.load(std::memory_order_relaxed))
    return;
  if (const ompsim::vgpu::BlockRunner *R = ompsim::vgpu::BlockRunner::TRunner) {
    HeldLocks &Held = heldBy(R->current());
    if (Held.Count < MaxHeld)
      Held.Locks[Held.Count] = Lock;
    ++Held.Count;
  }
}

OMPSIM_DEVICE_API void __ompsim_vgpu_lock_given(const void *Lock) {
  if (!Tracking.load(std::memory_order_relaxed))
    return;
  if (const ompsim::vgpu::BlockRunner *R = ompsim::vgpu::BlockRunner::TRunner) {
    HeldLocks &Held = heldBy(R->current());
    if (!Held.Count)
      return;
    // Usually the innermost; a lock given back out of order leaves the rest.
    uint32_t Kept = Held.Count < MaxHeld ? Held.Count : MaxHeld;
    for (uint32_t I = Kept; I-- > 0;)
      if (Held.Locks[I] == Lock) {
        for (uint32_t J = I; J + 1 < Kept; ++J)
          Held.Locks[J] = Held.Locks[J + 1];
        break;
      }
    --Held.Count;
  }
}

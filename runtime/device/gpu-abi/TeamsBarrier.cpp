//===- TeamsBarrier.cpp - barriers flang places in a team's own region ----===//
//
// flang-22's device code for a host-offload target ends a teams-level
// reduction (`teams distribute reduction(...)`) with __kmpc_barrier on the
// team's initial thread, outside any parallel region. There the team has
// one thread and the barrier is empty, but libomp's barrier at that level
// waits on the team's pool of threads for its parallel regions, which never
// arrive: the kernel hangs. This definition, linked into the image (hidden,
// from libompsim-device-api.a), makes that barrier the empty one it is and
// hands every other barrier to libomp.
//
//===----------------------------------------------------------------------===//
#include "ompsim/OpenMPRegistration.h"
#include "ompsim/device_runtime.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {

using BarrierFn = void (*)(void *, int32_t);

/// Resolved on first use; a race resolves it twice to the same address (no
/// static guard: the image links no C++ runtime).
std::atomic<BarrierFn> LibompBarrier{nullptr};

BarrierFn libompBarrier() {
  BarrierFn Fn = LibompBarrier.load(std::memory_order_relaxed);
  if (Fn)
    return Fn;
  // Hidden, this definition is not in the dynamic symbol table: the lookup
  // finds libomp's.
  Fn = reinterpret_cast<BarrierFn>(dlsym(RTLD_DEFAULT, "__kmpc_barrier"));
  if (!Fn) {
    // In the image, not libompsim-device: its own line and end.
    std::fprintf(stderr, "ompsim: device runtime: libomp's __kmpc_barrier is not loaded\n");
    std::fflush(stderr);
    ompsim::removeOpenMPRegistration(::getpid());
    std::_Exit(1);
  }
  LibompBarrier.store(Fn, std::memory_order_relaxed);
  return Fn;
}

} // namespace

extern "C" __attribute__((visibility("hidden"))) void __kmpc_barrier(void *Loc, int32_t Gtid) {
  if (__ompsim_device_in_team_region())
    return;
  libompBarrier()(Loc, Gtid);
}

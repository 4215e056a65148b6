//===- Synchronization.cpp - barriers, critical, single, masked, locks ----===//
//
// `critical` regions of a warp's lanes are already taken one lane at a time
// by the code clang generates for GPUs; the runtime's lock keeps them apart
// across warps and blocks. `single` is run by the team's thread 0, as
// stock's GPU runtime runs it; `ordered` is a no-op there too (the
// iterations of an ordered loop are not ordered across threads on a GPU).
//
//===----------------------------------------------------------------------===//

#include "State.h"

using namespace ompsim::gpu;

#define OMPSIM_GPU_API extern "C" __attribute__((used, retain))
/// A program's barrier: never inlined, so that the return address is the
/// program's call (hw::BarrierSite::Code).
#define OMPSIM_GPU_BARRIER OMPSIM_GPU_API __attribute__((noinline))

namespace {

void lock(uint32_t *Word) {
  while (!hw::atomicCas(Word, 0u, 1u))
    hw::pause();
  hw::fenceDevice();
  hw::lockTaken(Word);
}

void unlock(uint32_t *Word) {
  hw::lockGiven(Word);
  hw::fenceDevice();
  hw::atomicStore(Word, 0u);
}

/// An OpenMP barrier called from `Code`, of the construct `Loc`.
hw::BarrierSite constructSite(const IdentTy *Loc, const void *Code) {
  return {Code, Loc ? Loc->PSource : nullptr, hw::BarrierSite::Construct, Loc ? uint32_t(Loc->Flags) : 0u};
}

} // namespace

OMPSIM_GPU_BARRIER void __kmpc_barrier(IdentTy *Loc, int32_t) {
  teamBarrier(constructSite(Loc, OMPSIM_GPU_CALLER()));
}
OMPSIM_GPU_API void __kmpc_barrier_simple_spmd(IdentTy *, int32_t) {
  // A block that runs as loops meets it only in its sequential part (the
  // executor found so, simulator/src/gpu/BlockLoops.h), where thread 0
  // alone runs: after openmp-opt's code that thread 0 alone runs anyway.
  if (team().Loops)
    return;
  hw::syncBlock();
}
OMPSIM_GPU_API void __kmpc_barrier_simple_generic(IdentTy *, int32_t) { hw::syncBlock(); }
OMPSIM_GPU_BARRIER int32_t __kmpc_cancel_barrier(IdentTy *Loc, int32_t) {
  teamBarrier(constructSite(Loc, OMPSIM_GPU_CALLER()));
  return 0;
}

OMPSIM_GPU_API void __kmpc_flush(IdentTy *) { hw::fenceSystem(); }

/// kmp_critical_name is eight zeroed 32-bit words per name; the first is the lock.
OMPSIM_GPU_API void __kmpc_critical(IdentTy *, int32_t, uint32_t *Name) { lock(Name); }
OMPSIM_GPU_API void __kmpc_end_critical(IdentTy *, int32_t, uint32_t *Name) { unlock(Name); }
OMPSIM_GPU_API void __kmpc_critical_with_hint(IdentTy *, int32_t, uint32_t *Name, uint32_t) { lock(Name); }

OMPSIM_GPU_API int32_t __kmpc_single(IdentTy *, int32_t) { return threadNum() == 0; }
OMPSIM_GPU_API void __kmpc_end_single(IdentTy *, int32_t) {}
OMPSIM_GPU_API int32_t __kmpc_master(IdentTy *, int32_t) { return threadNum() == 0; }
OMPSIM_GPU_API void __kmpc_end_master(IdentTy *, int32_t) {}
OMPSIM_GPU_API int32_t __kmpc_masked(IdentTy *, int32_t, int32_t Filter) {
  return int32_t(threadNum()) == Filter;
}
OMPSIM_GPU_API void __kmpc_end_masked(IdentTy *, int32_t) {}

OMPSIM_GPU_API void __kmpc_ordered(IdentTy *, int32_t) {}
OMPSIM_GPU_API void __kmpc_end_ordered(IdentTy *, int32_t) {}

OMPSIM_GPU_API uint64_t __kmpc_warp_active_thread_mask() { return hw::activeMask(); }
OMPSIM_GPU_API void __kmpc_syncwarp(uint64_t Mask) { hw::syncWarp(Mask); }

// The lock API (omp_lock_t is one pointer-sized word on the device).
OMPSIM_GPU_API void omp_init_lock(uint32_t *Lock) { hw::atomicStore(Lock, 0u); }
OMPSIM_GPU_API void omp_destroy_lock(uint32_t *) {}
OMPSIM_GPU_API void omp_set_lock(uint32_t *Lock) { lock(Lock); }
OMPSIM_GPU_API void omp_unset_lock(uint32_t *Lock) { unlock(Lock); }
OMPSIM_GPU_API int omp_test_lock(uint32_t *Lock) {
  if (!hw::atomicCas(Lock, 0u, 1u))
    return 0;
  hw::fenceDevice();
  hw::lockTaken(Lock);
  return 1;
}

// ompx_ block and warp synchronization.
// On the simulated GPU the executor's ompx API answers these instead
// (runtime/device/ompx), which names the barriers.
OMPSIM_GPU_API void ompx_sync_block(int) { hw::syncBlock(); }
OMPSIM_GPU_API void ompx_sync_block_acq_rel() { hw::syncBlock(); }
OMPSIM_GPU_API void ompx_sync_block_divergent(int) { hw::syncBlock(); }

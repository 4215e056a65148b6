//===- BareFork.cpp - ompx_bare regions run as a GPU runs them ------------===//
//
// clang-22 emits the same x86_64 kernel with and without ompx_bare: it forks
// the teams through libomp and runs the region once on each team's initial
// thread. On a GPU every thread of every block runs a bare region, and the
// region's code is written for that (it indexes by ompx_thread_id_x(),
// meets its block at ompx_sync_block, exchanges values in shuffles).
//
// ompsim's pass plugin (runtime/pass/BareKernels.cpp) finds the bare regions
// of a device compile, outlines each one's call of the region into a body
// that takes the region's arguments from an array, and replaces the
// kernel's __kmpc_fork_teams with __ompsim_bare_fork_teams. Here, on an
// ompsim device, the launch's grid runs on the virtual GPU (vgpu/Grid.h),
// whose fibers answer the ompx API (ompx/KernelLanguage.cpp).
//
//===----------------------------------------------------------------------===//
#include "../gpu-abi/GridLaunch.h"
#include "../gpu-abi/KernelLaunchState.h"
#include "../libomp/Libomp.h"
#include "ompsim/device_runtime.h"

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

using namespace ompsim::device;

namespace {

/// Stock's host plugin (no ompsim launch): each team's initial thread runs
/// the body once, as clang-22's own kernel does.
void fallbackTeamMicrotask(int32_t *Gtid, int32_t *Btid, ompsim_bare_body Body, void **Argv) {
  Body(Gtid, Btid, Argv);
}

} // namespace

OMPSIM_DEVICE_API void __ompsim_bare_fork_teams(void *Loc, ompsim_bare_body Body, void **Argv) {
  const Libomp &Omp = Libomp::get();
  auto *Where = Loc ? static_cast<Ident *>(Loc) : runtimeIdent();
  const ThreadPlace &Place = currentPlace();
  if (!Place.Launch) {
    // The teams clang's kernel pushed before this call.
    Omp.ForkTeams(Where, 2, reinterpret_cast<Microtask>(&fallbackTeamMicrotask), Body, Argv);
    return;
  }
  // Warps of NVIDIA's 32 lanes (DeviceRTL's default for nvptx64).
  runGridInLaunch(Where, *Place.Launch->Request, Body, Argv, 32);
}

//===- Libomp.cpp - resolving libomp's entry points ------------------------===//
#include "Libomp.h"

#include "../DeviceStop.h"
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace ompsim::device {
namespace {

template <typename Fn> void resolve(Fn &Slot, const char *Name) {
  Slot = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, Name));
  if (!Slot) {
    stopDevice("libomp's %s is not loaded; device code in the GPU ABI (flang's kernels) or calling the "
               "ompx API runs its teams and threads on libomp",
               Name);
  }
}

Libomp load() {
  Libomp L{};
  resolve(L.GlobalThreadNum, "__kmpc_global_thread_num");
  resolve(L.PushNumTeams, "__kmpc_push_num_teams");
  resolve(L.ForkTeams, "__kmpc_fork_teams");
  resolve(L.PushNumThreads, "__kmpc_push_num_threads");
  resolve(L.ForkCall, "__kmpc_fork_call");
  resolve(L.SerializedParallel, "__kmpc_serialized_parallel");
  resolve(L.EndSerializedParallel, "__kmpc_end_serialized_parallel");
  resolve(L.GetTeamNum, "omp_get_team_num");
  resolve(L.GetNumTeams, "omp_get_num_teams");
  resolve(L.GetThreadNum, "omp_get_thread_num");
  resolve(L.GetThreadLimit, "omp_get_thread_limit");
  resolve(L.GetLevel, "omp_get_level");
  resolve(L.GetNumThreads, "omp_get_num_threads");
  resolve(L.GetAncestorThreadNum, "omp_get_ancestor_thread_num");
  resolve(L.GetTeamSize, "omp_get_team_size");
  resolve(L.Barrier, "__kmpc_barrier");
  resolve(L.Single, "__kmpc_single");
  resolve(L.EndSingle, "__kmpc_end_single");
  resolve(L.CopyPrivate, "__kmpc_copyprivate");
  return L;
}

} // namespace

const Libomp &Libomp::get() {
  static const Libomp L = load();
  return L;
}

Ident *runtimeIdent() {
  // KMP_IDENT_KMPC (2): a kmpc-ABI caller.
  static Ident Loc = {0, 2, 0, 0, ";ompsim-device;unknown;0;0;;"};
  return &Loc;
}

} // namespace ompsim::device

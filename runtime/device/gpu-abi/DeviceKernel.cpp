//===- DeviceKernel.cpp - launches, kernel prologue and epilogue ----------===//
//
// flang-22 lowers every target region, whatever the offload target, to a
// kernel that opens with `if (__kmpc_target_init(env, launch_env) == -1)
// { user code; __kmpc_target_deinit(); }`. On a GPU each block runs the
// kernel, and the call sorts the block's threads into the one that runs the
// user code and workers. Here the plugin calls the kernel once, through
// __ompsim_device_run_kernel; its first __kmpc_target_init forks the launch's
// teams through libomp (so libomp's omp_get_team_num and the reductions and
// barriers flang calls in libomp see the same teams) and calls the kernel
// again as each team's initial thread, which runs the user code. Teams run
// at once, as blocks do; the first call then skips the user code.
//
// Every kernel runs in generic mode: an SPMD kernel's code outside its
// parallel regions is, by the SPMD contract, the same whether one thread of
// a team or all of them run it.
//
//===----------------------------------------------------------------------===//
#include "KernelLaunchState.h"
#include "Libomp.h"

#include <algorithm>

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

namespace ompsim::device {

std::atomic<int32_t> LastLaunchedDevice{-1};

ThreadPlace &currentPlace() {
  static thread_local ThreadPlace Place;
  return Place;
}

namespace {

/// llvm::omp's ConfigurationEnvironmentTy (LLVM 22), the head of the kernel
/// environment flang emits for every kernel.
struct ConfigurationEnvironment {
  uint8_t UseGenericStateMachine;
  uint8_t MayUseNestedParallelism;
  uint8_t ExecMode;
  int32_t MinThreads;
  int32_t MaxThreads;
  int32_t MinTeams;
  int32_t MaxTeams;
  int32_t ReductionDataSize;
  int32_t ReductionBufferLength;
};

/// Teams of one launch: the launch's num_teams, else the kernel's own
/// (num_teams(N) on a combined construct; 1 for a target without teams),
/// else 1 (libomp's default; libomp's nteams-var is not asked, since the
/// sim sets it for every launch that names its teams). Never more than the
/// kernel environment allows.
int32_t teamsOf(const ompsim_kernel_launch &Request, const ConfigurationEnvironment *Env) {
  int32_t Teams = int32_t(std::min<uint32_t>(Request.num_teams, INT32_MAX));
  if (Teams <= 0 && Env)
    Teams = std::max(Env->MaxTeams, 0);
  if (Env && Env->MaxTeams > 0)
    Teams = std::min(Teams, Env->MaxTeams);
  return std::max(Teams, 1);
}

/// The block size OpenMPIRBuilder writes as MaxThreads when the program
/// names no thread_limit (a GPU default, not a limit the program set).
constexpr int32_t kDefaultBlockSize = 256;

/// Threads per team: the launch's thread limit, else the kernel's
/// thread_limit clause (flang-22 passes it in the kernel environment only),
/// else 0 (libomp's default).
int32_t threadsOf(const ompsim_kernel_launch &Request, const ConfigurationEnvironment *Env) {
  int32_t Threads = int32_t(std::min<uint32_t>(Request.thread_limit, INT32_MAX));
  if (Threads <= 0 && Env && Env->MaxThreads > 0 && Env->MaxThreads != kDefaultBlockSize)
    Threads = Env->MaxThreads;
  return Threads;
}

/// Each team's initial thread: records its team, then runs the kernel.
void teamMicrotask(int32_t *, int32_t *, KernelLaunch *Launch) {
  const Libomp &Omp = Libomp::get();
  ThreadPlace Place;
  Place.Launch = Launch;
  Place.InTeam = true;
  Place.TeamNum = uint32_t(Omp.GetTeamNum());
  Place.NumTeams = uint32_t(Omp.GetNumTeams());
  ScopedPlace Scope(Place);
  Launch->Request->invoke(Launch->Request->invoke_context);
}

} // namespace
} // namespace ompsim::device

using namespace ompsim::device;

OMPSIM_DEVICE_API int32_t __ompsim_device_run_kernel(const ompsim_kernel_launch *Request) {
  LastLaunchedDevice.store(Request->device_num, std::memory_order_relaxed);
  KernelLaunch Launch;
  Launch.Request = Request;
  ThreadPlace Place;
  Place.Launch = &Launch;
  ScopedPlace Scope(Place);
  Request->invoke(Request->invoke_context);
  return 0;
}

OMPSIM_DEVICE_API int32_t __ompsim_device_current_device(void) {
  ThreadPlace &Place = currentPlace();
  if (Place.Launch)
    return Place.Launch->Request->device_num;
  return LastLaunchedDevice.load(std::memory_order_relaxed);
}

OMPSIM_DEVICE_API int32_t __ompsim_device_in_team_region(void) {
  const ThreadPlace &Place = currentPlace();
  return Place.InTeam && !Place.InParallel;
}

OMPSIM_DEVICE_API int32_t __kmpc_target_init(void *KernelEnvironment, void *) {
  ThreadPlace &Place = currentPlace();
  // Called without __ompsim_device_run_kernel, or as a team's thread: run the
  // user code.
  if (!Place.Launch || Place.InTeam)
    return -1;
  KernelLaunch &Launch = *Place.Launch;
  if (Launch.TeamsForked)
    return -1; // a nested kernel call on the launching thread: no new teams
  Launch.TeamsForked = true;
  const auto *Env = static_cast<const ConfigurationEnvironment *>(KernelEnvironment);
  const Libomp &Omp = Libomp::get();
  Ident *Loc = runtimeIdent();
  int32_t Gtid = Omp.GlobalThreadNum(Loc);
  Omp.PushNumTeams(Loc, Gtid, teamsOf(*Launch.Request, Env), threadsOf(*Launch.Request, Env));
  Omp.ForkTeams(Loc, 1, reinterpret_cast<Microtask>(&teamMicrotask), &Launch);
  return 0; // every team has run the user code: this call skips it
}

OMPSIM_DEVICE_API void __kmpc_target_deinit(void) {}

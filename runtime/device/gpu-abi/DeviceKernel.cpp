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
// A host-offload kernel runs in generic mode: an SPMD kernel's code outside
// its parallel regions is, by the SPMD contract, the same whether one thread
// of a team or all of them run it. A GPU image's SPMD kernel (the retargeter
// binds its __kmpc_target_init to __ompsim_gpu_target_init) runs as on a GPU:
// each team forks its block's threads once, every one runs the kernel's code,
// and its parallel regions run on them without another fork (a fork per
// distribute chunk made a 1 Mi-iteration loop take seconds). A GPU image's
// launch of one block runs it on the launching thread, outside any libomp
// teams construct (whose initial thread has no task team for the region's
// tasks); a GPU image's bare kernel runs on the virtual GPU (GridLaunch.cpp).
//
//===----------------------------------------------------------------------===//
#include "../libomp/Libomp.h"
#include "Abi.h"
#include "GridLaunch.h"
#include "KernelLaunchState.h"

#include "ompsim/HiddenHelpers.h"

#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

namespace ompsim::device {

std::atomic<int32_t> LastLaunchedDevice{-1};

uint64_t reductionBufferBytes(const ompsim::gpu::ConfigurationEnvironmentTy *Env) {
  if (Env && Env->ReductionDataSize > 0 && Env->ReductionBufferLength > 0)
    return uint64_t(Env->ReductionDataSize) * uint64_t(Env->ReductionBufferLength);
  return 0;
}

ThreadPlace &currentPlace() {
  static thread_local ThreadPlace Place;
  return Place;
}

namespace {

/// The head of the kernel environment flang and clang emit for every kernel
/// (runtime/gpu-device's ABI, checked against LLVM's there).
using ConfigurationEnvironment = ompsim::gpu::ConfigurationEnvironmentTy;

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

void forkTeams(KernelLaunch *Launch, int32_t Teams, int32_t Threads);

/// The bytes of the cross-team reduction buffer the kernel's environment
/// asks for, kept in the launch.
void noteReductionBuffer(KernelLaunch &Launch, const ConfigurationEnvironment *Env) {
  if (uint64_t Bytes = reductionBufferBytes(Env))
    Launch.ReductionBufferBytes = Bytes;
}

/// The teams of a launch made on a hidden helper thread.
struct ForkRequest {
  KernelLaunch *Launch;
  int32_t Teams, Threads;
};

/// A root thread that forks the teams of the launches one hidden helper
/// thread makes, one at a time: the same root each time, so libomp reuses
/// its teams' threads. Never destroyed (libomp keeps its hidden helper
/// threads for the life of the process).
class ForkCompanion {
public:
  /// The calling hidden helper thread's companion; null if none can start.
  static ForkCompanion *ofThisThread() {
    static thread_local ForkCompanion *Companion = nullptr;
    if (Companion)
      return Companion;
    auto *C = static_cast<ForkCompanion *>(std::calloc(1, sizeof(ForkCompanion)));
    if (!C)
      return nullptr;
    new (C) ForkCompanion();
    pthread_attr_t Attr;
    pthread_attr_init(&Attr);
    pthread_attr_setdetachstate(&Attr, PTHREAD_CREATE_DETACHED);
    bool Started = pthread_create(&C->Thread, &Attr, &ForkCompanion::loop, C) == 0;
    pthread_attr_destroy(&Attr);
    if (!Started) {
      std::free(C);
      return nullptr;
    }
    Companion = C;
    return C;
  }

  /// Forks `Req`'s teams on the companion and waits until they are done.
  void run(ForkRequest &Req) {
    pthread_mutex_lock(&Mu);
    Pending = &Req;
    Done = false;
    pthread_cond_broadcast(&Cv);
    while (!Done)
      pthread_cond_wait(&Cv, &Mu);
    pthread_mutex_unlock(&Mu);
  }

private:
  static void *loop(void *Arg) {
    auto *C = static_cast<ForkCompanion *>(Arg);
    pthread_mutex_lock(&C->Mu);
    while (true) {
      while (!C->Pending)
        pthread_cond_wait(&C->Cv, &C->Mu);
      ForkRequest *Req = C->Pending;
      pthread_mutex_unlock(&C->Mu);
      forkTeams(Req->Launch, Req->Teams, Req->Threads);
      pthread_mutex_lock(&C->Mu);
      C->Pending = nullptr;
      C->Done = true;
      pthread_cond_broadcast(&C->Cv);
    }
    return nullptr;
  }

  pthread_t Thread{};
  pthread_mutex_t Mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t Cv = PTHREAD_COND_INITIALIZER;
  ForkRequest *Pending = nullptr;
  bool Done = false;
};

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

void forkTeams(KernelLaunch *Launch, int32_t Teams, int32_t Threads) {
  const Libomp &Omp = Libomp::get();
  Ident *Loc = runtimeIdent();
  int32_t Gtid = Omp.GlobalThreadNum(Loc);
  Omp.PushNumTeams(Loc, Gtid, Teams, Threads);
  Omp.ForkTeams(Loc, 1, reinterpret_cast<Microtask>(&teamMicrotask), Launch);
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
  if (Request->bare)
    runGpuKernel(*Request); // every thread of every block runs a GPU image's bare (or fiber) kernel
  else
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
  int32_t Teams = teamsOf(*Launch.Request, Env), Threads = threadsOf(*Launch.Request, Env);
  noteReductionBuffer(Launch, Env);
  // A `target nowait` task runs on one of libomp's hidden helper threads
  // (in-process on ours-host; sim's executor launches from threads of its
  // own). libomp's teams forked from a hidden helper thread now and then
  // stop on libomp's task-team assertion (kmp_tasking.cpp(4368), about one
  // run in twenty of OpenMP_VV's test_target_teams_distribute_nowait.F90),
  // so such a launch forks its teams from a root thread: the hidden helper
  // thread's companion.
  if (ompsim::isHiddenHelperGtid(Libomp::get().GlobalThreadNum(runtimeIdent())))
    if (ForkCompanion *Companion = ForkCompanion::ofThisThread()) {
      ForkRequest Req{&Launch, Teams, Threads};
      Companion->run(Req);
      return 0;
    }
  forkTeams(&Launch, Teams, Threads);
  return 0; // every team has run the user code: this call skips it
}

namespace ompsim::device {
namespace {

/// Each of an SPMD team's threads: takes the team's place, then runs the kernel.
void spmdMicrotask(int32_t *, int32_t *, ThreadPlace *Team) {
  ThreadPlace Place = *Team;
  Place.InParallel = true;
  Place.SpmdThread = true;
  ScopedPlace Scope(Place);
  Place.Launch->Request->invoke(Place.Launch->Request->invoke_context);
}

} // namespace
} // namespace ompsim::device

OMPSIM_DEVICE_API int32_t __ompsim_gpu_target_init(void *KernelEnvironment, void *LaunchEnvironment) {
  ThreadPlace &Place = currentPlace();
  if (Place.SpmdThread)
    return -1; // a thread of the block: the kernel's code is its to run
  const auto *Env = static_cast<const ConfigurationEnvironment *>(KernelEnvironment);
  // A launch of one block (a target region without teams, for one) runs it
  // on the launching thread, outside any libomp teams construct: libomp has
  // no task team for a teams region's initial thread, so a task the
  // region's code creates would find none (a null read in
  // __kmpc_omp_task_alloc).
  if (Place.Launch && !Place.InTeam && !Place.Launch->TeamsForked &&
      teamsOf(*Place.Launch->Request, Env) == 1 &&
      !ompsim::isHiddenHelperGtid(Libomp::get().GlobalThreadNum(runtimeIdent()))) {
    KernelLaunch &Launch = *Place.Launch;
    Launch.TeamsForked = true;
    noteReductionBuffer(Launch, Env);
    ThreadPlace Team = Place;
    Team.InTeam = true;
    Team.TeamNum = 0;
    Team.NumTeams = 1;
    ScopedPlace Scope(Team);
    Launch.Request->invoke(Launch.Request->invoke_context);
    return 0; // the block has run the user code: this call skips it
  }
  int32_t Result = __kmpc_target_init(KernelEnvironment, LaunchEnvironment);
  // SPMD kernels only, those clang generates for combined constructs. A
  // kernel openmp-opt SPMDized (Generic-SPMD) keeps the generic model: its
  // nested parallel regions may ask for fewer threads than the block, and
  // their reductions and barriers count the region's threads.
  if (Result != -1 || !Env || Env->ExecMode != ompsim::gpu::ExecModeSpmd || !Place.Launch || !Place.InTeam ||
      Place.InParallel)
    return Result;
  // The team's initial thread of an SPMD kernel: the block's threads run the
  // kernel from its start (this thread among them, as thread 0); this call
  // then skips the code.
  const Libomp &Omp = Libomp::get();
  Ident *Loc = runtimeIdent();
  int32_t Gtid = Omp.GlobalThreadNum(Loc);
  int32_t Threads = threadsOf(*Place.Launch->Request, Env);
  if (Threads > 0)
    Omp.PushNumThreads(Loc, Gtid, Threads);
  ThreadPlace Team = Place;
  Omp.ForkCall(Loc, 1, reinterpret_cast<Microtask>(&spmdMicrotask), &Team);
  return 0;
}

OMPSIM_DEVICE_API void __kmpc_target_deinit(void) {}

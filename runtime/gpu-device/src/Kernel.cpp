//===- Kernel.cpp - kernel start and end, parallel regions ----------------===//
//
// __kmpc_target_init reads the kernel environment. In SPMD mode every thread
// of the block runs the kernel's code. In generic mode one main thread (the
// first lane of the block's last warp, the warp stock's plugins add for it)
// runs the sequential part; the threads below it are the workers, which wait
// in the state machine for the parallel regions the main thread hands them
// (__kmpc_parallel_60) and leave when the kernel ends (__kmpc_target_deinit).
// A parallel region inside another runs serialized on the thread that meets
// it, as a team of one.
//
//===----------------------------------------------------------------------===//

#include "State.h"

using namespace ompsim::gpu;

#define OMPSIM_GPU_API extern "C" __attribute__((used, retain))

namespace {

/// Calls an outlined parallel region with its shared variables.
void invokeRegion(void *Fn, int32_t Tid, void **Args, int64_t NumArgs) {
  int32_t Global = Tid, Bound = Tid;
  auto F = reinterpret_cast<ParallelRegionFn>(Fn);
  void **A = Args;
  switch (NumArgs) {
  case 0:
    F(&Global, &Bound);
    return;
  case 1:
    F(&Global, &Bound, A[0]);
    return;
  case 2:
    F(&Global, &Bound, A[0], A[1]);
    return;
  case 3:
    F(&Global, &Bound, A[0], A[1], A[2]);
    return;
  case 4:
    F(&Global, &Bound, A[0], A[1], A[2], A[3]);
    return;
  case 5:
    F(&Global, &Bound, A[0], A[1], A[2], A[3], A[4]);
    return;
  case 6:
    F(&Global, &Bound, A[0], A[1], A[2], A[3], A[4], A[5]);
    return;
  case 7:
    F(&Global, &Bound, A[0], A[1], A[2], A[3], A[4], A[5], A[6]);
    return;
  case 8:
    F(&Global, &Bound, A[0], A[1], A[2], A[3], A[4], A[5], A[6], A[7]);
    return;
  case 9:
    F(&Global, &Bound, A[0], A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8]);
    return;
  case 10:
    F(&Global, &Bound, A[0], A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8], A[9]);
    return;
  case 11:
    F(&Global, &Bound, A[0], A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8], A[9], A[10]);
    return;
  case 12:
    F(&Global, &Bound, A[0], A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8], A[9], A[10], A[11]);
    return;
  case 13:
    F(&Global, &Bound, A[0], A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8], A[9], A[10], A[11], A[12]);
    return;
  case 14:
    F(&Global, &Bound, A[0], A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8], A[9], A[10], A[11], A[12],
      A[13]);
    return;
  case 15:
    F(&Global, &Bound, A[0], A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8], A[9], A[10], A[11], A[12], A[13],
      A[14]);
    return;
  case 16:
    F(&Global, &Bound, A[0], A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8], A[9], A[10], A[11], A[12], A[13],
      A[14], A[15]);
    return;
  default:
    fail("a parallel region with more than 16 shared variables");
  }
}

/// Runs a parallel region serialized on the calling thread: a team of one,
/// one level deeper.
void runSerialized(void *Fn, void **Args, int64_t NumArgs) {
  ThreadState &T = thread();
  ++T.NestedLevels;
  invokeRegion(Fn, 0, Args, NumArgs);
  --T.NestedLevels;
}

/// A generic-mode region's wrapper where the compiler gave none: thread
/// `Tid` calls the outlined region with its shared variables.
void callOutlinedRegion(uint16_t, uint32_t Tid) {
  TeamState &Team = team();
  invokeRegion(Team.RegionFn, int32_t(Tid), Team.Args, Team.RegionArgs);
}

/// The generic-mode main thread: the first lane of the block's last warp
/// (thread 0 of a block of one warp or less).
uint32_t mainThreadOf(uint32_t BlockThreads) {
  return BlockThreads <= hw::warpSize() ? 0 : ((BlockThreads - 1) / hw::warpSize()) * hw::warpSize();
}

void initTeam(KernelEnvironmentTy &Kernel, KernelLaunchEnvironmentTy *Launch, bool Spmd) {
  TeamState &Team = team();
  Team.Spmd = Spmd;
  Team.Loops = hw::blockRunsAsLoops();
  Team.MainThread = Spmd ? 0 : mainThreadOf(hw::blockDim(0));
  Team.WorkFn = nullptr;
  Team.Args = nullptr;
  Team.ParallelTeamSize = 1;
  Team.ParallelLevel = 0;
#if defined(OMPSIM_GPU_SIM)
  // The simulated GPU's plugin passes no launch environment: its executor
  // keeps one per launch (the reduction buffer the kernel's environment
  // asks for).
  Launch = __ompsim_vgpu_launch_environment(&Kernel);
#endif
  Team.LaunchEnv = Launch;
  Team.KernelEnv = &Kernel;
  Team.BarrierArrived = 0;
  Team.BarrierGeneration = 0;
  Team.StackTop = 0;
  // The block's threads only: no other thread of it asks.
  uint32_t Threads = hw::blockDim(0) < MaxBlockThreads ? hw::blockDim(0) : MaxBlockThreads;
#if defined(OMPSIM_GPU_SIM)
  // The earlier blocks' thread states are free for this block's threads.
  Team.Block = Team.Block + 1 ? Team.Block + 1 : 1;
#endif
  for (uint32_t I = 0; I < Threads; ++I) {
#if !defined(OMPSIM_GPU_SIM)
    Team.Threads[I] = nullptr;
#endif
    Team.RegionSize[I] = 0;
  }
}

/// A worker's loop: wait for a region, run it if it is one of the region's
/// threads, wait for the region's end; leave when the kernel ends.
void stateMachine(uint32_t Tid) {
  TeamState &Team = team();
  for (;;) {
    hw::syncBlock();
    ParallelWrapperFn Work = Team.WorkFn;
    if (!Work)
      return;
    if (Tid < Team.ParallelTeamSize) {
      Work(/*ParallelLevel=*/0, Tid);
      hw::syncBlockAt(Team.RegionEnd);
    } else {
      hw::syncBlock();
    }
  }
}

} // namespace

OMPSIM_GPU_API int32_t __kmpc_target_init(KernelEnvironmentTy &Kernel, KernelLaunchEnvironmentTy *Launch) {
  bool Spmd = Kernel.Configuration.ExecMode & ExecModeSpmd;
  uint32_t Tid = hw::threadIdInBlock();
  if (hw::blockDim(0) > MaxBlockThreads)
    fail("a block of more than 1024 threads");
  if (Tid == 0)
    initTeam(Kernel, Launch, Spmd);
  // Where thread 0 runs first, its team state is set for the others (a
  // GPU's threads read it only after the barrier below).
  if (hw::ThreadZeroRunsFirst && team().Loops) {
    // Thread 0 alone runs the kernel. In generic mode it goes on as the
    // main thread, whose ids the code then reads as on a GPU; the workers
    // run each region's share in __kmpc_parallel_60.
    if (!Spmd)
      hw::runAsThread(team().MainThread);
    return -1;
  }
  // The block's threads read the team's state from here on: after thread 0
  // set it. Where thread 0 runs first (the virtual GPU's fibers), an SPMD
  // kernel's threads need not wait for it: the first barrier they all meet
  // is the one their code has.
  if (!Spmd || !hw::ThreadZeroRunsFirst)
    hw::syncBlock();
  if (Spmd)
    return -1;
  uint32_t Main = team().MainThread;
  if (Tid == Main)
    return -1;
  if (Tid > Main) {
    // The main warp's other lanes: no work is theirs. Where a warp's lanes
    // may wait apart they keep the block barrier's count whole.
    if (hw::LanesWaitApart && Kernel.Configuration.UseGenericStateMachine) {
      for (;;) {
        hw::syncBlock();
        if (!team().WorkFn)
          break;
        hw::syncBlock();
      }
    }
    return int32_t(Tid);
  }
  if (Kernel.Configuration.UseGenericStateMachine) {
    stateMachine(Tid);
    dropThreadState();
  }
  return int32_t(Tid);
}

OMPSIM_GPU_API void __kmpc_target_deinit() {
  TeamState &Team = team();
  if (Team.Loops) {
    // The thread that ran the kernel (thread 0, as the main thread in
    // generic mode) ends it for the block's threads, which each had their
    // parallel regions' share.
    for (uint32_t I = 0, N = hw::blockDim(0); I < N && I < MaxBlockThreads; ++I)
      dropThreadState(I);
    return;
  }
  if (Team.Spmd) {
    dropThreadState();
    return;
  }
  if (hw::threadIdInBlock() != Team.MainThread)
    return;
  // The kernel ends: release the workers from the state machine.
  Team.WorkFn = nullptr;
  hw::fenceBlock();
  hw::syncBlock();
  dropThreadState();
}

/// The state machine openmp-opt builds into a kernel calls these two.
OMPSIM_GPU_API bool __kmpc_kernel_parallel(ParallelWrapperFn *WorkFn) {
  TeamState &Team = team();
  *WorkFn = Team.WorkFn;
  if (!Team.WorkFn)
    return false;
  return hw::threadIdInBlock() < Team.ParallelTeamSize;
}

OMPSIM_GPU_API void __kmpc_kernel_end_parallel() {}

namespace {

/// A parallel region of a block that runs as loops: what each of its
/// threads is given.
struct LoopRegion {
  void *Fn;
  void **Args;
  int64_t NumArgs;
  uint16_t Size;
};

/// Worker `Tid` of a generic-mode block that runs as loops runs its share
/// of the team's region, as the state machine would have it.
void runLoopWorker(void *, uint32_t Tid) { team().WorkFn(/*ParallelLevel=*/0, Tid); }

/// Thread `Tid` of a block that runs as loops runs its share of the region.
void runLoopRegionThread(void *Region, uint32_t Tid) {
  const LoopRegion &R = *static_cast<const LoopRegion *>(Region);
  TeamState &Team = team();
  Team.RegionSize[Tid] = R.Size;
  invokeRegion(R.Fn, int32_t(Tid), R.Args, R.NumArgs);
  Team.RegionSize[Tid] = 0;
}

/// What a thread's start of a region split at its barriers is given: the
/// region's shared variables, and its bound thread id (0 in generic mode,
/// as the compiler's wrapper passes it; the thread's own id in SPMD mode,
/// as invokeRegion does).
struct RoundRegion {
  void **Args;
  uint32_t ZeroBound;
};

/// A parallel region called from `Code` in the program (where its threads
/// meet at its end). `Start`, for a region the simulated GPU's executor
/// split at its barriers, starts a thread's run of it as a coroutine: in a
/// block that runs as loops, its threads run in rounds.
void parallel(const IdentTy *Loc, int32_t IfExpr, int32_t NumThreads, void *Fn, void *WrapperFn, void **Args,
              int64_t NumArgs, const void *Code, hw::RoundStartFn Start = nullptr) {
  TeamState &Team = team();
  const hw::BarrierSite End = {Code, Loc ? Loc->PSource : nullptr, hw::BarrierSite::RegionEnd, 0u};
  uint32_t Tid = hw::threadIdInBlock();
  ThreadState *Self = threadIfAny();
  bool Nested = teamLevel() > 0 || (Self && Self->NestedLevels);
  if (Nested || !IfExpr) {
    // Serialized: a team of one, one level deeper. The team's own region of
    // an SPMD kernel (if(false)) is met by every thread of the block, as
    // the kernel's code runs on all of them: the team's initial thread
    // (thread 0) runs it, once, and the others wait for its end.
    bool TeamsOwn = !Nested && Team.Spmd;
    if (!TeamsOwn || Tid == 0)
      runSerialized(Fn, Args, NumArgs);
    if (TeamsOwn && !Team.Loops)
      hw::syncBlock();
    return;
  }
  if (Team.Spmd) {
    // Every thread of the block meets the region (the kernel's code runs on
    // all of them) and those within its num_threads run it, as the team's
    // level-1 region (its size each thread's own, RegionSize). In a
    // Generic-SPMD kernel a barrier before it keeps the sequential part
    // before any thread's region: every thread runs that part, its stores
    // too, as flang-22 emits it (`array(2) = 42` before a parallel loop that
    // stores 20 there must not land after one of the loop's stores). A pure
    // SPMD kernel (clang's combined constructs) has no sequential part: what
    // its threads run between two regions (a distribute loop's bounds) is
    // each thread's own, and the previous region's end (or the kernel's
    // start) is barrier enough.
    uint32_t Block = hw::blockDim(0);
    uint32_t Size = NumThreads > 0 && uint32_t(NumThreads) < Block ? uint32_t(NumThreads) : Block;
    if (Team.Loops && Start) {
      // Its threads in rounds, from one of its barriers to the next.
      for (uint32_t T = 0; T < Size; ++T)
        Team.RegionSize[T] = uint16_t(Size);
      // Its barriers are the block's where it has every thread
      // (teamBarrier); the block's others wait at its end.
      RoundRegion Region = {Args, 0u};
      hw::forEachThreadInRounds(Size, Start, &Region, End, Size < Block ? Size : 0u, Block);
      for (uint32_t T = 0; T < Size; ++T)
        Team.RegionSize[T] = 0;
      return;
    }
    if (Team.Loops) {
      // Thread 0 alone runs the code outside regions: the region's threads
      // run one after the other, in thread order as fibers would run them
      // up to the region's end, which then counts as their barrier.
      LoopRegion Region = {Fn, Args, NumArgs, uint16_t(Size)};
      hw::forEachThread(Size, &runLoopRegionThread, &Region);
      return;
    }
    if (Team.KernelEnv->Configuration.ExecMode & ExecModeGeneric)
      hw::syncBlock();
    if (Tid < Size) {
      Team.RegionSize[Tid] = uint16_t(Size);
      invokeRegion(Fn, int32_t(Tid), Args, NumArgs);
      Team.RegionSize[Tid] = 0;
      hw::syncBlockAt(End);
    } else {
      hw::syncBlock();
    }
    return;
  }
  uint32_t Workers = maxTeamThreads();
  uint32_t Size = NumThreads > 0 && uint32_t(NumThreads) < Workers ? uint32_t(NumThreads) : Workers;
  if (Size == 0) {
    runSerialized(Fn, Args, NumArgs);
    return;
  }
  // flang-22's code (OpenMPIRBuilder's) passes no wrapper: the workers then
  // call the outlined region itself, with its shared variables.
  Team.WorkFn = WrapperFn ? reinterpret_cast<ParallelWrapperFn>(WrapperFn) : &callOutlinedRegion;
  Team.RegionFn = Fn;
  Team.RegionArgs = NumArgs;
  Team.Args = Args;
  Team.ParallelTeamSize = Size;
  Team.ParallelLevel = 1;
  Team.RegionEnd = End;
  if (Team.Loops && Start) {
    // The workers in rounds, from one of the region's barriers to the next.
    // Its barriers count its threads; the team's other workers and the main
    // thread wait in the state machine, the main warp's other lanes finished.
    RoundRegion Region = {Args, 1u};
    hw::forEachThreadInRounds(Size, Start, &Region, End, Size, Team.MainThread + 1);
  } else if (Team.Loops) {
    // The workers below the region's size, one after the other, as fibers
    // run them from the state machine to the region's end.
    hw::forEachThread(Size, &runLoopWorker, nullptr);
  } else {
    hw::fenceBlock();
    hw::syncBlock(); // the workers take the region
    hw::syncBlock(); // and finish it
  }
  Team.ParallelLevel = 0;
  Team.ParallelTeamSize = 1;
  Team.Args = nullptr;
}

} // namespace

// Never inlined: the return address is the region's call in the program.
OMPSIM_GPU_API __attribute__((noinline)) void __kmpc_parallel_60(IdentTy *Loc, int32_t, int32_t IfExpr,
                                                                 int32_t NumThreads, int32_t, void *Fn,
                                                                 void *WrapperFn, void **Args,
                                                                 int64_t NumArgs, int32_t) {
  parallel(Loc, IfExpr, NumThreads, Fn, WrapperFn, Args, NumArgs, OMPSIM_GPU_CALLER());
}

OMPSIM_GPU_API __attribute__((noinline)) void __kmpc_parallel_51(IdentTy *Loc, int32_t, int32_t IfExpr,
                                                                 int32_t NumThreads, int32_t, void *Fn,
                                                                 void *WrapperFn, void **Args,
                                                                 int64_t NumArgs) {
  parallel(Loc, IfExpr, NumThreads, Fn, WrapperFn, Args, NumArgs, OMPSIM_GPU_CALLER());
}

// A region the simulated GPU's executor split at its barriers
// (simulator/src/gpu/BlockRounds.h): __kmpc_parallel_60's call, with the
// function that starts a thread's run of it from a RoundRegion. Never
// inlined, as __kmpc_parallel_60.
OMPSIM_GPU_API __attribute__((noinline)) void
__ompsim_gpu_parallel_in_rounds(IdentTy *Loc, int32_t, int32_t IfExpr, int32_t NumThreads, int32_t, void *Fn,
                                void *WrapperFn, void **Args, int64_t NumArgs, hw::RoundStartFn Start) {
  parallel(Loc, IfExpr, NumThreads, Fn, WrapperFn, Args, NumArgs, OMPSIM_GPU_CALLER(), Start);
}

OMPSIM_GPU_API void __kmpc_get_shared_variables(void ***Args) { *Args = team().Args; }

OMPSIM_GPU_API int32_t __kmpc_global_thread_num(IdentTy *) { return int32_t(hw::threadIdInBlock()); }
OMPSIM_GPU_API uint32_t __kmpc_get_hardware_thread_id_in_block() { return hw::threadIdInBlock(); }
OMPSIM_GPU_API uint32_t __kmpc_get_hardware_num_threads_in_block() { return hw::blockDim(0); }
OMPSIM_GPU_API uint32_t __kmpc_get_warp_size() { return hw::warpSize(); }
OMPSIM_GPU_API int8_t __kmpc_is_spmd_exec_mode() { return team().Spmd; }
OMPSIM_GPU_API int8_t __kmpc_parallel_level() { return int8_t(level()); }

/// Globalized locals: the generic-mode main thread's come from the block's
/// shared stack (last in, first out, as the compiler frees them); every
/// other request, and an overflow, from the device heap.
OMPSIM_GPU_API void *__kmpc_alloc_shared(uint64_t Bytes) {
  TeamState &Team = team();
  uint64_t Size = (Bytes + 15) & ~uint64_t(15);
  if (!Team.Spmd && hw::threadIdInBlock() == Team.MainThread && Team.StackTop + Size <= SharedStackBytes) {
    void *At = Team.Stack + Team.StackTop;
    Team.StackTop += uint32_t(Size);
    return At;
  }
  void *Ptr = heapAlloc(Size);
  if (!Ptr)
    fail("the device heap is exhausted (__kmpc_alloc_shared)");
  return Ptr;
}

OMPSIM_GPU_API void __kmpc_free_shared(void *Ptr, uint64_t Bytes) {
  TeamState &Team = team();
  char *P = static_cast<char *>(Ptr);
  if (P >= Team.Stack && P < Team.Stack + SharedStackBytes) {
    Team.StackTop -= uint32_t((Bytes + 15) & ~uint64_t(15));
    return;
  }
  heapFree(Ptr);
}

//===- Reduction.cpp - parallel and teams reductions ----------------------===//
//
// The compiler generates the combining: a shuffle-and-reduce function (a
// lane combines its values with those of the lane Offset above it, brought
// by __kmpc_shuffle_*) and an inter-warp copy (each warp's first lane hands
// its values to warp 0 through team-shared memory). The runtime decides the
// order: within each warp a tree of shuffles (full warps) or the irregular
// form for a partial one, then across warps in warp 0. Thread 0 of the team
// ends with the team's values and is told so (1).
//
// Across teams, each team's thread 0 folds its values into the reduction
// buffer's first record under a lock; the last team to arrive copies the
// total back and is told so.
//
//===----------------------------------------------------------------------===//

#include "State.h"

using namespace ompsim::gpu;

#define OMPSIM_GPU_API extern "C" __attribute__((used, retain))

namespace {

void regularWarpReduce(void *Data, ShuffleReduceFn Shuffle) {
  for (uint32_t Offset = hw::WarpSize / 2; Offset > 0; Offset /= 2)
    Shuffle(Data, 0, int16_t(Offset), 0);
}

/// `Size` lanes (the first ones of the warp) take part; `Lane` is the caller's.
void irregularWarpReduce(void *Data, ShuffleReduceFn Shuffle, uint32_t Size, uint32_t Lane) {
  uint32_t Current = Size;
  uint32_t Offset = Current / 2;
  while (Offset > 0) {
    Shuffle(Data, int16_t(Lane), int16_t(Offset), 1);
    Current = (Current + 1) / 2;
    Offset = Current / 2;
  }
}

/// Guards the reduction buffer's first record across the kernel's teams.
uint32_t TeamsReductionLock = 0;

} // namespace

OMPSIM_GPU_API int32_t __kmpc_shuffle_int32(int32_t Value, int16_t Delta, int16_t Width) {
  return hw::shuffleDown(hw::activeMask(), Value, uint32_t(Delta), uint32_t(Width));
}

OMPSIM_GPU_API int64_t __kmpc_shuffle_int64(int64_t Value, int16_t Delta, int16_t Width) {
  uint64_t Mask = hw::activeMask();
  uint32_t Low = uint32_t(uint64_t(Value)), High = uint32_t(uint64_t(Value) >> 32);
  Low = uint32_t(hw::shuffleDown(Mask, int32_t(Low), uint32_t(Delta), uint32_t(Width)));
  High = uint32_t(hw::shuffleDown(Mask, int32_t(High), uint32_t(Delta), uint32_t(Width)));
  return int64_t((uint64_t(High) << 32) | Low);
}

OMPSIM_GPU_API int32_t __kmpc_nvptx_parallel_reduce_nowait_v2(IdentTy *, uint64_t, void *Data,
                                                              ShuffleReduceFn Shuffle, InterWarpCopyFn Copy) {
  uint32_t Threads = numThreads();
  uint32_t Tid = threadNum();
  if (Threads == 1)
    return 1;
  uint32_t WarpsNeeded = (Threads + hw::WarpSize - 1) / hw::WarpSize;
  uint32_t Warp = Tid / hw::WarpSize;
  if (Threads % hw::WarpSize == 0 || Warp < WarpsNeeded - 1)
    regularWarpReduce(Data, Shuffle);
  else
    irregularWarpReduce(Data, Shuffle, Threads % hw::WarpSize, Tid % hw::WarpSize);
  if (Threads > hw::WarpSize) {
    Copy(Data, int32_t(WarpsNeeded));
    if (Warp == 0)
      irregularWarpReduce(Data, Shuffle, WarpsNeeded, Tid);
  }
  return Tid == 0;
}

OMPSIM_GPU_API void *__kmpc_reduction_get_fixed_buffer() { return team().LaunchEnv->ReductionBuffer; }

OMPSIM_GPU_API int32_t __kmpc_nvptx_teams_reduce_nowait_v2(IdentTy *, void *Buffer, uint32_t, uint64_t,
                                                           void *Data, ShuffleReduceFn, InterWarpCopyFn,
                                                           ListGlobalFn ListToGlobalCopy,
                                                           ListGlobalFn ListToGlobalReduce,
                                                           ListGlobalFn GlobalToListCopy, ListGlobalFn) {
  TeamState &Team = team();
  // One thread per team: thread 0 of an SPMD team, the main thread of a
  // generic one (the only thread in the sequential part).
  if (Team.Spmd ? hw::threadIdInBlock() != 0 : hw::threadIdInBlock() != Team.MainThread)
    return 0;
  uint32_t Teams = hw::gridDim(0);
  if (Teams == 1)
    return 1;
  KernelLaunchEnvironmentTy &Launch = *Team.LaunchEnv;
  while (!hw::atomicCas(&TeamsReductionLock, 0u, 1u))
    hw::pause();
  hw::fenceDevice();
  if (Launch.ReductionCnt == 0)
    ListToGlobalCopy(Buffer, 0, Data);
  else
    ListToGlobalReduce(Buffer, 0, Data);
  uint32_t Arrived = ++Launch.ReductionCnt;
  bool LastTeam = Arrived == Teams;
  if (LastTeam) {
    GlobalToListCopy(Buffer, 0, Data);
    Launch.ReductionCnt = 0;
  }
  hw::fenceDevice();
  hw::atomicStore(&TeamsReductionLock, 0u);
  return LastTeam;
}

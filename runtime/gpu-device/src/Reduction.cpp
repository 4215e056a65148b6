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
// On the simulated GPU, the parallel reduction's shuffles replay tapes and
// its barriers are __ompsim_gpu_reduction_barrier's calls: a region whose
// other waits are its own barriers runs in rounds, the reduction included
// (simulator/src/gpu/BlockRounds.h).
//
//===----------------------------------------------------------------------===//

#include "State.h"

using namespace ompsim::gpu;

#define OMPSIM_GPU_API extern "C" __attribute__((used, retain))

namespace {

#if !defined(OMPSIM_GPU_SIM)
void regularWarpReduce(void *Data, ShuffleReduceFn Shuffle) {
  for (uint32_t Offset = hw::warpSize() / 2; Offset > 0; Offset /= 2)
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

/// A shuffle down the running lanes of the caller's warp (64 bits as two
/// halves).
int32_t warpShuffle32(int32_t Value, int16_t Delta, int16_t Width) {
  return hw::shuffleDown(hw::activeMask(), Value, uint32_t(Delta), uint32_t(Width));
}

int64_t warpShuffle64(int64_t Value, int16_t Delta, int16_t Width) {
  uint64_t Mask = hw::activeMask();
  uint32_t Low = uint32_t(uint64_t(Value)), High = uint32_t(uint64_t(Value) >> 32);
  Low = uint32_t(hw::shuffleDown(Mask, int32_t(Low), uint32_t(Delta), uint32_t(Width)));
  High = uint32_t(hw::shuffleDown(Mask, int32_t(High), uint32_t(Delta), uint32_t(Width)));
  return int64_t((uint64_t(High) << 32) | Low);
}
#endif

/// Guards the reduction buffer's first record across the kernel's teams.
uint32_t TeamsReductionLock = 0;

void lockTeamsReduction() {
#if defined(OMPSIM_GPU_SIM)
  // Only each team's one thread takes it, which waits for nothing while it
  // holds it, and the simulated GPU runs a block to its end on one of the
  // device's CPUs: a holder is another block's, running on another CPU. So
  // the spin lets none of the block's threads run (hw::pause), as a block
  // that runs as loops or in rounds has no other thread to run.
  while (!hw::atomicCas(&TeamsReductionLock, 0u, 1u))
    __builtin_ia32_pause();
#else
  while (!hw::atomicCas(&TeamsReductionLock, 0u, 1u))
    hw::pause();
#endif
  hw::fenceDevice();
}

} // namespace

#if defined(OMPSIM_GPU_SIM)
// The simulated GPU's warps are fibers: a shuffle in lockstep costs every
// lane two switches, and a reduction of L values log2(warp) * L shuffles.
// Its parallel reduction instead runs the compiler's shuffle-and-reduce
// function once on every thread but 0, as the lane that only copies what
// its shuffles bring (algorithm 1, a lane at or above the offset: its own
// values back), which records the values on the thread's tape; thread 0
// then runs it once per other thread as the lane that combines, its
// shuffles replaying that thread's tape. Thread 0 ends with the team's
// values, combined in thread order rather than a warp tree's (the same
// result up to floating-point rounding).
namespace {

/// The compiler's shuffle-and-reduce functions are called by the parallel
/// reduction alone, which tapes every shuffle.
uint64_t tapeShuffle(uint64_t Value) {
  ThreadState *T = threadIfAny();
  if (!T || T->Tape.Mode == ShuffleTape::Off)
    fail("a reduction's shuffle (__kmpc_shuffle_int32 or _int64) outside the runtime's parallel reduction");
  ShuffleTape &Tape = T->Tape;
  if (Tape.Mode == ShuffleTape::Replay) {
    if (!Tape.Source || Tape.Cursor >= Tape.Source->Count)
      fail("a reduction shuffled more values than its partner did");
    return Tape.Source->Values[Tape.Cursor++];
  }
  if (Tape.Count == Tape.Capacity) {
    uint32_t Grown = Tape.Capacity ? 2 * Tape.Capacity : 16;
    auto *Values = static_cast<uint64_t *>(heapAlloc(Grown * sizeof(uint64_t)));
    if (!Values)
      fail("the device heap is exhausted (a reduction's values)");
    for (uint32_t I = 0; I < Tape.Count; ++I)
      Values[I] = Tape.Values[I];
    heapFree(Tape.Values);
    Tape.Values = Values;
    Tape.Capacity = Grown;
  }
  Tape.Values[Tape.Count++] = Value;
  return Value;
}

} // namespace

/// A barrier of the parallel team's `Size` threads only (in SPMD mode the
/// block's other threads wait at the region's end), named by the
/// reduction's ident `Loc`. Never inlined: the executor splits a region into
/// rounds at its calls, as at __kmpc_barrier's (simulator/src/gpu/BlockRounds.h).
OMPSIM_GPU_API __attribute__((noinline)) void __ompsim_gpu_reduction_barrier(IdentTy *Loc, uint32_t Size) {
  const hw::BarrierSite Site = {OMPSIM_GPU_CALLER(), Loc ? Loc->PSource : nullptr, hw::BarrierSite::Construct,
                                Loc ? uint32_t(Loc->Flags) : 0u};
  hw::syncThreadsAt(Size, Site);
}

OMPSIM_GPU_API int32_t __kmpc_shuffle_int32(int32_t Value, int16_t, int16_t) {
  return int32_t(uint32_t(tapeShuffle(uint32_t(Value))));
}

OMPSIM_GPU_API int64_t __kmpc_shuffle_int64(int64_t Value, int16_t, int16_t) {
  return int64_t(tapeShuffle(uint64_t(Value)));
}

OMPSIM_GPU_API int32_t __kmpc_nvptx_parallel_reduce_nowait_v2(IdentTy *Loc, uint64_t, void *Data,
                                                              ShuffleReduceFn Shuffle, InterWarpCopyFn) {
  uint32_t Threads = numThreads();
  if (Threads == 1)
    return 1;
  // The thread's number is read anew after each barrier: a number kept
  // across one would let the optimizer copy the barrier into the paths of
  // thread 0 and of the others, and a region split into rounds needs every
  // thread at one call (jump threading, of clang's x86-64 code, where
  // barriers are not convergent).
  ShuffleTape &Tape = thread().Tape;
  if (threadNum() != 0) {
    Tape.Mode = ShuffleTape::Record;
    Tape.Count = 0;
    Shuffle(Data, /*LaneId=*/1, /*Offset=*/1, /*AlgoVersion=*/1);
    Tape.Mode = ShuffleTape::Off;
  }
  __ompsim_gpu_reduction_barrier(Loc, Threads); // every tape is recorded
  if (threadNum() == 0) {
    uint32_t Base = hw::threadIdInBlock();
    for (uint32_t Other = 1; Other < Threads; ++Other) {
      const ThreadState *Partner = threadIfAny(Base + Other);
      Tape.Mode = ShuffleTape::Replay;
      Tape.Source = Partner ? &Partner->Tape : nullptr;
      Tape.Cursor = 0;
      Shuffle(Data, /*LaneId=*/0, /*Offset=*/1, /*AlgoVersion=*/1);
    }
    Tape.Mode = ShuffleTape::Off;
    Tape.Source = nullptr;
  }
  __ompsim_gpu_reduction_barrier(Loc, Threads); // thread 0 has read every tape
  return threadNum() == 0;
}
#else
OMPSIM_GPU_API int32_t __kmpc_shuffle_int32(int32_t Value, int16_t Delta, int16_t Width) {
  return warpShuffle32(Value, Delta, Width);
}

OMPSIM_GPU_API int64_t __kmpc_shuffle_int64(int64_t Value, int16_t Delta, int16_t Width) {
  return warpShuffle64(Value, Delta, Width);
}

OMPSIM_GPU_API int32_t __kmpc_nvptx_parallel_reduce_nowait_v2(IdentTy *, uint64_t, void *Data,
                                                              ShuffleReduceFn Shuffle, InterWarpCopyFn Copy) {
  uint32_t Threads = numThreads();
  uint32_t Tid = threadNum();
  if (Threads == 1)
    return 1;
  uint32_t WarpsNeeded = (Threads + hw::warpSize() - 1) / hw::warpSize();
  uint32_t Warp = Tid / hw::warpSize();
  if (Threads % hw::warpSize() == 0 || Warp < WarpsNeeded - 1)
    regularWarpReduce(Data, Shuffle);
  else
    irregularWarpReduce(Data, Shuffle, Threads % hw::warpSize(), Tid % hw::warpSize());
  if (Threads > hw::warpSize()) {
    Copy(Data, int32_t(WarpsNeeded));
    if (Warp == 0)
      irregularWarpReduce(Data, Shuffle, WarpsNeeded, Tid);
  }
  return Tid == 0;
}
#endif

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
  lockTeamsReduction();
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

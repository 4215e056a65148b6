//===- State.h - what a block and its threads know --------------*- C++ -*-===//
//
// A block (an OpenMP team) keeps its state in the block's shared memory:
// the kernel's mode, the parallel region the generic-mode main thread hands
// its workers, the shared stack of globalized locals, the team barrier. A
// thread's own state (nested parallel levels, a dynamic loop's progress) is
// made on the device heap the first time the thread needs it; most threads
// never do.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_GPUDEVICE_STATE_H
#define OMPSIM_GPUDEVICE_STATE_H

#include "Hardware.h"

namespace ompsim::gpu {

/// A worksharing loop with a dynamic, guided or runtime schedule, as one
/// thread walks it: the thread takes chunks Id, Id + N, Id + 2N, ... (a
/// valid dynamic assignment, and the same on every run).
struct DispatchState {
  int64_t Lower = 0;
  int64_t Stride = 1;
  uint64_t Trip = 0;
  uint64_t Chunk = 1;
  uint64_t NextChunk = 0;
  uint32_t Threads = 1;
};

#if defined(OMPSIM_GPU_SIM)
/// The values one thread's shuffle-and-reduce function shuffles, in order
/// (the simulated GPU's parallel reduction, Reduction.cpp): recorded as the
/// thread passes its own values, replayed to thread 0 as its partner's.
struct ShuffleTape {
  enum : uint8_t { Off, Record, Replay } Mode = Off;
  uint32_t Count = 0, Capacity = 0, Cursor = 0;
  uint64_t *Values = nullptr;
  /// While replaying: the tape whose values the shuffles bring.
  const ShuffleTape *Source = nullptr;
};
#endif

struct ThreadState {
  /// Parallel regions this thread runs inside the team's own level (each
  /// serialized, a team of one).
  uint32_t NestedLevels = 0;
  DispatchState Dispatch;
#if defined(OMPSIM_GPU_SIM)
  ShuffleTape Tape;
  /// The block (TeamState::Block) whose thread it is: 0, or an earlier
  /// block's, says the state is free for the slot's next thread.
  uint32_t Block = 0;
#endif
};

struct TeamState {
  bool Spmd;
  /// The block runs as loops (hw::blockRunsAsLoops(), on the simulated
  /// GPU): thread 0 alone runs the code outside parallel regions (as the
  /// main thread in generic mode), and each region's threads run in turn.
  bool Loops;
  uint32_t MainThread;
  /// The generic-mode parallel region the workers run next (null: the
  /// kernel ends), its shared variables and its threads.
  ParallelWrapperFn WorkFn;
  /// The outlined region itself and its number of shared variables (for a
  /// region the compiler gave no wrapper).
  void *RegionFn;
  int64_t RegionArgs;
  void **Args;
  uint32_t ParallelTeamSize;
  /// Where the generic-mode region's threads meet at its end.
  hw::BarrierSite RegionEnd;
  /// Generic mode: 1 inside the team's parallel region, 0 in its sequential
  /// part.
  uint32_t ParallelLevel;
  /// SPMD mode keeps the level and the region's size per thread: the size
  /// of the team's parallel region the thread runs, 0 in the sequential
  /// part. A region of fewer threads than the block leaves the others at
  /// level 0, and those may leave their barrier while the region's threads
  /// still run it.
  uint16_t RegionSize[MaxBlockThreads];
  KernelLaunchEnvironmentTy *LaunchEnv;
  KernelEnvironmentTy *KernelEnv;
  /// The team barrier of a generic-mode parallel region (its threads only).
  uint32_t BarrierArrived;
  uint32_t BarrierGeneration;
  uint32_t StackTop;
  alignas(16) char Stack[SharedStackBytes];
  ThreadState *Threads[MaxBlockThreads];
#if defined(OMPSIM_GPU_SIM)
  /// The simulated GPU's team state lives on across the blocks one device
  /// thread runs (its memory zeroed once): each block gets a number of its
  /// own (never 0), and its threads' states are those of the slots' earlier
  /// threads, made anew, their tapes' memory kept.
  uint32_t Block;
#endif
};

/// The device environment the plugin wrote at load.
const DeviceEnvironmentTy &deviceEnvironment();

/// The calling block's state.
TeamState &team();
/// The calling thread's state, made on first use.
ThreadState &thread();
/// The calling thread's state, or null if it has none.
ThreadState *threadIfAny();
/// Thread `Id`'s state in the calling block, or null if it has none.
ThreadState *threadIfAny(uint32_t Id);
/// Frees the calling thread's state (it leaves the kernel).
void dropThreadState();
/// Frees thread `Id`'s state (a block that runs as loops: thread 0 frees
/// every thread's at the kernel's end). The simulated GPU keeps its memory
/// for the slot's next thread.
void dropThreadState(uint32_t Id);

/// The calling thread's level within the team's own parallelism: 1 in the
/// team's parallel region, 0 in its sequential part.
uint32_t teamLevel();

/// The thread's id in its parallel team, and the team's size.
uint32_t threadNum();
uint32_t numThreads();
uint32_t level();

/// The most threads a parallel region of the team may have (its thread
/// limit): the block's in SPMD mode; in generic mode the block's but the
/// main warp's (stock's plugins add that warp to a thread_limit clause),
/// and no more than the workers below the main thread.
uint32_t maxTeamThreads();

/// A barrier of the current parallel team's threads, the program's barrier
/// `Site` (a no-op for a team of one).
void teamBarrier(const hw::BarrierSite &Site);

/// The device heap (malloc and free on nvptx64; ompsim's own on amdgcn).
void *heapAlloc(uint64_t Bytes);
void heapFree(void *Ptr);

/// Prints one line naming the kernel's block and thread, then traps.
[[noreturn]] void fail(const char *What);

} // namespace ompsim::gpu

#endif // OMPSIM_GPUDEVICE_STATE_H

//===- State.cpp - block and thread state, the device heap ----------------===//
//
// The block's state lives in its shared memory (address space 3, never
// initialized by the loader: __kmpc_target_init sets it). The device heap is
// CUDA's malloc and free on nvptx64; amdgcn has no heap without ROCm's device
// libraries, so the runtime serves malloc and free there from a fixed arena
// of device memory (a bump allocator: free gives nothing back). On the
// simulated GPU the block's state is the block runner's memory for it, and
// the heap is the host's.
//
//===----------------------------------------------------------------------===//

#include "State.h"

using namespace ompsim::gpu;

#if !defined(OMPSIM_GPU_SIM)
namespace {

[[clang::loader_uninitialized]] TeamState SharedTeam __attribute__((address_space(3)));

} // namespace
#endif

#if defined(OMPSIM_GPU_SIM)
extern "C" {
void *malloc(unsigned long Bytes);
void free(void *Ptr);
}
#elif defined(__NVPTX__)
extern "C" {
void *malloc(uint64_t Bytes);
void free(void *Ptr);
int vprintf(const char *Format, void *Arguments);
}
#else
namespace {
/// 64 MiB of device memory (zero-filled by the loader, no image bytes).
constexpr uint64_t ArenaBytes = uint64_t(64) << 20;
alignas(16) char Arena[ArenaBytes];
uint64_t ArenaTop = 0;
} // namespace

extern "C" void *malloc(uint64_t Bytes) {
  uint64_t Size = (Bytes + 15) & ~uint64_t(15);
  uint64_t At = hw::atomicAdd(&ArenaTop, Size);
  return At + Size <= ArenaBytes ? Arena + At : nullptr;
}
extern "C" void free(void *) {}
#endif

namespace ompsim::gpu {

#if defined(OMPSIM_GPU_SIM)
TeamState &team() { return *static_cast<TeamState *>(hw::blockState(sizeof(TeamState))); }
#else
TeamState &team() { return *(TeamState *)&SharedTeam; }
#endif

ThreadState *threadIfAny() { return threadIfAny(hw::threadIdInBlock()); }

ThreadState *threadIfAny(uint32_t Id) {
  if (Id >= MaxBlockThreads)
    return nullptr;
  TeamState &Team = team();
  ThreadState *State = Team.Threads[Id];
#if defined(OMPSIM_GPU_SIM)
  if (State && State->Block != Team.Block)
    return nullptr;
#endif
  return State;
}

ThreadState &thread() {
  uint32_t Id = hw::threadIdInBlock();
  if (Id >= MaxBlockThreads)
    fail("a block of more than 1024 threads");
  TeamState &Team = team();
  ThreadState *&Slot = Team.Threads[Id];
#if defined(OMPSIM_GPU_SIM)
  if (Slot && Slot->Block != Team.Block) {
    // An earlier thread's of the slot: made anew, its tape's memory kept.
    ShuffleTape Kept = Slot->Tape;
    *Slot = ThreadState();
    Slot->Tape.Values = Kept.Values;
    Slot->Tape.Capacity = Kept.Capacity;
    Slot->Block = Team.Block;
  }
#endif
  if (!Slot) {
    Slot = static_cast<ThreadState *>(heapAlloc(sizeof(ThreadState)));
    if (!Slot)
      fail("the device heap is exhausted (a thread's state)");
    *Slot = ThreadState();
#if defined(OMPSIM_GPU_SIM)
    Slot->Block = Team.Block;
#endif
  }
  return *Slot;
}

void dropThreadState() { dropThreadState(hw::threadIdInBlock()); }

void dropThreadState(uint32_t Id) {
  if (Id >= MaxBlockThreads || !team().Threads[Id])
    return;
#if defined(OMPSIM_GPU_SIM)
  // Its memory serves the slot's next thread, this block's or a later one's.
  team().Threads[Id]->Block = 0;
#else
  heapFree(team().Threads[Id]);
  team().Threads[Id] = nullptr;
#endif
}

uint32_t teamLevel() {
  TeamState &Team = team();
  if (!Team.Spmd)
    return Team.ParallelLevel;
  uint32_t Id = hw::threadIdInBlock();
  return Id < MaxBlockThreads && Team.RegionSize[Id] ? 1 : 0;
}

uint32_t level() {
  ThreadState *T = threadIfAny();
  return teamLevel() + (T ? T->NestedLevels : 0);
}

uint32_t threadNum() {
  ThreadState *T = threadIfAny();
  if (teamLevel() == 0 || (T && T->NestedLevels))
    return 0;
  return hw::threadIdInBlock();
}

uint32_t numThreads() {
  ThreadState *T = threadIfAny();
  if (teamLevel() == 0 || (T && T->NestedLevels))
    return 1;
  TeamState &Team = team();
  return Team.Spmd ? Team.RegionSize[hw::threadIdInBlock()] : Team.ParallelTeamSize;
}

uint32_t maxTeamThreads() {
  TeamState &Team = team();
  uint32_t Block = hw::blockDim(0);
  if (Team.Spmd)
    return Block;
  uint32_t Warp = hw::warpSize();
  uint32_t Workers = Block > Warp ? Block - Warp : 0;
  return Workers < Team.MainThread ? Workers : Team.MainThread;
}

void teamBarrier(const hw::BarrierSite &Site) {
  // A team of one (the sequential part, a serialized region) has nothing
  // to wait for, as in stock's runtime.
  uint32_t Size = numThreads();
  if (Size <= 1)
    return;
  TeamState &Team = team();
#if defined(OMPSIM_GPU_SIM)
  // The block's barrier where the region has all its threads; else the
  // region's threads only, a barrier of their count (a GPU's named
  // barrier): in generic mode the block's other threads wait in the state
  // machine, and an SPMD region of fewer threads (num_threads) leaves the
  // others at the region's end, which its barriers must not release.
  if (Team.Spmd && Size >= hw::blockDim(0))
    hw::syncBlockAt(Site);
  else
    hw::syncThreadsAt(Size, Site);
#else
  if (Team.Spmd) {
    hw::syncBlockAt(Site);
    return;
  }
  // Generic mode: the region's threads only (the block's other threads
  // wait in the state machine), so a counting barrier in shared memory.
  uint32_t Generation = hw::atomicLoad(&Team.BarrierGeneration);
  if (hw::atomicAdd(&Team.BarrierArrived, 1u) == Size - 1) {
    hw::atomicStore(&Team.BarrierArrived, 0u);
    hw::atomicAdd(&Team.BarrierGeneration, 1u);
    return;
  }
  while (hw::atomicLoad(&Team.BarrierGeneration) == Generation)
    hw::pause();
#endif
}

void *heapAlloc(uint64_t Bytes) { return malloc(Bytes); }
void heapFree(void *Ptr) { free(Ptr); }

void fail(const char *What) {
#if defined(OMPSIM_GPU_SIM)
  __ompsim_vgpu_fail(What);
#elif defined(__NVPTX__)
  struct {
    const char *What;
    uint32_t Block, Thread;
  } Arguments = {What, hw::blockId(0), hw::threadIdInBlock()};
  vprintf("ompsim GPU device runtime: %s (block %u, thread %u)\n", &Arguments);
#endif
  hw::trap();
}

} // namespace ompsim::gpu

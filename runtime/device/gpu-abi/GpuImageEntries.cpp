//===- GpuImageEntries.cpp - what only a GPU's device code calls ----------===//
//
// A GPU image (nvptx64 or amdgcn IR, which the executor retargets for its
// CPU: simulator/src/gpu/) calls DeviceRTL entry points that flang-22's
// x86-64 code never does: the distribute loop's static schedule, the thread
// id in the block, the generic-mode state machine's hand-over and barriers,
// and the retargeting's own team-shared memory and printf. Here they run on
// the same libomp teams and threads as the rest of the GPU ABI: a team's
// initial thread runs the team's code and a parallel region forks libomp
// threads, so "the thread's id in its block" is its libomp thread number.
//
//===----------------------------------------------------------------------===//
#include "../DeviceStop.h"
#include "../libomp/Libomp.h"
#include "../vgpu/Block.h"
#include "KernelLaunchState.h"
#include "StaticSchedule.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

namespace ompsim::device {

namespace {

[[noreturn]] void fail(const char *Entry, const char *Message) { stopDevice("%s: %s", Entry, Message); }

/// DeviceRTL's schedule numbers for `distribute` (OpenMP's kmp_sched_t).
constexpr int32_t kDistributeStaticChunk = 91;
constexpr int32_t kDistributeStatic = 92;

/// The calling team's share of [*Lower, *Upper] (DeviceRTL's
/// for_static_init with the teams as the entities): `chunk`-sized pieces
/// dealt round robin, or one contiguous piece per team.
template <typename T, typename ST>
void distributeStaticInit(int32_t Schedule, int32_t *LastIter, T *Lower, T *Upper, ST *Stride, ST Chunk) {
  const Libomp &Omp = Libomp::get();
  ST Team = Omp.GetTeamNum(), Teams = Omp.GetNumTeams();
  if (Teams < 1)
    Teams = 1;
  T Lb = *Lower, Ub = *Upper;
  if (Schedule == kDistributeStaticChunk && Chunk > 0) {
    T Begin = Lb + Team * Chunk;
    ST All = Teams * Chunk;
    T LastChunk = Ub - ((Ub - Lb) % Chunk);
    *LastIter = ((LastChunk - Begin) % All) == 0;
    *Lower = Begin;
    *Upper = Begin + Chunk - 1;
    *Stride = All;
    return;
  }
  if (Schedule != kDistributeStatic && Schedule != kDistributeStaticChunk)
    fail("__kmpc_distribute_static_init", "a schedule that is not distribute's static schedule");
  T Size = Ub - Lb + 1;
  T Each = Size / T(Teams), Extra = Size - Each * T(Teams);
  T Begin = T(Team) < Extra ? Lb + T(Team) * (Each + 1) : Lb + T(Team) * Each + Extra;
  T Mine = Each + (T(Team) < Extra ? 1 : 0);
  *Lower = Begin;
  *Upper = Begin + Mine - 1;
  *LastIter = Begin <= Ub && Ub <= *Upper;
  *Stride = ST(Size);
}

/// The calling team's entry of one of `L`'s per-team tables, made by `Make`
/// (which returns null when it cannot) at the team's first use; null when
/// the entry cannot be made. The table grows as teams ask: the kernel's own
/// entry asks before its teams exist (one team then).
template <typename MakeFn> void *teamEntry(KernelLaunch &L, void **&Table, uint32_t &Count, MakeFn Make) {
  const ThreadPlace &Place = currentPlace();
  uint32_t Teams = std::max<uint32_t>(Place.NumTeams, Place.TeamNum + 1);
  void *Entry = nullptr;
  pthread_mutex_lock(&L.SharedLock);
  if (Teams > Count) {
    if (auto *Grown = static_cast<void **>(std::realloc(Table, Teams * sizeof(void *)))) {
      for (uint32_t I = Count; I < Teams; ++I)
        Grown[I] = nullptr;
      Table = Grown;
      Count = Teams;
    }
  }
  if (Place.TeamNum < Count) {
    if (!Table[Place.TeamNum])
      Table[Place.TeamNum] = Make();
    Entry = Table[Place.TeamNum];
  }
  pthread_mutex_unlock(&L.SharedLock);
  return Entry;
}

/// A block of a team's memory: `Bytes` rounded up to 16, 16-aligned and
/// zeroed; null when it cannot be allocated.
void *newTeamBlock(uint64_t Bytes) {
  uint64_t Size = (std::max<uint64_t>(Bytes, 16) + 15) & ~uint64_t(15);
  void *New = std::aligned_alloc(16, Size);
  if (New)
    std::memset(New, 0, Size);
  return New;
}

/// The launch the calling thread runs in (it must run in one).
KernelLaunch &launchOf(const char *Entry) {
  ThreadPlace &Place = currentPlace();
  if (!Place.Launch)
    fail(Entry, "called outside a kernel launch");
  return *Place.Launch;
}

/// The most threads of a team that take part in a reduction.
constexpr uint32_t kMaxLanes = 4096;

/// The values one thread's shuffle-and-reduce function shuffles, in order:
/// recorded as the thread passes its own values, replayed to thread 0 as
/// its partner's.
struct ShuffleTape {
  uint64_t *Values = nullptr;
  uint32_t Count = 0, Capacity = 0, Cursor = 0;
  bool Replay = false;
};

/// A team's reductions: one tape per thread, the threads that have
/// recorded, and the reductions thread 0 has finished.
struct TeamReduction {
  std::atomic<uint32_t> Recorded{0};
  std::atomic<uint32_t> Finished{0};
  ShuffleTape Tapes[kMaxLanes];
};

/// The tape the calling thread's shuffles go to, while it reduces.
thread_local ShuffleTape *TTape = nullptr;

uint64_t shuffle(const char *Entry, uint64_t Value) {
  if (!TTape)
    fail(Entry, "a warp shuffle outside a reduction, which ompsim's simulated GPU does not run yet");
  ShuffleTape &T = *TTape;
  if (T.Replay) {
    if (T.Cursor >= T.Count)
      fail(Entry, "a reduction shuffled more values than its partner did");
    return T.Values[T.Cursor++];
  }
  if (T.Count == T.Capacity) {
    uint32_t Grown = T.Capacity ? 2 * T.Capacity : 16;
    auto *Values = static_cast<uint64_t *>(std::realloc(T.Values, Grown * sizeof(uint64_t)));
    if (!Values)
      fail(Entry, "cannot record a reduction's values");
    T.Values = Values;
    T.Capacity = Grown;
  }
  T.Values[T.Count++] = Value;
  return Value;
}

using ShuffleReduceFn = void (*)(void *ReduceData, int16_t LaneId, int16_t Offset, int16_t AlgoVersion);
using ListGlobalFn = void (*)(void *Buffer, int32_t Index, void *ReduceData);

/// printf's conversion at `P` (after the '%'): its length in the format
/// and the bytes its argument takes in vprintf's buffer (0 for "%%").
struct Conversion {
  size_t Length;
  size_t Bytes;
  bool Floating, String, Star1, Star2;
};

bool parseConversion(const char *P, Conversion &C) {
  C = Conversion{0, 0, false, false, false, false};
  const char *Q = P;
  while (*Q && std::strchr("-+ #0'", *Q))
    ++Q;
  if (*Q == '*') {
    C.Star1 = true;
    ++Q;
  }
  while (*Q >= '0' && *Q <= '9')
    ++Q;
  if (*Q == '.') {
    ++Q;
    if (*Q == '*') {
      C.Star2 = true;
      ++Q;
    }
    while (*Q >= '0' && *Q <= '9')
      ++Q;
  }
  size_t Long = 0;
  while (*Q && std::strchr("hlLqjzt", *Q)) {
    if (*Q == 'l' || *Q == 'L' || *Q == 'q' || *Q == 'j' || *Q == 'z' || *Q == 't')
      ++Long;
    ++Q;
  }
  if (!*Q)
    return false;
  char Conv = *Q++;
  C.Length = size_t(Q - P);
  if (std::strchr("diouxXc", Conv))
    C.Bytes = Long ? 8 : 4;
  else if (std::strchr("fFeEgGaA", Conv)) {
    C.Bytes = 8; // a float travels as a double
    C.Floating = true;
  } else if (Conv == 's' || Conv == 'p') {
    C.Bytes = 8;
    C.String = Conv == 's';
  } else if (Conv == '%') {
    C.Bytes = 0;
  } else {
    return false;
  }
  return true;
}

/// Reads the next `Bytes`-byte argument of vprintf's buffer (each argument
/// at its own alignment, as nvptx's codegen packs them).
uint64_t take(const char *&Cursor, size_t Bytes) {
  uintptr_t At = (reinterpret_cast<uintptr_t>(Cursor) + Bytes - 1) & ~uintptr_t(Bytes - 1);
  Cursor = reinterpret_cast<const char *>(At);
  uint64_t V = 0;
  std::memcpy(&V, Cursor, Bytes);
  Cursor += Bytes;
  return V;
}

} // namespace

KernelLaunch::~KernelLaunch() {
  for (uint32_t T = 0; T < TeamSharedCount; ++T)
    std::free(TeamShared[T]);
  std::free(TeamShared);
  for (uint32_t T = 0; T < DynamicSharedCount; ++T)
    std::free(DynamicShared[T]);
  std::free(DynamicShared);
  for (uint32_t T = 0; T < TeamReductionsCount; ++T)
    if (auto *Team = static_cast<TeamReduction *>(TeamReductions[T])) {
      for (ShuffleTape &Tape : Team->Tapes)
        std::free(Tape.Values);
      Team->~TeamReduction();
      std::free(Team);
    }
  std::free(TeamReductions);
  std::free(ReductionBuffer);
  std::free(GpuLaunchEnv.ReductionBuffer);
}

} // namespace ompsim::device

using namespace ompsim::device;

OMPSIM_DEVICE_API void __kmpc_distribute_static_init_4(void *, int32_t, int32_t Schedule, int32_t *LastIter,
                                                       int32_t *Lower, int32_t *Upper, int32_t *Stride,
                                                       int32_t, int32_t Chunk) {
  distributeStaticInit<int32_t, int32_t>(Schedule, LastIter, Lower, Upper, Stride, Chunk);
}
OMPSIM_DEVICE_API void __kmpc_distribute_static_init_4u(void *, int32_t, int32_t Schedule, int32_t *LastIter,
                                                        uint32_t *Lower, uint32_t *Upper, int32_t *Stride,
                                                        int32_t, int32_t Chunk) {
  distributeStaticInit<uint32_t, int32_t>(Schedule, LastIter, Lower, Upper, Stride, Chunk);
}
OMPSIM_DEVICE_API void __kmpc_distribute_static_init_8(void *, int32_t, int32_t Schedule, int32_t *LastIter,
                                                       int64_t *Lower, int64_t *Upper, int64_t *Stride,
                                                       int64_t, int64_t Chunk) {
  distributeStaticInit<int64_t, int64_t>(Schedule, LastIter, Lower, Upper, Stride, Chunk);
}
OMPSIM_DEVICE_API void __kmpc_distribute_static_init_8u(void *, int32_t, int32_t Schedule, int32_t *LastIter,
                                                        uint64_t *Lower, uint64_t *Upper, int64_t *Stride,
                                                        int64_t, int64_t Chunk) {
  distributeStaticInit<uint64_t, int64_t>(Schedule, LastIter, Lower, Upper, Stride, Chunk);
}
OMPSIM_DEVICE_API void __kmpc_distribute_static_fini(void *, int32_t) {}

// A parallel region's worksharing loops (the image calls __kmpc_for_static_init_*,
// bound here by the retargeter). libomp's answer for a team of one thread is
// the whole loop with a stride past its end; clang's GPU codegen for chunk 1
// (`distribute parallel for`) runs one iteration per chunk, so the loop
// would end after its first iteration. These answer as a GPU's runtime does.
#define OMPSIM_GPU_FOR_STATIC_INIT(Suffix, T, ST)                                                            \
  OMPSIM_DEVICE_API void __ompsim_gpu_for_static_init_##Suffix(                                              \
      void *, int32_t, int32_t Schedule, int32_t *Last, T *Lower, T *Upper, ST *Stride, ST Incr, ST Chunk) { \
    const Libomp &Omp = Libomp::get();                                                                       \
    ompsim::gpu::staticInit<T, ST>(Schedule, Last, Lower, Upper, Stride, Incr, Chunk,                        \
                                   uint64_t(Omp.GetThreadNum()), uint64_t(Omp.GetNumThreads()));             \
  }
OMPSIM_GPU_FOR_STATIC_INIT(4, int32_t, int32_t)
OMPSIM_GPU_FOR_STATIC_INIT(4u, uint32_t, int32_t)
OMPSIM_GPU_FOR_STATIC_INIT(8, int64_t, int64_t)
OMPSIM_GPU_FOR_STATIC_INIT(8u, uint64_t, int64_t)
#undef OMPSIM_GPU_FOR_STATIC_INIT

OMPSIM_DEVICE_API uint32_t __kmpc_get_hardware_thread_id_in_block() {
  return uint32_t(Libomp::get().GetThreadNum());
}

OMPSIM_DEVICE_API uint32_t __kmpc_get_hardware_num_threads_in_block() {
  return uint32_t(Libomp::get().GetNumThreads());
}

namespace ompsim::device {
namespace {

/// The mask of the lanes of the caller's warp that are threads of its team
/// (a warp has the GPU's lanes, 32 or 64).
uint64_t presentLanes() {
  const Libomp &Omp = Libomp::get();
  const ThreadPlace &Place = currentPlace();
  uint32_t Lanes =
      Place.Launch && Place.Launch->Request->gpu_warp_size ? Place.Launch->Request->gpu_warp_size : 32;
  uint32_t Thread = uint32_t(std::max(Omp.GetThreadNum(), 0)),
           Threads = uint32_t(std::max(Omp.GetNumThreads(), 1));
  uint32_t Here = std::min(Lanes, Threads - (Thread / Lanes) * Lanes);
  return Here >= 64 ? ~uint64_t(0) : (uint64_t(1) << Here) - 1;
}

} // namespace
} // namespace ompsim::device

// A warp's lanes are threads of libomp's here, not in lockstep: every
// thread of the team in the caller's warp counts as active.
OMPSIM_DEVICE_API uint64_t __kmpc_warp_active_thread_mask() { return presentLanes(); }

// A warp's lanes are not in lockstep here, and which lanes a mask names
// cannot be known to be at the call (on a GPU the mask is the lanes that
// are, which diverged code changes): __kmpc_syncwarp orders the caller's
// memory accesses and waits for no lane. clang's GPU code for a critical
// region, which takes a warp's lanes one at a time with it, still takes a
// libomp lock in each turn.
OMPSIM_DEVICE_API void __kmpc_syncwarp(uint64_t) { std::atomic_thread_fence(std::memory_order_seq_cst); }

// Barriers. In a team's sequential part (outside its parallel regions) the
// team is one thread here, so a barrier there has nobody to wait for: an
// SPMDized kernel's sequential code runs on that thread alone, guarded for
// thread 0, with barriers between its steps. libomp's barrier at that level
// would wait for the team's idle pool of threads and never return.
OMPSIM_DEVICE_API void __ompsim_gpu_barrier(void *Loc, int32_t) {
  if (__ompsim_device_in_team_region())
    return;
  const Libomp &Omp = Libomp::get();
  Omp.Barrier(Loc ? static_cast<Ident *>(Loc) : runtimeIdent(), Omp.GlobalThreadNum(runtimeIdent()));
}

OMPSIM_DEVICE_API void __kmpc_barrier_simple_spmd(void *, int32_t Gtid) {
  __ompsim_gpu_barrier(nullptr, Gtid);
}

OMPSIM_DEVICE_API void __kmpc_barrier_simple_generic(void *Loc, int32_t Gtid) {
  __kmpc_barrier_simple_spmd(Loc, Gtid);
}

// The generic-mode state machine's worker side: a team's threads here are
// libomp's, which __kmpc_parallel_60 hands each region to, so a worker that
// asks for work is told that the kernel is done.
OMPSIM_DEVICE_API bool __kmpc_kernel_parallel(void **WorkFn) {
  *WorkFn = nullptr;
  return false;
}
OMPSIM_DEVICE_API void __kmpc_kernel_end_parallel() {}

// Reductions. The compiler's shuffle-and-reduce function combines a lane's
// values with those a shuffle brings from the lane `Offset` above it. Each
// thread of the team but thread 0 runs it as a lane that only copies what
// it is given (its own values back, recorded on its tape); thread 0 then
// runs it once per other thread as the lane that combines, the shuffles
// replaying that thread's tape. Thread 0 ends with the team's result, as on
// a GPU; no barrier of the team's threads is needed.
OMPSIM_DEVICE_API int32_t __kmpc_shuffle_int32(int32_t Value, int16_t, int16_t) {
  return int32_t(uint32_t(shuffle("__kmpc_shuffle_int32", uint32_t(Value))));
}

OMPSIM_DEVICE_API int64_t __kmpc_shuffle_int64(int64_t Value, int16_t, int16_t) {
  return int64_t(shuffle("__kmpc_shuffle_int64", uint64_t(Value)));
}

OMPSIM_DEVICE_API uint32_t __kmpc_get_warp_size() {
  int Threads = Libomp::get().GetNumThreads();
  return uint32_t(Threads > 0 ? Threads : 1);
}

OMPSIM_DEVICE_API int32_t __kmpc_nvptx_parallel_reduce_nowait_v2(void *, uint64_t, void *ReduceData,
                                                                 ShuffleReduceFn ShuffleReduce, void *) {
  const Libomp &Omp = Libomp::get();
  int Threads = Omp.GetNumThreads();
  if (Threads <= 1)
    return 1; // the thread's values are the team's
  if (uint32_t(Threads) > kMaxLanes)
    fail("__kmpc_nvptx_parallel_reduce_nowait_v2", "more than 4096 threads in a team");
  KernelLaunch &L = launchOf("__kmpc_nvptx_parallel_reduce_nowait_v2");
  auto *Team =
      static_cast<TeamReduction *>(teamEntry(L, L.TeamReductions, L.TeamReductionsCount, []() -> void * {
        void *Mem = std::calloc(1, sizeof(TeamReduction));
        return Mem ? new (Mem) TeamReduction() : nullptr;
      }));
  if (!Team)
    fail("__kmpc_nvptx_parallel_reduce_nowait_v2", "cannot allocate the team's reduction");
  auto Tid = uint32_t(Omp.GetThreadNum());
  if (Tid != 0) {
    uint32_t Round = Team->Finished.load(std::memory_order_acquire);
    ShuffleTape &Mine = Team->Tapes[Tid];
    Mine.Count = 0;
    Mine.Replay = false;
    TTape = &Mine;
    ShuffleReduce(ReduceData, /*LaneId=*/1, /*Offset=*/1, /*AlgoVersion=*/1);
    TTape = nullptr;
    Team->Recorded.fetch_add(1, std::memory_order_release);
    // The tape is read until thread 0 is done with this reduction.
    while (Team->Finished.load(std::memory_order_acquire) == Round)
      sched_yield();
    return 0;
  }
  while (Team->Recorded.load(std::memory_order_acquire) != uint32_t(Threads - 1))
    sched_yield();
  for (uint32_t T = 1; T < uint32_t(Threads); ++T) {
    ShuffleTape &Theirs = Team->Tapes[T];
    Theirs.Replay = true;
    Theirs.Cursor = 0;
    TTape = &Theirs;
    ShuffleReduce(ReduceData, /*LaneId=*/0, /*Offset=*/1, /*AlgoVersion=*/1);
  }
  TTape = nullptr;
  Team->Recorded.store(0, std::memory_order_relaxed);
  Team->Finished.fetch_add(1, std::memory_order_release);
  return 1;
}

OMPSIM_DEVICE_API void *__kmpc_reduction_get_fixed_buffer() {
  KernelLaunch &L = launchOf("__kmpc_reduction_get_fixed_buffer");
  pthread_mutex_lock(&L.SharedLock);
  if (!L.ReductionBuffer)
    L.ReductionBuffer = std::calloc(1, L.ReductionBufferBytes ? L.ReductionBufferBytes : 16);
  void *Buffer = L.ReductionBuffer;
  pthread_mutex_unlock(&L.SharedLock);
  if (!Buffer)
    fail("__kmpc_reduction_get_fixed_buffer", "cannot allocate the reduction buffer");
  return Buffer;
}

// Across teams: each team's initial thread brings the team's values into
// the buffer's first record (the first copies, the others reduce into it);
// the last team takes the total back and returns 1, as on a GPU.
OMPSIM_DEVICE_API int32_t __kmpc_nvptx_teams_reduce_nowait_v2(void *, void *Buffer, uint32_t Records,
                                                              uint64_t, void *ReduceData, ShuffleReduceFn,
                                                              void *, ListGlobalFn ListToGlobalCopy,
                                                              ListGlobalFn ListToGlobalReduce,
                                                              ListGlobalFn GlobalToListCopy, ListGlobalFn) {
  const Libomp &Omp = Libomp::get();
  if (Omp.GetThreadNum() != 0)
    return 0;
  int Teams = Omp.GetNumTeams();
  if (Teams <= 1)
    return 1;
  if (!Buffer || Records == 0)
    fail("__kmpc_nvptx_teams_reduce_nowait_v2", "no reduction buffer");
  KernelLaunch &L = launchOf("__kmpc_nvptx_teams_reduce_nowait_v2");
  pthread_mutex_lock(&L.SharedLock);
  if (L.TeamsReduced == 0)
    ListToGlobalCopy(Buffer, 0, ReduceData);
  else
    ListToGlobalReduce(Buffer, 0, ReduceData);
  bool Last = ++L.TeamsReduced == uint32_t(Teams);
  if (Last) {
    GlobalToListCopy(Buffer, 0, ReduceData);
    L.TeamsReduced = 0;
  }
  pthread_mutex_unlock(&L.SharedLock);
  return Last;
}

OMPSIM_DEVICE_API void *__ompsim_gpu_team_shared(uint64_t Bytes) {
  if (void *Block = ompsim::vgpu::blockShared(Bytes))
    return Block; // a bare kernel's block
  KernelLaunch &L = launchOf("__ompsim_gpu_team_shared");
  void *Block = teamEntry(L, L.TeamShared, L.TeamSharedCount, [Bytes] { return newTeamBlock(Bytes); });
  if (!Block)
    fail("__ompsim_gpu_team_shared", "cannot allocate the team's shared memory");
  return Block;
}

// llvm_omp_target_dynamic_shared_alloc() in a GPU image: the block's
// dynamic shared memory (the launch's ompx_dyn_cgroup_mem and
// LIBOMPTARGET_SHARED_MEMORY_SIZE), null when the launch has none.
OMPSIM_DEVICE_API void *__ompsim_gpu_dynamic_shared(void) {
  bool InBare = false;
  void *Block = ompsim::vgpu::blockDynamicShared(InBare);
  if (InBare)
    return Block;
  KernelLaunch &L = launchOf("llvm_omp_target_dynamic_shared_alloc");
  uint64_t Bytes = L.Request->dynamic_shared_bytes;
  if (!Bytes)
    return nullptr;
  Block = teamEntry(L, L.DynamicShared, L.DynamicSharedCount, [Bytes] { return newTeamBlock(Bytes); });
  if (!Block)
    fail("llvm_omp_target_dynamic_shared_alloc", "cannot allocate the team's dynamic shared memory");
  return Block;
}

// What omp_is_initial_device() answers in a GPU image (a host-offload
// image's own copy answers the same: gpu-abi/DeviceApi.cpp).
OMPSIM_DEVICE_API int __ompsim_gpu_is_initial_device(void) { return 0; }

// nvptx's printf: the format and a buffer of the arguments, each at its
// alignment (a float promoted to double); the same output as printf's, in
// one write.
OMPSIM_DEVICE_API int32_t __ompsim_gpu_vprintf(const char *Format, const char *Args) {
  char *Text = nullptr;
  size_t Length = 0;
  std::FILE *Out = ::open_memstream(&Text, &Length);
  if (!Out)
    fail("printf", "cannot format the output");
  const char *Cursor = Args;
  char Spec[64];
  for (const char *P = Format; *P;) {
    Conversion C;
    if (*P != '%' || !parseConversion(P + 1, C) || C.Length + 2 > sizeof(Spec)) {
      std::fputc(*P++, Out); // text, or not a conversion printf knows: as it is
      continue;
    }
    std::memcpy(Spec, P, C.Length + 1);
    Spec[C.Length + 1] = 0;
    P += C.Length + 1;
    if (C.Bytes == 0) {
      std::fputc('%', Out);
      continue;
    }
    int Star[2] = {0, 0}, Stars = 0;
    if (C.Star1)
      Star[Stars++] = int(int32_t(take(Cursor, 4)));
    if (C.Star2)
      Star[Stars++] = int(int32_t(take(Cursor, 4)));
    uint64_t Raw = take(Cursor, C.Bytes);
    auto Print = [&](auto Value) {
      if (Stars == 2)
        std::fprintf(Out, Spec, Star[0], Star[1], Value);
      else if (Stars == 1)
        std::fprintf(Out, Spec, Star[0], Value);
      else
        std::fprintf(Out, Spec, Value);
    };
    if (C.Floating) {
      double D;
      std::memcpy(&D, &Raw, sizeof(D));
      Print(D);
    } else if (C.String) {
      Print(Raw ? reinterpret_cast<const char *>(Raw) : "(null)");
    } else if (C.Bytes == 8) {
      Print(static_cast<unsigned long long>(Raw)); // a 64-bit integer or a pointer
    } else {
      Print(static_cast<uint32_t>(Raw));
    }
  }
  std::fclose(Out);
  std::fwrite(Text, 1, Length, stdout);
  std::free(Text);
  return int32_t(Length);
}

// A generic-mode kernel's parallel region has a wrapper that a GPU's worker
// threads call, which fetches the region's arguments here. __kmpc_parallel_60
// calls the region itself on libomp's threads, never the wrapper.
OMPSIM_DEVICE_API void __kmpc_get_shared_variables(void ***) {
  fail("__kmpc_get_shared_variables", "a parallel region's wrapper ran outside __kmpc_parallel_60");
}

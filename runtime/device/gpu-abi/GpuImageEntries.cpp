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
#include "KernelLaunchState.h"
#include "Libomp.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

namespace ompsim::device {

KernelLaunch::~KernelLaunch() {
  for (uint32_t T = 0; T < TeamSharedCount; ++T)
    std::free(TeamShared[T]);
  std::free(TeamShared);
}

namespace {

[[noreturn]] void fail(const char *Entry, const char *Message) {
  std::fprintf(stderr, "ompsim: device runtime: %s: %s\n", Entry, Message);
  std::fflush(stderr);
  std::_Exit(1);
}

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

OMPSIM_DEVICE_API uint32_t __kmpc_get_hardware_thread_id_in_block() {
  return uint32_t(Libomp::get().GetThreadNum());
}

OMPSIM_DEVICE_API uint32_t __kmpc_get_hardware_num_threads_in_block() {
  return uint32_t(Libomp::get().GetNumThreads());
}

OMPSIM_DEVICE_API void __kmpc_barrier_simple_spmd(void *, int32_t) {
  const Libomp &Omp = Libomp::get();
  Omp.Barrier(runtimeIdent(), Omp.GlobalThreadNum(runtimeIdent()));
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

OMPSIM_DEVICE_API void *__ompsim_gpu_team_shared(uint64_t Bytes) {
  ThreadPlace &Place = currentPlace();
  if (!Place.Launch)
    fail("__ompsim_gpu_team_shared", "team-shared memory used outside a kernel launch");
  KernelLaunch &L = *Place.Launch;
  uint32_t Team = Place.TeamNum, Teams = Place.NumTeams ? Place.NumTeams : 1;
  pthread_mutex_lock(&L.SharedLock);
  // The kernel's own entry asks before its teams exist (one team then).
  if (Teams > L.TeamSharedCount) {
    if (auto *Grown = static_cast<void **>(std::realloc(L.TeamShared, Teams * sizeof(void *)))) {
      for (uint32_t T = L.TeamSharedCount; T < Teams; ++T)
        Grown[T] = nullptr;
      L.TeamShared = Grown;
      L.TeamSharedCount = Teams;
    }
  }
  void *Block = nullptr;
  if (Team < L.TeamSharedCount) {
    if (!L.TeamShared[Team]) {
      uint64_t Size = (Bytes + 15) & ~uint64_t(15);
      if (void *New = std::aligned_alloc(16, Size ? Size : 16)) {
        std::memset(New, 0, Size);
        L.TeamShared[Team] = New;
      }
    }
    Block = L.TeamShared[Team];
  }
  pthread_mutex_unlock(&L.SharedLock);
  if (!Block)
    fail("__ompsim_gpu_team_shared", "cannot allocate the team's shared memory");
  return Block;
}

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

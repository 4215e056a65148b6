//===- Workshare.cpp - worksharing and distribute loops -------------------===//
//
// Static schedules split a loop's iterations over the threads of the
// parallel team (`for`) or over the teams of the league (`distribute`):
// unchunked, each gets one contiguous block (the first Trip % N one more);
// chunked, chunks go round-robin. Dynamic, guided, runtime and auto
// schedules hand thread Id the chunks Id, Id + N, Id + 2N, ...: a valid
// assignment under OpenMP's rules, needs no team-wide counter, and is the
// same on every run.
//
//===----------------------------------------------------------------------===//

#include "State.h"
#include "StaticSchedule.h"

using namespace ompsim::gpu;

#define OMPSIM_GPU_API extern "C" __attribute__((used, retain))

namespace {

template <typename T, typename ST> void dispatchInit(int32_t Sched, T Lower, T Upper, ST Incr, ST Chunk) {
  DispatchState &D = thread().Dispatch;
  D.Lower = int64_t(Lower);
  D.Stride = int64_t(Incr);
  D.Trip = tripCount<T, ST>(Lower, Upper, Incr);
  D.Threads = numThreads();
  int32_t Base = Sched & ~int32_t(ScheduleModifierMask);
  if (Base >= ScheduleOrderedOffset + ScheduleStaticChunked && Base <= ScheduleOrderedOffset + ScheduleAuto)
    Base -= ScheduleOrderedOffset;
  if (Base == ScheduleStatic || Base == ScheduleAuto)
    D.Chunk = (D.Trip + D.Threads - 1) / D.Threads;
  else
    D.Chunk = Chunk < 1 ? 1 : uint64_t(Chunk);
  if (D.Chunk == 0)
    D.Chunk = 1;
  D.NextChunk = threadNum();
}

template <typename T, typename ST> int32_t dispatchNext(int32_t *Last, T *Lower, T *Upper, ST *Stride) {
  DispatchState &D = thread().Dispatch;
  uint64_t First = D.NextChunk * D.Chunk;
  if (First >= D.Trip)
    return 0;
  uint64_t Count = D.Trip - First < D.Chunk ? D.Trip - First : D.Chunk;
  *Lower = T(D.Lower + int64_t(First) * D.Stride);
  *Upper = T(D.Lower + int64_t(First + Count - 1) * D.Stride);
  *Stride = ST(D.Stride);
  if (Last)
    *Last = First + Count == D.Trip;
  D.NextChunk += D.Threads;
  return 1;
}

} // namespace

#define OMPSIM_STATIC_INIT(Suffix, T, ST)                                                                    \
  OMPSIM_GPU_API void __kmpc_for_static_init_##Suffix(IdentTy *, int32_t, int32_t Sched, int32_t *Last,      \
                                                      T *Lower, T *Upper, ST *Stride, ST Incr, ST Chunk) {   \
    staticInit<T, ST>(Sched, Last, Lower, Upper, Stride, Incr, Chunk, threadNum(), numThreads());            \
  }                                                                                                          \
  OMPSIM_GPU_API void __kmpc_distribute_static_init_##Suffix(                                                \
      IdentTy *, int32_t, int32_t Sched, int32_t *Last, T *Lower, T *Upper, ST *Stride, ST Incr, ST Chunk) { \
    staticInit<T, ST>(Sched, Last, Lower, Upper, Stride, Incr, Chunk, hw::blockId(0), hw::gridDim(0));       \
  }                                                                                                          \
  OMPSIM_GPU_API void __kmpc_dispatch_init_##Suffix(IdentTy *, int32_t, int32_t Sched, T Lower, T Upper,     \
                                                    ST Incr, ST Chunk) {                                     \
    dispatchInit<T, ST>(Sched, Lower, Upper, Incr, Chunk);                                                   \
  }                                                                                                          \
  OMPSIM_GPU_API int32_t __kmpc_dispatch_next_##Suffix(IdentTy *, int32_t, int32_t *Last, T *Lower,          \
                                                       T *Upper, ST *Stride) {                               \
    return dispatchNext<T, ST>(Last, Lower, Upper, Stride);                                                  \
  }                                                                                                          \
  OMPSIM_GPU_API void __kmpc_dispatch_fini_##Suffix(IdentTy *, int32_t) {}

OMPSIM_STATIC_INIT(4, int32_t, int32_t)
OMPSIM_STATIC_INIT(4u, uint32_t, int32_t)
OMPSIM_STATIC_INIT(8, int64_t, int64_t)
OMPSIM_STATIC_INIT(8u, uint64_t, int64_t)

OMPSIM_GPU_API void __kmpc_for_static_fini(IdentTy *, int32_t) {}
OMPSIM_GPU_API void __kmpc_distribute_static_fini(IdentTy *, int32_t) {}
OMPSIM_GPU_API void __kmpc_dispatch_deinit(IdentTy *, int32_t) {}

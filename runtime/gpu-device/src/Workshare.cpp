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

/// The `*_static_loop` entries (OpenMPIRBuilder's, which flang-22 emits):
/// the runtime calls the loop's body for each of the caller's iterations of
/// [0, NumIters). Within a team, thread T takes the chunks of `ThreadChunk`
/// iterations (1 when 0) T, T + N, ... of its share; across teams, block B
/// the chunks of `BlockChunk` iterations B, B + M, ... (for `distribute`
/// alone, one contiguous piece per block when 0; under a parallel loop,
/// one chunk for each of the team's threads when 0).
template <typename T> using LoopBody = void (*)(T, void *);

template <typename T> void runChunks(LoopBody<T> Body, void *Arg, T Begin, T End, T Chunk, T First, T Step) {
  for (T Start = Begin + First * Chunk; Start < End; Start += Step * Chunk) {
    T Stop = End - Start < Chunk ? End : Start + Chunk;
    for (T I = Start; I < Stop; ++I)
      Body(I, Arg);
    if (End - Start <= Step * Chunk)
      break; // the next chunk would wrap around
  }
}

template <typename T> T teamThreads(T NumThreads) {
  return NumThreads > 0 && NumThreads < T(numThreads()) ? NumThreads : T(numThreads());
}

template <typename T>
void forStaticLoop(LoopBody<T> Body, void *Arg, T NumIters, T NumThreads, T ThreadChunk) {
  runChunks<T>(Body, Arg, 0, NumIters, ThreadChunk ? ThreadChunk : 1, T(threadNum()),
               teamThreads(NumThreads));
}

template <typename T> void distributeStaticLoop(LoopBody<T> Body, void *Arg, T NumIters, T BlockChunk) {
  T Blocks = T(hw::gridDim(0));
  T Chunk = BlockChunk ? BlockChunk : (NumIters + Blocks - 1) / Blocks;
  runChunks<T>(Body, Arg, 0, NumIters, Chunk ? Chunk : 1, T(hw::blockId(0)), Blocks);
}

template <typename T>
void distributeForStaticLoop(LoopBody<T> Body, void *Arg, T NumIters, T NumThreads, T BlockChunk,
                             T ThreadChunk) {
  T Threads = teamThreads(NumThreads), Blocks = T(hw::gridDim(0));
  T PerThread = ThreadChunk ? ThreadChunk : 1;
  T PerBlock = BlockChunk ? BlockChunk : PerThread * Threads;
  T Tid = T(threadNum());
  for (T Begin = T(hw::blockId(0)) * PerBlock; Begin < NumIters; Begin += Blocks * PerBlock) {
    T End = NumIters - Begin < PerBlock ? NumIters : Begin + PerBlock;
    runChunks<T>(Body, Arg, Begin, End, PerThread, Tid, Threads);
    if (NumIters - Begin <= Blocks * PerBlock)
      break;
  }
}

} // namespace

#define OMPSIM_STATIC_LOOP(Suffix, T)                                                                        \
  OMPSIM_GPU_API void __kmpc_for_static_loop_##Suffix(IdentTy *, LoopBody<T> Body, void *Arg, T NumIters,    \
                                                      T NumThreads, T ThreadChunk, uint8_t) {                \
    forStaticLoop<T>(Body, Arg, NumIters, NumThreads, ThreadChunk);                                          \
  }                                                                                                          \
  OMPSIM_GPU_API void __kmpc_distribute_static_loop_##Suffix(IdentTy *, LoopBody<T> Body, void *Arg,         \
                                                             T NumIters, T BlockChunk, uint8_t) {            \
    distributeStaticLoop<T>(Body, Arg, NumIters, BlockChunk);                                                \
  }                                                                                                          \
  OMPSIM_GPU_API void __kmpc_distribute_for_static_loop_##Suffix(IdentTy *, LoopBody<T> Body, void *Arg,     \
                                                                 T NumIters, T NumThreads, T BlockChunk,     \
                                                                 T ThreadChunk, uint8_t) {                   \
    distributeForStaticLoop<T>(Body, Arg, NumIters, NumThreads, BlockChunk, ThreadChunk);                    \
  }

OMPSIM_STATIC_LOOP(4, int32_t)
OMPSIM_STATIC_LOOP(4u, uint32_t)
OMPSIM_STATIC_LOOP(8, int64_t)
OMPSIM_STATIC_LOOP(8u, uint64_t)
#undef OMPSIM_STATIC_LOOP

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

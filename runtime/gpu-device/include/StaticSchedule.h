//===- StaticSchedule.h - a static loop schedule's share of one thread ---===//
//
// What __kmpc_for_static_init_* and __kmpc_distribute_static_init_* answer
// a thread (or team) `Id` of `N`: unchunked, one contiguous block (the first
// Trip % N get one iteration more); chunked, chunks of `Chunk` round-robin,
// with the stride to the thread's next chunk. clang's GPU codegen relies on
// the chunked answer exactly: with chunk 1 it runs one iteration per chunk.
//
// Plain C++ over Abi.h: the GPU device runtime and the simulated device's
// executor (which serves GPU images' loops) share it.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_GPUDEVICE_STATICSCHEDULE_H
#define OMPSIM_GPUDEVICE_STATICSCHEDULE_H

#include "Abi.h"

namespace ompsim::gpu {

inline bool isChunked(int32_t Sched) {
  int32_t Base = Sched & ~int32_t(ScheduleModifierMask);
  return Base == ScheduleStaticChunked || Base == ScheduleDistributeStaticChunked ||
         Base == ScheduleStaticBalancedChunked || Base == ScheduleStaticChunked + ScheduleOrderedOffset;
}

/// Iterations of Lower..Upper by Incr (0 if none).
template <typename T, typename ST> inline uint64_t tripCount(T Lower, T Upper, ST Incr) {
  if (Incr > 0)
    return Upper < Lower ? 0 : (uint64_t(Upper) - uint64_t(Lower)) / uint64_t(Incr) + 1;
  if (Incr < 0)
    return Lower < Upper ? 0 : (uint64_t(Lower) - uint64_t(Upper)) / (uint64_t(0) - uint64_t(Incr)) + 1;
  return 0;
}

template <typename T, typename ST>
inline void staticInit(int32_t Sched, int32_t *Last, T *Lower, T *Upper, ST *Stride, ST Incr, ST Chunk,
                       uint64_t Id, uint64_t N) {
  T Lb = *Lower;
  uint64_t Trip = tripCount<T, ST>(Lb, *Upper, Incr);
  if (N == 0)
    N = 1;
  if (Trip == 0) {
    *Last = 0;
    *Stride = Incr;
    return;
  }
  if (isChunked(Sched)) {
    uint64_t C = Chunk < 1 ? 1 : uint64_t(Chunk);
    *Lower = T(Lb + T(Id * C) * T(Incr));
    *Upper = T(*Lower + T(C - 1) * T(Incr));
    *Stride = ST(N * C) * Incr;
    *Last = ((Trip - 1) / C) % N == Id;
    return;
  }
  uint64_t Per = Trip / N, Extra = Trip % N;
  uint64_t Begin = Id * Per + (Id < Extra ? Id : Extra);
  uint64_t Count = Per + (Id < Extra ? 1 : 0);
  *Lower = T(Lb + T(Begin) * T(Incr));
  if (Count == 0)
    *Upper = T(*Lower - T(Incr));
  else
    *Upper = T(*Lower + T(Count - 1) * T(Incr));
  *Stride = ST(Trip) * Incr;
  *Last = Count != 0 && Begin + Count == Trip;
}

} // namespace ompsim::gpu

#endif // OMPSIM_GPUDEVICE_STATICSCHEDULE_H

//===- DeviceParallelism.cpp - parallel regions of GPU-ABI device code ----===//
//
// __kmpc_parallel_60 (LLVM 22's DeviceRTL, Parallelism.cpp): `fn` is an
// outlined region `void fn(int32_t *tid, int32_t *bound_tid, void *arg0,
// ..., void *argN-1)` over `args[0..nargs)`. A GPU runs it on the block's
// threads; here it is a libomp parallel region of the team's thread, so the
// reductions, barriers and thread queries flang emits into libomp work on
// it. `tid` is libomp's global thread id, which those libomp calls expect.
//
//===----------------------------------------------------------------------===//
#include "../DeviceStop.h"
#include "../libomp/Libomp.h"
#include "KernelLaunchState.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <utility>

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

namespace ompsim::device {
namespace {

/// DeviceRTL unwraps at most 32 arguments too.
constexpr int64_t kMaxRegionArgs = 32;

using AnyRegionFn = void (*)();

template <size_t... I>
void invokeWith(AnyRegionFn Fn, int32_t *Tid, int32_t *Bound, void **Args, std::index_sequence<I...>) {
  using Fn_t = void (*)(int32_t *, int32_t *, decltype((void)I, (void *)nullptr)...);
  reinterpret_cast<Fn_t>(Fn)(Tid, Bound, Args[I]...);
}

using Invoker = void (*)(AnyRegionFn, int32_t *, int32_t *, void **);

template <size_t N> void invokeN(AnyRegionFn Fn, int32_t *Tid, int32_t *Bound, void **Args) {
  invokeWith(Fn, Tid, Bound, Args, std::make_index_sequence<N>{});
}

template <size_t... N> constexpr auto makeInvokers(std::index_sequence<N...>) {
  return std::array<Invoker, sizeof...(N)>{&invokeN<N>...};
}

void invokeRegion(void *Fn, int32_t *Tid, int32_t *Bound, void **Args, int64_t NumArgs) {
  static constexpr auto Invokers = makeInvokers(std::make_index_sequence<kMaxRegionArgs + 1>{});
  if (NumArgs < 0 || NumArgs > kMaxRegionArgs) {
    stopDevice("a parallel region with %lld arguments (at most %lld)", static_cast<long long>(NumArgs),
               static_cast<long long>(kMaxRegionArgs));
  }
  Invokers[size_t(NumArgs)](reinterpret_cast<AnyRegionFn>(Fn), Tid, Bound, Args);
}

struct Region {
  void *Fn;
  void **Args;
  int64_t NumArgs;
  ThreadPlace Place; ///< the forking thread's: its team and launch
};

/// Runs on every thread of the region: takes the team's place, then `fn`.
void regionMicrotask(int32_t *Tid, int32_t *Bound, Region *R) {
  ScopedPlace Scope(R->Place);
  invokeRegion(R->Fn, Tid, Bound, R->Args, R->NumArgs);
}

void parallel(Ident *Loc, int32_t Gtid, int32_t IfExpr, int32_t NumThreads, void *Fn, void **Args,
              int64_t NumArgs) {
  const Libomp &Omp = Libomp::get();
  if (!Loc)
    Loc = runtimeIdent();
  // libomp's own number of this thread, whatever the caller passed: on a GPU
  // the argument is the thread's id in its block, and a libomp call with a
  // number before libomp has started spins forever on libomp's start-up lock
  // (__kmpc_global_thread_num starts it).
  Gtid = Omp.GlobalThreadNum(Loc);
  if (!IfExpr) {
    Omp.SerializedParallel(Loc, Gtid);
    ThreadPlace Place = currentPlace();
    Place.InParallel = true;
    ScopedPlace Scope(Place);
    int32_t Zero = 0;
    invokeRegion(Fn, &Gtid, &Zero, Args, NumArgs);
    Omp.EndSerializedParallel(Loc, Gtid);
    return;
  }
  // An SPMD kernel's thread of a GPU image: the block's threads are the
  // region's, each already here; the region runs on this one, as thread
  // number its number in the block (those past a num_threads clause skip it).
  // A region nested in it forks as any other.
  if (currentPlace().SpmdThread) {
    int32_t Tid = Omp.GetThreadNum();
    if (NumThreads > 0 && Tid >= NumThreads)
      return;
    ThreadPlace Place = currentPlace();
    Place.SpmdThread = false;
    ScopedPlace Scope(Place);
    invokeRegion(Fn, &Gtid, &Tid, Args, NumArgs);
    return;
  }
  if (NumThreads > 0)
    Omp.PushNumThreads(Loc, Gtid, NumThreads);
  Region R{Fn, Args, NumArgs, currentPlace()};
  R.Place.InParallel = true;
  Omp.ForkCall(Loc, 1, reinterpret_cast<Microtask>(&regionMicrotask), &R);
}

} // namespace
} // namespace ompsim::device

using namespace ompsim::device;

// proc_bind is not honoured (no binding on a simulated device); `strict`
// (OpenMP 6.0 num_threads(strict:)) needs nothing more: libomp gives the
// requested threads up to the team's thread limit.
OMPSIM_DEVICE_API void __kmpc_parallel_60(Ident *Loc, int32_t Gtid, int32_t IfExpr, int32_t NumThreads,
                                          int32_t /*ProcBind*/, void *Fn, void * /*WrapperFn*/, void **Args,
                                          int64_t NumArgs, int32_t /*Strict*/) {
  parallel(Loc, Gtid, IfExpr, NumThreads, Fn, Args, NumArgs);
}

OMPSIM_DEVICE_API void __kmpc_parallel_51(Ident *Loc, int32_t Gtid, int32_t IfExpr, int32_t NumThreads,
                                          int32_t /*ProcBind*/, void *Fn, void * /*WrapperFn*/, void **Args,
                                          int64_t NumArgs) {
  parallel(Loc, Gtid, IfExpr, NumThreads, Fn, Args, NumArgs);
}

//===- Libomp.h - the libomp entry points the device runtime forks with --===//
//
// flang-22's device code mixes two runtimes: the GPU device-runtime ABI
// (__kmpc_target_init, __kmpc_parallel_60, the static loop entry points),
// which libompsim-device provides, and libomp's host ABI (__kmpc_reduce,
// __kmpc_barrier, __kmpc_global_thread_num, omp_get_thread_num), which it
// calls straight into libomp. Teams and parallel regions are therefore
// libomp's own teams and threads, so both halves see one team structure.
// The virtual GPU (vgpu/) runs a grid's blocks on libomp's teams too.
//
// libomp is looked up at run time rather than linked: every image that uses
// the GPU ABI needs libomp and loads it, and the device runtime is loaded into
// executors whose images may never need it.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_LIBOMP_LIBOMP_H
#define OMPSIM_DEVICE_LIBOMP_LIBOMP_H

#include <cstddef>
#include <cstdint>

namespace ompsim::device {

/// libomp's source-location descriptor (kmp.h's ident_t); flang's device
/// code passes ones of this layout.
struct Ident {
  int32_t Reserved1;
  int32_t Flags;
  int32_t Reserved2;
  int32_t Reserved3;
  const char *Source;
};

/// libomp's outlined-region signature; the variadic tail is pointers.
using Microtask = void (*)(int32_t *GlobalTid, int32_t *BoundTid, ...);

/// The libomp functions the device runtime calls, resolved once.
struct Libomp {
  int32_t (*GlobalThreadNum)(Ident *);
  void (*PushNumTeams)(Ident *, int32_t, int32_t, int32_t);
  void (*ForkTeams)(Ident *, int32_t, Microtask, ...);
  void (*PushNumThreads)(Ident *, int32_t, int32_t);
  void (*ForkCall)(Ident *, int32_t, Microtask, ...);
  void (*SerializedParallel)(Ident *, int32_t);
  void (*EndSerializedParallel)(Ident *, int32_t);
  int (*GetTeamNum)();
  int (*GetNumTeams)();
  int (*GetThreadNum)();
  int (*GetThreadLimit)();
  // What the ompx kernel-language API (ompx/) reads and syncs with.
  int (*GetLevel)();
  int (*GetNumThreads)();
  int (*GetAncestorThreadNum)(int);
  int (*GetTeamSize)(int);
  void (*Barrier)(Ident *, int32_t);
  int32_t (*Single)(Ident *, int32_t);
  void (*EndSingle)(Ident *, int32_t);
  void (*CopyPrivate)(Ident *, int32_t, size_t, void *, void (*)(void *, void *), int32_t);

  /// The resolved entry points; prints one line naming the missing function
  /// and exits the process with status 1 when libomp is not loaded (device
  /// code without libomp cannot run a team, nor ask for its place in one).
  static const Libomp &get();
};

/// A location for the runtime's own libomp calls.
Ident *runtimeIdent();

} // namespace ompsim::device

#endif // OMPSIM_DEVICE_LIBOMP_LIBOMP_H

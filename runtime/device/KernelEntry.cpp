// The kernel prologue and epilogue of GPU-style device code, for kernels run
// by host-offload plugins (see ompsim/device_runtime.h).
//
// flang-22 lowers every target region, whatever the offload target, to a
// kernel that opens with `if (__kmpc_target_init(env, launch_env) == -1)
// { user code; __kmpc_target_deinit(); }`. On a GPU the call sorts the
// block's threads into the main thread and workers; a host-offload kernel is
// one call on one thread, which is the main thread.
#include "ompsim/device_runtime.h"

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

OMPSIM_DEVICE_API int32_t __kmpc_target_init(void *, void *) { return -1; }

OMPSIM_DEVICE_API void __kmpc_target_deinit(void) {}

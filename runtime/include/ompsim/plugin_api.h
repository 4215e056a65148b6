/* ompsim: the plugin C ABI.
 *
 * A plugin is a shared library exporting the functions below. The runtime
 * dlopens every plugin named in OMPSIM_PLUGINS, calls
 * __tgt_rtl_plugin_api_version() before anything else, then resolves the
 * required set (a missing one is reported by name and the plugin is
 * rejected) and the optional set. Device ids passed to a plugin are local to
 * it (0 .. __tgt_rtl_number_of_devices()-1); the runtime numbers devices
 * across plugins in load order.
 *
 * Every function returns OMPSIM_OFFLOAD_SUCCESS (0) or OMPSIM_OFFLOAD_FAIL
 * unless stated. After a failure the plugin's
 * __tgt_rtl_last_error(device_id) describes it in one line that names the
 * object and the problem; the runtime prints it prefixed by "ompsim: ".
 *
 * A third party can implement a plugin against this header and
 * offload_abi.h alone.
 */
#ifndef OMPSIM_PLUGIN_API_H
#define OMPSIM_PLUGIN_API_H

#include "ompsim/offload_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The version a plugin built against this header reports. */
#define OMPSIM_PLUGIN_API_VERSION 1

/** Opaque handle to an image loaded on one device. */
typedef struct ompsim_binary *ompsim_binary_handle;

/** Launch parameters of one target region. Zeros mean "implementation
 * default". `kernel_name` is the entry's symbol name, for diagnostics. */
typedef struct ompsim_launch_config {
  uint32_t num_teams;
  uint32_t thread_limit;
  uint64_t tripcount;
  const char *kernel_name;
  /** The y and z extents of `num_teams(x, y, z)` and `thread_limit(x, y, z)`
   * (0: 1). The runtime passes them only for a kernel whose execution mode
   * is bare (__tgt_rtl_kernel_exec_mode); it refuses other such launches. */
  uint32_t num_teams_yz[2];
  uint32_t thread_limit_yz[2];
  /** Bytes of dynamic shared memory each team asks for
   * (`ompx_dyn_cgroup_mem(N)`, KernelArgs' DynCGroupMem); a GPU plugin adds
   * LIBOMPTARGET_SHARED_MEMORY_SIZE. */
  uint32_t dyn_cgroup_mem;
} ompsim_launch_config;

/** Kinds of device allocation (mirrors TARGET_ALLOC_*). */
enum {
  OMPSIM_ALLOC_DEFAULT = 0,
  OMPSIM_ALLOC_HOST = 1,
  OMPSIM_ALLOC_SHARED = 2,
  OMPSIM_ALLOC_DEVICE = 3,
};

/* ---- required ---------------------------------------------------------- */

/** Returns OMPSIM_PLUGIN_API_VERSION the plugin was built with. */
int32_t __tgt_rtl_plugin_api_version(void);

/** Short backend name ("sim", "host"), for messages and traces. */
const char *__tgt_rtl_plugin_name(void);

/** Returns 1 if this plugin can load `image`, 0 otherwise (the reason goes
 * to the trace, category image). Must not modify the image. */
int32_t __tgt_rtl_is_valid_binary(const __tgt_device_image *image);

/** Number of devices this plugin drives; 0 when it cannot run here. */
int32_t __tgt_rtl_number_of_devices(void);

/** Brings device `device_id` up; called once before any other per-device call. */
int32_t __tgt_rtl_init_device(int32_t device_id);

/** Loads `image` on the device and returns a handle to it in `*binary`. */
int32_t __tgt_rtl_load_binary(int32_t device_id, const __tgt_device_image *image,
                              ompsim_binary_handle *binary);

/** Finds a global (or an indirect function's address global) in a loaded
 * binary; `*tgt_ptr` receives its device address. `size` is the size the
 * entry announced (0 = unknown). Fails naming the symbol when absent. */
int32_t __tgt_rtl_get_global(int32_t device_id, ompsim_binary_handle binary, uint64_t size, const char *name,
                             void **tgt_ptr);

/** Finds a kernel in a loaded binary; `*kernel` receives an opaque handle. */
int32_t __tgt_rtl_get_function(int32_t device_id, ompsim_binary_handle binary, const char *name,
                               void **kernel);

/** Allocates `size` bytes of device memory; returns NULL on failure (for
 * example OMPSIM_DEVICE_MEMORY exhausted). `host_ptr` is a hint only. */
void *__tgt_rtl_data_alloc(int32_t device_id, int64_t size, void *host_ptr, int32_t kind);

/** Frees memory from __tgt_rtl_data_alloc. */
int32_t __tgt_rtl_data_delete(int32_t device_id, void *tgt_ptr, int32_t kind);

/** Copies `size` bytes host -> device. */
int32_t __tgt_rtl_data_submit(int32_t device_id, void *tgt_ptr, const void *hst_ptr, int64_t size);

/** Copies `size` bytes device -> host. */
int32_t __tgt_rtl_data_retrieve(int32_t device_id, void *hst_ptr, const void *tgt_ptr, int64_t size);

/** Runs kernel `kernel` with the host-offload kernel ABI
 * `void kernel(void *dyn_ptr, void *a0, ..., void *aN)`: `tgt_args[i]` are
 * device pointers or literal values. Returns when the kernel has finished. */
int32_t __tgt_rtl_run_target_region(int32_t device_id, void *kernel, void **tgt_args, int32_t num_args,
                                    const ompsim_launch_config *config);

/** One line describing the last failure on `device_id` (-1: plugin-wide),
 * or "" when there is none. Valid until the next call on that device. */
const char *__tgt_rtl_last_error(int32_t device_id);

/* ---- optional ---------------------------------------------------------- */

/** Takes the sorted host->device function-pointer table for the device and
 * publishes it to the device runtime. Replaces any earlier table. Without
 * this entry point, the runtime writes the table into device memory and sets
 * the `__omp_offloading_fptr_map_p` / `__omp_offloading_fptr_map_size`
 * globals of each image that defines them. */
int32_t __tgt_rtl_set_function_ptr_map(int32_t device_id, uint64_t n,
                                       const __omp_offloading_fptr_map_ty *table);

/** Copies `size` bytes between two devices of this plugin. */
int32_t __tgt_rtl_data_exchange(int32_t src_device_id, void *src_ptr, int32_t dst_device_id, void *dst_ptr,
                                int64_t size);

/** Unloads a binary; its addresses become invalid. */
int32_t __tgt_rtl_unload_binary(int32_t device_id, ompsim_binary_handle binary);

/** Shuts a device down (the runtime calls it at exit). */
int32_t __tgt_rtl_deinit_device(int32_t device_id);

/** Names a device address for traces and diagnostics, e.g. "dev:add1+0x0".
 * Writes at most `len` bytes including the NUL; returns 1 if found. */
int32_t __tgt_rtl_symbolize(int32_t device_id, uint64_t tgt_addr, char *buf, uint64_t len);

/** Sets the default number of threads per team used when a region has no
 * thread_limit (host-offload plugins honour it through libomp). */
int32_t __tgt_rtl_set_thread_limit(int32_t device_id, int32_t limit);

/** Says whether the plugin's devices can honour the OpenMP `requires` flags
 * `flags` (OMPSIM_REQ_*) of an image about to be loaded. Returns
 * OMPSIM_OFFLOAD_FAIL, with a line naming the clause in
 * __tgt_rtl_last_error(-1), when they cannot. Without this entry point every
 * flag is taken as honoured. */
int32_t __tgt_rtl_init_requires(int64_t flags);

/** Finds `n` globals of a loaded binary in one request: `tgt_ptrs[i]`
 * receives the device address of `names[i]` (`sizes[i]` as the `size` of
 * __tgt_rtl_get_global), or NULL when the binary defines no such symbol,
 * which is not a failure. Fails only when the request cannot be answered
 * at all. Without this entry point the runtime calls __tgt_rtl_get_global
 * once per name. */
int32_t __tgt_rtl_get_globals(int32_t device_id, ompsim_binary_handle binary, uint64_t n,
                              const char *const *names, const uint64_t *sizes, void **tgt_ptrs);

/** How device code touched the address of a fault (ompsim_fault_info::access). */
enum {
  OMPSIM_FAULT_READ = 0,
  OMPSIM_FAULT_WRITE = 1,
};

/** Where a fault address lies when the device places blocks for the map
 * checker (ompsim_fault_info::guard). */
enum {
  OMPSIM_GUARD_NONE = 0,     /**< not in a guard page nor in a freed block */
  OMPSIM_GUARD_PAST_END = 1, /**< the guard page after a live block */
  OMPSIM_GUARD_FREED = 2,    /**< a block freed earlier (in quarantine) */
};

/** A device fault on a data address, for the runtime to say what the address
 * is: only the runtime knows the mappings. */
typedef struct ompsim_fault_info {
  uint64_t addr;           /* the address device code read or wrote */
  int32_t access;          /* OMPSIM_FAULT_READ or OMPSIM_FAULT_WRITE */
  int32_t owner_device;    /* the plugin-local device whose memory holds `addr`, or -1 */
  const char *context;     /* what ran, e.g. "kernel __omp_offloading_..._main_l5" */
  const char *instruction; /* the faulting instruction, e.g. "dev:main_l5+0x1c (0x2000001c)" */
  int32_t guard;           /* OMPSIM_GUARD_*: the checker's block placement says why */
  uint64_t guard_block;    /* the device block the guard belongs to */
  uint64_t guard_offset;   /* the address's offset from guard_block */
  /* The shared library whose code faulted when device code called one (libm,
   * libc, the device runtime): its file name ("libm.so.6") and the function
   * ("sincos"; "" when no symbol covers the instruction); null when the
   * faulting instruction is the image's own. */
  const char *library;
  const char *library_function;
  /* Under the checker, when the address lies in memory the device places (a
   * GPU image's device heap, a team-shared global's guard page): what the
   * device says it is ("device-heap
   * memory at 0x... (4 bytes past the end of ...)") and the fix ("note:
   * ..."); null otherwise. */
  const char *device_what;
  const char *device_note;
} ompsim_fault_info;

/** Describes the fault that __tgt_rtl_last_error(device_id) names when it was
 * a read or write of a data address (not a call, a stack overflow or an
 * exit): fills `*info` (its strings stay valid as long as the device) and
 * returns 1; returns 0 otherwise. The runtime then replaces the plugin's line
 * with one that names what the address is. */
int32_t __tgt_rtl_last_fault(int32_t device_id, ompsim_fault_info *info);

/** Stores the execution mode of `kernel` (a get_function handle) in `*mode`
 * (llvm::omp's OMP_TGT_EXEC_MODE_*, from the kernel's
 * `<name>_kernel_environment`, as stock's plugins read it) and returns 1;
 * returns 0 when the kernel has no environment (clang-22's x86_64 kernels,
 * unless ompsim's pass plugin gave an ompx_bare kernel one). */
int32_t __tgt_rtl_kernel_exec_mode(int32_t device_id, void *kernel, uint8_t *mode);

#ifdef __cplusplus
}
#endif
#endif /* OMPSIM_PLUGIN_API_H */

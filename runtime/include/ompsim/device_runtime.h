/* ompsim: the device runtime's C interface (libompsim-device.so).
 *
 * The device runtime lives where device code runs: inside the simulator's
 * executor process for the sim backend, inside the host process for the
 * in-process host plugin. Device code calls the two translate functions; the
 * plugin that owns the device calls the __ompsim_device_* functions between
 * kernels to publish the table and to collect statistics.
 */
#ifndef OMPSIM_DEVICE_RUNTIME_H
#define OMPSIM_DEVICE_RUNTIME_H

#include "ompsim/offload_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Translates a host function (or vtable slot) address to its device
 * counterpart: null gives null, a host address in the published table gives
 * its device address, anything else is returned unchanged. Never loops: one
 * cache line (a hash bucket) in the common case, and never more buckets than
 * the longest probe sequence of the published table; safe from any number of
 * teams and threads. */
void *__kmpc_target_translate_fptr(void *host_ptr);

/** Upstream's name for the same lookup (same semantics). */
void *__llvm_omp_indirect_call_lookup(void *host_ptr);

/** Replaces the published table with a copy of `table[0..n)`, which must be
 * sorted by host_ptr without duplicates. Returns 0 on success, -1 if the
 * table is not sorted (nothing is published then). Must not run concurrently
 * with kernels (plugins call it between launches). */
int32_t __ompsim_device_set_fptr_table(const __omp_offloading_fptr_map_ty *table, uint64_t n);

/** Ends the launch (and the process) with one line, `message`: what the
 * device runtime calls when a kernel cannot go on (a barrier its block's
 * threads wait at apart, a launch the virtual GPU cannot run). An executor
 * sets it, to hand the line to its controller, which names the kernel;
 * unset (the host plugin's in-process device), the runtime prints
 * "ompsim: device runtime: <message>" and exits with status 1. */
typedef void (*ompsim_stop_handler)(const char *message);
void __ompsim_device_set_stop_handler(ompsim_stop_handler handler);

/** When `addr` lies in memory the checker places (OMPSIM_CHECK: a GPU
 * image's device heap, a team-shared global's guard page): writes what the
 * address is (the block or the global, how far past its end or into its
 * freed bytes, who allocated and freed it, each call as "called from
 * 0x...") to `what` and the fix ("note: ...") to `note`, and returns 1;
 * else 0. Async-signal-safe: the executor's fault handler calls
 * it. */
int32_t __ompsim_device_describe_address(uint64_t addr, char *what, uint64_t what_size, char *note,
                                         uint64_t note_size);

/** When the calling thread faulted at `fault_addr` inside the checker's look
 * at an access of a GPU image's code (the checks read the bytes a store
 * would change, so a store to memory that is gone faults there, not in the
 * kernel): writes the access's source site to `site`, whether the faulting
 * access writes to `*write`, and returns 1; else 0. Async-signal-safe: the
 * executor's fault handler calls it. */
int32_t __ompsim_device_checked_access(uint64_t fault_addr, char *site, uint64_t site_size, int32_t *write);

/** Turns the device's part of the checker (OMPSIM_CHECK) on: a grid's
 * blocks run one at a time, in order, so the first bad access a run reports
 * (a device-heap block's guard, a team-shared global's, a race) is the same
 * in every run; accesses of `memory_bytes` of device memory at
 * `memory_base` (the executor's arena) are checked for races between a
 * kernel's teams. The executor calls it at start-up under the checker. */
void __ompsim_device_set_check(int32_t on, uint64_t memory_base, uint64_t memory_bytes);

/** One team-shared global of a GPU image under the checker, as the JIT lays
 * it out (simulator/src/gpu/TeamSharedGuards.h): its offset in the team's
 * block, where it ends at a guard page; its bytes; the bytes of one element
 * (of an array, else the whole); its source name. */
typedef struct ompsim_team_shared_var {
  uint64_t offset;
  uint64_t size;
  uint64_t element_size;
  const char *name;
} ompsim_team_shared_var;

/** The calling team's block of team-shared memory under the checker:
 * `bytes` holding `vars[0..count)`, each followed by an inaccessible page,
 * every other byte 0x7f in each new block. */
void *__ompsim_gpu_team_shared_checked(uint64_t bytes, const ompsim_team_shared_var *vars, uint64_t count);

/** What an access of a GPU image's code does, as the checker's
 * instrumentation tells __ompsim_check_access: it reads, writes (both: an
 * atomic read-modify-write), atomically, or reads the source of a copy
 * (memcpy, memmove: bytes no thread wrote may be copied, as a struct's
 * padding is); a store of at most 8 bytes also gives the value it stores
 * (zero-extended), a memset its byte and a copy its source, so that a store
 * that changes nothing (every thread writing one value) is no race. */
enum {
  OMPSIM_ACCESS_READ = 1,
  OMPSIM_ACCESS_WRITE = 2,
  OMPSIM_ACCESS_ATOMIC = 4,
  OMPSIM_ACCESS_COPY = 8,
  OMPSIM_ACCESS_VALUE = 16, /**< a plain store whose `value` is given */
  OMPSIM_ACCESS_FILL = 32,  /**< a memset whose byte is `value` */
  OMPSIM_ACCESS_FROM = 64,  /**< a copy's destination, whose source is at `value` */
};

/** Under the checker each load, store, atomic and memory intrinsic of a GPU
 * image's code calls this first: `bytes` at `addr`, `kind` of the enum
 * above, from `site` ("race.c:31:14", or "function 'f'" without -g), with
 * the stored `value` (OMPSIM_ACCESS_VALUE). An
 * access to the block's team-shared memory that races with another
 * thread's, or reads a byte no thread of the block wrote, ends the launch
 * with one line (runtime/device/memcheck/TeamSharedAccesses.cpp). */
void __ompsim_check_access(const void *addr, uint64_t bytes, uint32_t kind, const char *site, uint64_t value);

/** One recorded translate call. */
typedef struct ompsim_translate_record {
  uint64_t host_ptr;
  uint64_t result;
  uint32_t hit; /**< 1 if found in the table */
  uint32_t reserved;
} ompsim_translate_record;

/** Counters since the last __ompsim_device_take_translate_log. */
typedef struct ompsim_translate_stats {
  uint64_t hits;
  uint64_t misses;
  uint64_t recorded; /**< records available (at most the cap) */
  uint64_t dropped;  /**< calls not recorded because the cap was reached */
} ompsim_translate_stats;

/** Sets how many translate calls are recorded per period (0 disables recording;
 * counting always happens). */
void __ompsim_device_set_translate_cap(uint64_t cap);

/** Copies up to `max` records into `out`, returns the counters, and starts a
 * new period (counters and records reset). */
ompsim_translate_stats __ompsim_device_take_translate_log(ompsim_translate_record *out, uint64_t max);

/** One kernel launch as the plugin describes it to the device runtime. */
typedef struct ompsim_kernel_launch {
  int32_t device_num;    /**< the device's number (what omp_get_device_num answers) */
  uint32_t num_teams;    /**< the launch's num_teams (0: the kernel's own, else 1) */
  uint32_t thread_limit; /**< threads per team (0: libomp's default) */
  /** Device threads the blocks of an ompx_bare launch may run on at once (0:
   * the CPUs; the in-process host plugin says 1, since libomp's teams limit
   * of the host program leaves it no more). */
  uint32_t bare_workers;
  /** Calls the kernel once on the calling thread, with the launch's
   * arguments; may be called from several threads at once. */
  void (*invoke)(void *invoke_context);
  void *invoke_context;
  /** The y and z extents of an ompx_bare launch's grid and blocks
   * (`num_teams(x, y, z)`, `thread_limit(x, y, z)`; 0 means 1). Only a bare
   * kernel's launch has them: its blocks run as __ompsim_bare_fork_teams
   * says. */
  uint32_t num_teams_yz[2];
  uint32_t thread_limit_yz[2];
  /** Non-zero for a GPU image's kernel: the warp size of its architecture
   * (32 nvptx64, 64 amdgcn). */
  uint32_t gpu_warp_size;
  /** Non-zero for a GPU image's bare kernel (one without a kernel
   * environment): every thread of every block calls `invoke`, as a GPU runs
   * the kernel; the grid is num_teams x, y, z blocks of thread_limit x, y,
   * z. */
  uint32_t bare;
  /** Bytes of dynamic shared memory each block of a GPU image's kernel gets
   * (llvm_omp_target_dynamic_shared_alloc); 0: none. */
  uint32_t dynamic_shared_bytes;
} ompsim_kernel_launch;

/** The most threads a block of an ompx_bare launch may have (every GPU's
 * limit); the runtime refuses larger blocks before the launch. */
#define OMPSIM_BARE_MAX_BLOCK_THREADS 1024

/** The body of an ompx_bare region as ompsim's pass plugin outlines it: calls
 * the region's code with the arguments clang's kernel passed to
 * __kmpc_fork_teams, stored in `argv` (8 bytes each). */
typedef void (*ompsim_bare_body)(int32_t *global_tid, int32_t *bound_tid, void **argv);

/** Runs an ompx_bare region as a GPU runs it: every thread of every block
 * runs `body` (clang-22's x86_64 kernel would run it once per team). ompsim's
 * pass plugin replaces a bare kernel's __kmpc_fork_teams call with this one.
 * On an ompsim device, the launch's grid is [num_teams x, y, z] blocks of
 * [thread_limit x, y, z] threads; a block's threads run as fibers of one
 * device thread, switching at ompx_sync_block and at warp collectives, and
 * the blocks run on a few device threads at once. Elsewhere (stock's host
 * plugin) it forks the teams clang's code would, each running `body` once. */
void __ompsim_bare_fork_teams(void *loc, ompsim_bare_body body, void **argv);

/** Runs one kernel launch on the calling thread: `launch->invoke` is called
 * once. A kernel in the GPU device-runtime ABI (flang-22's kernels, which
 * open with __kmpc_target_init) is then run once per team, each team on its
 * own libomp team, as a GPU runs one block per team; a host-offload kernel
 * (clang's, which forks its own teams through libomp) runs as it is. Returns
 * 0, or -1 after printing one line when libomp cannot be found. */
int32_t __ompsim_device_run_kernel(const ompsim_kernel_launch *launch);

/** The device number of the kernel running on the calling thread (the last
 * launched device on a thread that libomp started for a host-offload kernel),
 * or -1 outside any kernel. */
int32_t __ompsim_device_current_device(void);

/** Nonzero on a team's initial thread of a GPU-ABI launch outside any
 * parallel region (the team has one thread there). */
int32_t __ompsim_device_in_team_region(void);

/** Kernel prologue of GPU-style device code (flang-22 emits it for every
 * target region, on every offload target). Under __ompsim_device_run_kernel
 * the first call forks the launch's teams, runs the kernel again as each
 * team's initial thread, and returns 0 (the caller's "worker, skip the user
 * code" value); those team calls return -1 (upstream's "execute user code").
 * A kernel called without __ompsim_device_run_kernel (a plugin that does not
 * know this runtime) runs its user code once, as one team. */
int32_t __kmpc_target_init(void *kernel_environment, void *kernel_launch_environment);

/** Kernel epilogue matching __kmpc_target_init; nothing to tear down. */
void __kmpc_target_deinit(void);

#ifdef __cplusplus
}
#endif
#endif /* OMPSIM_DEVICE_RUNTIME_H */

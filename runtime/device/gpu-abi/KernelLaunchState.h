//===- KernelLaunchState.h - what a device thread knows of its launch -----===//
//
// A GPU thread reads its block and thread ids from hardware registers; a
// thread of a host-offload device learns them from the launch it runs in.
// The state is per thread: the thread that takes the launch, each team's
// initial thread, and each thread of a parallel region the GPU-ABI entry
// points fork carry a pointer to it (libomp's worker threads get it from the
// region that runs on them, see DeviceParallelism.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_GPUABI_KERNELLAUNCHSTATE_H
#define OMPSIM_DEVICE_GPUABI_KERNELLAUNCHSTATE_H

#include "ompsim/device_runtime.h"

#include <pthread.h>

#include <atomic>
#include <cstdint>

namespace ompsim::gpu {
struct ConfigurationEnvironmentTy;
} // namespace ompsim::gpu

namespace ompsim::device {

/// Bytes of the cross-team reduction buffer a kernel environment asks for
/// (0 when it asks none, or there is none).
uint64_t reductionBufferBytes(const ompsim::gpu::ConfigurationEnvironmentTy *Env);

/// One kernel launch, alive for the length of __ompsim_device_run_kernel.
struct KernelLaunch {
  const ompsim_kernel_launch *Request = nullptr;
  /// Set by the first __kmpc_target_init of the launch: the kernel is in the
  /// GPU ABI and its teams have been forked.
  bool TeamsForked = false;
  /// A GPU image's team-shared memory (__ompsim_gpu_team_shared): one block
  /// per team, made at the team's first use, freed when the launch ends.
  pthread_mutex_t SharedLock = PTHREAD_MUTEX_INITIALIZER;
  void **TeamShared = nullptr;
  uint32_t TeamSharedCount = 0;
  /// Its dynamic shared memory (Request->dynamic_shared_bytes), the same way.
  void **DynamicShared = nullptr;
  uint32_t DynamicSharedCount = 0;
  /// A GPU image's cross-team reduction: the bytes of its fixed buffer
  /// (from the kernel environment), the buffer, and the teams that have
  /// brought their part (under SharedLock).
  uint64_t ReductionBufferBytes = 0;
  void *ReductionBuffer = nullptr;
  uint32_t TeamsReduced = 0;
  /// A GPU image's launch environment (the GPU device runtime's
  /// KernelLaunchEnvironmentTy: reductions arrived, their iteration, the
  /// buffer), made at the launch's first __kmpc_target_init (under
  /// SharedLock).
  struct {
    uint32_t ReductionCnt = 0;
    uint32_t ReductionIterCnt = 0;
    void *ReductionBuffer = nullptr;
  } GpuLaunchEnv;
  bool GpuLaunchEnvMade = false;
  /// Each team's parallel reductions (GpuImageEntries.cpp's TeamReduction),
  /// made at the team's first (under SharedLock).
  void **TeamReductions = nullptr;
  uint32_t TeamReductionsCount = 0;
  ~KernelLaunch();
};

/// Where the calling thread is in a launch.
struct ThreadPlace {
  KernelLaunch *Launch = nullptr; ///< null outside any GPU-ABI launch
  bool InTeam = false;            ///< a team's thread (its user code runs)
  bool InParallel = false;        ///< in a parallel region of the team
  /// One of the block's threads of a GPU image's SPMD kernel, each of which
  /// runs the kernel's code (__ompsim_gpu_target_init); its team's parallel
  /// regions run on it directly.
  bool SpmdThread = false;
  uint32_t TeamNum = 0;
  uint32_t NumTeams = 1;
};

/// The calling thread's place.
ThreadPlace &currentPlace();

/// The device number of the last launch, for threads libomp started for a
/// host-offload kernel (they carry no place).
extern std::atomic<int32_t> LastLaunchedDevice;

/// Sets the calling thread's place for one scope and restores it after.
class ScopedPlace {
public:
  explicit ScopedPlace(const ThreadPlace &Place) : Saved(currentPlace()) { currentPlace() = Place; }
  ~ScopedPlace() { currentPlace() = Saved; }
  ScopedPlace(const ScopedPlace &) = delete;
  ScopedPlace &operator=(const ScopedPlace &) = delete;

private:
  ThreadPlace Saved;
};

} // namespace ompsim::device

#endif // OMPSIM_DEVICE_GPUABI_KERNELLAUNCHSTATE_H

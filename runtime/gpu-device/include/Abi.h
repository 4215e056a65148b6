//===- Abi.h - the ABI clang-22's GPU codegen calls -------------*- C++ -*-===//
//
// The data the compiler and the plugin hand the GPU device runtime: the
// source location, the kernel environment each kernel carries
// (`<kernel>_kernel_environment`), the launch environment the plugin passes
// as the kernel's first argument, and the shapes of the functions the
// compiler generates for parallel regions and reductions. The constants are
// those of llvm/Frontend/OpenMP/OMPConstants.h and libomp's kmp.h; the device
// build is freestanding and cannot include them, so a host test checks the
// values against LLVM's header (runtime/gpu-device/tests).
//
// Plain C++: this header is compiled for the host too.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_GPUDEVICE_ABI_H
#define OMPSIM_GPUDEVICE_ABI_H

#include <stdint.h>

namespace ompsim::gpu {

/// llvm::omp::OMPTgtExecModeFlags.
enum ExecMode : uint8_t {
  ExecModeGeneric = 1 << 0,
  ExecModeSpmd = 1 << 1,
  ExecModeGenericSpmd = ExecModeGeneric | ExecModeSpmd,
};

/// libomp's schedule kinds (kmp.h `enum sched_type`) the loop entries meet.
enum Schedule : int32_t {
  ScheduleStaticChunked = 33,
  ScheduleStatic = 34,
  ScheduleDynamicChunked = 35,
  ScheduleGuidedChunked = 36,
  ScheduleRuntime = 37,
  ScheduleAuto = 38,
  ScheduleStaticBalancedChunked = 45,
  ScheduleDistributeStaticChunked = 91,
  ScheduleDistributeStatic = 92,
  /// The ordered and nomonotonic forms are these plus a modifier.
  ScheduleOrderedOffset = 32,
  ScheduleModifierMask = (1 << 29) | (1 << 30),
};

struct IdentTy {
  int32_t Reserved1;
  int32_t Flags;
  int32_t Reserved2;
  int32_t Reserved3;
  const char *PSource;
};

struct ConfigurationEnvironmentTy {
  uint8_t UseGenericStateMachine;
  uint8_t MayUseNestedParallelism;
  uint8_t ExecMode;
  int32_t MinThreads;
  int32_t MaxThreads;
  int32_t MinTeams;
  int32_t MaxTeams;
  int32_t ReductionDataSize;
  int32_t ReductionBufferLength;
};

struct DynamicEnvironmentTy {
  uint16_t DebugIndentionLevel;
};

struct KernelEnvironmentTy {
  ConfigurationEnvironmentTy Configuration;
  IdentTy *Ident;
  DynamicEnvironmentTy *DynamicEnv;
};

/// What the plugin passes each launch (its first kernel argument).
struct KernelLaunchEnvironmentTy {
  uint32_t ReductionCnt;
  uint32_t ReductionIterCnt;
  void *ReductionBuffer;
};

/// A parallel region's outlined function as generated: (global tid, bound
/// tid, then the region's shared variables, one pointer each).
using ParallelRegionFn = void (*)(int32_t *, int32_t *, ...);
/// The wrapper generic mode hands the workers: (parallel level, thread id).
using ParallelWrapperFn = void (*)(uint16_t, uint32_t);
/// Reductions: the compiler's shuffle-and-reduce and inter-warp copy
/// functions, and its copies between a team's values and a buffer record.
using ShuffleReduceFn = void (*)(void *ReduceData, int16_t LaneId, int16_t Offset, int16_t AlgoVersion);
using InterWarpCopyFn = void (*)(void *ReduceData, int32_t NumWarps);
using ListGlobalFn = void (*)(void *Buffer, int32_t Index, void *ReduceData);

/// What the plugin writes into the image's `__omp_rtl_device_environment`
/// when it loads it (stock's CUDA and AMDGPU plugins do).
struct DeviceEnvironmentTy {
  uint32_t DeviceDebugKind;
  uint32_t NumDevices;
  uint32_t DeviceNum;
  uint32_t DynamicMemSize;
  uint64_t ClockFrequency;
  uint64_t IndirectCallTable;
  uint64_t IndirectCallTableSize;
  uint64_t HardwareParallelism;
};

/// The host-to-device function pointer table ompsim's plugin (and stock's
/// plugins) publish for `declare target indirect`: sorted by host address.
struct IndirectCallEntry {
  void *HostPtr;
  void *DevicePtr;
};

/// Limits of the runtime's per-block state.
inline constexpr uint32_t MaxBlockThreads = 1024;
/// Bytes of the block's shared stack that __kmpc_alloc_shared serves the
/// generic-mode main thread from (globalized locals); other requests and an
/// overflow go to the device heap.
inline constexpr uint32_t SharedStackBytes = 2048;

} // namespace ompsim::gpu

#endif // OMPSIM_GPUDEVICE_ABI_H

//===- VirtualGpu.cpp - the simulated GPU's hardware ----------------------===//
//
// What ompsim's GPU device runtime, linked into a GPU image as x86-64
// bitcode (runtime/gpu-device, OMPSIM_GPU_SIM), asks of the hardware. Every
// thread of every block of a GPU image's launch runs the kernel as a fiber
// of the block runner (bare/BareLaunch.cpp), which answers here: ids and
// extents (which the runtime reads from the fiber's registers itself,
// bare/FiberSlots.h, unless the fiber's slot lies apart), the warp's running
// lanes, warp and block barriers, shuffles and ballots, the block's state,
// and a fault that names the block and thread.
//
//===----------------------------------------------------------------------===//
#include "VirtualGpu.h"

#include "../bare/BareLaunch.h"
#include "../gpu-abi/KernelLaunchState.h"
#include "Abi.h"

#include <cstdio>
#include <cstdlib>

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

using namespace ompsim::device;

namespace {

[[noreturn]] void endLaunch() {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(1);
}

} // namespace

OMPSIM_DEVICE_API const ompsim::vgpu::LaneRegisters *__ompsim_vgpu_registers(void) {
  return &bare::laneRegisters();
}
OMPSIM_DEVICE_API uint64_t __ompsim_vgpu_active_mask(void) { return bare::warpActiveMask(); }
OMPSIM_DEVICE_API void __ompsim_vgpu_sync_warp(uint64_t Mask) { bare::syncWarp(Mask); }
OMPSIM_DEVICE_API void __ompsim_vgpu_sync_block(void) { bare::syncBlock(); }
OMPSIM_DEVICE_API void __ompsim_vgpu_sync_threads(uint32_t Count) { bare::syncThreads(Count); }
OMPSIM_DEVICE_API int32_t __ompsim_vgpu_shuffle(uint64_t Mask, int32_t Value, uint32_t SourceLane) {
  return int32_t(uint32_t(bare::warpShuffle(Mask, uint32_t(Value), SourceLane)));
}
OMPSIM_DEVICE_API uint64_t __ompsim_vgpu_ballot(uint64_t Mask, int Predicate) {
  return bare::warpBallot(Mask, Predicate != 0);
}
OMPSIM_DEVICE_API void __ompsim_vgpu_pause(void) { bare::pause(); }
OMPSIM_DEVICE_API uint64_t __ompsim_vgpu_nanoseconds(void) { return bare::nanoseconds(); }

OMPSIM_DEVICE_API void *__ompsim_vgpu_block_state(uint64_t Bytes) {
  if (void *State = bare::blockState(Bytes))
    return State;
  __ompsim_vgpu_fail("the GPU device runtime runs outside a block of the simulated GPU");
}

OMPSIM_DEVICE_API const ompsim::gpu::DeviceEnvironmentTy *__ompsim_vgpu_device_environment(void) {
  // The device environment a GPU's plugin writes into the image: its
  // device number; the rest is served by the executor's device runtime
  // itself (the indirect-call table, the devices).
  static thread_local ompsim::gpu::DeviceEnvironmentTy Env;
  const ThreadPlace &Place = currentPlace();
  Env.DeviceNum = Place.Launch ? uint32_t(Place.Launch->Request->device_num)
                               : uint32_t(LastLaunchedDevice.load(std::memory_order_relaxed));
  return &Env;
}

OMPSIM_DEVICE_API ompsim::gpu::KernelLaunchEnvironmentTy *
__ompsim_vgpu_launch_environment(const ompsim::gpu::KernelEnvironmentTy *Kernel) {
  KernelLaunch *L = currentPlace().Launch;
  if (!L)
    __ompsim_vgpu_fail("a kernel runs outside a launch of the simulated GPU");
  pthread_mutex_lock(&L->SharedLock);
  if (!L->GpuLaunchEnvMade) {
    // The head of the kernel environment is its configuration.
    uint64_t Bytes = reductionBufferBytes(Kernel ? &Kernel->Configuration : nullptr);
    if (Bytes && !(L->GpuLaunchEnv.ReductionBuffer = std::calloc(1, Bytes))) {
      pthread_mutex_unlock(&L->SharedLock);
      __ompsim_vgpu_fail("cannot allocate the launch's reduction buffer");
    }
    L->GpuLaunchEnvMade = true;
  }
  pthread_mutex_unlock(&L->SharedLock);
  return reinterpret_cast<ompsim::gpu::KernelLaunchEnvironmentTy *>(&L->GpuLaunchEnv);
}

OMPSIM_DEVICE_API void __ompsim_vgpu_fail(const char *What) {
  std::fprintf(stderr, "ompsim: device runtime: %s (block %u, thread %u)\n", What, bare::linearBlock(),
               bare::linearThread());
  endLaunch();
}

OMPSIM_DEVICE_API void __ompsim_vgpu_assert_fail(const char *Assertion, const char *File, uint32_t Line,
                                                 const char *Function) {
  std::fprintf(stderr, "%s:%u: %s: Assertion `%s' failed (block %u, thread %u).\n", File, Line, Function,
               Assertion, bare::linearBlock(), bare::linearThread());
  endLaunch();
}

OMPSIM_DEVICE_API void __ompsim_vgpu_error(int32_t Severity, const char *Message) {
  std::fprintf(stderr, Severity == 2 ? "OMP: Error: %s\n" : "OMP: Warning: %s\n",
               Message ? Message : "(no message)");
  if (Severity == 2)
    endLaunch();
}

//===- GridLaunch.cpp - a launch's grid run on the virtual GPU ------------===//
//
// Also the launch's part of the simulated GPU's hardware (vgpu/VirtualGpu.h):
// the device and launch environments a GPU's plugin would hand the kernel,
// which the GPU device runtime linked into a GPU image asks for.
//
//===----------------------------------------------------------------------===//
#include "GridLaunch.h"

#include "../vgpu/Grid.h"
#include "../vgpu/VirtualGpu.h"
#include "Abi.h"
#include "KernelLaunchState.h"

#include <cstdlib>

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

namespace ompsim::device {
namespace {

/// A device thread of the grid: its blocks run in the grid's launch.
void deviceThreadInLaunch(vgpu::Grid &G, int32_t *Gtid) {
  ThreadPlace Place = currentPlace();
  Place.Launch = static_cast<KernelLaunch *>(G.User);
  ScopedPlace Scope(Place);
  vgpu::runBlocks(G, Gtid);
}

/// A thread of a GPU image's bare kernel: calls the kernel.
void gpuKernelBody(int32_t *, int32_t *, void **Argv) {
  const auto *R = reinterpret_cast<const ompsim_kernel_launch *>(Argv);
  R->invoke(R->invoke_context);
}

} // namespace

void runGridInLaunch(Ident *Loc, const ompsim_kernel_launch &Request, ompsim_bare_body Body, void **Argv,
                     uint32_t WarpSize) {
  const uint32_t GridExtents[3] = {Request.num_teams, Request.num_teams_yz[0], Request.num_teams_yz[1]};
  const uint32_t BlockExtents[3] = {Request.thread_limit, Request.thread_limit_yz[0],
                                    Request.thread_limit_yz[1]};
  vgpu::Grid G(GridExtents, BlockExtents, WarpSize);
  G.DynamicSharedBytes = Request.dynamic_shared_bytes;
  G.Body = Body;
  G.Argv = Argv;
  G.DeviceThread = &deviceThreadInLaunch;
  G.User = currentPlace().Launch;
  vgpu::runGrid(Loc, G, Request.bare_workers);
}

void runGpuKernel(const ompsim_kernel_launch &Request) {
  runGridInLaunch(runtimeIdent(), Request, &gpuKernelBody,
                  reinterpret_cast<void **>(const_cast<ompsim_kernel_launch *>(&Request)),
                  Request.gpu_warp_size);
}

} // namespace ompsim::device

using namespace ompsim::device;

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

//===- GridLaunch.h - a launch's grid run on the virtual GPU ----*- C++ -*-===//
//
// A GPU image's bare kernel and an ompx_bare region run on the virtual GPU
// (vgpu/Grid.h): every thread of every block calls the kernel. Each device
// thread that runs the grid's blocks carries the launch it runs in, as the
// launching thread does, so the GPU ABI's entry points the kernel calls
// (team-shared memory, the launch environment, reductions) find the launch;
// and the device thread's place is restored when its blocks are done.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_GPUABI_GRIDLAUNCH_H
#define OMPSIM_DEVICE_GPUABI_GRIDLAUNCH_H

#include "../libomp/Libomp.h"
#include "ompsim/device_runtime.h"

#include <cstdint>

namespace ompsim::device {

/// Runs the grid of `Request` (num_teams x, y, z blocks of thread_limit x,
/// y, z threads, in warps of `WarpSize` lanes), every thread calling
/// `Body(Argv)`, within the calling thread's launch.
void runGridInLaunch(Ident *Loc, const ompsim_kernel_launch &Request, ompsim_bare_body Body, void **Argv,
                     uint32_t WarpSize);

/// Runs a GPU image's bare kernel as a GPU does: every thread of every
/// block of `Request`'s grid calls the kernel (Request.gpu_warp_size lanes
/// a warp).
void runGpuKernel(const ompsim_kernel_launch &Request);

} // namespace ompsim::device

#endif // OMPSIM_DEVICE_GPUABI_GRIDLAUNCH_H

//===- VirtualGpu.h - the simulated GPU's hardware, as its runtime sees it -===//
//
// ompsim's GPU device runtime (runtime/gpu-device) keeps everything it asks
// of the hardware in its Hardware.h. Built for the simulated GPU, those
// functions call these, which libompsim-device serves from the block runner
// (runtime/device/bare/BareLaunch.cpp): a block's threads are fibers of one
// device thread, in warps of the image's architecture. The executor links
// the runtime's x86-64 bitcode into every GPU image it retargets, so the
// image calls the same runtime a GPU runs, and only these reach the host.
//
// C linkage, C++ types: the runtime's bitcode is built freestanding C++.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_VGPU_VIRTUALGPU_H
#define OMPSIM_DEVICE_VGPU_VIRTUALGPU_H

#include <stdint.h>

namespace ompsim::gpu {
struct DeviceEnvironmentTy;
struct KernelEnvironmentTy;
struct KernelLaunchEnvironmentTy;
} // namespace ompsim::gpu

extern "C" {

/// The calling thread's id in its block, the block's extent, the block's id
/// in the grid and the grid's extent, in dimension 0 (x), 1 (y) or 2 (z).
uint32_t __ompsim_vgpu_thread_id(int Dim);
uint32_t __ompsim_vgpu_block_dim(int Dim);
uint32_t __ompsim_vgpu_block_id(int Dim);
uint32_t __ompsim_vgpu_grid_dim(int Dim);
/// Lanes of a warp (32 for an nvptx64 image, 64 for an amdgcn one) and the
/// calling thread's lane.
uint32_t __ompsim_vgpu_warp_size(void);
uint32_t __ompsim_vgpu_lane_id(void);
/// The lanes of the caller's warp that run: neither finished nor waiting at
/// the block's barrier.
uint64_t __ompsim_vgpu_active_mask(void);
/// Waits until the lanes of `Mask` that run have arrived.
void __ompsim_vgpu_sync_warp(uint64_t Mask);
/// The block's barrier: waits until every thread of the block that has not
/// finished arrived.
void __ompsim_vgpu_sync_block(void);
/// A barrier of `Count` of the block's threads (a GPU's named barrier with
/// a thread count): waits until that many arrived.
void __ompsim_vgpu_sync_threads(uint32_t Count);
/// Lane `SourceLane`'s `Value` (of the lanes of `Mask` that run), for every
/// lane of the warp that calls it.
int32_t __ompsim_vgpu_shuffle(uint64_t Mask, int32_t Value, uint32_t SourceLane);
/// The lanes of `Mask` that run and pass a true `Predicate`.
uint64_t __ompsim_vgpu_ballot(uint64_t Mask, int Predicate);
/// A spinning thread's turn: the block's other threads run.
void __ompsim_vgpu_pause(void);
uint64_t __ompsim_vgpu_nanoseconds(void);
/// The calling block's state of `Bytes` bytes (the runtime's team state,
/// which a GPU keeps in the block's shared memory): the block's own, not
/// cleared between the blocks a device thread runs.
void *__ompsim_vgpu_block_state(uint64_t Bytes);
/// The device environment a plugin writes into a GPU image: device number,
/// devices, and the indirect-call table.
const ompsim::gpu::DeviceEnvironmentTy *__ompsim_vgpu_device_environment(void);
/// The launch's environment (a GPU's plugin passes it as the kernel's first
/// argument): made at the launch's first call, with the cross-team
/// reduction buffer kernel environment `Kernel` asks for; the same for every
/// block of the launch.
ompsim::gpu::KernelLaunchEnvironmentTy *
__ompsim_vgpu_launch_environment(const ompsim::gpu::KernelEnvironmentTy *Kernel);
/// Ends the launch with one line naming `What`, the kernel, the block and
/// the thread.
__attribute__((noreturn)) void __ompsim_vgpu_fail(const char *What);
/// A failed assert (as on a GPU: file, line, function, block and thread).
__attribute__((noreturn)) void __ompsim_vgpu_assert_fail(const char *Assertion, const char *File,
                                                         uint32_t Line, const char *Function);
/// The error directive at execution time: severity 2 ends the launch.
void __ompsim_vgpu_error(int32_t Severity, const char *Message);

} // extern "C"

#endif // OMPSIM_DEVICE_VGPU_VIRTUALGPU_H

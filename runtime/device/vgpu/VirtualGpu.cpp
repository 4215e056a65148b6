//===- VirtualGpu.cpp - the simulated GPU's hardware ----------------------===//
//
// What ompsim's GPU device runtime, linked into a GPU image as x86-64
// bitcode (runtime/gpu-device, OMPSIM_GPU_SIM), asks of the hardware. Every
// thread of every block of a GPU image's launch runs the kernel as a fiber
// of the block runner (BlockRunner.h), which answers here: ids and
// extents (which the runtime reads from the fiber's registers itself,
// FiberSlots.h, unless the fiber's slot lies apart), the warp's running
// lanes, warp and block barriers, shuffles and ballots, the block's state,
// and a fault that names the block and thread. The device and launch
// environments are the launch's (gpu-abi/GridLaunch.cpp).
//
//===----------------------------------------------------------------------===//
#include "VirtualGpu.h"

#include "../DeviceStop.h"
#include "Block.h"

#include <cstdio>
#include <cstdlib>

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

using namespace ompsim::vgpu;

OMPSIM_DEVICE_API const ompsim::vgpu::LaneRegisters *__ompsim_vgpu_registers(void) {
  return &runnerRegisters();
}
OMPSIM_DEVICE_API uint64_t __ompsim_vgpu_active_mask(void) { return warpActiveMask(); }
OMPSIM_DEVICE_API void __ompsim_vgpu_sync_warp(uint64_t Mask) { syncWarp(Mask); }
OMPSIM_DEVICE_API void __ompsim_vgpu_sync_block(void) { syncBlock(); }
OMPSIM_DEVICE_API void __ompsim_vgpu_sync_threads(uint32_t Count) { syncThreads(Count); }
OMPSIM_DEVICE_API void __ompsim_vgpu_sync_block_at(const BarrierSite *Site) { syncBlock(Site); }
OMPSIM_DEVICE_API void __ompsim_vgpu_sync_threads_at(uint32_t Count, const BarrierSite *Site) {
  syncThreads(Count, Site);
}
OMPSIM_DEVICE_API int32_t __ompsim_vgpu_shuffle(uint64_t Mask, int32_t Value, uint32_t SourceLane) {
  return int32_t(uint32_t(warpShuffle(Mask, uint32_t(Value), SourceLane)));
}
OMPSIM_DEVICE_API uint64_t __ompsim_vgpu_ballot(uint64_t Mask, int Predicate) {
  return warpBallot(Mask, Predicate != 0);
}
OMPSIM_DEVICE_API void __ompsim_vgpu_pause(void) { ompsim::vgpu::pause(); }
OMPSIM_DEVICE_API void __ompsim_vgpu_run_as_loops(void) { runAsLoops(); }
OMPSIM_DEVICE_API int __ompsim_vgpu_block_runs_as_loops(void) { return blockRunsAsLoops(); }
OMPSIM_DEVICE_API void __ompsim_vgpu_run_as_thread(uint32_t T) { runAsThread(T); }
OMPSIM_DEVICE_API void __ompsim_vgpu_run_in_rounds(void *(*Start)(void *), void *Context,
                                                   const BarrierSite *const *Site) {
  runInRounds(Start, Context, Site);
}
OMPSIM_DEVICE_API void __ompsim_vgpu_for_each_thread_in_rounds(uint32_t Count,
                                                               void *(*Start)(void *, uint32_t,
                                                                              const BarrierSite **),
                                                               void *Context, const RoundEnd *End) {
  forEachThreadInRounds(Count, Start, Context, *End);
}
OMPSIM_DEVICE_API void *__ompsim_vgpu_round_frame(uint64_t Bytes, uint64_t Align) {
  return roundFrame(Bytes, Align);
}
OMPSIM_DEVICE_API void __ompsim_vgpu_for_each_thread(uint32_t Count, void (*Fn)(void *, uint32_t),
                                                     void *Context) {
  forEachThread(Count, Fn, Context);
}
OMPSIM_DEVICE_API uint64_t __ompsim_vgpu_nanoseconds(void) { return nanoseconds(); }

OMPSIM_DEVICE_API void *__ompsim_vgpu_block_state(uint64_t Bytes) {
  if (void *State = blockState(Bytes))
    return State;
  __ompsim_vgpu_fail("the GPU device runtime runs outside a block of the simulated GPU");
}

OMPSIM_DEVICE_API void __ompsim_vgpu_fail(const char *What) {
  ompsim::device::stopDevice("%s (block %u, thread %u)", What, linearBlock(), linearThread());
}

OMPSIM_DEVICE_API void __ompsim_vgpu_assert_fail(const char *Assertion, const char *File, uint32_t Line,
                                                 const char *Function) {
  std::fprintf(stderr, "%s:%u: %s: Assertion `%s' failed (block %u, thread %u).\n", File, Line, Function,
               Assertion, linearBlock(), linearThread());
  ompsim::device::endDeviceProcess();
}

OMPSIM_DEVICE_API void __ompsim_vgpu_error(int32_t Severity, const char *Message) {
  std::fprintf(stderr, Severity == 2 ? "OMP: Error: %s\n" : "OMP: Warning: %s\n",
               Message ? Message : "(no message)");
  if (Severity == 2)
    ompsim::device::endDeviceProcess();
}

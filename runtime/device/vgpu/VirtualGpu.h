//===- VirtualGpu.h - the simulated GPU's hardware, as its runtime sees it -===//
//
// ompsim's GPU device runtime (runtime/gpu-device) keeps everything it asks
// of the hardware in its Hardware.h. Built for the simulated GPU, those
// functions use these, which libompsim-device serves from the block runner
// (BlockRunner.h, in this folder): a block's threads are fibers of one
// device thread, in warps of the image's architecture. The executor links
// the runtime's x86-64 bitcode into every GPU image it retargets, so the
// image calls the same runtime a GPU runs, and only these reach the host.
// A thread's ids and extents are read as a GPU reads its special registers,
// without a call (laneRegisters() below); barriers, warp collectives and
// faults are calls.
//
// C linkage, C++ types: the runtime's bitcode is built freestanding C++.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_VGPU_VIRTUALGPU_H
#define OMPSIM_DEVICE_VGPU_VIRTUALGPU_H

#include "BarrierSite.h"

#include <stdint.h>

namespace ompsim::gpu {
struct DeviceEnvironmentTy;
struct KernelEnvironmentTy;
struct KernelLaunchEnvironmentTy;
} // namespace ompsim::gpu

namespace ompsim::vgpu {

/// A parallel region run in rounds (__ompsim_vgpu_for_each_thread_in_rounds):
/// where its threads meet, for the line that ends a launch whose threads
/// wait apart. Zeros: a kernel's threads, which simply finish.
struct RoundEnd {
  /// The region's end.
  const BarrierSite *Site;
  /// Its barriers are barriers of this many threads (0: the block's).
  uint32_t BarrierCount;
  /// The block's threads outside the region below this wait at a barrier
  /// of the runtime (a generic-mode team's workers and main thread, an SPMD
  /// block's other threads); the rest have finished.
  uint32_t WaitingOutside;
};

/// A GPU thread's special registers, as the simulated GPU keeps them for
/// each of its threads: ids and extents in dimensions 0 (x), 1 (y) and 2 (z),
/// the lane and the warp's lanes (32 for an nvptx64 image, 64 for an amdgcn
/// one), and the block's state once its runtime asked for it
/// (__ompsim_vgpu_block_state).
struct LaneRegisters {
  uint32_t ThreadId[3];
  uint32_t BlockDim[3];
  uint32_t BlockId[3];
  uint32_t GridDim[3];
  uint16_t LaneId;
  uint16_t WarpSize;
  uint32_t BlockStateBytes;
  void *BlockState;
};

/// A block's threads are fibers, each with a slot of FiberSlotBytes aligned
/// to its size, near whose end its LaneRegisters lie (its stack grows down
/// from below them, FiberSlots.h, so a thread's registers
/// share a page with its stack's top). The slots of most fibers lie in one
/// range of the process, [Base, Base + Size).
struct FiberSlotRange {
  uintptr_t Base;
  uintptr_t Size;
};
inline constexpr uintptr_t FiberSlotBytes = uintptr_t(128) << 10;
inline constexpr uintptr_t CacheLineBytes = 64;
/// The registers, and so the stack's top, lie a cache line lower in each
/// slot than in the one before, round by FiberSlotColors slots: the hot
/// lines of a block's fibers (registers, the frames of their barriers) would
/// otherwise all lie at one offset of a page, which a cache holds in few
/// sets, and a block of many fibers would miss the cache at every switch.
inline constexpr uintptr_t FiberSlotColors = 64;
static_assert(sizeof(LaneRegisters) <= CacheLineBytes, "a fiber's registers outgrow their cache line");

/// Where the registers of the slot starting at `Slot` lie.
inline uintptr_t laneRegistersOf(uintptr_t Slot) {
  return Slot + FiberSlotBytes - CacheLineBytes * (1 + (Slot / FiberSlotBytes) % FiberSlotColors);
}

} // namespace ompsim::vgpu

extern "C" {

/// Where the fibers' slots lie (empty before the first block runs).
extern ompsim::vgpu::FiberSlotRange __ompsim_vgpu_fiber_slots;
/// The calling thread's registers, by a call: for a fiber whose slot lies
/// outside __ompsim_vgpu_fiber_slots, and for code outside a block (ids 0,
/// extents 1, warps of 32, no block state).
const ompsim::vgpu::LaneRegisters *__ompsim_vgpu_registers(void);
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
/// The two barriers above met at a program's barrier `Site` (its frame
/// holds *Site while it waits): a block whose threads wait at different
/// program barriers, or can never complete one, ends the launch with one
/// line naming the barriers and which threads wait at each.
void __ompsim_vgpu_sync_block_at(const ompsim::vgpu::BarrierSite *Site);
void __ompsim_vgpu_sync_threads_at(uint32_t Count, const ompsim::vgpu::BarrierSite *Site);
/// Lane `SourceLane`'s `Value` (of the lanes of `Mask` that run), for every
/// lane of the warp that calls it.
int32_t __ompsim_vgpu_shuffle(uint64_t Mask, int32_t Value, uint32_t SourceLane);
/// The lanes of `Mask` that run and pass a true `Predicate`.
uint64_t __ompsim_vgpu_ballot(uint64_t Mask, int Predicate);
/// A spinning thread's turn: the block's other threads run.
void __ompsim_vgpu_pause(void);
/// Called by thread 0 of a block before anything else it runs (the executor
/// adds the call at the start of a kernel it found runs as loops,
/// simulator/src/gpu/BlockLoops.h): the block's other threads never start
/// as fibers; thread 0 runs the kernel's code outside parallel regions, and
/// __ompsim_vgpu_for_each_thread each region's threads in turn.
void __ompsim_vgpu_run_as_loops(void);
/// Whether the calling thread's block runs as loops.
int __ompsim_vgpu_block_runs_as_loops(void);
/// In a block that runs as loops: `Fn(Context, T)` for threads T = 0 to
/// Count - 1 in turn, each with thread T's ids, on the calling thread's
/// stack; then the threads' barrier at the region's end counts as passed.
void __ompsim_vgpu_for_each_thread(uint32_t Count, void (*Fn)(void *, uint32_t), void *Context);
/// In a block that runs as loops: the calling code goes on as thread `T`
/// (its ids, and the thread faults and the checker name), as a
/// generic-mode kernel's main thread does; __ompsim_vgpu_for_each_thread
/// comes back to it after each region.
void __ompsim_vgpu_run_as_thread(uint32_t T);
/// Called by thread 0 of a block before anything else it runs, in a kernel
/// the executor split at its block barriers (simulator/src/gpu/BlockRounds.h):
/// runs the block in rounds. `Start(Context)` starts the calling thread's
/// run of the kernel as a coroutine, which suspends at each barrier, and
/// gives its handle; each round resumes every thread that has not finished,
/// in thread order, to its next barrier. A thread that suspends leaves the
/// barrier it waits at in *Site (null: a divergent one, which any of the
/// block's barriers completes): threads at different ones end the launch
/// with one line naming them, as __ompsim_vgpu_sync_block_at does. The
/// block's other fibers never start.
void __ompsim_vgpu_run_in_rounds(void *(*Start)(void *), void *Context,
                                 const ompsim::vgpu::BarrierSite *const *Site);
/// In a block that runs as loops: runs the threads below `Count` of a
/// parallel region the executor split at its barriers in rounds, as
/// __ompsim_vgpu_run_in_rounds runs a kernel's. `Start(Context, T, Site)`
/// starts thread T's coroutine, which leaves the barrier it suspends at in
/// *Site, and gives its handle. The region's start and end count as passed
/// barriers; threads at different barriers, or one that finished the region
/// while others wait at a barrier, end the launch with the line fibers give
/// (`End` says where the region's threads meet).
void __ompsim_vgpu_for_each_thread_in_rounds(uint32_t Count,
                                             void *(*Start)(void *, uint32_t,
                                                            const ompsim::vgpu::BarrierSite **),
                                             void *Context, const ompsim::vgpu::RoundEnd *End);
/// The calling thread's coroutine frame of `Bytes`, aligned to `Align` (a
/// block run in rounds): the block's own, until its end.
void *__ompsim_vgpu_round_frame(uint64_t Bytes, uint64_t Align);
/// The calling thread took, or gave back, the lock at `Lock` (an OpenMP
/// lock, a `critical` region's): the checker does not call two accesses
/// made under one lock a race (memcheck/TeamSharedAccesses.cpp).
void __ompsim_vgpu_lock_taken(const void *Lock);
void __ompsim_vgpu_lock_given(const void *Lock);
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

namespace ompsim::vgpu {

/// The calling thread's registers: read from its fiber's slot, which its
/// own frame lies in, without a call (a GPU's special registers cost no
/// more); by __ompsim_vgpu_registers() for a frame elsewhere.
__attribute__((always_inline)) inline const LaneRegisters &laneRegisters() {
  uintptr_t Frame = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (Frame - __ompsim_vgpu_fiber_slots.Base < __ompsim_vgpu_fiber_slots.Size) [[likely]]
    return *reinterpret_cast<const LaneRegisters *>(laneRegistersOf(Frame & ~(FiberSlotBytes - 1)));
  return *__ompsim_vgpu_registers();
}

} // namespace ompsim::vgpu

#endif // OMPSIM_DEVICE_VGPU_VIRTUALGPU_H

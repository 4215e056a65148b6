//===- Hardware.h - the GPU device runtime's hardware layer -----*- C++ -*-===//
//
// Everything ompsim's GPU device runtime asks of the hardware, in one place:
// thread and block ids and dimensions, the warp (lane id, active mask, sync,
// shuffle, ballot), the block barrier, fences, atomics and the clock. The rest
// of the runtime is target-independent C++ over these functions; on nvptx64
// they are NVVM builtins, on amdgcn AMDGPU builtins. Built for the simulated
// GPU (OMPSIM_GPU_SIM: x86-64 bitcode the executor links into a GPU image it
// retargets), they are calls into the virtual GPU's block runner, whose
// threads are fibers (runtime/device/vgpu/VirtualGpu.h).
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_GPUDEVICE_HARDWARE_H
#define OMPSIM_GPUDEVICE_HARDWARE_H

#include "Abi.h"

#if !defined(__NVPTX__) && !defined(__AMDGPU__) && !defined(OMPSIM_GPU_SIM)
#error "the GPU device runtime builds for nvptx64, amdgcn or the simulated GPU only"
#endif

#include "../../device/vgpu/BarrierSite.h"
#if defined(OMPSIM_GPU_SIM)
#include "../../device/vgpu/VirtualGpu.h"
#endif

/// The address an entry point of the runtime returns to, in the program's
/// code (a BarrierSite's Code): only the simulated GPU asks for it.
#if defined(OMPSIM_GPU_SIM)
#define OMPSIM_GPU_CALLER() __builtin_return_address(0)
#else
#define OMPSIM_GPU_CALLER() nullptr
#endif

namespace ompsim::gpu::hw {

using BarrierSite = vgpu::BarrierSite;
/// Starts thread T's run of a parallel region the simulated GPU's executor
/// split at its barriers (a coroutine), which leaves the barrier it
/// suspends at in *Site; gives its handle.
using RoundStartFn = void *(*)(void *Context, uint32_t T, const BarrierSite **Site);

#if defined(OMPSIM_GPU_SIM)
/// The calling thread's special registers (read from its fiber, no call).
inline const vgpu::LaneRegisters &registers() { return vgpu::laneRegisters(); }
inline uint32_t dimension(int Dim) { return Dim >= 0 && Dim < 3 ? uint32_t(Dim) : 0; }

/// The image's architecture decides: 32 lanes for nvptx64, 64 for amdgcn.
inline uint32_t warpSize() { return registers().WarpSize; }
/// A lane waiting at a barrier never holds up the rest of its warp (each
/// thread is a fiber of its own).
inline constexpr bool LanesWaitApart = false;
/// A block's threads start in thread order, each running until it first
/// waits (vgpu/BlockRunner.h): what thread 0 writes before it first waits
/// (a barrier, a spin) comes before any other thread of the block starts.
inline constexpr bool ThreadZeroRunsFirst = true;

inline uint32_t threadIdInBlock() { return registers().ThreadId[0]; }
inline uint32_t threadId(int Dim) { return registers().ThreadId[dimension(Dim)]; }
inline uint32_t blockDim(int Dim) { return registers().BlockDim[dimension(Dim)]; }
inline uint32_t blockId(int Dim) { return registers().BlockId[dimension(Dim)]; }
inline uint32_t gridDim(int Dim) { return registers().GridDim[dimension(Dim)]; }
inline uint32_t laneId() { return registers().LaneId; }
/// The block's state of `Bytes` (the runtime's team state, which a GPU
/// keeps in the block's shared memory).
inline void *blockState(uint64_t Bytes) {
  const vgpu::LaneRegisters &R = registers();
  return R.BlockStateBytes >= Bytes ? R.BlockState : __ompsim_vgpu_block_state(Bytes);
}
inline uint64_t activeMask() { return __ompsim_vgpu_active_mask(); }
inline void syncWarp(uint64_t Mask) { __ompsim_vgpu_sync_warp(Mask); }
inline void syncBlock() { __ompsim_vgpu_sync_block(); }
/// `Count` of the block's threads (a generic-mode parallel region's).
inline void syncThreads(uint32_t Count) { __ompsim_vgpu_sync_threads(Count); }
/// The two at a program's barrier: the simulated GPU names the barriers of
/// a block whose threads wait at different ones.
inline void syncBlockAt(const BarrierSite &Site) { __ompsim_vgpu_sync_block_at(&Site); }
inline void syncThreadsAt(uint32_t Count, const BarrierSite &Site) {
  __ompsim_vgpu_sync_threads_at(Count, &Site);
}
inline int32_t shuffleIdx(uint64_t Mask, int32_t Value, uint32_t Lane, uint32_t Width) {
  uint32_t Self = laneId();
  uint32_t Index = (Lane & (Width - 1)) + (Self & ~(Width - 1));
  return __ompsim_vgpu_shuffle(Mask, Value, Index);
}
inline int32_t shuffleDown(uint64_t Mask, int32_t Value, uint32_t Delta, uint32_t Width) {
  uint32_t Within = laneId() & (Width - 1);
  return shuffleIdx(Mask, Value, Within + Delta < Width ? Within + Delta : Within, Width);
}
inline uint64_t ballot(uint64_t Mask, bool Predicate) { return __ompsim_vgpu_ballot(Mask, Predicate); }
inline void fenceBlock() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void fenceDevice() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void fenceSystem() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
/// A spinning thread lets its block's other threads run.
inline void pause() { __ompsim_vgpu_pause(); }
/// The calling thread took or gave back a lock (the checker's lock sets).
inline void lockTaken(const void *Lock) { __ompsim_vgpu_lock_taken(Lock); }
inline void lockGiven(const void *Lock) { __ompsim_vgpu_lock_given(Lock); }
inline uint64_t nanoseconds() { return __ompsim_vgpu_nanoseconds(); }
[[noreturn]] inline void trap() { __ompsim_vgpu_fail("a trap"); }
/// The block runs as loops: thread 0 alone runs the kernel's code outside
/// parallel regions, and forEachThread() a region's threads one after the
/// other (the executor found the kernel meets no barrier, warp collective
/// or spin but at its regions' ends, simulator/src/gpu/BlockLoops.h).
inline bool blockRunsAsLoops() { return __ompsim_vgpu_block_runs_as_loops() != 0; }
inline void forEachThread(uint32_t Count, void (*Fn)(void *, uint32_t), void *Context) {
  __ompsim_vgpu_for_each_thread(Count, Fn, Context);
}
/// In a block that runs as loops, the running code goes on as thread `T`
/// (a generic-mode kernel's main thread).
inline void runAsThread(uint32_t T) { __ompsim_vgpu_run_as_thread(T); }
/// In a block that runs as loops: a region the executor split at its
/// barriers, its threads below `Count` in rounds, each started by `Start`
/// (__ompsim_vgpu_for_each_thread_in_rounds). `End` is the region's end,
/// its barriers count `BarrierCount` threads (0: the block's), and the
/// block's threads outside the region below `WaitingOutside` wait at a
/// barrier of the runtime, the rest having finished.
inline void forEachThreadInRounds(uint32_t Count, RoundStartFn Start, void *Context, const BarrierSite &End,
                                  uint32_t BarrierCount, uint32_t WaitingOutside) {
  const vgpu::RoundEnd Where = {&End, BarrierCount, WaitingOutside};
  __ompsim_vgpu_for_each_thread_in_rounds(Count, Start, Context, &Where);
}
#elif defined(__NVPTX__)
inline constexpr uint32_t WarpSize = 32;
/// A warp's lanes may wait at different barriers (independent thread
/// scheduling, sm_70 and later): the main warp's other lanes wait in the
/// generic-mode state machine beside the main thread.
inline constexpr bool LanesWaitApart = true;
inline constexpr bool ThreadZeroRunsFirst = false;

inline uint32_t threadIdInBlock() { return __nvvm_read_ptx_sreg_tid_x(); }
inline uint32_t threadId(int Dim) {
  return Dim == 0 ? __nvvm_read_ptx_sreg_tid_x()
                  : (Dim == 1 ? __nvvm_read_ptx_sreg_tid_y() : __nvvm_read_ptx_sreg_tid_z());
}
inline uint32_t blockDim(int Dim) {
  return Dim == 0 ? __nvvm_read_ptx_sreg_ntid_x()
                  : (Dim == 1 ? __nvvm_read_ptx_sreg_ntid_y() : __nvvm_read_ptx_sreg_ntid_z());
}
inline uint32_t blockId(int Dim) {
  return Dim == 0 ? __nvvm_read_ptx_sreg_ctaid_x()
                  : (Dim == 1 ? __nvvm_read_ptx_sreg_ctaid_y() : __nvvm_read_ptx_sreg_ctaid_z());
}
inline uint32_t gridDim(int Dim) {
  return Dim == 0 ? __nvvm_read_ptx_sreg_nctaid_x()
                  : (Dim == 1 ? __nvvm_read_ptx_sreg_nctaid_y() : __nvvm_read_ptx_sreg_nctaid_z());
}
inline uint32_t laneId() { return __nvvm_read_ptx_sreg_laneid(); }
inline uint64_t activeMask() { return __nvvm_activemask(); }
inline void syncWarp(uint64_t Mask) { __nvvm_bar_warp_sync(uint32_t(Mask)); }
/// Every thread of the block.
inline void syncBlock() { __nvvm_barrier_sync(0); }
inline int32_t shuffleDown(uint64_t Mask, int32_t Value, uint32_t Delta, uint32_t Width) {
  return __nvvm_shfl_sync_down_i32(uint32_t(Mask), Value, Delta, ((WarpSize - Width) << 8) | 0x1f);
}
inline int32_t shuffleIdx(uint64_t Mask, int32_t Value, uint32_t Lane, uint32_t Width) {
  return __nvvm_shfl_sync_idx_i32(uint32_t(Mask), Value, Lane, ((WarpSize - Width) << 8) | 0x1f);
}
inline uint64_t ballot(uint64_t Mask, bool Predicate) {
  return __nvvm_vote_ballot_sync(uint32_t(Mask), Predicate);
}
inline void fenceBlock() { __nvvm_membar_cta(); }
inline void fenceDevice() { __nvvm_membar_gl(); }
inline void fenceSystem() { __nvvm_membar_sys(); }
/// A spinning thread waits without a sleep: nanosleep needs sm_70 features
/// the generic bitcode does not assume.
inline void pause() {}
/// Nanoseconds of the GPU's global timer.
inline uint64_t nanoseconds() { return __nvvm_read_ptx_sreg_globaltimer(); }
#else
inline constexpr uint32_t WarpSize = 64;
/// A wavefront's lanes run one path at a time: a lane waiting at a barrier
/// while another lane of its wave runs elsewhere would never be released, so
/// the main wave's other lanes leave the kernel instead.
inline constexpr bool LanesWaitApart = false;
inline constexpr bool ThreadZeroRunsFirst = false;

inline uint32_t threadIdInBlock() { return __builtin_amdgcn_workitem_id_x(); }
inline uint32_t threadId(int Dim) {
  return Dim == 0 ? __builtin_amdgcn_workitem_id_x()
                  : (Dim == 1 ? __builtin_amdgcn_workitem_id_y() : __builtin_amdgcn_workitem_id_z());
}
inline uint32_t blockDim(int Dim) {
  return Dim == 0 ? __builtin_amdgcn_workgroup_size_x()
                  : (Dim == 1 ? __builtin_amdgcn_workgroup_size_y() : __builtin_amdgcn_workgroup_size_z());
}
inline uint32_t blockId(int Dim) {
  return Dim == 0 ? __builtin_amdgcn_workgroup_id_x()
                  : (Dim == 1 ? __builtin_amdgcn_workgroup_id_y() : __builtin_amdgcn_workgroup_id_z());
}
inline uint32_t gridDim(int Dim) {
  uint32_t Grid = Dim == 0 ? __builtin_amdgcn_grid_size_x()
                           : (Dim == 1 ? __builtin_amdgcn_grid_size_y() : __builtin_amdgcn_grid_size_z());
  uint32_t Block = blockDim(Dim);
  return (Grid + Block - 1) / Block;
}
inline uint32_t laneId() { return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u)); }
inline uint64_t activeMask() { return __builtin_amdgcn_read_exec(); }
inline void syncWarp(uint64_t) { __builtin_amdgcn_wave_barrier(); }
inline void syncBlock() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
inline int32_t shuffleIdx(uint64_t, int32_t Value, uint32_t Lane, uint32_t Width) {
  uint32_t Self = laneId();
  uint32_t Index = (Lane & (Width - 1)) + (Self & ~(Width - 1));
  return __builtin_amdgcn_ds_bpermute(int32_t(Index << 2), Value);
}
inline int32_t shuffleDown(uint64_t Mask, int32_t Value, uint32_t Delta, uint32_t Width) {
  uint32_t Self = laneId();
  uint32_t Within = Self & (Width - 1);
  return shuffleIdx(Mask, Value, Within + Delta < Width ? Within + Delta : Within, Width);
}
inline uint64_t ballot(uint64_t Mask, bool Predicate) {
  return __builtin_amdgcn_ballot_w64(Predicate) & Mask;
}
inline void fenceBlock() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "workgroup"); }
inline void fenceDevice() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
inline void fenceSystem() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, ""); }
inline void pause() { __builtin_amdgcn_s_sleep(2); }
/// The constant 100 MHz real-time counter of gfx90a and later.
inline uint64_t nanoseconds() { return __builtin_readsteadycounter() * 10; }
#endif

#if !defined(OMPSIM_GPU_SIM)
inline constexpr uint32_t warpSize() { return WarpSize; }
/// Only the simulated GPU's checker keeps lock sets.
inline void lockTaken(const void *) {}
inline void lockGiven(const void *) {}
/// A GPU's barriers carry no site: only the simulated GPU names them.
inline void syncBlockAt(const BarrierSite &) { syncBlock(); }
[[noreturn]] inline void trap() { __builtin_trap(); }
/// A GPU runs a block's threads at once, never as loops.
inline constexpr bool blockRunsAsLoops() { return false; }
inline void forEachThread(uint32_t, void (*)(void *, uint32_t), void *) { trap(); }
inline void runAsThread(uint32_t) { trap(); }
inline void forEachThreadInRounds(uint32_t, RoundStartFn, void *, const BarrierSite &, uint32_t, uint32_t) {
  trap();
}
#endif

/// Atomics on memory every thread of the device sees.
template <typename T> T atomicLoad(T *P) { return __atomic_load_n(P, __ATOMIC_ACQUIRE); }
template <typename T> void atomicStore(T *P, T V) { __atomic_store_n(P, V, __ATOMIC_RELEASE); }
template <typename T> T atomicAdd(T *P, T V) { return __atomic_fetch_add(P, V, __ATOMIC_ACQ_REL); }
template <typename T> bool atomicCas(T *P, T Expected, T Desired) {
  return __atomic_compare_exchange_n(P, &Expected, Desired, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

} // namespace ompsim::gpu::hw

#endif // OMPSIM_GPUDEVICE_HARDWARE_H

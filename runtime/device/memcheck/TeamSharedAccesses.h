//===- TeamSharedAccesses.h - races and unwritten reads in team-shared memory -*- C++ -*-===//
//
// Under the checker every load, store, atomic and memory intrinsic of a GPU
// image's code first calls __ompsim_check_access (the JIT's instrumentation,
// simulator/src/gpu/CheckedAccesses.h; AccessCheck.cpp). For the bytes of the block's
// team-shared globals the device thread keeps, per byte, who last wrote it
// and who read it, with the block's barrier count and the warp's sync count
// at the time, and ends the launch with one line at the first access that
// - races: another thread of the block wrote the byte (or read it, for a
//   write) with no barrier of the block between the two, and for two lanes
//   of one warp no warp sync either (a GPU schedules a warp's lanes
//   independently), and the two are not both atomic;
// - reads a byte no thread of the block wrote (a GPU's team-shared memory
//   holds what the last block left).
// The block's dynamic shared memory (llvm_omp_target_dynamic_shared_alloc)
// is checked the same way, and for accesses past the bytes the launch
// asked for.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_MEMCHECK_TEAMSHAREDACCESSES_H
#define OMPSIM_DEVICE_MEMCHECK_TEAMSHAREDACCESSES_H

#include <cstdint>

namespace ompsim::vgpu {
class BlockRunner;
} // namespace ompsim::vgpu

namespace ompsim::device {

/// The calling device thread starts a block: none of its team-shared bytes
/// was written or read yet (TeamSharedGuards.cpp calls it).
void beginTeamSharedAccesses();

/// Checks an access of `R`'s running thread (__ompsim_check_access's
/// arguments) when `Addr` is the block's team-shared memory, and says
/// whether it is.
bool checkTeamSharedAccess(const vgpu::BlockRunner &R, const void *Addr, uint64_t Bytes, uint32_t Kind,
                           const char *Site, uint64_t Value);

/// The same for the block's dynamic shared memory
/// (llvm_omp_target_dynamic_shared_alloc), whose histories start anew in
/// each block; an access that runs past the bytes the launch asked for
/// ends the launch too.
bool checkDynamicSharedAccess(const vgpu::BlockRunner &R, const void *Addr, uint64_t Bytes, uint32_t Kind,
                              const char *Site, uint64_t Value);

} // namespace ompsim::device

#endif // OMPSIM_DEVICE_MEMCHECK_TEAMSHAREDACCESSES_H

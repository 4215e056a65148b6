//===- WarpCheck.h - a program's warp collectives, as CUDA's rules say -*- C++ -*-===//
//
// A program's shuffle or ballot (ompx_shfl_down_sync, ompx_ballot_sync) on
// a warp of 32 lanes, NVIDIA's, follows CUDA's rules for __shfl_sync and
// __ballot_sync: the caller's mask names the caller; every lane the mask
// names that has not finished makes the same call; a shuffle reads only a
// lane that takes part. The block runner checks them (a GPU hangs, or
// gives an undefined value) and a break ends the launch with one of these
// lines. AMD's warps of 64 ignore the mask, and are not checked.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_VGPU_WARPCHECK_H
#define OMPSIM_DEVICE_VGPU_WARPCHECK_H

#include <cstdint>

namespace ompsim::vgpu {

/// Where a collective is: its block, its warp's lanes, and the program's
/// call.
struct WarpCall {
  uint32_t Block;
  uint32_t WarpSize;
  uint64_t Mask;
  const void *Program;
};

/// Thread `Caller` calls with a mask that does not name it.
[[noreturn]] void reportUnnamedCaller(const WarpCall &Call, uint32_t Caller);

/// Thread `Caller` calls with a mask that names thread `Named`, which waits
/// at a barrier of the block: neither can go on.
[[noreturn]] void reportNamedLaneAtBarrier(const WarpCall &Call, uint32_t Caller, uint32_t Named);

/// Thread `T`, which the masks of the lanes `Arrived` name, goes to wait at
/// a barrier of the block instead of the collective they wait at.
[[noreturn]] void reportLaneLeft(const WarpCall &Call, uint32_t T, uint64_t Arrived);

/// Thread `Caller`'s shuffle reads lane `Source` of its warp, which `Why`
/// (did not take part).
[[noreturn]] void reportShuffleRead(const WarpCall &Call, uint32_t Caller, uint32_t Source, const char *Why);

} // namespace ompsim::vgpu

#endif // OMPSIM_DEVICE_VGPU_WARPCHECK_H

//===- TeamRaces.h - races between a kernel's teams on device memory -*- C++ -*-===//
//
// A GPU runs a kernel's blocks at once, and nothing but atomics and the
// kernel's end orders two of them: 64 teams adding to one mapped counter (or
// to one device-heap block) without an atomic lose updates there. Under the
// checker the virtual GPU runs a grid's blocks one after another
// (vgpu::setBlocksInOrder), so no update is lost, and the checker names the
// race instead: for each byte of device memory a launch touches, the
// launching device thread keeps the block that last wrote it and the first
// that read it, and the first access of another block that does not order
// with them (not both atomic, not under one lock) ends the launch with one
// line naming both blocks and both source lines.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_MEMCHECK_TEAMRACES_H
#define OMPSIM_DEVICE_MEMCHECK_TEAMRACES_H

#include <cstdint>

namespace ompsim::vgpu {
class BlockRunner;
} // namespace ompsim::vgpu

namespace ompsim::device {

/// The device memory whose accesses are checked between teams: the
/// executor's arena (mapped data, `omp_target_alloc`ed memory, the images'
/// globals). The executor sets it at start-up under the checker.
void watchDeviceMemory(uint64_t Base, uint64_t Bytes);

/// Checks an access of `R`'s running thread (__ompsim_check_access's
/// arguments) against the other blocks of its launch when `Addr` is watched
/// device memory or lies in a live block of the checked device heap
/// (CheckedHeap.h).
void checkTeamRace(const vgpu::BlockRunner &R, const void *Addr, uint64_t Bytes, uint32_t Kind,
                   const char *Site, uint64_t Value);

} // namespace ompsim::device

#endif // OMPSIM_DEVICE_MEMCHECK_TEAMRACES_H

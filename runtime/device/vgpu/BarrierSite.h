//===- BarrierSite.h - a program's barrier, as the virtual GPU names it -===//
//
// Shared by the virtual GPU (BlockRunner.h) and ompsim's GPU device runtime
// (runtime/gpu-device), which passes a site with each barrier a program
// meets; built for a GPU, the runtime ignores it. Freestanding: no library
// header.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_VGPU_BARRIERSITE_H
#define OMPSIM_DEVICE_VGPU_BARRIERSITE_H

#include <stdint.h>

namespace ompsim::vgpu {

/// A program's barrier, as a thread waits at it: the simulated GPU names
/// the barriers when a block's threads wait at different ones, which a GPU
/// hangs on or passes wrongly. Barriers of the GPU device runtime's own
/// (a kernel's start, a region's start, a worker's wait for work) have
/// none: any thread may wait at one of them while others wait elsewhere.
struct BarrierSite {
  enum KindTy : uint32_t {
    Construct,    ///< an OpenMP barrier: `barrier`, or a construct's implicit one
    RegionEnd,    ///< the end of a parallel region, as the region's threads reach it
    BlockBarrier, ///< ompx_sync_block (a CUDA-style __syncthreads)
  };
  /// The code that called the barrier (the runtime entry point's return
  /// address): two barriers with different code are different barriers.
  const void *Code;
  /// The construct's source location, an OpenMP ident's psource
  /// (";file;function;line;column;;"; with -g), or null.
  const char *Source;
  KindTy Kind;
  /// The ident's flags for a Construct (an implicit barrier has 0x40 set).
  uint32_t IdentFlags;
};

} // namespace ompsim::vgpu

#endif // OMPSIM_DEVICE_VGPU_BARRIERSITE_H

// ompsim: what a launch carries besides its teams, threads and arguments,
// shared by the sim plugin's launch line and the device controller's
// mailbox: the y and z extents only a bare kernel's launch has
// (num_teams(x, y, z), thread_limit(x, y, z)), whether a GPU image's kernel
// is bare, and the block's dynamic shared memory.
#pragma once

#include <cstdint>

namespace ompsim {

struct LaunchOptions {
  /// The y and z extents of a bare kernel's launch: blocks, then threads per
  /// block (0: 1).
  uint32_t TeamsYZ[2] = {0, 0};
  uint32_t ThreadsYZ[2] = {0, 0};
  /// Non-zero for a GPU image's kernel: the warp size of its architecture
  /// (32 nvptx64, 64 amdgcn).
  uint32_t GpuWarpSize = 0;
  /// A GPU image's bare kernel (one without a kernel environment, which
  /// stock's plugins launch in bare mode): every thread of every block runs
  /// it.
  bool Bare = false;
  /// Bytes of dynamic shared memory each block of a GPU image's kernel gets
  /// (the ompx_dyn_cgroup_mem clause plus LIBOMPTARGET_SHARED_MEMORY_SIZE).
  uint32_t DynamicSharedBytes = 0;
};

} // namespace ompsim

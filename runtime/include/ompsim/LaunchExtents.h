// ompsim: the y and z extents of a launch, which only a bare kernel's launch
// has (num_teams(x, y, z), thread_limit(x, y, z)); shared by the sim plugin's
// launch line and the device controller's mailbox.
#pragma once

#include <cstdint>

namespace ompsim {

/// The y and z extents of a bare kernel's launch: blocks, then threads per
/// block (0: 1).
struct LaunchExtentsYZ {
  uint32_t Teams[2] = {0, 0};
  uint32_t Threads[2] = {0, 0};
};

} // namespace ompsim

//===- KernelLaunchTraces.h - stock's kernel launch record -----*- C++ -*-===//
//
// A device keeps its last kernel launches, as stock's GPU plugins do, with
// the host's stack at each launch when OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES
// asks for traces; a device fault lists them, the last one first.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_TRACKING_KERNELLAUNCHTRACES_H
#define OMPSIM_TRACKING_KERNELLAUNCHTRACES_H

#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <mutex>
#include <string>

namespace ompsim::tracking {

/// The last launches of one device's kernels.
class KernelLaunchTraces {
public:
  /// As many launches as stock's record keeps.
  static constexpr unsigned Capacity = 8;

  /// Records a launch of `Kernel` (its symbol name), with the host's stack
  /// when `WithTrace`.
  void launched(const std::string &Kernel, bool WithTrace);

  /// Stock's list of the launches, the last one first, the first
  /// `TracesToShow` with their stack traces.
  void print(llvm::raw_ostream &OS, uint32_t TracesToShow);

private:
  struct Launch {
    std::string Kernel; ///< "" for a slot not used yet
    std::string Trace;
  };
  std::mutex Mu;
  std::array<Launch, Capacity> Launches;
  unsigned Next = 0;
};

} // namespace ompsim::tracking

#endif // OMPSIM_TRACKING_KERNELLAUNCHTRACES_H

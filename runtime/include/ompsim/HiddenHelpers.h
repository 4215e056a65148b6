//===- HiddenHelpers.h - libomp's hidden helper threads ---------*- C++ -*-===//
//
// libomp runs every `target nowait` task (and its other hidden helper tasks)
// on a team of hidden helper threads of its own, while the thread that
// created the task goes on or waits in `taskwait`. Those threads have the
// global thread numbers 1..N, N = LIBOMP_NUM_HIDDEN_HELPER_THREADS (8 by
// default), unless LIBOMP_USE_HIDDEN_HELPER_TASK turns the tasks off.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <strings.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace ompsim {

/// libomp's hidden helper threads in this process, as libomp reads its
/// variables (0 when hidden helper tasks are off).
inline int32_t hiddenHelperThreads() {
  static const int32_t N = [] {
    const char *Use = std::getenv("LIBOMP_USE_HIDDEN_HELPER_TASK");
    if (Use && (!std::strcmp(Use, "0") || !strcasecmp(Use, "false") || !strcasecmp(Use, "off") ||
                !strcasecmp(Use, "no")))
      return 0;
    const char *Num = std::getenv("LIBOMP_NUM_HIDDEN_HELPER_THREADS");
    int Count = Num ? std::atoi(Num) : 8;
    return Count > 0 ? int32_t(Count) : 0;
  }();
  return N;
}

/// Whether libomp's global thread number `Gtid` is a hidden helper thread.
inline bool isHiddenHelperGtid(int32_t Gtid) { return Gtid >= 1 && Gtid <= hiddenHelperThreads(); }

} // namespace ompsim

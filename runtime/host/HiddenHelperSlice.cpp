//===- HiddenHelperSlice.cpp - scheduling of hidden helper threads ---------===//
//
// Part of ompsim's host runtime.
//
//===----------------------------------------------------------------------===//
#include "HiddenHelperSlice.h"

#include "ompsim/Config.h"
#include "ompsim/HiddenHelpers.h"
#include "ompsim/Trace.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

extern "C" int32_t __kmpc_global_thread_num(void *Loc);

namespace ompsim::host {
namespace {

using trace::Cat;

/// The kernel's `struct sched_attr` (its first version, 48 bytes, which
/// every kernel with sched_setattr takes). <linux/sched/types.h> has it but
/// clashes with glibc's <sched.h>, which has no sched_setattr wrapper.
struct KernelSchedAttr {
  uint32_t Size;
  uint32_t Policy;
  uint64_t Flags;
  int32_t Nice;
  uint32_t Priority;
  uint64_t Runtime; ///< for the normal policy: the custom slice (ns), 0 the kernel's
  uint64_t Deadline;
  uint64_t Period;
};
static_assert(sizeof(KernelSchedAttr) == 48, "SCHED_ATTR_SIZE_VER0");

/// What noteTargetThread() did on a thread.
enum class SliceRequest : uint8_t {
  NotYet,     ///< the thread has not run a target construct
  NotHelper,  ///< not a hidden helper thread (or the request is off)
  Requested,  ///< the slice was set
  LeftAlone,  ///< another policy, or a slice at most as long, was kept
  Unsupported ///< the kernel refused sched_getattr/sched_setattr
};

thread_local SliceRequest ThisThread = SliceRequest::NotYet;

SliceRequest requestSlice(uint64_t Nanos) {
  KernelSchedAttr Attr = {};
  if (::syscall(SYS_sched_getattr, 0, &Attr, sizeof Attr, 0) != 0)
    return SliceRequest::Unsupported;
  // Only a thread under the normal policy, and only ever a shorter slice: a
  // real-time, batch or idle policy, or a slice as short already, stays.
  // Kernels with custom slices (6.12 and later) report the slice in force,
  // the default one included; older ones report 0 and ignore the request.
  if (Attr.Policy != SCHED_OTHER || (Attr.Runtime != 0 && Attr.Runtime <= Nanos))
    return SliceRequest::LeftAlone;
  Attr.Size = sizeof Attr;
  Attr.Flags = 0;
  Attr.Runtime = Nanos;
  if (::syscall(SYS_sched_setattr, 0, &Attr, 0) != 0)
    return SliceRequest::Unsupported;
  return SliceRequest::Requested;
}

} // namespace

void noteTargetThread() {
  if (ThisThread != SliceRequest::NotYet)
    return;
  uint32_t Micros = config().HiddenHelperSliceUs;
  if (Micros == 0 || !isHiddenHelperGtid(__kmpc_global_thread_num(nullptr))) {
    ThisThread = SliceRequest::NotHelper;
    return;
  }
  ThisThread = requestSlice(uint64_t(Micros) * 1000);
  OMPSIM_TRACE_EVENT(Cat::Launch, "helper-slice")
      .num("slice_us", Micros)
      .str("result", ThisThread == SliceRequest::Requested   ? "set"
                     : ThisThread == SliceRequest::LeftAlone ? "left alone"
                                                             : "unsupported");
}

} // namespace ompsim::host

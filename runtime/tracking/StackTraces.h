//===- StackTraces.h - stack traces as stock's error reports show them -*- C++ -*-===//
//
// OFFLOAD_TRACK_ALLOCATION_TRACES and OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES
// keep the host's stack at each device allocation, free and kernel launch;
// stock's reports show them in the GPU plugins' format.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_TRACKING_STACKTRACES_H
#define OMPSIM_TRACKING_STACKTRACES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace ompsim::tracking {

/// The calling thread's stack from the caller of this folder's code, as
/// llvm::sys::PrintStackTrace writes it: one "#N 0xADDR function
/// file:line:col" line a frame, symbolized where an llvm-symbolizer is found
/// (LLVM_SYMBOLIZER_PATH, else LLVM 22's own).
std::string captureStackTrace();

/// Writes `Trace` as stock's reports do: "    #N 0xADDR ..." a frame,
/// numbered from 0, then an empty line; nothing for an empty trace.
void printStackTrace(llvm::raw_ostream &OS, llvm::StringRef Trace);

} // namespace ompsim::tracking

#endif // OMPSIM_TRACKING_STACKTRACES_H

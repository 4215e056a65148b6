//===- HiddenHelperSlice.h - scheduling of hidden helper threads -*- C++ -*-===//
//
// Part of ompsim's host runtime.
//
//===----------------------------------------------------------------------===//
#pragma once

namespace ompsim::host {

/// Called by every thread that runs a target construct: the first time one
/// of libomp's hidden helper threads does, asks the scheduler for a short
/// time slice for it (OMPSIM_HIDDEN_HELPER_SLICE_US).
///
/// Why: a `target nowait` task runs on a hidden helper thread while the
/// thread that created it spins in `taskwait` without yielding. On a machine
/// with no CPU to spare, a hidden helper thread that blocks (a sim launch
/// waiting for its executor, libomp handing the next task of a `depend` chain
/// to another helper) is woken behind such a spinner; Linux's EEVDF
/// scheduler (6.6 and later) lets the spinner finish its slice (about 3 ms)
/// first, and every step of the chain pays it. A thread with a shorter slice
/// than the one running gets the CPU when it is woken (6.12 and later), so
/// the chain goes on at once. Kernels that do not know the request ignore it;
/// a thread under another policy, or with a slice as short, is left alone.
void noteTargetThread();

} // namespace ompsim::host

// ompsim sim plugin: the translate trace of a device (OMPSIM_TRACE=translate),
// the host-pointer lookups its kernels made, per launch and over the run.
#pragma once

#include "SimPlugin.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace ompsim::sim {

/// Emits the per-device translate summary of the whole run (at exit or deinit).
void emitTranslateExitSummary(SimDevice &D, int32_t Id);

/// Emits the lookups device `Id` recorded since the last call, as kernel
/// `Kernel`'s, and adds them to the device's counts for the exit summary.
/// Does nothing unless the translate category is traced.
void emitTranslateTrace(SimDevice &D, int32_t Id, llvm::StringRef Kernel);

} // namespace ompsim::sim

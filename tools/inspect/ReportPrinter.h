// The two forms ompsim-inspect prints a Report in: a human listing and JSON.
#pragma once

#include "OffloadInspector.h"

#include <llvm/Support/JSON.h>

#include <string>

namespace ompsim::inspect {

/// The human listing of `R`: file type, device images, entries, indirect targets.
std::string humanReport(const Report &R);

/// Writes `R` as one JSON object to `J`.
void jsonReport(llvm::json::OStream &J, const Report &R);

} // namespace ompsim::inspect

// Helpers shared by the ABI files beside Api.cpp (AllocApi.cpp,
// LegacyApi.cpp, InteropApi.cpp): device lookup for omp_* calls and the
// conversion of an llvm::Error into an "ompsim: ..." line.
#pragma once

#include "Runtime.h"

#include "../events/OffloadEvents.h"

#include "ompsim/Trace.h"

#include <cstdio>
#include <string>

/// Opens an offload API call on this thread: the events it causes carry its
/// return address (OMPT's codeptr_ra). The first statement of every entry
/// point that maps, copies, allocates or launches.
#define OMPSIM_API_CALL ::ompsim::events::ApiCall OmpsimApiCall(__builtin_return_address(0))

namespace ompsim::host {

/// The device an omp_*-style routine names: null for the initial device (the
/// host). An invalid number prints one error line and sets `Ok` to false.
inline Device *apiDeviceOrHost(int64_t DeviceNum, bool &Ok) {
  Ok = true;
  auto D = Runtime::get().device(DeviceNum);
  if (!D) {
    trace::error(llvm::toString(D.takeError()));
    Ok = false;
    return nullptr;
  }
  return *D;
}

/// True when the device's memory is the host's own (the in-process host
/// plugin): host pointers are valid on it and its pointers on the host.
inline bool sharesHostAddressSpace(Device &D) { return D.plugin().name() == "host"; }

/// Prints every device's mapping table to `Out` in stock's info format, the
/// header naming the block `Where` ("file:line:col"); the last device first
/// when `Reverse` (as stock's devices go at exit).
void dumpMappingTables(std::FILE *Out, const std::string &Where, bool Reverse = false);

} // namespace ompsim::host

// Runtime-control and inspection entry points: info flags, device info,
// mapping-table dumps, nowait queries, runtime init/deinit and
// record-replay, with the behaviour stock libomptarget 22 has with its host
// plugin.
#include "ApiHelpers.h"
#include "InfoLevel.h"
#include "StockMessages.h"

#include "../listeners/Listeners.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <string>

using namespace ompsim::host;

extern "C" const char *omp_get_uid_from_device(int DeviceNum);

namespace {

constexpr int TgtSuccess = 0; // OMP_TGT_SUCCESS
constexpr int TgtFail = ~0;   // OMP_TGT_FAIL

} // namespace

extern "C" {

void __tgt_rtl_init(void) { (void)Runtime::get(); }

// The runtime lives until the process exits; registered images are released
// by __tgt_unregister_lib.
void __tgt_rtl_deinit(void) {}

void __tgt_set_info_flag(uint32_t Bits) {
  setInfoLevel(Bits);
  if (Bits != 0)
    ompsim::listeners::subscribeInfoPrinter();
}

/// Prints what the device is to stdout; 1 on success, as stock.
int __tgt_print_device_info(int64_t DeviceNum) {
  bool Ok;
  Device *D = apiDeviceOrHost(DeviceNum, Ok);
  if (!Ok)
    return 0;
  if (!D) {
    ompsim::trace::error(
        fmt::format("__tgt_print_device_info: device {} is the host, not an offload device", DeviceNum));
    return 0;
  }
  std::string Text = fmt::format("    Device Type    ompsim {}\n    UID            {}\n", D->plugin().name(),
                                 omp_get_uid_from_device(static_cast<int>(DeviceNum)));
  std::fflush(stdout);
  std::fputs(Text.c_str(), stdout);
  std::fflush(stdout);
  return 1;
}

/// Prints every device's mapping table on stdout, in stock's info format.
void ompx_dump_mapping_tables(void) { dumpMappingTables(stdout, stock::ExitBlock); }

/// libomp calls this for a task whose target region left an async handle.
/// ompsim runs every region to completion and never creates a handle, so
/// any call is a misuse, fatal as on stock.
void __tgt_target_nowait_query(void **Handle) {
  Runtime::fatal(
      fmt::format("__tgt_target_nowait_query: invalid async handle {} (ompsim completes every target region "
                  "before returning and never hands out one)",
                  Handle ? fmt::ptr(*Handle) : nullptr));
}

/// Called at task synchronization points to flush interop objects; ompsim's
/// devices provide none (see InteropApi.cpp), so there is nothing to flush.
void __tgt_target_sync(void *, int, void *, void *) {}

// ---- record-replay ---------------------------------------------------------
// Stock's host plugin cannot record (it warns and carries on); neither can
// ompsim's devices. Only the leading parameters, common to every version of
// these entry points, are declared: the callee ignores the rest.

int __tgt_activate_record_replay(int64_t DeviceNum, uint64_t MemorySize, void *, bool IsRecord) {
  bool Ok;
  Device *D = apiDeviceOrHost(DeviceNum, Ok);
  if (!Ok)
    return TgtFail;
  if (!D) {
    ompsim::trace::error(
        fmt::format("__tgt_activate_record_replay: device {} is the host, not an offload device", DeviceNum));
    return TgtFail;
  }
  ompsim::trace::error(
      fmt::format("warning: record-replay is not available on device {} ({}); {} of {} bytes is not active",
                  DeviceNum, D->plugin().name(), IsRecord ? "recording" : "replaying", MemorySize));
  return TgtSuccess;
}

int __tgt_target_kernel_replay(ompsim_ident *, int64_t DeviceNum, void *RegionId) {
  Runtime &Rt = Runtime::get();
  if (Rt.policy() == OffloadPolicy::Disabled)
    return TgtFail;
  int64_t Resolved = Rt.resolveDeviceNumber(DeviceNum);
  if (Resolved == Rt.numDevices())
    return TgtFail; // the host: not offloaded, as stock
  bool Ok;
  Device *D = apiDeviceOrHost(Resolved, Ok);
  if (!Ok || !D)
    return TgtFail;
  ompsim::trace::error(fmt::format(
      "__tgt_target_kernel_replay: nothing was recorded for region {} on device {} (record-replay "
      "is not available on {} devices)",
      ompsim::trace::hostAddress(reinterpret_cast<uint64_t>(RegionId)), Resolved, D->plugin().name()));
  return TgtFail;
}

} // extern "C"

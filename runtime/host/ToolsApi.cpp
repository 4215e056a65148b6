// Runtime-control and inspection entry points: info flags, device info,
// mapping-table dumps, nowait queries, runtime init/deinit and
// record-replay, with the behaviour stock libomptarget 22 has with its host
// plugin.
#include "ApiHelpers.h"
#include "InfoLevel.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <string>

using namespace ompsim::host;

extern "C" const char *omp_get_uid_from_device(int device);

namespace {

constexpr int TgtSuccess = 0; // OMP_TGT_SUCCESS
constexpr int TgtFail = ~0;   // OMP_TGT_FAIL

/// One "omptarget device N info: ..." line of a table dump; stock prints
/// dumps on stdout.
void infoOut(int device, const std::string &text) {
  std::string line = fmt::format("omptarget device {} info: {}\n", device, text);
  std::fputs(line.c_str(), stdout);
}

std::string refCount(uint64_t count) {
  return count == MapEntry::Infinite ? std::string("INF") : std::to_string(count);
}

} // namespace

extern "C" {

void __tgt_rtl_init(void) { (void)Runtime::get(); }

// The runtime lives until the process exits; registered images are released
// by __tgt_unregister_lib.
void __tgt_rtl_deinit(void) {}

void __tgt_set_info_flag(uint32_t bits) { setInfoLevel(bits); }

/// Prints what the device is to stdout; 1 on success, as stock.
int __tgt_print_device_info(int64_t device) {
  bool ok;
  Device *d = apiDeviceOrHost(device, ok);
  if (!ok)
    return 0;
  if (!d) {
    ompsim::trace::error(
        fmt::format("__tgt_print_device_info: device {} is the host, not an offload device", device));
    return 0;
  }
  std::string text = fmt::format("    Device Type    ompsim {}\n    UID            {}\n", d->plugin().name(),
                                 omp_get_uid_from_device(static_cast<int>(device)));
  std::fflush(stdout);
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  return 1;
}

/// Prints every device's mapping table on stdout, in stock's info format.
void ompx_dump_mapping_tables(void) {
  int n = Runtime::get().numDevices();
  std::fflush(stdout);
  for (int i = 0; i < n; ++i) {
    bool ok;
    Device *d = apiDeviceOrHost(i, ok);
    if (!ok || !d)
      continue;
    MappingTable &table = d->mappingTable();
    std::lock_guard<std::recursive_mutex> lock(table.mutex());
    if (table.size() == 0) {
      infoOut(i, "OpenMP Host-Device pointer mappings table empty");
      continue;
    }
    infoOut(i, "OpenMP Host-Device pointer mappings after block at libomptarget:0:0:");
    infoOut(i, "Host Ptr           Target Ptr         Size (B) DynRefCount HoldRefCount Declaration");
    table.forEach([&](MapEntry &e) {
      infoOut(i,
              fmt::format("{:#018x} {:#018x} {:<8} {:<11} {:<12} {}", e.hstBegin, e.tgtBegin, e.size(),
                          refCount(e.dynamicRef), refCount(e.holdRef), e.name.empty() ? "unknown" : e.name));
    });
  }
}

/// libomp calls this for a task whose target region left an async handle.
/// ompsim runs every region to completion and never creates a handle, so
/// any call is a misuse, fatal as on stock.
void __tgt_target_nowait_query(void **handle) {
  Runtime::fatal(
      fmt::format("__tgt_target_nowait_query: invalid async handle {} (ompsim completes every target region "
                  "before returning and never hands out one)",
                  handle ? fmt::ptr(*handle) : nullptr));
}

/// Called at task synchronization points to flush interop objects; ompsim's
/// devices provide none (see InteropApi.cpp), so there is nothing to flush.
void __tgt_target_sync(void *, int, void *, void *) {}

// ---- record-replay ---------------------------------------------------------
// Stock's host plugin cannot record (it warns and carries on); neither can
// ompsim's devices. Only the leading parameters, common to every version of
// these entry points, are declared: the callee ignores the rest.

int __tgt_activate_record_replay(int64_t device, uint64_t memorySize, void *, bool isRecord) {
  bool ok;
  Device *d = apiDeviceOrHost(device, ok);
  if (!ok)
    return TgtFail;
  if (!d) {
    ompsim::trace::error(
        fmt::format("__tgt_activate_record_replay: device {} is the host, not an offload device", device));
    return TgtFail;
  }
  ompsim::trace::error(
      fmt::format("warning: record-replay is not available on device {} ({}); {} of {} bytes is not active",
                  device, d->plugin().name(), isRecord ? "recording" : "replaying", memorySize));
  return TgtSuccess;
}

int __tgt_target_kernel_replay(ompsim_ident *, int64_t device, void *regionId) {
  Runtime &rt = Runtime::get();
  if (rt.policy() == OffloadPolicy::Disabled)
    return TgtFail;
  int64_t resolved = rt.resolveDeviceNumber(device);
  if (resolved == rt.numDevices())
    return TgtFail; // the host: not offloaded, as stock
  bool ok;
  Device *d = apiDeviceOrHost(resolved, ok);
  if (!ok || !d)
    return TgtFail;
  ompsim::trace::error(fmt::format(
      "__tgt_target_kernel_replay: nothing was recorded for region {} on device {} (record-replay "
      "is not available on {} devices)",
      ompsim::trace::hostAddress(reinterpret_cast<uint64_t>(regionId)), resolved, d->plugin().name()));
  return TgtFail;
}

} // extern "C"

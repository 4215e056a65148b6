// LLVM's allocation extensions (llvm_omp_target_alloc_{host,shared,device},
// their frees, llvm_omp_target_lock_mem/unlock_mem) and the OpenMP 6.0
// device UID routines.
#include "ApiHelpers.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>

using namespace ompsim::host;

namespace {

constexpr int InvalidDevice = -2;   // omp_invalid_device
const char *const HostUid = "HOST"; // stock's UID of the initial device

const char *kindName(int32_t kind) {
  switch (kind) {
  case OMPSIM_ALLOC_HOST:
    return "host";
  case OMPSIM_ALLOC_SHARED:
    return "shared";
  case OMPSIM_ALLOC_DEVICE:
    return "device";
  default:
    return "default";
  }
}

void *allocKind(size_t size, int deviceNum, int32_t kind) {
  // Stock returns null for an empty request, before looking at the device.
  if (size == 0)
    return nullptr;
  bool ok;
  Device *d = apiDeviceOrHost(deviceNum, ok);
  if (!ok)
    return nullptr;
  if (!d)
    return std::malloc(size);
  // Host and shared memory must be usable from host and device; the plugin
  // refuses them where its memory is a separate address space (sim).
  void *p = d->plugin().fn().data_alloc(d->localId(), static_cast<int64_t>(size), nullptr, kind);
  if (!p) {
    std::string why =
        llvm::toString(d->pluginError(fmt::format("cannot allocate {} bytes on device {}", size, deviceNum)));
    ompsim::trace::error(fmt::format("llvm_omp_target_alloc_{}: {}", kindName(kind), why));
    return nullptr;
  }
  OMPSIM_TRACE_EVENT(Cat::Alloc, "alloc")
      .num("device", deviceNum)
      .num("size", static_cast<int64_t>(size))
      .str("kind", kindName(kind))
      .dev("ptr", reinterpret_cast<uint64_t>(p), "");
  return p;
}

void freeKind(void *ptr, int deviceNum, int32_t kind) {
  if (!ptr)
    return;
  bool ok;
  Device *d = apiDeviceOrHost(deviceNum, ok);
  if (!ok)
    return;
  if (!d)
    return std::free(ptr);
  OMPSIM_TRACE_EVENT(Cat::Alloc, "free")
      .num("device", deviceNum)
      .str("kind", kindName(kind))
      .dev("ptr", reinterpret_cast<uint64_t>(ptr), "");
  if (d->plugin().fn().data_delete(d->localId(), ptr, kind) != OMPSIM_OFFLOAD_SUCCESS)
    ompsim::trace::error(fmt::format(
        "llvm_omp_target_free_{}: {}", kindName(kind),
        llvm::toString(d->pluginError(fmt::format("cannot free {} on device {}", ptr, deviceNum)))));
}

/// The UID of device `d` (number `deviceNum`): the plugin's name and the
/// device's number within it, as stock builds "x86_64-0". Strings live as
/// long as the process, as the routine's result must.
const char *deviceUid(Device &d) {
  static std::mutex lock;
  static std::deque<std::string> uids;
  std::string uid = fmt::format("{}-{}", d.plugin().name(), d.localId());
  std::lock_guard<std::mutex> guard(lock);
  for (const std::string &known : uids)
    if (known == uid)
      return known.c_str();
  return uids.emplace_back(std::move(uid)).c_str();
}

} // namespace

extern "C" {

void *llvm_omp_target_alloc_host(size_t size, int device) {
  return allocKind(size, device, OMPSIM_ALLOC_HOST);
}
void *llvm_omp_target_alloc_shared(size_t size, int device) {
  return allocKind(size, device, OMPSIM_ALLOC_SHARED);
}
void *llvm_omp_target_alloc_device(size_t size, int device) {
  return allocKind(size, device, OMPSIM_ALLOC_DEVICE);
}
void llvm_omp_target_free_host(void *ptr, int device) { freeKind(ptr, device, OMPSIM_ALLOC_HOST); }
void llvm_omp_target_free_shared(void *ptr, int device) { freeKind(ptr, device, OMPSIM_ALLOC_SHARED); }
void llvm_omp_target_free_device(void *ptr, int device) { freeKind(ptr, device, OMPSIM_ALLOC_DEVICE); }

/// A CPU device has no dynamic shared ("cgroup") memory: null, as stock.
void *llvm_omp_target_dynamic_shared_alloc(void) { return nullptr; }

/// Makes [ptr, ptr + size) usable by the device and returns the address the
/// device sees it at: the pointer itself where the device shares the host's
/// memory (as stock's host plugin); a separate address space cannot.
void *llvm_omp_target_lock_mem(void *ptr, size_t size, int device) {
  if (size == 0)
    return nullptr;
  bool ok;
  Device *d = apiDeviceOrHost(device, ok);
  if (!ok)
    return nullptr;
  if (!d || sharesHostAddressSpace(*d))
    return ptr;
  ompsim::trace::error(
      fmt::format("llvm_omp_target_lock_mem: device {} ({}) has its own address space; host memory at {} "
                  "cannot be made accessible to it",
                  device, d->plugin().name(), ptr));
  return nullptr;
}

void llvm_omp_target_unlock_mem(void *, int device) {
  // Locking pins nothing on these devices, so there is nothing to undo; the
  // device number is still checked.
  bool ok;
  (void)apiDeviceOrHost(device, ok);
}

const char *omp_get_uid_from_device(int device) {
  if (device == InvalidDevice)
    return nullptr;
  bool ok;
  Device *d = apiDeviceOrHost(device, ok);
  if (!ok)
    return nullptr;
  return d ? deviceUid(*d) : HostUid;
}

int omp_get_device_from_uid(const char *uid) {
  if (!uid)
    return InvalidDevice;
  Runtime &rt = Runtime::get();
  int n = rt.numDevices();
  if (std::strcmp(uid, HostUid) == 0)
    return n;
  for (int i = 0; i < n; ++i) {
    bool ok;
    Device *d = apiDeviceOrHost(i, ok);
    if (ok && d && std::strcmp(deviceUid(*d), uid) == 0)
      return i;
  }
  return InvalidDevice;
}

} // extern "C"

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

const char *kindName(int32_t Kind) {
  switch (Kind) {
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

void *allocKind(size_t Size, int DeviceNum, int32_t Kind) {
  // Stock returns null for an empty request, before looking at the device.
  if (Size == 0)
    return nullptr;
  bool Ok;
  Device *D = apiDeviceOrHost(DeviceNum, Ok);
  if (!Ok)
    return nullptr;
  if (!D)
    return std::malloc(Size);
  // Host and shared memory must be usable from host and device; the plugin
  // refuses them where its memory is a separate address space (sim).
  auto Allocated = D->dataAlloc(Size, nullptr, Kind);
  if (!Allocated) {
    ompsim::trace::error(
        fmt::format("llvm_omp_target_alloc_{}: {}", kindName(Kind), llvm::toString(Allocated.takeError())));
    return nullptr;
  }
  void *P = reinterpret_cast<void *>(*Allocated);
  OMPSIM_TRACE_EVENT(Cat::Alloc, "alloc")
      .num("device", DeviceNum)
      .num("size", static_cast<int64_t>(Size))
      .str("kind", kindName(Kind))
      .dev("ptr", reinterpret_cast<uint64_t>(P), "");
  return P;
}

void freeKind(void *Ptr, int DeviceNum, int32_t Kind) {
  if (!Ptr)
    return;
  bool Ok;
  Device *D = apiDeviceOrHost(DeviceNum, Ok);
  if (!Ok)
    return;
  if (!D)
    return std::free(Ptr);
  OMPSIM_TRACE_EVENT(Cat::Alloc, "free")
      .num("device", DeviceNum)
      .str("kind", kindName(Kind))
      .dev("ptr", reinterpret_cast<uint64_t>(Ptr), "");
  if (auto Err = D->dataDelete(reinterpret_cast<uint64_t>(Ptr), Kind))
    ompsim::trace::error(
        fmt::format("llvm_omp_target_free_{}: {}", kindName(Kind), llvm::toString(std::move(Err))));
}

/// The UID of device `D` (number `DeviceNum`): the plugin's name and the
/// device's number within it, as stock builds "x86_64-0". Strings live as
/// long as the process, as the routine's result must.
const char *deviceUid(Device &D) {
  static std::mutex Lock;
  static std::deque<std::string> Uids;
  std::string Uid = fmt::format("{}-{}", D.plugin().name(), D.localId());
  std::lock_guard<std::mutex> Guard(Lock);
  for (const std::string &Known : Uids)
    if (Known == Uid)
      return Known.c_str();
  return Uids.emplace_back(std::move(Uid)).c_str();
}

} // namespace

extern "C" {

void *llvm_omp_target_alloc_host(size_t Size, int DeviceNum) {
  OMPSIM_API_CALL;
  return allocKind(Size, DeviceNum, OMPSIM_ALLOC_HOST);
}
void *llvm_omp_target_alloc_shared(size_t Size, int DeviceNum) {
  OMPSIM_API_CALL;
  return allocKind(Size, DeviceNum, OMPSIM_ALLOC_SHARED);
}
void *llvm_omp_target_alloc_device(size_t Size, int DeviceNum) {
  OMPSIM_API_CALL;
  return allocKind(Size, DeviceNum, OMPSIM_ALLOC_DEVICE);
}
void llvm_omp_target_free_host(void *Ptr, int DeviceNum) { freeKind(Ptr, DeviceNum, OMPSIM_ALLOC_HOST); }
void llvm_omp_target_free_shared(void *Ptr, int DeviceNum) { freeKind(Ptr, DeviceNum, OMPSIM_ALLOC_SHARED); }
void llvm_omp_target_free_device(void *Ptr, int DeviceNum) { freeKind(Ptr, DeviceNum, OMPSIM_ALLOC_DEVICE); }

/// A CPU device has no dynamic shared ("cgroup") memory: null, as stock.
void *llvm_omp_target_dynamic_shared_alloc(void) { return nullptr; }

/// Makes [ptr, ptr + size) usable by the device and returns the address the
/// device sees it at: the pointer itself where the device shares the host's
/// memory (as stock's host plugin); a separate address space cannot.
void *llvm_omp_target_lock_mem(void *Ptr, size_t Size, int DeviceNum) {
  OMPSIM_API_CALL;
  if (Size == 0)
    return nullptr;
  bool Ok;
  Device *D = apiDeviceOrHost(DeviceNum, Ok);
  if (!Ok)
    return nullptr;
  if (!D || sharesHostAddressSpace(*D))
    return Ptr;
  ompsim::trace::error(
      fmt::format("llvm_omp_target_lock_mem: device {} ({}) has its own address space; host memory at {} "
                  "cannot be made accessible to it",
                  DeviceNum, D->plugin().name(), Ptr));
  return nullptr;
}

void llvm_omp_target_unlock_mem(void *, int DeviceNum) {
  OMPSIM_API_CALL;
  // Locking pins nothing on these devices, so there is nothing to undo; the
  // device number is still checked.
  bool Ok;
  (void)apiDeviceOrHost(DeviceNum, Ok);
}

const char *omp_get_uid_from_device(int DeviceNum) {
  if (DeviceNum == InvalidDevice)
    return nullptr;
  bool Ok;
  Device *D = apiDeviceOrHost(DeviceNum, Ok);
  if (!Ok)
    return nullptr;
  return D ? deviceUid(*D) : HostUid;
}

int omp_get_device_from_uid(const char *Uid) {
  if (!Uid)
    return InvalidDevice;
  Runtime &Rt = Runtime::get();
  int N = Rt.numDevices();
  if (std::strcmp(Uid, HostUid) == 0)
    return N;
  for (int I = 0; I < N; ++I) {
    bool Ok;
    Device *D = apiDeviceOrHost(I, Ok);
    if (Ok && D && std::strcmp(deviceUid(*D), Uid) == 0)
      return I;
  }
  return InvalidDevice;
}

} // extern "C"

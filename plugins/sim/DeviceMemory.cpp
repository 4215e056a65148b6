// ompsim sim plugin: device memory in the plugin C ABI: allocating and
// freeing it, copies to, from and between devices, and saying whose device
// memory an address is when a copy is handed one as host memory.
#include "SimPlugin.h"

#include "ompsim/HostSymbolizer.h"
#include "ompsim/Trace.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <string>
#include <vector>

namespace ompsim::sim {
namespace {

using llvm::Error;

/// Who made a device allocation, in words.
std::string allocatedBy(const SimDevice::Allocation &A) {
  if (A.HostPtr) {
    auto Sym = HostSymbolizer::get().lookup(A.HostPtr);
    std::string Named = !Sym               ? ""
                        : Sym->Offset == 0 ? fmt::format(" ('{}')", Sym->Name)
                                           : fmt::format(" ('{}+0x{:x}')", Sym->Name, Sym->Offset);
    return fmt::format("mapping host 0x{:x}{}", A.HostPtr, Named);
  }
  switch (A.Kind) {
  case OMPSIM_ALLOC_DEVICE:
    return "omp_target_alloc_device";
  case OMPSIM_ALLOC_HOST:
    return "llvm_omp_target_alloc_host";
  case OMPSIM_ALLOC_SHARED:
    return "llvm_omp_target_alloc_shared";
  default:
    return "omp_target_alloc";
  }
}

} // namespace

std::string describeDeviceMemory(uint64_t Addr, uint64_t Size) {
  SimPlugin &P = SimPlugin::get();
  auto MappedHere = [&] {
    // A host mapping may lie in a device's address range; it is host memory then.
    uint64_t Page = uint64_t(::sysconf(_SC_PAGESIZE));
    return ::msync(reinterpret_cast<void *>(Addr & ~(Page - 1)), 1, MS_ASYNC) == 0;
  };
  for (size_t Id = 0; Id < P.Devices.size(); ++Id) {
    SimDevice &D = P.Devices[Id];
    DeviceController *C;
    {
      // Another host thread may be bringing this device up (p.mu held).
      std::lock_guard<std::mutex> Lock(P.Mu);
      C = D.Controller.get();
    }
    if (!C)
      continue;
    uint64_t Base = C->arenaBase(), End = Base + C->arenaSize();
    if (Addr >= End || Addr + std::max<uint64_t>(Size, 1) <= Base || MappedHere())
      continue;
    {
      std::lock_guard<std::mutex> Lock(P.AllocMu);
      auto It = D.Allocations.upper_bound(Addr);
      if (It != D.Allocations.begin()) {
        --It;
        if (Addr < It->first + std::max<uint64_t>(It->second.Size, 1))
          return fmt::format("device {}'s allocation 0x{:x} ({} bytes, made by {})", Id, It->first,
                             It->second.Size, allocatedBy(It->second));
      }
    }
    std::string Sym = C->symbolize(Addr);
    return Sym.empty() ? fmt::format("device {}'s memory", Id)
                       : fmt::format("device {}'s memory (dev:{})", Id, Sym);
  }
  return "";
}

namespace {

/// One host<->device copy for data_submit/data_retrieve: `copy(controller,
/// device address, bytes)` does it; a negative size or a failed copy becomes
/// the device's last error, a done copy a transfer trace event.
template <typename CopyT>
int32_t copyOnDevice(int32_t Id, const char *Event, const void *TgtPtr, const void *HstPtr, int64_t Size,
                     CopyT Copy) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return OMPSIM_OFFLOAD_FAIL;
  if (Size < 0)
    return failWith(D, fmt::format("device {}: negative copy size {}", Id, Size));
  auto Tgt = reinterpret_cast<uint64_t>(TgtPtr);
  // A device pointer passed as the host side (omp_target_memcpy with the host
  // as its device, a map of device memory) is not host memory here: say whose
  // it is rather than fault in the host process.
  std::string Owner = describeDeviceMemory(reinterpret_cast<uint64_t>(HstPtr), uint64_t(Size));
  if (!Owner.empty()) {
    const char *Direction = std::strcmp(Event, "submit") == 0 ? "to the device from" : "from the device to";
    return failWith(D, fmt::format("device {}: copying {} bytes {} host address {}: that is not host "
                                   "memory but {}; pass device memory with its device number and map "
                                   "host data only",
                                   Id, Size, Direction, HstPtr, Owner));
  }
  if (Error Err = Copy(*C, Tgt, uint64_t(Size)))
    return failWith(D, std::move(Err));
  OMPSIM_TRACE_EVENT(Cat::Transfer, Event).num("device", Id).dev("tgt", Tgt, "").num("size", Size);
  return OMPSIM_OFFLOAD_SUCCESS;
}

} // namespace
} // namespace ompsim::sim

using namespace ompsim;
using namespace ompsim::sim;

OMPSIM_EXPORT void *__tgt_rtl_data_alloc(int32_t Id, int64_t Size, void *HostPtr, int32_t Kind) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return nullptr;
  if (Size < 0) { // a size_t of 2^63 or more, passed as int64_t
    TLastError =
        fmt::format("device {}: cannot allocate {} bytes: larger than any address space", Id, uint64_t(Size));
    return nullptr;
  }
  uint64_t Addr = 0;
  if (Kind == OMPSIM_ALLOC_HOST || Kind == OMPSIM_ALLOC_SHARED) {
    // Pinned host and managed memory: both sides use it at one address, as
    // on a discrete GPU; the rest of device memory stays the device's own.
    auto Visible = C->allocateHostVisible(uint64_t(Size));
    if (!Visible) {
      TLastError = llvm::toString(Visible.takeError());
      return nullptr;
    }
    Addr = *Visible;
  } else {
    Addr = C->allocate(uint64_t(Size));
  }
  if (!Addr)
    TLastError = fmt::format("device {}: out of device memory allocating {} bytes "
                             "(OMPSIM_DEVICE_MEMORY)",
                             Id, Size);
  else {
    std::lock_guard<std::mutex> Lock(SimPlugin::get().AllocMu);
    D->Allocations[Addr] = {uint64_t(Size), reinterpret_cast<uint64_t>(HostPtr), Kind};
  }
  return reinterpret_cast<void *>(Addr);
}

OMPSIM_EXPORT int32_t __tgt_rtl_data_delete(int32_t Id, void *TgtPtr, int32_t Kind) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return OMPSIM_OFFLOAD_FAIL;
  if (!TgtPtr)
    return OMPSIM_OFFLOAD_SUCCESS;
  if (auto Err = C->release(reinterpret_cast<uint64_t>(TgtPtr)))
    return failWith(D, std::move(Err));
  std::lock_guard<std::mutex> Lock(SimPlugin::get().AllocMu);
  D->Allocations.erase(reinterpret_cast<uint64_t>(TgtPtr));
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_data_submit(int32_t Id, void *TgtPtr, const void *HstPtr, int64_t Size) {
  return copyOnDevice(Id, "submit", TgtPtr, HstPtr, Size,
                      [&](DeviceController &C, uint64_t Tgt, uint64_t N) { return C.write(Tgt, HstPtr, N); });
}

OMPSIM_EXPORT int32_t __tgt_rtl_data_retrieve(int32_t Id, void *HstPtr, const void *TgtPtr, int64_t Size) {
  return copyOnDevice(Id, "retrieve", TgtPtr, HstPtr, Size,
                      [&](DeviceController &C, uint64_t Tgt, uint64_t N) { return C.read(HstPtr, Tgt, N); });
}

OMPSIM_EXPORT int32_t __tgt_rtl_data_exchange(int32_t SrcId, void *SrcPtr, int32_t DstId, void *DstPtr,
                                              int64_t Size) {
  SimDevice *Sd, *Dd;
  DeviceController *Src = controllerOf(SrcId, Sd);
  DeviceController *Dst = controllerOf(DstId, Dd);
  if (!Src || !Dst)
    return OMPSIM_OFFLOAD_FAIL;
  std::vector<char> Buf(size_t(std::max<int64_t>(Size, 0)));
  if (auto Err = Src->read(Buf.data(), reinterpret_cast<uint64_t>(SrcPtr), Buf.size()))
    return failWith(Sd, std::move(Err));
  if (auto Err = Dst->write(reinterpret_cast<uint64_t>(DstPtr), Buf.data(), Buf.size()))
    return failWith(Dd, std::move(Err));
  return OMPSIM_OFFLOAD_SUCCESS;
}

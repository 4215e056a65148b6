// ompsim sim plugin: what the runtime asks after a call failed, in the plugin
// C ABI: the calling thread's last error, the device's last data fault and
// the name of a device address.
#include "SimPlugin.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>

using namespace ompsim;
using namespace ompsim::sim;

OMPSIM_EXPORT const char *__tgt_rtl_last_error(int32_t Id) {
  // The error of the call that failed last on this thread: two host threads
  // whose launches fail at once each read their own.
  if (!TLastError.empty() || Id >= 0)
    return TLastError.c_str();
  return SimPlugin::get().LastError.c_str();
}

OMPSIM_EXPORT int32_t __tgt_rtl_last_fault(int32_t Id, ompsim_fault_info *Info) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C || !Info)
    return 0;
  std::optional<DataFault> F = C->lastDataFault();
  if (!F)
    return 0;
  // Kept per calling thread: the strings must outlive the call.
  static thread_local DataFault Kept;
  Kept = *F;
  Info->addr = Kept.Addr;
  Info->access = Kept.Write ? OMPSIM_FAULT_WRITE : OMPSIM_FAULT_READ;
  Info->owner_device = -1;
  SimPlugin &P = SimPlugin::get();
  std::lock_guard<std::mutex> Lock(P.Mu);
  for (size_t I = 0; I < P.Devices.size(); ++I)
    if (DeviceController *Owner = P.Devices[I].Controller.get();
        Owner && Kept.Addr >= Owner->arenaBase() && Kept.Addr - Owner->arenaBase() < Owner->arenaSize())
      Info->owner_device = int32_t(I);
  Info->context = Kept.Context.c_str();
  Info->instruction = Kept.Instruction.c_str();
  Info->guard = Kept.GuardKind == DataFault::Guard::PastEnd ? OMPSIM_GUARD_PAST_END
                : Kept.GuardKind == DataFault::Guard::Freed ? OMPSIM_GUARD_FREED
                                                            : OMPSIM_GUARD_NONE;
  Info->guard_block = Kept.GuardBlock;
  Info->guard_offset = Kept.GuardOffset;
  Info->library = Kept.Library.empty() ? nullptr : Kept.Library.c_str();
  Info->library_function = Kept.LibraryFunction.c_str();
  Info->device_what = Kept.DeviceWhat.empty() ? nullptr : Kept.DeviceWhat.c_str();
  Info->device_note = Kept.DeviceWhat.empty() ? nullptr : Kept.DeviceNote.c_str();
  return 1;
}

OMPSIM_EXPORT int32_t __tgt_rtl_symbolize(int32_t Id, uint64_t TgtAddr, char *Buf, uint64_t Len) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C || !Buf || !Len)
    return 0;
  std::string S = C->symbolize(TgtAddr);
  if (S.empty())
    return 0;
  S = "dev:" + S;
  size_t N = std::min<size_t>(S.size(), size_t(Len - 1));
  std::memcpy(Buf, S.data(), N);
  Buf[N] = 0;
  return 1;
}

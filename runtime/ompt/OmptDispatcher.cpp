// ompsim runtime: OMPT's offload callbacks from the event stream (see
// OmptDispatcher.h).
//
// What a tool sees follows stock libomptarget 22: a tool that registered the
// EMI form of a callback gets it at both ends of the operation and owns the
// ids (it writes target_data->value and *host_op_id at the beginning); one
// that registered only the plain form gets it once, at the beginning, with ids
// the runtime draws from one counter (target_id for a construct, host_op_id
// for each operation in it). Operations outside a construct (omp_target_alloc,
// omp_target_memcpy) have target_id 0. The ids and the tool's data live per
// thread, as a construct runs on one thread.
#include "OmptDispatcher.h"

#include "../events/OffloadEvents.h"

#include <omp-tools.h>

#include <dlfcn.h>

#include <atomic>
#include <mutex>

namespace ompsim::ompt {

namespace {

using namespace ompsim::events;

/// The callbacks the tool registered (null where it did not).
struct ToolCallbacks {
  ompt_callback_target_t Target = nullptr;
  ompt_callback_target_emi_t TargetEmi = nullptr;
  ompt_callback_target_data_op_t DataOp = nullptr;
  ompt_callback_target_data_op_emi_t DataOpEmi = nullptr;
  ompt_callback_target_submit_t Submit = nullptr;
  ompt_callback_target_submit_emi_t SubmitEmi = nullptr;
  ompt_callback_device_initialize_t DeviceInitialize = nullptr;
  ompt_callback_device_finalize_t DeviceFinalize = nullptr;
  ompt_callback_device_load_t DeviceLoad = nullptr;
};

ToolCallbacks Tool;
ompt_get_callback_t GetCallback = nullptr;
ompt_data_t *(*GetTaskData)() = nullptr;
ompt_data_t *(*GetTargetTaskData)() = nullptr;
int (*HostDeviceNumber)() = nullptr;
bool Connected = false;

/// target_id and host_op_id values for tools of the plain callbacks.
std::atomic<uint64_t> NextId{1};

/// What a construct's events share on its thread.
struct ThreadState {
  ompt_data_t TargetData = ompt_data_none;
  ompt_id_t HostOpId = 0;
  ompt_data_t *TaskData = nullptr;
  ompt_data_t *TargetTaskData = nullptr;
};
thread_local ThreadState T;

/// The OMPT device pointer handed to device_initialize: one stable address
/// per device number.
constexpr int MaxDevices = 256;
char DeviceHandles[MaxDevices];

int number(int32_t Device) {
  if (Device == HostDevice)
    return HostDeviceNumber ? HostDeviceNumber() : -1;
  return Device;
}

ompt_target_t kind(TargetKind K) { return static_cast<ompt_target_t>(K); }
ompt_scope_endpoint_t endpoint(Endpoint P) { return static_cast<ompt_scope_endpoint_t>(P); }

/// The device tracing interface a device offers to device_initialize's
/// lookup: none, as with stock's host plugin.
ompt_interface_fn_t noDeviceTracing(const char *) { return nullptr; }

class Dispatcher final : public Listener {
public:
  void targetRegion(const TargetRegion &E) override {
    bool Begin = E.Point == Endpoint::Begin;
    if (Begin) {
      T.TaskData = GetTaskData ? GetTaskData() : nullptr;
      T.TargetTaskData = GetTargetTaskData ? GetTargetTaskData() : nullptr;
      if (!Tool.TargetEmi)
        T.TargetData.value = NextId.fetch_add(1);
    }
    if (Tool.TargetEmi)
      Tool.TargetEmi(kind(E.Kind), endpoint(E.Point), E.Device, T.TaskData, T.TargetTaskData, &T.TargetData,
                     E.Code);
    else if (Tool.Target)
      Tool.Target(kind(E.Kind), endpoint(E.Point), E.Device, T.TaskData, T.TargetData.value, E.Code);
    if (!Begin)
      T = ThreadState();
  }

  void dataOp(const DataOp &E) override {
    auto Op = static_cast<ompt_target_data_op_t>(E.Kind);
    void *Src = const_cast<void *>(E.Src), *Dst = const_cast<void *>(E.Dst);
    if (Tool.DataOpEmi) {
      Tool.DataOpEmi(endpoint(E.Point), T.TargetTaskData, &T.TargetData, &T.HostOpId, Op, Src,
                     number(E.SrcDevice), Dst, number(E.DstDevice), E.Bytes, E.Code);
    } else if (Tool.DataOp && E.Point == Endpoint::Begin) {
      T.HostOpId = NextId.fetch_add(1);
      Tool.DataOp(T.TargetData.value, T.HostOpId, Op, Src, number(E.SrcDevice), Dst, number(E.DstDevice),
                  E.Bytes, E.Code);
    }
  }

  void submit(const Submit &E) override {
    if (Tool.SubmitEmi) {
      Tool.SubmitEmi(endpoint(E.Point), &T.TargetData, &T.HostOpId, E.RequestedTeams);
    } else if (Tool.Submit && E.Point == Endpoint::Begin) {
      T.HostOpId = NextId.fetch_add(1);
      Tool.Submit(T.TargetData.value, T.HostOpId, E.RequestedTeams);
    }
  }

  void deviceInitialize(const DeviceInitialize &E) override {
    if (Tool.DeviceInitialize && E.Point == Endpoint::End && E.Succeeded)
      Tool.DeviceInitialize(E.Device, E.Type, handle(E.Device), noDeviceTracing, /*documentation=*/nullptr);
  }

  void deviceFinalize(const DeviceFinalize &E) override {
    if (Tool.DeviceFinalize)
      Tool.DeviceFinalize(E.Device);
  }

  void deviceLoad(const DeviceLoad &E) override {
    // As stock's plugins report it: no file, the image's bytes in the host
    // program, no single device address, module 0.
    if (Tool.DeviceLoad)
      Tool.DeviceLoad(E.Device, /*filename=*/nullptr, /*offset_in_file=*/0, /*vma_in_file=*/nullptr, E.Bytes,
                      const_cast<void *>(E.HostImage), /*device_addr=*/nullptr, /*module_id=*/0);
  }

private:
  static ompt_device_t *handle(int32_t Device) {
    return reinterpret_cast<ompt_device_t *>(&DeviceHandles[Device >= 0 && Device < MaxDevices ? Device : 0]);
  }
};

Dispatcher TheDispatcher;

/// libomp's answer to ompt_libomp_connect, when a tool wants offload events.
int initializeLibrary(ompt_function_lookup_t Lookup, int, ompt_data_t *) {
  GetCallback = reinterpret_cast<ompt_get_callback_t>(Lookup("ompt_get_callback"));
  GetTaskData = reinterpret_cast<ompt_data_t *(*)()>(Lookup("ompt_get_task_data"));
  GetTargetTaskData = reinterpret_cast<ompt_data_t *(*)()>(Lookup("ompt_get_target_task_data"));
  return 0;
}

void finalizeLibrary(ompt_data_t *) {}

template <typename FnT> bool bind(ompt_callbacks_t Which, FnT &Slot) {
  ompt_callback_t Found = nullptr;
  // ompt_get_callback answers 1 when the tool registered `Which`.
  if (GetCallback(Which, &Found) != 1 || !Found)
    return false;
  Slot = reinterpret_cast<FnT>(Found);
  return true;
}

} // namespace

void connect(int (*InitialDevice)()) {
  static std::once_flag Once;
  std::call_once(Once, [InitialDevice] {
    HostDeviceNumber = InitialDevice;
    using ConnectFn = void (*)(ompt_start_tool_result_t *);
    auto Connect = reinterpret_cast<ConnectFn>(::dlsym(RTLD_DEFAULT, "ompt_libomp_connect"));
    if (!Connect)
      return; // a libomp without OMPT
    static ompt_start_tool_result_t Result{initializeLibrary, finalizeLibrary, ompt_data_none};
    Connect(&Result);
    if (!GetCallback)
      return; // no tool, or none that wants offload events
    bool Any = false;
    Any |= bind(ompt_callback_target, Tool.Target);
    Any |= bind(ompt_callback_target_emi, Tool.TargetEmi);
    Any |= bind(ompt_callback_target_data_op, Tool.DataOp);
    Any |= bind(ompt_callback_target_data_op_emi, Tool.DataOpEmi);
    Any |= bind(ompt_callback_target_submit, Tool.Submit);
    Any |= bind(ompt_callback_target_submit_emi, Tool.SubmitEmi);
    Any |= bind(ompt_callback_device_initialize, Tool.DeviceInitialize);
    Any |= bind(ompt_callback_device_finalize, Tool.DeviceFinalize);
    Any |= bind(ompt_callback_device_load, Tool.DeviceLoad);
    if (!Any)
      return;
    Connected = true;
    subscribe(TheDispatcher);
  });
}

bool connected() { return Connected; }

} // namespace ompsim::ompt

// libompsim-plugin-sim.so: the plugin C ABI (ompsim/plugin_api.h) on the simulated device.
//
// This file holds the plugin's devices and their lifecycle: counting them,
// starting and stopping their executors, and what every ABI function shares
// (SimPlugin.h). Images, memory, launches and error reports are in
// DeviceImages.cpp, DeviceMemory.cpp, KernelLaunch.cpp and ErrorReporting.cpp.
#include "SimPlugin.h"

#include "TranslateTrace.h"

#include "ompsim/Config.h"
#include "ompsim/ProfileWriter.h"
#include "ompsim/Trace.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>

namespace ompsim::sim {

using llvm::Error;

thread_local std::string TLastError;

SimPlugin &SimPlugin::get() {
  static SimPlugin *P = new SimPlugin();
  return *P;
}

SimDevice *SimPlugin::device(int32_t Id) {
  if (Id < 0 || size_t(Id) >= Devices.size()) {
    TLastError = fmt::format("sim plugin: no device {} (have {})", Id, Devices.size());
    return nullptr;
  }
  return &Devices[Id];
}

void SimPlugin::stopAll() {
  SimPlugin &P = get();
  std::lock_guard<std::mutex> Lock(P.Mu);
  for (size_t I = 0; I < P.Devices.size(); ++I) {
    emitTranslateExitSummary(P.Devices[I], int32_t(I));
    P.Devices[I].Controller.reset();
    P.Devices[I].Spawned.reset();
  }
}

void SimPlugin::spawnEarly(int32_t Id) {
  std::lock_guard<std::mutex> Lock(Mu);
  if (Id < 0 || size_t(Id) >= Devices.size())
    return;
  SimDevice &D = Devices[Id];
  if (D.Controller || D.Spawned || D.SpawnTried)
    return;
  D.SpawnTried = true;
  registerStopAtExit();
  auto C = DeviceController::spawn(DeviceOptions::fromConfig(Id, libDir()));
  if (!C) {
    llvm::consumeError(C.takeError()); // init_device starts it again and reports why it fails
    return;
  }
  D.Spawned = std::move(*C);
}

void SimPlugin::registerStopAtExit() {
  static std::once_flag AtExit;
  std::call_once(AtExit, [] { std::atexit(&SimPlugin::stopAll); });
}

std::string SimPlugin::libDir() {
  Dl_info Info{};
  if (::dladdr(reinterpret_cast<void *>(&SimPlugin::get), &Info) && Info.dli_fname) {
    std::string Path = Info.dli_fname;
    auto Slash = Path.rfind('/');
    return Slash == std::string::npos ? "." : Path.substr(0, Slash);
  }
  return ".";
}

SimPlugin::SimPlugin() { Devices.resize(size_t(std::max(config().NumDevices, 1))); }

int32_t failWith(SimDevice *D, Error Err) {
  (void)D; // the error is the calling thread's, whichever device failed
  TLastError = llvm::toString(std::move(Err));
  return OMPSIM_OFFLOAD_FAIL;
}

int32_t failWith(SimDevice *D, std::string Msg) {
  return failWith(D, llvm::createStringError(llvm::inconvertibleErrorCode(), Msg));
}

/// Controller of an initialized device, or nullptr with the error recorded.
DeviceController *controllerOf(int32_t Id, SimDevice *&D) {
  D = SimPlugin::get().device(Id);
  if (!D)
    return nullptr;
  if (!D->Controller) {
    TLastError = fmt::format("device {}: not initialized", Id);
    return nullptr;
  }
  return D->Controller.get();
}

} // namespace ompsim::sim

using namespace ompsim;
using namespace ompsim::sim;

OMPSIM_EXPORT int32_t __tgt_rtl_plugin_api_version(void) { return OMPSIM_PLUGIN_API_VERSION; }

OMPSIM_EXPORT const char *__tgt_rtl_plugin_name(void) { return "sim"; }

OMPSIM_EXPORT int32_t __tgt_rtl_number_of_devices(void) {
  SimPlugin &P = SimPlugin::get();
  DeviceOptions O = DeviceOptions::fromConfig(0, P.libDir());
  if (::access(O.ExecutorPath.c_str(), X_OK) != 0) {
    // The same words the controller uses, so the user sees why there is no device.
    P.LastError = "executor " + O.ExecutorPath + " not found or not executable (set OMPSIM_EXECUTOR)";
    OMPSIM_TRACE_EVENT(Cat::Image, "no-devices").str("plugin", "sim").str("reason", P.LastError);
    return 0;
  }
  return int32_t(P.Devices.size());
}

OMPSIM_EXPORT int32_t __tgt_rtl_init_device(int32_t Id) {
  SimPlugin &P = SimPlugin::get();
  std::lock_guard<std::mutex> Lock(P.Mu);
  SimDevice *D = P.device(Id);
  if (!D)
    return OMPSIM_OFFLOAD_FAIL;
  if (D->Controller)
    return OMPSIM_OFFLOAD_SUCCESS;
  SimPlugin::registerStopAtExit();
  profile::Section Profiled("Executor start", [&] { return fmt::format("Device={}", Id); });
  auto C = D->Spawned ? DeviceController::finishStart(std::move(D->Spawned))
                      : DeviceController::create(DeviceOptions::fromConfig(Id, P.libDir()));
  if (!C)
    return failWith(D, C.takeError());
  D->Controller = std::move(*C);
  installHostFaultReporter();
  // Devices are never moved (the vector is sized once), so `D` outlives the controller.
  D->Controller->setFaultAdvisor([D](const HostFault &F) { return D->Advisor.advise(F); });
  if (trace::enabled(trace::Cat::Translate))
    llvm::consumeError(D->Controller->takeTranslateLog(config().TraceTranslateCap, 0).takeError());
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_deinit_device(int32_t Id) {
  SimPlugin &P = SimPlugin::get();
  std::lock_guard<std::mutex> Lock(P.Mu);
  SimDevice *D = P.device(Id);
  if (!D)
    return OMPSIM_OFFLOAD_FAIL;
  emitTranslateExitSummary(*D, Id);
  D->Spawned.reset();
  D->TranslateCalls.clear();
  D->TranslateHits = D->TranslateMisses = D->TranslateDropped = 0;
  D->Controller.reset();
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_init_requires(int64_t Flags) {
  // Device memory lives in the executor process: a host pointer is never a
  // device pointer, so memory cannot be shared without explicit maps.
  if (Flags & OMPSIM_REQ_UNIFIED_SHARED_MEMORY)
    return failWith(nullptr, "the simulated device cannot honour 'requires "
                             "unified_shared_memory': its memory lives in a separate process");
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_set_thread_limit(int32_t Id, int32_t Limit) {
  SimDevice *D = SimPlugin::get().device(Id);
  if (!D)
    return OMPSIM_OFFLOAD_FAIL;
  D->DefaultThreadLimit = Limit > 0 ? uint32_t(Limit) : 0;
  return OMPSIM_OFFLOAD_SUCCESS;
}

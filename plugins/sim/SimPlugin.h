// ompsim sim plugin: the plugin's devices and what every ABI function shares.
//
// The ABI functions (ompsim/plugin_api.h) are thin: they find the device, call
// the controller, and turn an llvm::Error into OMPSIM_OFFLOAD_FAIL plus the
// calling thread's last-error line (failWith).
#pragma once

#include "FaultAdvisor.h"
#include "LaunchInfo.h"

#include "ompsim/plugin_api.h"
#include "ompsim/simulator/DeviceController.h"

#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

/// Exports an ABI function from the plugin (everything else is hidden).
#define OMPSIM_EXPORT extern "C" __attribute__((visibility("default")))

/// A loaded image, as the runtime sees it.
struct ompsim_binary {
  int32_t Device;
  uint64_t Image;
  std::string Name;
  /// nvptx64 or amdgcn code, retargeted by the executor: the warp size of
  /// its architecture (32, 64); 0 for an x86_64 image.
  uint32_t GpuWarpSize = 0;
};

namespace ompsim::sim {

/// The error of the call that failed last on this thread (__tgt_rtl_last_error):
/// per thread, as launches on several host threads may fail at once.
extern thread_local std::string TLastError;

/// A kernel handle handed to the runtime by get_function.
struct KernelHandle {
  uint64_t Entry;
  std::string Name;
  uint64_t Image; ///< the controller's id of the image that defines it
  /// The kernel's `<name>_kernel_environment`, when the image has one; read
  /// once, on the first launch that needs it (a GPU image's, or one that
  /// prints the launch line; no cost otherwise), under EnvironmentOnce:
  /// host threads may launch the kernel for the first time at once, and
  /// none may see it before it is read (a GPU kernel without its
  /// environment would run on the default grid).
  std::optional<KernelConfiguration> Environment;
  /// The image is a GPU's: its architecture's warp size (see ompsim_binary);
  /// 0 for an x86_64 image.
  uint32_t GpuWarpSize = 0;
  std::once_flag EnvironmentOnce;

  bool isGpu() const { return GpuWarpSize != 0; }
};

static_assert(sizeof(KernelConfiguration) == 20 && offsetof(KernelConfiguration, MaxTeams) == 16,
              "KernelConfiguration must match llvm::omp's ConfigurationEnvironmentTy");

/// One device: its controller (once initialized), handles and last error.
struct SimDevice {
  std::unique_ptr<DeviceController> Controller;
  /// An executor started by spawnEarly() and not yet waited for; under SimPlugin::mu.
  std::unique_ptr<DeviceController> Spawned;
  bool SpawnTried = false; ///< spawnEarly() ran for this device (it starts one at most)
  std::deque<std::unique_ptr<ompsim_binary>> Binaries;
  std::deque<std::unique_ptr<KernelHandle>> Kernels;
  /// Adds how to fix it to a diagnosis of a fault on a host address.
  FaultAdvisor Advisor;
  /// A live data_alloc block: what a diagnosis says about a device pointer
  /// that reaches the host side of a copy.
  struct Allocation {
    uint64_t Size = 0;
    uint64_t HostPtr = 0; ///< the host data it was allocated for (0: omp_target_alloc and the like)
    int32_t Kind = 0;
  };
  std::map<uint64_t, Allocation> Allocations; ///< by device address; under SimPlugin::allocMu
  uint32_t DefaultThreadLimit = 0;
  uint64_t ImagesLoaded = 0;
  /// Translate calls per function over the whole run, from the recorded calls
  /// (keyed by the symbolized result); exact unless calls were dropped.
  struct FunctionCalls {
    uint64_t Calls = 0, Misses = 0;
  };
  std::map<std::string, FunctionCalls> TranslateCalls;
  uint64_t TranslateHits = 0, TranslateMisses = 0, TranslateDropped = 0;
};

/// The plugin's devices; never destroyed (executors are stopped at exit by stopAll).
class SimPlugin {
public:
  /// The one plugin, made on first use with config().NumDevices devices (at least 1).
  static SimPlugin &get();

  std::mutex Mu;
  std::vector<SimDevice> Devices;
  std::string LastError; ///< plugin-wide, set at start-up (device -1)
  std::mutex AllocMu;    ///< guards every SimDevice::allocations

  /// The device, or nullptr with the plugin-wide error set.
  SimDevice *device(int32_t Id);

  /// Stops every executor; runs at exit so none outlives the host.
  static void stopAll();

  /// Starts device `id`'s executor without waiting for it, once; init_device
  /// waits for it. A failure here is left for init_device to report.
  void spawnEarly(int32_t Id);

  /// Makes sure stopAll runs at exit, before any executor starts.
  static void registerStopAtExit();

  /// The folder this plugin was loaded from ("." when unknown), where the
  /// executor is looked for by default.
  std::string libDir();

private:
  SimPlugin();
};

/// Records `Err` as the calling thread's last error and returns
/// OMPSIM_OFFLOAD_FAIL.
int32_t failWith(SimDevice *D, llvm::Error Err);

/// Records `Msg` as the calling thread's last error and returns
/// OMPSIM_OFFLOAD_FAIL.
int32_t failWith(SimDevice *D, std::string Msg);

/// Controller of an initialized device, or nullptr with the error recorded.
DeviceController *controllerOf(int32_t Id, SimDevice *&D);

/// When [Addr, Addr + Size) overlaps the memory of a simulated device, says
/// which device and which allocation (or image symbol) it belongs to; else "".
std::string describeDeviceMemory(uint64_t Addr, uint64_t Size);

/// Installs the host process's report of a fault on a device address
/// (HostFaultReporter.cpp), once; the handler before it still runs after.
void installHostFaultReporter();

} // namespace ompsim::sim

// ompsim host plugin: runs device images in this process, like upstream's
// generic-ELF host plugin.
#pragma once

#include "ompsim/offload_abi.h"
#include "ompsim/plugin_api.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ompsim::hostplugin {

/// A failure as one line naming the object and the problem; empty = success.
using Status = std::string;

/// One device image loaded with dlopen from an in-memory file.
struct HostBinary {
  void *Handle = nullptr;
  std::string Label; ///< "image 0x... (N bytes)" for messages
};

/// The in-process device: device memory is host memory, kernels are
/// functions in the dlopen'ed image, called through libffi.
///
/// Every device-global lookup goes through dlsym on the image's handle, so
/// the image's own copy of a symbol is found, never the host program's.
class HostDevice {
public:
  /// `Id` is the plugin's number for the device (what device code's
  /// omp_get_device_num answers).
  explicit HostDevice(int32_t Id) : Id(Id) {}
  HostDevice(const HostDevice &) = delete;
  HostDevice &operator=(const HostDevice &) = delete;

  /// Loads libompsim-device.so globally so images that call the translate
  /// API resolve it (a missing library is reported when an image needs it).
  Status init();
  Status load(const __tgt_device_image *Image, HostBinary *&Out);
  Status unload(HostBinary *Binary);
  Status lookup(HostBinary *Binary, const char *Name, void *&Address);
  /// Looks up `N` symbols at once; `addresses[i]` is null where `names[i]` is absent.
  Status lookupMany(HostBinary *Binary, uint64_t N, const char *const *Names, void **Addresses);
  Status run(void *Kernel, void **Args, int32_t NumArgs, const ompsim_launch_config *Config);
  Status publishTable(uint64_t N, const __omp_offloading_fptr_map_ty *Pairs);
  /// "dev:symbol+0xoff" for an address inside a loaded image, or "".
  std::string symbolize(uint64_t Addr);

private:
  const int32_t Id;
  std::mutex Mutex;
  bool Initialized = false;
  void *DeviceRuntime = nullptr;
  std::string DeviceRuntimePath, DeviceRuntimeError;
  std::map<HostBinary *, std::unique_ptr<HostBinary>> Binaries;
  unsigned ImageCounter = 0;
  /// This device's function-pointer table. The device runtime holds one table
  /// for the whole process, so a launch makes its device's table the active one.
  std::vector<__omp_offloading_fptr_map_ty> Table;
  std::atomic<bool> HasTable{false};

  /// Makes this device's table the device runtime's (caller holds the
  /// process-wide table lock exclusively).
  Status activateTable();
};

/// True if `Image` is an x86-64 ELF shared object (what this plugin loads).
/// `Why` receives the reason when it is not.
bool isLoadableImage(const __tgt_device_image *Image, std::string &Why);

} // namespace ompsim::hostplugin

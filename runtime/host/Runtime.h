// ompsim runtime: process-wide state behind the libomptarget ABI.
#pragma once

#include "Device.h"
#include "EntryTable.h"
#include "MapClauseProcessor.h"
#include "PluginLoader.h"

#include "ompsim/offload_abi.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ompsim::host {

/// OMP_TARGET_OFFLOAD.
enum class OffloadPolicy { Default, Mandatory, Disabled };

/// Which map-clause operation a target data call performs.
enum class DataOp { Begin, End, Update };

/// The runtime: plugins and devices, registered descriptors, and the
/// operations the ABI functions forward to.
///
/// The ABI layer (Api.cpp) is the only place where an llvm::Error becomes a
/// return code or a fatal "ompsim: ..." line.
class Runtime {
public:
  /// The process-wide runtime.
  static Runtime &get();

  /// Registers a descriptor: parses its entries, loads each image on every
  /// device of the first plugin that accepts it, and republishes the
  /// function-pointer tables.
  llvm::Error registerLib(__tgt_bin_desc *Desc);
  /// Unregisters a descriptor (any order) and republishes the tables.
  llvm::Error unregisterLib(__tgt_bin_desc *Desc);
  /// Records `Requires` flags (from an entry or __tgt_register_requires).
  void registerRequires(int64_t Flags);
  /// Whether `requires unified_shared_memory` is in force on `D`: registered,
  /// and `D` shares the host's memory.
  bool unifiedSharedMemoryOn(Device &D);

  /// Loads the plugins on first use (none when offload is disabled).
  llvm::Error ensurePlugins();
  /// Number of devices over every plugin (0 when disabled or on error).
  /// True when `DeviceNum` (after resolving the default device) names the
  /// host, where a target region runs as host code (stock's fallback, taken
  /// even when offload is mandatory). False when no device exists at all
  /// under OMP_TARGET_OFFLOAD=mandatory: that is an error, not the host.
  bool runsOnHost(int64_t DeviceNum);
  int32_t numDevices();
  /// omp_get_initial_device() without a lock, for code that holds a mapping
  /// table's: the devices of every plugin (0 before the plugins are loaded).
  int32_t initialDevice() const { return DeviceCount.load(std::memory_order_acquire); }
  /// Device `DeviceNum` as it stands, neither initialized nor given its
  /// images when it was never used (its table is then empty); null when out
  /// of range. For table dumps, which must not start devices.
  Device *existingDevice(int32_t DeviceNum);
  /// The device for an OpenMP device number; -1 is the default device.
  /// Returns null (and no error) for the initial device, so callers fall
  /// back to the host.
  llvm::Expected<Device *> device(int64_t DeviceNum);
  /// Resolves -1 to omp_get_default_device().
  int64_t resolveDeviceNumber(int64_t DeviceNum);

  OffloadPolicy policy() const;

  /// Runs a target region. Returns an error whose kind says whether it is a
  /// data error (always fatal) or a launch failure (fatal only when mandatory).
  /// `Loc` (may be null) places the construct in messages.
  llvm::Error targetKernel(int64_t DeviceNum, int32_t Teams, int32_t Threads, void *RegionId,
                           __tgt_kernel_arguments *Args, bool &LaunchFailure,
                           const ompsim_ident *Loc = nullptr);
  /// target data begin/end/update; null device (host) is a no-op. `Nowait`:
  /// called through a `nowait` entry point (stock names the region so).
  llvm::Error targetData(DataOp Op, int64_t DeviceNum, std::vector<MapArg> Args, void **ArgsBase,
                         const ompsim_ident *Loc = nullptr, bool Nowait = false);

  /// Prints every device's mapping table, naming the construct at `Loc`,
  /// when LIBOMPTARGET_INFO asks for it after a construct (stock does so
  /// only while offloading is mandatory).
  void dumpTablesAfter(const ompsim_ident *Loc);

  /// Sets the trip count the next launch from this thread reports.
  void pushTripcount(int64_t DeviceNum, uint64_t Count);

  /// The map checker's end (an exit handler, registered when OMPSIM_CHECK is
  /// on): reports blocks still mapped, and under `strict` ends the process
  /// with status 1 when the program exits with 0 after a report.
  void finishChecks(int Status);

  /// Prints one "ompsim: ..." line and exits with status 1 (stdout flushed).
  [[noreturn]] static void fatal(const std::string &Message);

private:
  /// After a failed launch: when the plugin reports a fault on a data
  /// address, the line that says what the address is replaces `Err`. The
  /// mapping table's lock is held. `RegionArgs` are the map items of the
  /// launch of `KernelName`, searched for the pointer that carried the address
  /// when that kernel is the one that faulted.
  llvm::Error adviseDataFault(Device &D, llvm::Error Err, const std::vector<MapArg> &RegionArgs,
                              const std::string &KernelName);
  Runtime() = default;

  struct RegisteredImage {
    const __tgt_device_image *Image;
    std::string Name;
    std::vector<OffloadEntry> Entries;
    Plugin *Plugin = nullptr; ///< first plugin that accepted it, or null
  };
  struct RegisteredLib {
    __tgt_bin_desc *Desc;
    std::vector<RegisteredImage> Images;
  };

  /// Finds the plugin that takes `Image` and loads it on that plugin's devices
  /// in use, unless one of the `Earlier` images of its binary went to the same
  /// plugin (one image of a binary per device, as stock's).
  llvm::Error loadOnDevices(RegisteredImage &Image, llvm::ArrayRef<RegisteredImage> Earlier);
  /// Loads on `D` the registered images its plugin took that it does not
  /// hold yet (devices other than the default one load on first use, as
  /// stock libomptarget's do), and publishes its table when any was loaded.
  llvm::Error ensureImagesOn(Device &D);
  llvm::Error publishAll();

  std::recursive_mutex Lock; ///< registration, plugin loading, device list
  /// Kernels running now (any device, any thread). A launch holds its device's
  /// mapping table until the kernel returns.
  std::atomic<int> KernelsRunning{0};
  bool PluginsLoaded = false;
  std::atomic<int32_t> DeviceCount{0}; ///< Devices.size() once the plugins are loaded
  std::string PluginError;
  std::vector<std::unique_ptr<Plugin>> Plugins;
  std::vector<std::unique_ptr<Device>> Devices;
  std::vector<RegisteredLib> Libs;
  /// "<image name> (<what it holds>)" of each image no plugin accepted.
  std::vector<std::string> RejectedImages;
  /// "plugin <name> has no device: <its reason>" for each plugin that gave one.
  std::string NoDeviceReasons;
  /// The `requires` flags registered first (0: none yet); later ones must match.
  int64_t Requires = 0;
};

} // namespace ompsim::host

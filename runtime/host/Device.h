// ompsim runtime: one device (a plugin plus a plugin-local device id).
#pragma once

#include "DeviceMemory.h"
#include "EntryTable.h"
#include "FunctionPointerTable.h"
#include "MappingTable.h"
#include "PluginLoader.h"

#include "../tracking/AllocationTraces.h"
#include "../tracking/KernelLaunchTraces.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ompsim::host {

/// What was loaded for one registered device image on this device.
struct LoadedImage {
  ompsim_binary_handle Binary = nullptr;
  std::string Name;                 ///< "device image 0 of ./prog"
  std::map<void *, void *> Kernels; ///< host region id -> plugin kernel handle
  std::map<void *, std::string> KernelNames;
};

/// One device: the plugin's data API as DeviceMemory, the device's mapping
/// table and function-pointer table, and the images loaded on it.
///
/// Thread-safety: image loading and table publication run under the
/// runtime's registration lock; map clauses hold mappingTable().mutex().
class Device final : public DeviceMemory {
public:
  Device(Plugin &Plugin, int32_t LocalId, int32_t Number)
      : Plugin(Plugin), LocalId(LocalId), Number(Number) {}
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  /// Initializes the device once (later calls return the first outcome).
  llvm::Error ensureInitialized();

  /// Loads `Image` (already accepted by this device's plugin) and runs the
  /// registration flow: kernels, globals, and the indirect entries (device
  /// global read back, mapping table entry with infinite count, function
  /// pointer table contribution). Does not publish the table.
  llvm::Error loadImage(const __tgt_device_image *Image, const std::string &Name,
                        const std::vector<OffloadEntry> &Entries);

  /// Forgets an image: its mapping entries and fptr contribution go, the
  /// binary is unloaded when the plugin can. Does not publish the table.
  llvm::Error unloadImage(const __tgt_device_image *Image);

  /// Builds the merged function-pointer table and hands it to the plugin
  /// (__tgt_rtl_set_function_ptr_map), or writes it to device memory and the
  /// `__omp_offloading_fptr_map_p/_size` globals of each loaded image.
  llvm::Error publishFunctionPointerTable();

  /// The kernel handle for a host region id, or null when no loaded image
  /// has it. `Name` gets the kernel's name, which lives as long as its image.
  void *findKernel(void *RegionId, const std::string **Name);

  /// True when some image loaded here came from `Image`.
  bool hasImage(const __tgt_device_image *Image) const { return Images.count(Image) != 0; }

  /// Runs a kernel; `Args` are device pointers or literal values.
  /// `RequestedTeams` is what the construct asked for, as stock reports it
  /// to tools (1 for a target region without teams, 0 when unspecified).
  llvm::Error launchKernel(void *Kernel, std::vector<uint64_t> &Args, const ompsim_launch_config &Config,
                           uint32_t RequestedTeams);

  /// True once ensureInitialized() succeeded.
  bool isInitialized() const { return Initialized; }

  MappingTable &mappingTable() { return MappingTable; }
  FunctionPointerTable &functionPointerTable() { return FptrTable; }
  Plugin &plugin() { return Plugin; }
  int32_t localId() const { return LocalId; }

  // DeviceMemory
  llvm::Expected<uint64_t> allocate(uint64_t Size, const void *HostHint) override {
    return dataAlloc(Size, HostHint, OMPSIM_ALLOC_DEFAULT);
  }
  llvm::Error release(uint64_t Tgt) override { return dataDelete(Tgt, OMPSIM_ALLOC_DEFAULT); }
  /// Allocates memory of `Kind` (OMPSIM_ALLOC_*); null `HostHint` for
  /// memory no mapping asked for. Named as stock's, whose allocation traces
  /// show the frame.
  llvm::Expected<uint64_t> dataAlloc(uint64_t Size, const void *HostHint, int32_t Kind);
  /// Frees memory allocated as `Kind`. With OFFLOAD_TRACK_ALLOCATION_TRACES,
  /// a free stock refuses ends the process with stock's report.
  llvm::Error dataDelete(uint64_t Tgt, int32_t Kind);
  llvm::Error submit(uint64_t Tgt, const void *Hst, uint64_t Size, llvm::StringRef Name = {}) override;
  llvm::Error retrieve(void *Hst, uint64_t Tgt, uint64_t Size, llvm::StringRef Name = {}) override;
  std::string symbolize(uint64_t Tgt) override;
  int32_t deviceNumber() const override { return Number; }
  bool namesCopies() const override;

  /// A plugin failure as an llvm::Error carrying the plugin's last error.
  llvm::Error pluginError(const std::string &Fallback) const;

  /// With stock's OFFLOAD_TRACK_* variables set, a failed launch's report as
  /// stock's GPU plugins give it: the last kernels launched (printed now,
  /// before the construct's lines) and, at the fault address `FaultAddr`
  /// when the kernel touched memory, the allocation it points into, added
  /// to `Err`'s text. `Err` unchanged when neither variable is set.
  llvm::Error addTrackedReport(llvm::Error Err, std::optional<uint64_t> FaultAddr);

private:
  /// Reads the 8-byte device address stored in the device global `Name`,
  /// found at `Global` (null: absent) or, without one, asked of the plugin.
  llvm::Expected<uint64_t> readAddressGlobal(LoadedImage &Image, const std::string &Name,
                                             std::optional<void *> Global = std::nullopt);
  /// The device addresses of `names[i]` in the image, null where absent, in
  /// one plugin request; std::nullopt when the plugin has no batched lookup
  /// (callers then ask per name).
  llvm::Expected<std::optional<std::vector<void *>>>
  findGlobals(LoadedImage &Image, const std::vector<const char *> &Names, const std::vector<uint64_t> &Sizes);
  /// Adds the host vtables holding one of `Indirect`'s functions that no 0x20
  /// entry registered, paired with the device image's vtable of the same name;
  /// their mapping-table entries go to `Mapped`, one batch for the caller to add.
  void addVtablesByName(LoadedImage &Image, std::vector<IndirectTarget> &Indirect,
                        std::vector<MapEntry> &Mapped);
  /// Adds the entry mapping [host, host + size) to `Tgt` for the image's
  /// lifetime (globals, indirect functions, vtables) to `Batch`, the image's
  /// permanent entries that the caller adds to the mapping table at once.
  static void mapPermanently(std::vector<MapEntry> &Batch, uintptr_t Host, uint64_t Size, uint64_t Tgt,
                             const std::string &Name);

  Plugin &Plugin;
  int32_t LocalId;
  int32_t Number;
  std::once_flag InitOnce;
  std::string InitError;
  bool Initialized = false;
  MappingTable MappingTable;
  FunctionPointerTable FptrTable;
  std::map<const __tgt_device_image *, LoadedImage> Images;
  uint64_t PublishedTable = 0;                 ///< device block holding the table (fallback path)
  tracking::AllocationTraces AllocationTraces; ///< OFFLOAD_TRACK_ALLOCATION_TRACES
  tracking::KernelLaunchTraces LaunchTraces;   ///< kept while an OFFLOAD_TRACK_* variable is set
};

} // namespace ompsim::host

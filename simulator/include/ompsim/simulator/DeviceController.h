// ompsim simulator: the host-side controller of one simulated device.
#pragma once

#include "ompsim/offload_abi.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace llvm::orc {
class ExecutionSession;
class SimpleRemoteEPC;
} // namespace llvm::orc

namespace ompsim::sim {

class ImageSymbolTable;
class RangeAllocator;
struct LaunchMailbox;
class DeviceJIT;
struct JITImage;

/// How to start one device. Defaults come from ompsim::config() through
/// DeviceOptions::fromConfig().
struct DeviceOptions {
  int32_t deviceId = 0;
  std::string executorPath; ///< ompsim-device
  std::string libDir;       ///< where libompsim-device.so lives
  uint64_t arenaBase = 0;   ///< this device's arena base
  uint64_t arenaSize = 0;
  double kernelTimeout = 60.0; ///< seconds
  /// Seconds the executor may take from spawn to the end of its setup call
  /// before it is killed and the start fails (OMPSIM_EXECUTOR_START_TIMEOUT).
  double startTimeout = 30.0;
  int jitOptLevel = 0;      ///< code generation level (0-3) of bitcode images
  std::string jitCache;     ///< folder of compiled bitcode-image code ("" for none)
  int maxStartAttempts = 4; ///< restarts when the executor collides with host ranges

  /// Options for device `deviceId` from the OMPSIM_* configuration; devices
  /// sit kArenaStride apart from OMPSIM_DEVICE_BASE. `defaultLibDir` is used
  /// when OMPSIM_LIB_DIR is unset.
  static DeviceOptions fromConfig(int32_t deviceId, const std::string &defaultLibDir);
  /// Distance between the arenas of consecutive devices (1 TiB).
  static constexpr uint64_t kArenaStride = 1ULL << 40;
};

/// Counters and records of translate calls since the last take.
struct TranslateLog {
  uint64_t hits = 0, misses = 0, recorded = 0, dropped = 0;
  struct Record {
    uint64_t hostPtr, result;
    bool hit;
  };
  std::vector<Record> records;
};

/// A device fault on a host address: what a diagnosis needs to say how to fix it.
struct HostFault {
  enum class Access { Call, Read, Write };
  Access access = Access::Call;
  uint64_t addr = 0; ///< the host address the device called, read or wrote
  /// The faulting kernel's translate lookups (empty without the device runtime).
  std::vector<TranslateLog::Record> lookups;
  /// No lookup was dropped from `lookups`, so one missing there was never made.
  bool lookupsComplete = false;
};

/// Owns one ompsim-device executor process and drives it: device memory is
/// a memfd both map (the executor at the arena base, the controller anywhere),
/// so copies are bounds-checked memcpy here; launches go through a shared
/// mailbox; everything else through ORC's SimpleRemoteEPC. Never runs device
/// code itself.
///
/// Thread-safe: calls are serialized. After the executor dies (fault,
/// timeout, killed from outside) every call fails with the message that
/// described the death.
class DeviceController {
public:
  /// Starts the executor, reserves the host's ranges in it and maps the arena.
  static llvm::Expected<std::unique_ptr<DeviceController>> Create(const DeviceOptions &options);
  /// Shuts the executor down (fini functions run) and reaps it; kills it if it does not exit.
  ~DeviceController();
  DeviceController(const DeviceController &) = delete;
  DeviceController &operator=(const DeviceController &) = delete;

  /// Loads an ELF shared object or LLVM bitcode image; returns an image id.
  /// `provides` are the library names (NEEDED entries of later images) this
  /// image answers to: the soname and file name of the host library that
  /// embeds it. A later ELF image that NEEDs one of them links against this
  /// image instead of loading a library of that name into the device.
  ///
  /// With `bytesOutliveImage` the caller vouches that `bytes` stay mapped and
  /// unchanged until the image is unloaded (an image embedded in a registered
  /// host binary): symbolize() then reads them there instead of a copy taken
  /// at every load.
  llvm::Expected<uint64_t> loadImage(llvm::ArrayRef<char> bytes, llvm::StringRef name,
                                     llvm::ArrayRef<std::string> provides = {},
                                     bool bytesOutliveImage = false);
  /// Device address of symbol `name` in image `image`; an error naming it when absent.
  llvm::Expected<uint64_t> lookup(uint64_t image, llvm::StringRef name);
  /// Addresses of many symbols of a loaded image in one request to the
  /// executor; 0 for a name the image does not define.
  llvm::Expected<std::vector<uint64_t>> lookupMany(uint64_t image, llvm::ArrayRef<llvm::StringRef> names);
  /// Runs the image's finalizers and frees its memory.
  llvm::Error unloadImage(uint64_t image);

  /// Device heap allocation; 0 when the arena is exhausted or the device is gone.
  uint64_t allocate(uint64_t size, uint64_t align = 16);
  /// Frees a block from allocate().
  llvm::Error release(uint64_t addr);
  /// Copies host -> device through the shared arena pages; `dst` must lie in the arena.
  llvm::Error write(uint64_t dst, const void *src, uint64_t size);
  /// Copies device -> host through the shared arena pages; `src` must lie in the arena.
  llvm::Error read(void *dst, uint64_t src, uint64_t size);

  /// Runs `entry` with the host-offload kernel ABI and waits for it (at most
  /// the kernel timeout). `kernelName` names it in diagnostics.
  llvm::Error launch(uint64_t entry, llvm::ArrayRef<uint64_t> args, uint32_t numTeams, uint32_t threadLimit,
                     llvm::StringRef kernelName);

  /// Copies `table` into device memory and publishes it to the device runtime.
  llvm::Error setFunctionPointerTable(llvm::ArrayRef<__omp_offloading_fptr_map_ty> table);
  /// Takes the device runtime's translate log; `nextCap` records are kept in the next period.
  /// After a device fault, returns the log of the kernel that faulted (once).
  llvm::Expected<TranslateLog> takeTranslateLog(uint64_t nextCap, uint64_t maxRecords);

  /// Sets what adds how to fix it to the death message of a fault on a host
  /// address (the executor's death, and every later call's error): it returns
  /// a note ("note: ...") or "".
  void setFaultAdvisor(std::function<std::string(const HostFault &)> advisor);

  /// "symbol+0xoff" for a device address in a loaded image, or "".
  std::string symbolize(uint64_t addr);

  /// False once the executor has died or been stopped.
  bool alive();
  /// The executor's pid (for tests and traces).
  pid_t pid() const { return pid_; }
  /// The device id used in messages.
  int32_t deviceId() const { return opts_.deviceId; }
  /// The arena's [base, base+size).
  uint64_t arenaBase() const { return opts_.arenaBase; }
  uint64_t arenaSize() const { return opts_.arenaSize; }

private:
  explicit DeviceController(const DeviceOptions &options);
  llvm::Expected<uint64_t> loadBitcode(llvm::ArrayRef<char> bytes, llvm::StringRef name);
  llvm::Error start(std::vector<std::pair<uint64_t, uint64_t>> &collided);
  void stop(bool graceful);
  /// The line for an executor killed because it did not start in time.
  std::string startTimeoutMessage() const;
  llvm::Error checkAlive();
  /// Creates the memfd shared with the executor (mailbox, then arena) and maps it here.
  llvm::Error mapSharedMemory(int &fd);
  void unmapSharedMemory();
  /// True once the executor has exited (it is not reaped here).
  bool executorExited();
  llvm::Error checkRange(uint64_t addr, uint64_t size, llvm::StringRef what);
  /// Turns a failed call into the device's death message when the executor is gone.
  llvm::Error diagnose(llvm::Error callError, const std::string &context);
  std::string describeDeath(int status, const std::string &context);
  /// The lazy-call thread: compiles what a first call in the executor asks
  /// for (bitcode images; see LaunchMailbox::lazyRequest).
  void serveLazyCalls();
  /// Ends the lazy-call thread (before the JIT goes away).
  void stopLazyCalls();
  template <typename Sig, typename RetT, typename... ArgTs>
  llvm::Error call(const char *fnName, const std::string &context, RetT &result, const ArgTs &...args);

  struct Image {
    std::string name;
    uint64_t remoteHandle = 0; ///< executor handle (ELF) or 0 (JIT)
    uint64_t base = 0, size = 0;
    std::unique_ptr<ImageSymbolTable> symbols; ///< ELF: built on the first symbolize
    /// A copy of an ELF image's bytes, for its symbols.
    std::vector<char> elfBytes;
    /// The caller's bytes instead of a copy, when they outlive the image.
    llvm::ArrayRef<char> elfView;
    std::unique_ptr<JITImage> jit; ///< set for bitcode images
  };

  DeviceOptions opts_;
  std::recursive_mutex mu_;
  pid_t pid_ = -1;
  int faultFd_ = -1;
  int hostFd_ = -1; ///< our own descriptor of the transport socket (the EPC has another)
  /// Owns the EPC; bitcode images are JIT-linked through it.
  std::unique_ptr<llvm::orc::ExecutionSession> es_;
  llvm::orc::SimpleRemoteEPC *epc_ = nullptr;
  std::unique_ptr<DeviceJIT> jit_;
  std::thread lazyThread_; ///< runs serveLazyCalls while jit_ exists
  std::atomic<bool> lazyStop_{false};
  std::map<std::string, uint64_t> fns_; ///< wrapper name -> executor address
  std::map<uint64_t, Image> images_;
  uint64_t nextImage_ = 1;
  uint64_t tableAddr_ = 0;
  std::string deathMessage_; ///< non-empty once the executor is gone
  /// The faulting kernel's translate log, sent by the executor with its fault record.
  std::optional<TranslateLog> faultTranslateLog_;
  std::optional<HostFault> hostFault_;
  std::function<std::string(const HostFault &)> faultAdvisor_;
  /// The executor's memfd as mapped here: the launch mailbox, then the arena
  /// (LaunchMailbox::kBytes on). Null while no executor runs.
  char *shared_ = nullptr;
  uint64_t sharedBytes_ = 0;
  LaunchMailbox *mailbox_ = nullptr;
  uint32_t launchSeq_ = 0; ///< sequence number of the last launch posted
  /// The device heap's blocks (the arena above the code region), kept here:
  /// allocation is address arithmetic and needs no round trip.
  std::unique_ptr<RangeAllocator> heap_;
};

} // namespace ompsim::sim

// ompsim simulator: the host-side controller of one simulated device.
#pragma once

#include "ompsim/Config.h"
#include "ompsim/LaunchOptions.h"
#include "ompsim/offload_abi.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
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
class GuardedArena;
struct LaunchMailbox;
class DeviceJIT;
struct JITImage;
class StartupWatch;

/// How to start one device. Defaults come from ompsim::config() through
/// DeviceOptions::fromConfig().
struct DeviceOptions {
  int32_t DeviceId = 0;
  std::string ExecutorPath; ///< ompsim-device
  std::string LibDir;       ///< where libompsim-device.so lives
  uint64_t ArenaBase = 0;   ///< this device's arena base
  uint64_t ArenaSize = 0;
  uint32_t DeviceThreads = 256; ///< threads the device runs at once (OMPSIM_DEVICE_THREADS)
  double KernelTimeout = 60.0;  ///< seconds
  /// Seconds the executor may take from spawn to its handshake, and again
  /// from the host's first set-up call after it to the end of the set-up,
  /// before its process group is killed and the start fails
  /// (OMPSIM_EXECUTOR_START_TIMEOUT).
  double StartTimeout = 10.0;
  int JitOptLevel = 0;      ///< code generation level (0-3) of bitcode images
  std::string JitCache;     ///< folder of compiled bitcode-image code ("" for none)
  int MaxStartAttempts = 4; ///< restarts when the executor collides with host ranges
  /// Bytes the JIT cache folder may hold (OMPSIM_JIT_CACHE_MAX).
  uint64_t JitCacheMax = 256ULL << 20;
  /// Stock libomptarget's LIBOMPTARGET_JIT_* variables: dumps, replacement, IR pipeline.
  Config::StockJit StockJit;

  /// Options for device `deviceId` from the OMPSIM_* configuration; devices
  /// sit kArenaStride apart from OMPSIM_DEVICE_BASE. `DefaultLibDir` is used
  /// when OMPSIM_LIB_DIR is unset.
  static DeviceOptions fromConfig(int32_t DeviceId, const std::string &DefaultLibDir);
  /// Distance between the arenas of consecutive devices (1 TiB).
  static constexpr uint64_t kArenaStride = 1ULL << 40;
};

/// Counters and records of translate calls since the last take.
struct TranslateLog {
  uint64_t Hits = 0, Misses = 0, Recorded = 0, Dropped = 0;
  struct Record {
    uint64_t HostPtr, Result;
    bool Hit;
  };
  std::vector<Record> Records;
};

/// A device fault on a host address: what a diagnosis needs to say how to fix it.
struct HostFault {
  enum class Access { Call, Read, Write };
  Access Access = Access::Call;
  uint64_t Addr = 0; ///< the host address the device called, read or wrote
  /// The faulting kernel's translate lookups (empty without the device runtime).
  std::vector<TranslateLog::Record> Lookups;
  /// No lookup was dropped from `Lookups`, so one missing there was never made.
  bool LookupsComplete = false;
};

/// A device fault that read or wrote a data address (not a call, a stack
/// overflow or an exit): what the runtime needs to say what the address is.
struct DataFault {
  uint64_t Addr = 0;
  bool Write = false;
  std::string Context;     ///< what ran: "kernel __omp_offloading_..."
  std::string Instruction; ///< "dev:sym+0x1c (0x...)", "sym+0x1c in libm.so.6 (0x...)" or "0x..."
  /// When the faulting instruction lies in a shared library the device code
  /// called (libm, libc, the device runtime), not in the image: the
  /// library's file name, and its function ("" when no symbol covers it).
  std::string Library;
  std::string LibraryFunction;
  /// Under the map checker's placement: the address lies in the guard page
  /// after a live block (PastEnd) or in a block freed earlier (Freed).
  enum class Guard { None, PastEnd, Freed } GuardKind = Guard::None;
  uint64_t GuardBlock = 0;  ///< that block's address
  uint64_t GuardOffset = 0; ///< the address's offset from it
  /// Under the checker, when the address lies in memory the device runtime
  /// places (a GPU image's device heap, a team-shared global's guard page):
  /// what it says the address is, its calls named ("device-heap memory at
  /// 0x... (4 bytes past the end of ...)"), and the fix ("note: ..."); else
  /// empty.
  std::string DeviceWhat{}, DeviceNote{};
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
  static llvm::Expected<std::unique_ptr<DeviceController>> create(const DeviceOptions &Options);
  /// Starts the executor process and returns at once, without waiting for it
  /// to be ready: the host's own start-up work overlaps the executor's. Pass
  /// the result to finishStart() before any other call. The start-up bound
  /// runs from here.
  static llvm::Expected<std::unique_ptr<DeviceController>> spawn(const DeviceOptions &Options);
  /// Waits for a spawn()ed executor, reserves the host's ranges in it and maps
  /// the arena: after it, the controller is what create() returns.
  static llvm::Expected<std::unique_ptr<DeviceController>>
  finishStart(std::unique_ptr<DeviceController> Spawned);
  /// Shuts the executor down (fini functions run) and reaps it; kills it if it does not exit.
  ~DeviceController();
  DeviceController(const DeviceController &) = delete;
  DeviceController &operator=(const DeviceController &) = delete;

  /// Loads an ELF shared object or LLVM bitcode image; returns an image id.
  /// `Provides` are the library names (NEEDED entries of later images) this
  /// image answers to: the soname and file name of the host library that
  /// embeds it. A later ELF image that NEEDs one of them links against this
  /// image instead of loading a library of that name into the device.
  ///
  /// With `BytesOutliveImage` the caller vouches that `Bytes` stay mapped and
  /// unchanged until the image is unloaded (an image embedded in a registered
  /// host binary): symbolize() then reads them there instead of a copy taken
  /// at every load.
  llvm::Expected<uint64_t> loadImage(llvm::ArrayRef<char> Bytes, llvm::StringRef Name,
                                     llvm::ArrayRef<std::string> Provides = {},
                                     bool BytesOutliveImage = false);
  /// Device address of symbol `Name` in image `Image`; an error naming it when absent.
  llvm::Expected<uint64_t> lookup(uint64_t Image, llvm::StringRef Name);
  /// Addresses of many symbols of a loaded image in one request to the
  /// executor; 0 for a name the image does not define.
  llvm::Expected<std::vector<uint64_t>> lookupMany(uint64_t Image, llvm::ArrayRef<llvm::StringRef> Names);
  /// Runs the image's finalizers and frees its memory.
  llvm::Error unloadImage(uint64_t Image);

  /// Device heap allocation; 0 when the arena is exhausted or the device is gone.
  uint64_t allocate(uint64_t Size, uint64_t Align = 16);
  /// Memory the host and the device both use at one address (managed memory,
  /// TARGET_ALLOC_SHARED, and pinned host memory, TARGET_ALLOC_HOST), as a
  /// discrete GPU gives it: whole pages of the device heap that are also
  /// mapped into this process at their device address. Addresses come from
  /// the heap's allocator, so they are as deterministic as allocate()'s. An
  /// error naming the reason when the heap is exhausted or this process
  /// already has a mapping at that address.
  llvm::Expected<uint64_t> allocateHostVisible(uint64_t Size);
  /// Frees a block from allocate() or allocateHostVisible().
  llvm::Error release(uint64_t Addr);
  /// Copies host -> device through the shared arena pages; `Dst` must lie in the arena.
  llvm::Error write(uint64_t Dst, const void *Src, uint64_t Size);
  /// Copies device -> host through the shared arena pages; `Src` must lie in the arena.
  llvm::Error read(void *Dst, uint64_t Src, uint64_t Size);

  /// Runs `Entry` with the host-offload kernel ABI and waits for it (at most
  /// the kernel timeout). `KernelName` names it in diagnostics. Thread-safe:
  /// launches from several host threads run at once, each in a launch slot
  /// of its own (as many slots as CPUs, at least 2; a launch waits for a free
  /// one), and copies are not held up by a running kernel. `Options` holds
  /// the y and z extents of a bare kernel's grid and blocks, a GPU image's
  /// bare mode and its dynamic shared memory.
  llvm::Error launch(uint64_t Entry, llvm::ArrayRef<uint64_t> Args, uint32_t NumTeams, uint32_t ThreadLimit,
                     llvm::StringRef KernelName, const LaunchOptions &Options = {});

  /// Copies `Table` into device memory and publishes it to the device runtime.
  llvm::Error setFunctionPointerTable(llvm::ArrayRef<__omp_offloading_fptr_map_ty> Table);
  /// Takes the device runtime's translate log; `NextCap` records are kept in the next period.
  /// After a device fault, returns the log of the kernel that faulted (once).
  llvm::Expected<TranslateLog> takeTranslateLog(uint64_t NextCap, uint64_t MaxRecords);

  /// Sets what adds how to fix it to the death message of a fault on a host
  /// address (the executor's death, and every later call's error): it returns
  /// a note ("note: ...") or "".
  void setFaultAdvisor(std::function<std::string(const HostFault &)> Advisor);

  /// The data fault that killed the executor, if that is how it died.
  std::optional<DataFault> lastDataFault();

  /// "symbol+0xoff" for a device address in a loaded image, or "".
  std::string symbolize(uint64_t Addr);

  /// False once the executor has died or been stopped.
  bool alive();
  /// The executor's pid (for tests and traces).
  pid_t pid() const { return Pid; }
  /// The device id used in messages.
  int32_t deviceId() const { return Opts.DeviceId; }
  /// The arena's [base, base+size).
  uint64_t arenaBase() const { return Opts.ArenaBase; }
  uint64_t arenaSize() const { return Opts.ArenaSize; }

private:
  explicit DeviceController(const DeviceOptions &Options);
  llvm::Expected<uint64_t> loadBitcode(llvm::ArrayRef<char> Bytes, llvm::StringRef Name);
  llvm::Error start(std::vector<std::pair<uint64_t, uint64_t>> &Collided);
  /// The first half of start(): creates the shared memory and the executor process.
  llvm::Error launchExecutor();
  /// The second half of start(): the handshake, then the result of the
  /// executor's start-up set-up.
  llvm::Error connectExecutor(std::vector<std::pair<uint64_t, uint64_t>> &Collided);
  /// Writes the set-up the executor performs before its handshake into the
  /// mailbox (LaunchMailbox::StartSetup): the host's ranges known now and the arena.
  void writeStartSetup();
  /// Reserves in the executor the host ranges not reserved yet (libraries
  /// loaded since the spawn); returns those that collided with its mappings.
  llvm::Expected<std::vector<std::pair<uint64_t, uint64_t>>> reserveNewHostRanges();
  /// Traces host ranges the executor could not reserve (its own mappings were there).
  void traceUnreserved(const std::vector<std::pair<uint64_t, uint64_t>> &Ranges) const;
  /// Bytes at the start of the arena for code; the heap is the rest.
  uint64_t codeBytes() const { return std::min<uint64_t>(Opts.ArenaSize / 4, 256ULL << 20); }
  void stop(bool Graceful);
  /// Kills and reaps the executor's group guard, if there is one.
  void reapGroupGuard();
  /// The line for an executor killed because it did not start in time:
  /// before its handshake, or in the set-up after it.
  std::string startTimeoutMessage(bool Handshake) const;
  llvm::Error checkAlive();
  /// Creates the memfd shared with the executor (mailbox, then arena) and maps it here.
  llvm::Error mapSharedMemory(int &Fd);
  void unmapSharedMemory();
  /// True once the executor has exited (it is not reaped here).
  bool executorExited();
  llvm::Error checkRange(uint64_t Addr, uint64_t Size, llvm::StringRef What);
  /// Turns a failed call into the device's death message when the executor is gone.
  llvm::Error diagnose(llvm::Error CallError, const std::string &Context);
  std::string describeDeath(int Status, const std::string &Context);
  /// What a fault is reported in: with launches in flight, the kernel whose
  /// device thread (`Slot`, -1 for other threads) or code (`Rip`) faulted,
  /// which need not be the launch that noticed the death (`Context`).
  std::string faultContext(int32_t Slot, uint64_t Rip, const std::string &Context);
  /// The lazy-call thread: compiles what a first call in the executor asks
  /// for (bitcode images; see LaunchMailbox::lazyRequest).
  void serveLazyCalls();
  /// Ends the lazy-call thread (before the JIT goes away).
  void stopLazyCalls();
  template <typename Sig, typename RetT, typename... ArgTs>
  llvm::Error call(const char *FnName, const std::string &Context, RetT &Result, const ArgTs &...Args);

  struct Image {
    std::string Name;
    uint64_t RemoteHandle = 0; ///< executor handle (ELF) or 0 (JIT)
    uint64_t Base = 0, Size = 0;
    std::unique_ptr<ImageSymbolTable> Symbols; ///< ELF: built on the first symbolize
    /// A copy of an ELF image's bytes, for its symbols.
    std::vector<char> ElfBytes;
    /// The caller's bytes instead of a copy, when they outlive the image.
    llvm::ArrayRef<char> ElfView;
    std::unique_ptr<JITImage> Jit; ///< set for bitcode images
  };

  DeviceOptions Opts;
  std::recursive_mutex Mu;
  pid_t Pid = -1;
  /// The guard in the executor's process group that kills the group when the
  /// host dies (see spawnGroupGuard in DeviceControllerProcess.cpp), or -1.
  pid_t GuardPid = -1;
  int FaultFd = -1;
  int HostFd = -1; ///< our own descriptor of the transport socket (the EPC has another)
  /// Between launchExecutor() and connectExecutor(): the transport socket and
  /// our own duplicate of it (which becomes hostFd).
  int PendingSocket = -1, PendingOwnFd = -1;
  /// Kills an executor that does not finish starting in time; set while it starts.
  std::unique_ptr<StartupWatch> Watch;
  /// Host ranges [begin, end) the executor was asked to reserve.
  std::set<std::pair<uint64_t, uint64_t>> ReservedRanges;
  /// Owns the EPC; bitcode images are JIT-linked through it.
  std::unique_ptr<llvm::orc::ExecutionSession> Es;
  llvm::orc::SimpleRemoteEPC *Epc = nullptr;
  std::unique_ptr<DeviceJIT> Jit;
  std::thread LazyThread; ///< runs serveLazyCalls while jit_ exists
  std::atomic<bool> LazyStop{false};
  std::map<std::string, uint64_t> Fns; ///< wrapper name -> executor address
  std::map<uint64_t, Image> Images;
  uint64_t NextImage = 1;
  uint64_t TableAddr = 0;
  std::string DeathMessage; ///< non-empty once the executor is gone
  /// The faulting kernel's translate log, sent by the executor with its fault record.
  std::optional<TranslateLog> FaultTranslateLog;
  std::optional<HostFault> LastHostFault;
  std::optional<DataFault> LastDataFault;
  std::function<std::string(const HostFault &)> FaultAdvisor;
  /// The executor's memfd as mapped here: the launch mailbox, then the arena
  /// (LaunchMailbox::kBytes on). Null while no executor runs.
  char *Shared = nullptr;
  uint64_t SharedBytes = 0;
  /// Where device address `Addr` (in the arena) lies in this process's
  /// mapping of the memfd.
  char *sharedBytesOf(uint64_t Addr) const;
  /// Our descriptor of that memfd, kept to map host-visible blocks; -1 while
  /// no executor runs.
  int MemoryFd = -1;
  /// Host-visible blocks (allocateHostVisible): device address -> bytes
  /// mapped here at that same address.
  std::map<uint64_t, uint64_t> HostVisible;
  LaunchMailbox *Mailbox = nullptr;
  /// Launch slots: `FreeSlots` has bit i set while slot i of the mailbox is
  /// free (taken and given back without a lock: a launch that finds one free
  /// takes no mutex); `SlotSeq[i]` is the sequence number of the last launch
  /// posted in slot i (only its holder touches it). A launch that finds none
  /// free waits on SlotFreed under SlotMu, counted in SlotWaiters.
  std::atomic<uint32_t> FreeSlots{0};
  /// Launch slots in use: the CPUs of this process, at least 2, at most
  /// LaunchMailbox::kSlots.
  static uint32_t launchSlots();
  std::atomic<uint32_t> SlotWaiters{0};
  std::mutex SlotMu;
  std::condition_variable SlotFreed;
  std::vector<uint32_t> SlotSeq;
  /// The kernel thread id of slot i's device thread, for the hand-over
  /// (handOver() in LaunchMailbox.h), checked once against
  /// /proc/<executor>/task: the mailbox is memory device code can scribble
  /// on, and the host must not narrow the affinity of a thread that is not
  /// the executor's. 0 not known yet, -1 unusable; only the slot's holder
  /// touches it.
  std::vector<int32_t> SlotTids;
  /// SlotTids[Slot], looked up and checked the first time (-1: none usable).
  int32_t deviceThreadOf(uint32_t Slot, pid_t Executor);
  /// The device heap's blocks (the arena above the code region), kept here:
  /// allocation is address arithmetic and needs no round trip.
  std::unique_ptr<RangeAllocator> Heap;
  /// Under the map checker (OMPSIM_CHECK): data blocks with guard pages and
  /// a quarantine of freed ones, inside Heap; null otherwise.
  std::unique_ptr<GuardedArena> Guarded;
  /// Applies Guarded's queued page protections in the executor.
  llvm::Error applyProtections();
};

} // namespace ompsim::sim

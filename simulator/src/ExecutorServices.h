//===- ExecutorServices.h - The executor's shared state ----*- C++ -*-===//
//
// What ompsim-device.cpp, ExecutorFaults.cpp and ExecutorServices.cpp share:
// the device state, the fault side's globals and the SPS wrapper functions.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "ElfImageLoader.h"
#include "LaunchMailbox.h"
#include "Protocol.h"
#include "RangeAllocator.h"

#include "ompsim/Errors.h"
#include "ompsim/LaunchOptions.h"
#include "ompsim/TsanHandover.h"
#include "ompsim/device_runtime.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ExecutionEngine/Orc/Shared/AllocationActions.h"
#include "llvm/ExecutionEngine/Orc/Shared/OrcRTBridge.h"
#include "llvm/ExecutionEngine/Orc/Shared/TargetProcessControlTypes.h"
#include "llvm/ExecutionEngine/Orc/TargetProcess/ExecutorBootstrapService.h"
#include "llvm/ExecutionEngine/Orc/TargetProcess/SimpleRemoteEPCServer.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <dlfcn.h>
#include <ffi.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace llvm;
using namespace llvm::orc;
namespace sps = llvm::orc::shared;
namespace proto = ompsim::sim::protocol;

namespace ompsim::sim::executor {

constexpr uint64_t kPage = 4096;

extern int GFaultFd;
/// The memfd shared with the controller: the launch mailbox, then the arena.
extern int GArenaFd;
/// The launch mailbox at the start of that memfd, once mapped.
extern ompsim::sim::LaunchMailbox *GMailbox;
/// The host runtime the controller took out of LD_PRELOAD (may be empty).
extern std::string GHostRuntime;
/// The device runtime's log reader, once it is loaded; the fault handler sends
/// the faulting kernel's translate records after the fault record.
using TakeTranslateLogFn = ompsim_translate_stats (*)(ompsim_translate_record *, uint64_t);
extern std::atomic<TakeTranslateLogFn> GTakeTranslateLog;
/// The device runtime's description of a fault address in the heap it
/// checks (__ompsim_device_describe_address), for the fault record.
using DescribeAddressFn = decltype(&__ompsim_device_describe_address);
extern std::atomic<DescribeAddressFn> GDescribeAddress;
/// The device runtime's account of a fault in the checker's look at a
/// kernel's access (__ompsim_device_checked_access), for the fault record.
using CheckedAccessFn = decltype(&__ompsim_device_checked_access);
extern std::atomic<CheckedAccessFn> GCheckedAccess;
/// The launch slot the calling thread serves (-1: not a device thread); the
/// fault handler reports it, so the controller names the kernel that faulted
/// when launches of several slots are in flight.
extern thread_local int32_t TLaunchSlot;

/// Gives the calling thread an alternate signal stack so a stack overflow in
/// device code is still reported.
void ensureAltStack();
/// Installs the fatal-signal handlers that report a fault to the controller.
void installFaultHandlers();
/// Tells the controller, through `Mailbox`, that the executor is about to
/// end (after its fault or exit record was sent), and wakes a host waiting
/// for a launch. Async-signal-safe; does nothing before the mailbox is mapped.
void announceExit();
/// What device code calls for exit() (see ExecutorFaults.cpp).
[[noreturn]] void deviceExit(int Status);
/// What the device runtime calls when it stops a launch with a line.
[[noreturn]] void deviceStop(const char *Message);

/// Reserves each host range PROT_NONE; returns those that collided with a
/// mapping of the executor's own.
std::vector<std::tuple<uint64_t, uint64_t>>
reserveHostRanges(const std::vector<std::tuple<uint64_t, uint64_t>> &HostRanges);
/// Maps the arena at `Base` and loads the device runtime from `LibDir`, its
/// checks on with `Check` (the checker); once.
llvm::Error setUpDevice(uint64_t Base, uint64_t Size, uint64_t CodeBytes, const std::string &LibDir,
                        bool Check);
/// Performs the set-up the controller wrote into the mailbox before the
/// spawn and publishes its result there (LaunchMailbox::StartSetup).
void runStartSetup(ompsim::sim::LaunchMailbox::StartSetup &Setup, const std::string &LibDir);

/// The device: its arena, allocators, loaded images and libraries.
class DeviceState {
public:
  static DeviceState &get() {
    static DeviceState *S = new DeviceState(); // never destroyed: used until _exit
    return *S;
  }

  std::mutex Mu;
  uint64_t ArenaBase = 0, ArenaSize = 0;
  ompsim::sim::RangeAllocator Code; ///< image code; the controller keeps the heap
  std::string LibDir;
  std::vector<void *> Libraries; ///< dlopen handles, in load order
  std::map<std::string, void *> LibrariesByName;
  void *DeviceRuntime = nullptr;
  std::string DeviceRuntimeError;
  bool HostRuntimeLoaded = false;
  std::map<uint64_t, std::unique_ptr<ompsim::sim::LoadedElfImage>> Images;
  /// Library name -> handle of the loaded image that provides it: a shared
  /// library's device image stands in for that library in the NEEDED entries
  /// of images loaded after it, as the host library does on the host.
  std::map<std::string, uint64_t> ImageByLibraryName;
  /// Image handle -> handles of the loaded images it links against.
  std::map<uint64_t, std::vector<uint64_t>> ImageDependencies;
  uint64_t NextImage = 1;
  /// JIT allocations: initialize key -> dealloc actions.
  std::map<uint64_t, std::vector<sps::WrapperFunctionCall>> JitDeallocs;

  Error loadLibrary(StringRef Soname) {
    std::string Key = Soname.str();
    if (LibrariesByName.count(Key))
      return Error::success();
    void *H = nullptr;
    std::string InLibDir = LibDir + "/" + Key;
    // A host library may carry its own offload registration and need the
    // host runtime (it sees __ompsim_executor_marker and stays idle); load
    // that first, as the host's LD_PRELOAD would have, so the library binds
    // to it rather than to another libomptarget. Libraries that never need
    // it spare the executor libLLVM.
    static constexpr const char *kNeverNeedHostRuntime[] = {
        "libompsim",     "libomp.so", "libc.so",  "libm.so",   "libstdc++.so", "libgcc_s.so",
        "libpthread.so", "libdl.so",  "librt.so", "libffi.so", "libatomic.so"};
    if (!GHostRuntime.empty() && !HostRuntimeLoaded &&
        llvm::none_of(kNeverNeedHostRuntime, [&](const char *P) { return Soname.starts_with(P); })) {
      HostRuntimeLoaded = true;
      if (!::dlopen(GHostRuntime.c_str(), RTLD_NOW | RTLD_GLOBAL))
        return makeError(Twine("cannot load the host runtime ") + GHostRuntime + ": " + ::dlerror());
    }
    // ompsim's own libraries come from its lib dir; everything else from the
    // system search path, then the lib dir.
    if (Soname.starts_with("libompsim"))
      H = ::dlopen(InLibDir.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!H)
      H = ::dlopen(Key.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!H && !LibDir.empty())
      H = ::dlopen(InLibDir.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!H)
      return makeError(Twine("cannot load: ") + ::dlerror());
    LibrariesByName[Key] = H;
    Libraries.push_back(H);
    return Error::success();
  }

  void *resolve(StringRef Name) {
    if (Name == "exit")
      return reinterpret_cast<void *>(&deviceExit);
    std::string N = Name.str();
    for (void *H : Libraries)
      if (void *P = ::dlsym(H, N.c_str()))
        return P;
    return ::dlsym(RTLD_DEFAULT, N.c_str());
  }

  template <typename Fn> Fn runtimeFn(const char *Name) {
    return DeviceRuntime ? reinterpret_cast<Fn>(::dlsym(DeviceRuntime, Name)) : nullptr;
  }

private:
  DeviceState() = default;
};

/// Converts an SPS wrapper-function lambda into the C entry point ORC calls.
#define OMPSIM_WRAPPER(Name, Sig, ...)                                                                       \
  sps::CWrapperFunctionBuffer Name(const char *data, size_t size) {                                          \
    ensureAltStack();                                                                                        \
    return sps::WrapperFunction<Sig>::handle(data, size, __VA_ARGS__).release();                             \
  }

/// Declares a wrapper function OMPSIM_WRAPPER defines.
#define OMPSIM_WRAPPER_DECL(Name) sps::CWrapperFunctionBuffer Name(const char *data, size_t size)

OMPSIM_WRAPPER_DECL(reserveWrapper);
OMPSIM_WRAPPER_DECL(loadElfWrapper);
OMPSIM_WRAPPER_DECL(lookupWrapper);
OMPSIM_WRAPPER_DECL(lookupManyWrapper);
OMPSIM_WRAPPER_DECL(unloadWrapper);
OMPSIM_WRAPPER_DECL(allocCodeWrapper);
OMPSIM_WRAPPER_DECL(callVoidWrapper);
OMPSIM_WRAPPER_DECL(setFptrTableWrapper);
OMPSIM_WRAPPER_DECL(translateLogWrapper);
OMPSIM_WRAPPER_DECL(protectWrapper);

/// What a launch leaves to libomp's defaults, as the user's environment had
/// them when the executor started (captureTeamDefaults).
struct TeamDefaults {
  bool UserNumThreads = false; ///< OMP_NUM_THREADS was set by the user
  int NumTeams = 0;            ///< OMP_NUM_TEAMS (0: unset)
  int TeamsThreadLimit = 0;    ///< OMP_TEAMS_THREAD_LIMIT (0: unset)
  int Processors = 1;          ///< CPUs the executor may run on
  int ThreadBudget = 256;      ///< threads a launch runs at once (--device-threads)
};
extern TeamDefaults GTeamDefaults;

/// Records the user's team settings, then lifts libomp's cap on a team's
/// threads (nthreads-var, OMP_NUM_THREADS, by default the CPUs) to
/// `MaxThreads` unless the user set it, so that a thread_limit is honoured up
/// to the device's limits (runKernel narrows it per launch to the thread
/// budget shared by the launch's teams). Call before libomp loads.
void captureTeamDefaults(const char *MaxThreads);

/// Runs a kernel on the calling (device) thread. `Options`: a bare launch's
/// y and z extents, a GPU image's bare mode and dynamic shared memory.
Error runKernel(uint64_t Fn, ArrayRef<uint64_t> Args, uint32_t Teams, uint32_t Threads, int32_t Device,
                const LaunchOptions &Options = {});

} // namespace ompsim::sim::executor

// ompsim-device: the simulated device's executor process.
//
// Started by the sim plugin's controller with a socketpair end (the ORC
// SimpleRemoteEPC transport), a fault fd and a memfd it shares with the
// controller (launch mailbox and device arena, LaunchMailbox.h). Device
// code runs only here; the host copies to and from the shared arena pages,
// posts launches in the mailbox, and sends every other request through the
// SPS wrapper functions declared in Protocol.h.
#include "ElfImageLoader.h"
#include "LaunchMailbox.h"
#include "Protocol.h"
#include "RangeAllocator.h"

#include "ompsim/device_runtime.h"

#include "llvm/ExecutionEngine/Orc/Shared/AllocationActions.h"
#include "llvm/ExecutionEngine/Orc/Shared/OrcRTBridge.h"
#include "llvm/ExecutionEngine/Orc/Shared/TargetProcessControlTypes.h"
#include "llvm/ExecutionEngine/Orc/TargetProcess/ExecutorBootstrapService.h"
#include "llvm/ExecutionEngine/Orc/TargetProcess/SimpleRemoteEPCServer.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>
#include <ffi.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#include <sanitizer/tsan_interface.h>
#define OMPSIM_TSAN_HANDOVER 1
#endif
#endif

using namespace llvm;
using namespace llvm::orc;
namespace sps = llvm::orc::shared;
namespace proto = ompsim::sim::protocol;

namespace {

constexpr uint64_t kPage = 4096;

Error makeError(const Twine &msg) { return createStringError(inconvertibleErrorCode(), msg); }

// ---- faults -----------------------------------------------------------------

int gFaultFd = -1;
/// The memfd shared with the controller: the launch mailbox, then the arena.
int gArenaFd = -1;
/// The host runtime the controller took out of LD_PRELOAD (may be empty).
std::string gHostRuntime;
/// The device runtime's log reader, once it is loaded; the fault handler sends
/// the faulting kernel's translate records after the fault record.
using TakeTranslateLogFn = ompsim_translate_stats (*)(ompsim_translate_record *, uint64_t);
std::atomic<TakeTranslateLogFn> gTakeTranslateLog{nullptr};

/// The calling thread's stack [low, high), captured by ensureAltStack: the
/// fault handler reports it so the controller can tell a stack overflow
/// (pthread_getattr_np itself is not async-signal-safe). Local-exec TLS in
/// this non-PIE executable, so reading it in the handler is safe.
thread_local uint64_t tStackLow = 0, tStackHigh = 0;

/// Reports a fatal signal to the controller and exits. Async-signal-safe.
void onFatalSignal(int signo, siginfo_t *info, void *ctx) {
  proto::FaultRecord rec{};
  rec.magic = proto::FaultRecord::kMagic;
  rec.signo = signo;
  rec.code = info ? info->si_code : 0;
  rec.tid = int32_t(::syscall(SYS_gettid));
  rec.addr = info ? reinterpret_cast<uint64_t>(info->si_addr) : 0;
  rec.rip = ctx ? uint64_t(static_cast<ucontext_t *>(ctx)->uc_mcontext.gregs[REG_RIP]) : 0;
  rec.pageFaultCode = ctx ? uint64_t(static_cast<ucontext_t *>(ctx)->uc_mcontext.gregs[REG_ERR]) : 0;
  rec.rsp = ctx ? uint64_t(static_cast<ucontext_t *>(ctx)->uc_mcontext.gregs[REG_RSP]) : 0;
  rec.stackLow = tStackLow;
  rec.stackHigh = tStackHigh;
  if (gFaultFd >= 0) {
    ssize_t n = ::write(gFaultFd, &rec, sizeof rec);
    (void)n;
    // Publication never overlaps a kernel, so the runtime's publish lock is
    // free here; static buffers keep the handler free of allocation.
    if (TakeTranslateLogFn take = gTakeTranslateLog.load(std::memory_order_acquire)) {
      static ompsim_translate_record recs[proto::FaultTranslateLog::kMaxRecords];
      static proto::FaultTranslateLog log;
      ompsim_translate_stats st = take(recs, proto::FaultTranslateLog::kMaxRecords);
      uint64_t count = st.recorded < proto::FaultTranslateLog::kMaxRecords ? st.recorded
                                                                            : proto::FaultTranslateLog::kMaxRecords;
      log.magic = proto::FaultTranslateLog::kMagic;
      log.count = uint32_t(count);
      log.hits = st.hits;
      log.misses = st.misses;
      log.dropped = st.dropped + (st.recorded - count);
      for (uint64_t i = 0; i < count; ++i)
        log.records[i] = {recs[i].host_ptr, recs[i].result, recs[i].hit};
      n = ::write(gFaultFd, &log, sizeof log);
      (void)n;
    }
  }
  ::_exit(proto::kFaultExitStatus);
}

/// What device code calls for exit(): reports the call and its status to the
/// controller and ends the executor at once. The real exit() would run the
/// executor's atexit handlers and static destructors while its service and
/// device threads still run (std::terminate, SIGABRT).
[[noreturn]] void deviceExit(int status) {
  proto::FaultRecord rec{};
  rec.magic = proto::FaultRecord::kMagic;
  rec.signo = 0; // no signal: exit() was called
  rec.code = status;
  rec.tid = int32_t(::syscall(SYS_gettid));
  rec.rip = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  if (gFaultFd >= 0) {
    ssize_t n = ::write(gFaultFd, &rec, sizeof rec);
    (void)n;
  }
  ::_exit(proto::kFaultExitStatus);
}

/// Gives the calling thread an alternate signal stack so a stack overflow in
/// device code is still reported.
void ensureAltStack() {
  static thread_local bool done = false;
  if (done)
    return;
  done = true;
  stack_t ss{};
  ss.ss_size = 64 * 1024;
  ss.ss_sp = std::malloc(ss.ss_size);
  if (ss.ss_sp)
    ::sigaltstack(&ss, nullptr);
  pthread_attr_t attr;
  if (::pthread_getattr_np(::pthread_self(), &attr) == 0) {
    void *low = nullptr;
    size_t size = 0;
    if (::pthread_attr_getstack(&attr, &low, &size) == 0) {
      tStackLow = reinterpret_cast<uint64_t>(low);
      tStackHigh = tStackLow + size;
    }
    ::pthread_attr_destroy(&attr);
  }
}

void installFaultHandlers() {
  struct sigaction sa {};
  sa.sa_sigaction = onFatalSignal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGSEGV, SIGBUS, SIGILL, SIGFPE})
    ::sigaction(s, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  ensureAltStack();
}

// ---- device state -----------------------------------------------------------

/// The device: its arena, allocators, loaded images and libraries.
class DeviceState {
public:
  static DeviceState &get() {
    static DeviceState *s = new DeviceState(); // never destroyed: used until _exit
    return *s;
  }

  std::mutex mu;
  uint64_t arenaBase = 0, arenaSize = 0;
  ompsim::sim::RangeAllocator code; ///< image code; the controller keeps the heap
  std::string libDir;
  std::vector<void *> libraries; ///< dlopen handles, in load order
  std::map<std::string, void *> librariesByName;
  void *deviceRuntime = nullptr;
  std::string deviceRuntimeError;
  bool hostRuntimeLoaded = false;
  std::map<uint64_t, std::unique_ptr<ompsim::sim::LoadedElfImage>> images;
  /// Library name -> handle of the loaded image that provides it: a shared
  /// library's device image stands in for that library in the NEEDED entries
  /// of images loaded after it, as the host library does on the host.
  std::map<std::string, uint64_t> imageByLibraryName;
  /// Image handle -> handles of the loaded images it links against.
  std::map<uint64_t, std::vector<uint64_t>> imageDependencies;
  uint64_t nextImage = 1;
  /// JIT allocations: initialize key -> dealloc actions.
  std::map<uint64_t, std::vector<sps::WrapperFunctionCall>> jitDeallocs;

  Error loadLibrary(StringRef soname) {
    std::string key = soname.str();
    if (librariesByName.count(key))
      return Error::success();
    void *h = nullptr;
    std::string inLibDir = libDir + "/" + key;
    // A host library may carry its own offload registration and need the
    // host runtime (it sees __ompsim_executor_marker and stays idle); load
    // that first, as the host's LD_PRELOAD would have, so the library binds
    // to it rather than to another libomptarget. Libraries that never need
    // it spare the executor libLLVM.
    static constexpr const char *kNeverNeedHostRuntime[] = {
        "libompsim", "libomp.so", "libc.so", "libm.so", "libstdc++.so", "libgcc_s.so",
        "libpthread.so", "libdl.so", "librt.so", "libffi.so"};
    if (!gHostRuntime.empty() && !hostRuntimeLoaded &&
        llvm::none_of(kNeverNeedHostRuntime, [&](const char *p) { return soname.starts_with(p); })) {
      hostRuntimeLoaded = true;
      if (!::dlopen(gHostRuntime.c_str(), RTLD_NOW | RTLD_GLOBAL))
        return makeError(Twine("cannot load the host runtime ") + gHostRuntime + ": " + ::dlerror());
    }
    // ompsim's own libraries come from its lib dir; everything else from the
    // system search path, then the lib dir.
    if (soname.starts_with("libompsim"))
      h = ::dlopen(inLibDir.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!h)
      h = ::dlopen(key.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!h && !libDir.empty())
      h = ::dlopen(inLibDir.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!h)
      return makeError(Twine("cannot load: ") + ::dlerror());
    librariesByName[key] = h;
    libraries.push_back(h);
    return Error::success();
  }

  void *resolve(StringRef name) {
    if (name == "exit")
      return reinterpret_cast<void *>(&deviceExit);
    std::string n = name.str();
    for (void *h : libraries)
      if (void *p = ::dlsym(h, n.c_str()))
        return p;
    return ::dlsym(RTLD_DEFAULT, n.c_str());
  }

  template <typename Fn> Fn runtimeFn(const char *name) {
    return deviceRuntime ? reinterpret_cast<Fn>(::dlsym(deviceRuntime, name)) : nullptr;
  }

private:
  DeviceState() = default;
};

/// Converts an SPS wrapper-function lambda into the C entry point ORC calls.
#define OMPSIM_WRAPPER(Name, Sig, ...)                                                             \
  sps::CWrapperFunctionBuffer Name(const char *data, size_t size) {                                \
    ensureAltStack();                                                                              \
    return sps::WrapperFunction<Sig>::handle(data, size, __VA_ARGS__).release();                  \
  }

using RangeVec = std::vector<std::tuple<uint64_t, uint64_t>>;

OMPSIM_WRAPPER(setupWrapper, proto::SetupSignature,
               [](RangeVec hostRanges, uint64_t base, uint64_t size, uint64_t codeBytes,
                  std::string libDir) -> Expected<RangeVec> {
                 DeviceState &d = DeviceState::get();
                 std::lock_guard<std::mutex> lock(d.mu);
                 if (d.arenaSize)
                   return makeError("device already set up");
                 RangeVec collided;
                 for (auto [b, e] : hostRanges) {
                   void *p = ::mmap(reinterpret_cast<void *>(b), e - b, PROT_NONE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
                                    -1, 0);
                   if (p == MAP_FAILED || p != reinterpret_cast<void *>(b)) {
                     if (p != MAP_FAILED)
                       ::munmap(p, e - b);
                     collided.emplace_back(b, e);
                   }
                 }
                 // The controller maps the same memfd pages, so its copies to and
                 // from device memory need no round trip.
                 void *arena = ::mmap(reinterpret_cast<void *>(base), size, PROT_READ | PROT_WRITE,
                                      MAP_SHARED | MAP_NORESERVE | MAP_FIXED_NOREPLACE, gArenaFd,
                                      off_t(ompsim::sim::LaunchMailbox::kBytes));
                 if (arena == MAP_FAILED || arena != reinterpret_cast<void *>(base))
                   return makeError("cannot map the device arena at 0x" + Twine::utohexstr(base) +
                                    " (" + Twine(size) + " bytes): " + std::strerror(errno));
                 d.arenaBase = base;
                 d.arenaSize = size;
                 codeBytes = std::min(codeBytes, size) & ~(kPage - 1);
                 // The heap above the code region is the controller's to hand out.
                 d.code.reset(base, base + codeBytes);
                 d.libDir = libDir;
                 std::string rt = libDir + "/libompsim-device.so";
                 d.deviceRuntime = ::dlopen(rt.c_str(), RTLD_NOW | RTLD_GLOBAL);
                 if (d.deviceRuntime) {
                   gTakeTranslateLog.store(reinterpret_cast<TakeTranslateLogFn>(::dlsym(
                                               d.deviceRuntime, "__ompsim_device_take_translate_log")),
                                           std::memory_order_release);
                   d.librariesByName["libompsim-device.so"] = d.deviceRuntime;
                   d.libraries.push_back(d.deviceRuntime);
                 } else {
                   d.deviceRuntimeError = ::dlerror();
                 }
                 return collided;
               })

OMPSIM_WRAPPER(loadElfWrapper, proto::LoadElfSignature,
               [](std::vector<char> sent, uint64_t sharedAddr, uint64_t sharedSize, std::string name,
                  std::vector<std::string> provides) -> Expected<std::tuple<uint64_t, uint64_t, uint64_t>> {
                 // The controller usually copies the image into device memory
                 // (the shared arena) rather than through the socket.
                 ArrayRef<char> bytes = sent;
                 if (sent.empty() && sharedSize) {
                   DeviceState &d = DeviceState::get();
                   if (sharedAddr < d.arenaBase || sharedSize > d.arenaSize ||
                       sharedAddr - d.arenaBase > d.arenaSize - sharedSize)
                     return makeError("image " + name + ": its bytes at " + Twine::utohexstr(sharedAddr) +
                                      " are outside device memory");
                   bytes = ArrayRef<char>(reinterpret_cast<const char *>(sharedAddr), sharedSize);
                 }
                 DeviceState &d = DeviceState::get();
                 std::lock_guard<std::mutex> lock(d.mu);
                 // Device images this one links against, in NEEDED order: their
                 // symbols come before any library's, like ld.so's search scope.
                 std::vector<uint64_t> dependencies;
                 ompsim::sim::ElfLoadEnvironment env;
                 env.allocate = [&d](uint64_t size) -> Expected<uint8_t *> {
                   uint64_t a = d.code.allocate(size, kPage);
                   if (!a)
                     return makeError("code region exhausted (OMPSIM_DEVICE_MEMORY)");
                   return reinterpret_cast<uint8_t *>(a);
                 };
                 env.release = [&d](uint8_t *p) { d.code.release(reinterpret_cast<uint64_t>(p)); };
                 env.loadNeeded = [&d, &dependencies](StringRef so) -> Error {
                   auto provider = d.imageByLibraryName.find(so.str());
                   if (provider == d.imageByLibraryName.end())
                     return d.loadLibrary(so);
                   dependencies.push_back(provider->second);
                   return Error::success();
                 };
                 env.resolve = [&d, &dependencies](StringRef n) -> void * {
                   for (uint64_t h : dependencies)
                     if (uint64_t addr = d.images.at(h)->lookup(n))
                       return reinterpret_cast<void *>(addr);
                   return d.resolve(n);
                 };
                 auto img = ompsim::sim::ElfImageLoader::load(bytes, name, env);
                 if (!img)
                   return img.takeError();
                 uint64_t handle = d.nextImage++;
                 auto t = std::make_tuple(handle, (*img)->base(), (*img)->size());
                 d.images[handle] = std::move(*img);
                 d.imageDependencies[handle] = std::move(dependencies);
                 for (std::string &lib : provides)
                   d.imageByLibraryName.emplace(std::move(lib), handle);
                 std::fflush(nullptr);
                 return t;
               })

OMPSIM_WRAPPER(lookupWrapper, proto::LookupSignature,
               [](uint64_t handle, std::string name) -> Expected<uint64_t> {
                 DeviceState &d = DeviceState::get();
                 std::lock_guard<std::mutex> lock(d.mu);
                 auto it = d.images.find(handle);
                 if (it == d.images.end())
                   return makeError("no loaded image with handle " + Twine(handle));
                 return it->second->lookup(name);
               })

OMPSIM_WRAPPER(lookupManyWrapper, proto::LookupManySignature,
               [](uint64_t handle, std::vector<std::string> names) -> Expected<std::vector<uint64_t>> {
                 DeviceState &d = DeviceState::get();
                 std::lock_guard<std::mutex> lock(d.mu);
                 auto it = d.images.find(handle);
                 if (it == d.images.end())
                   return makeError("no loaded image with handle " + Twine(handle));
                 std::vector<uint64_t> addrs;
                 addrs.reserve(names.size());
                 for (const std::string &name : names)
                   addrs.push_back(it->second->lookup(name));
                 return addrs;
               })

OMPSIM_WRAPPER(unloadWrapper, proto::UnloadSignature, [](uint64_t handle) -> Error {
  DeviceState &d = DeviceState::get();
  std::lock_guard<std::mutex> lock(d.mu);
  auto it = d.images.find(handle);
  if (it == d.images.end())
    return makeError("no loaded image with handle " + Twine(handle));
  // Like dlclose, a library's image stays while an image linked against it does.
  for (auto &[user, deps] : d.imageDependencies)
    if (llvm::is_contained(deps, handle))
      return makeError("image " + it->second->name() + " is still needed by image " +
                       d.images.at(user)->name());
  it->second->runFini();
  d.images.erase(it);
  d.imageDependencies.erase(handle);
  std::erase_if(d.imageByLibraryName, [&](const auto &entry) { return entry.second == handle; });
  std::fflush(nullptr);
  return Error::success();
})

OMPSIM_WRAPPER(allocCodeWrapper, proto::AllocCodeSignature,
               [](uint64_t size, uint64_t align) -> uint64_t {
                 DeviceState &d = DeviceState::get();
                 std::lock_guard<std::mutex> lock(d.mu);
                 return d.code.allocate(size, std::max<uint64_t>(align, kPage));
               })

/// Runs `void fn(void *dyn_ptr, void *a0, ..., void *aN)` on the calling
/// thread (the device thread) with the team and thread defaults set.
Error runKernel(uint64_t fn, ArrayRef<uint64_t> args, uint32_t teams, uint32_t threads) {
  DeviceState &d = DeviceState::get();
  // Resolved once libomp is loaded (by the first image that needs it); only
  // the device thread runs kernels, so the cache needs no lock.
  static void (*setNumTeams)(int) = nullptr;
  static void (*setTeamsThreadLimit)(int) = nullptr;
  if (teams) {
    if (!setNumTeams)
      setNumTeams = reinterpret_cast<void (*)(int)>(d.resolve("omp_set_num_teams"));
    if (setNumTeams)
      setNumTeams(int(teams));
  }
  if (threads) {
    if (!setTeamsThreadLimit)
      setTeamsThreadLimit = reinterpret_cast<void (*)(int)>(d.resolve("omp_set_teams_thread_limit"));
    if (setTeamsThreadLimit)
      setTeamsThreadLimit(int(threads));
  }
  // void kernel(void *dyn_ptr, void *a0, ..., void *aN)
  std::vector<ffi_type *> types(args.size() + 1, &ffi_type_pointer);
  std::vector<void *> values(args.size() + 1, nullptr);
  std::vector<void *> slots(args.size() + 1);
  for (size_t i = 0; i < args.size(); ++i)
    values[i + 1] = reinterpret_cast<void *>(args[i]);
  for (size_t i = 0; i < values.size(); ++i)
    slots[i] = &values[i];
  ffi_cif cif;
  if (ffi_prep_cif(&cif, FFI_DEFAULT_ABI, unsigned(types.size()), &ffi_type_void, types.data()) !=
      FFI_OK)
    return makeError("libffi cannot describe a kernel with " + Twine(args.size()) + " arguments");
  ffi_call(&cif, reinterpret_cast<void (*)()>(fn), nullptr, slots.data());
  std::fflush(nullptr);
  return Error::success();
}

OMPSIM_WRAPPER(callVoidWrapper, proto::CallVoidSignature, [](uint64_t fn) -> Error {
  reinterpret_cast<void (*)()>(fn)();
  std::fflush(nullptr);
  return Error::success();
})

OMPSIM_WRAPPER(setFptrTableWrapper, proto::SetFptrTableSignature,
               [](uint64_t addr, uint64_t n) -> Error {
                 DeviceState &d = DeviceState::get();
                 auto set = d.runtimeFn<decltype(&__ompsim_device_set_fptr_table)>(
                     "__ompsim_device_set_fptr_table");
                 if (!set)
                   return makeError("device runtime libompsim-device.so unavailable: " +
                                    (d.deviceRuntimeError.empty() ? std::string("symbol missing")
                                                                  : d.deviceRuntimeError));
                 if (set(reinterpret_cast<const __omp_offloading_fptr_map_ty *>(addr), n) != 0)
                   return makeError("function-pointer table is not sorted by host address");
                 return Error::success();
               })

OMPSIM_WRAPPER(translateLogWrapper, proto::TranslateLogSignature,
               [](uint64_t cap, uint64_t max) -> Expected<std::vector<uint64_t>> {
                 DeviceState &d = DeviceState::get();
                 auto take = d.runtimeFn<decltype(&__ompsim_device_take_translate_log)>(
                     "__ompsim_device_take_translate_log");
                 auto setCap = d.runtimeFn<decltype(&__ompsim_device_set_translate_cap)>(
                     "__ompsim_device_set_translate_cap");
                 if (!take || !setCap)
                   return makeError("device runtime libompsim-device.so unavailable");
                 std::vector<ompsim_translate_record> recs(max);
                 ompsim_translate_stats st = take(recs.data(), max);
                 setCap(cap);
                 std::vector<uint64_t> out{st.hits, st.misses, st.recorded, st.dropped};
                 for (uint64_t i = 0; i < std::min(st.recorded, max); ++i) {
                   out.push_back(recs[i].host_ptr);
                   out.push_back(recs[i].result);
                   out.push_back(recs[i].hit);
                 }
                 return out;
               })

// ---- JIT memory in the arena ---------------------------------------------------

/// Serves EPCGenericJITLinkMemoryManager from the arena's code region, so
/// JIT-linked images get the same deterministic addresses as ELF images.
class ArenaJITMemoryService : public ExecutorBootstrapService {
public:
  Error shutdown() override { return Error::success(); }
  void addBootstrapSymbols(StringMap<ExecutorAddr> &M) override {
    M[rt::SimpleExecutorMemoryManagerInstanceName] = ExecutorAddr::fromPtr(this);
    M[rt::SimpleExecutorMemoryManagerReserveWrapperName] = ExecutorAddr::fromPtr(&reserveWrapper);
    M[rt::SimpleExecutorMemoryManagerInitializeWrapperName] =
        ExecutorAddr::fromPtr(&initializeWrapper);
    M[rt::SimpleExecutorMemoryManagerDeinitializeWrapperName] =
        ExecutorAddr::fromPtr(&deinitializeWrapper);
    M[rt::SimpleExecutorMemoryManagerReleaseWrapperName] = ExecutorAddr::fromPtr(&releaseWrapper);
  }

private:
  static sps::CWrapperFunctionBuffer reserveWrapper(const char *data, size_t size) {
    return sps::WrapperFunction<rt::SPSSimpleExecutorMemoryManagerReserveSignature>::handle(
               data, size,
               [](ExecutorAddr, uint64_t bytes) -> Expected<ExecutorAddr> {
                 DeviceState &d = DeviceState::get();
                 std::lock_guard<std::mutex> lock(d.mu);
                 uint64_t a = d.code.allocate((bytes + kPage - 1) & ~(kPage - 1), kPage);
                 if (!a)
                   return makeError("device code region exhausted (OMPSIM_DEVICE_MEMORY)");
                 return ExecutorAddr(a);
               })
        .release();
  }
  static sps::CWrapperFunctionBuffer initializeWrapper(const char *data, size_t size) {
    return sps::WrapperFunction<rt::SPSSimpleExecutorMemoryManagerInitializeSignature>::handle(
               data, size,
               [](ExecutorAddr, tpctypes::FinalizeRequest fr) -> Expected<ExecutorAddr> {
                 ExecutorAddr key;
                 for (auto &seg : fr.Segments) {
                   char *p = seg.Addr.toPtr<char *>();
                   ::mprotect(reinterpret_cast<void *>(seg.Addr.getValue() & ~(kPage - 1)),
                              ((seg.Addr.getValue() + seg.Size + kPage - 1) & ~(kPage - 1)) -
                                  (seg.Addr.getValue() & ~(kPage - 1)),
                              PROT_READ | PROT_WRITE);
                   std::memcpy(p, seg.Content.data(), seg.Content.size());
                   if (seg.Size > seg.Content.size())
                     std::memset(p + seg.Content.size(), 0, seg.Size - seg.Content.size());
                   if (!key || seg.Addr < key)
                     key = seg.Addr;
                 }
                 for (auto &seg : fr.Segments) {
                   auto prot = toSysMemoryProtectionFlags(seg.RAG.Prot);
                   int p = ((prot & sys::Memory::MF_READ) ? PROT_READ : 0) |
                           ((prot & sys::Memory::MF_WRITE) ? PROT_WRITE : 0) |
                           ((prot & sys::Memory::MF_EXEC) ? PROT_EXEC : 0);
                   uint64_t b = seg.Addr.getValue() & ~(kPage - 1);
                   uint64_t e = (seg.Addr.getValue() + seg.Size + kPage - 1) & ~(kPage - 1);
                   if (::mprotect(reinterpret_cast<void *>(b), e - b, p) != 0)
                     return makeError("mprotect of JIT segment failed");
                   if (p & PROT_EXEC)
                     sys::Memory::InvalidateInstructionCache(reinterpret_cast<void *>(b), e - b);
                 }
                 auto deallocs = shared::runFinalizeActions(fr.Actions);
                 if (!deallocs)
                   return deallocs.takeError();
                 DeviceState &d = DeviceState::get();
                 std::lock_guard<std::mutex> lock(d.mu);
                 d.jitDeallocs[key.getValue()] = std::move(*deallocs);
                 return key;
               })
        .release();
  }
  static sps::CWrapperFunctionBuffer deinitializeWrapper(const char *data, size_t size) {
    return sps::WrapperFunction<rt::SPSSimpleExecutorMemoryManagerDeinitializeSignature>::handle(
               data, size,
               [](ExecutorAddr, std::vector<ExecutorAddr> keys) -> Error {
                 DeviceState &d = DeviceState::get();
                 Error err = Error::success();
                 for (auto k : keys) {
                   std::vector<sps::WrapperFunctionCall> calls;
                   {
                     std::lock_guard<std::mutex> lock(d.mu);
                     calls = std::move(d.jitDeallocs[k.getValue()]);
                     d.jitDeallocs.erase(k.getValue());
                   }
                   err = joinErrors(std::move(err), shared::runDeallocActions(calls));
                 }
                 return err;
               })
        .release();
  }
  static sps::CWrapperFunctionBuffer releaseWrapper(const char *data, size_t size) {
    return sps::WrapperFunction<rt::SPSSimpleExecutorMemoryManagerReleaseSignature>::handle(
               data, size,
               [](ExecutorAddr, std::vector<ExecutorAddr> bases) -> Error {
                 DeviceState &d = DeviceState::get();
                 std::lock_guard<std::mutex> lock(d.mu);
                 for (auto b : bases) {
                   uint64_t len = d.code.blockSize(b.getValue());
                   if (len)
                     ::mprotect(b.toPtr<void *>(), len, PROT_READ | PROT_WRITE);
                   d.code.release(b.getValue());
                 }
                 return Error::success();
               })
        .release();
  }
};

/// The one thread that runs device work: launches posted in the shared
/// mailbox and every SPS request ORC's listener thread hands over. One thread
/// calls into libomp for the whole life of the device, and requests never
/// overlap.
class DeviceThread {
public:
  /// Maps the mailbox from the shared memfd; false when it cannot.
  bool mapMailbox(int fd) {
    void *p = ::mmap(nullptr, ompsim::sim::LaunchMailbox::kBytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                     fd, 0);
    if (p == MAP_FAILED)
      return false;
    mailbox_ = static_cast<ompsim::sim::LaunchMailbox *>(p);
    return true;
  }

  void start() {
    thread_ = std::thread([this] {
      ensureAltStack();
      run();
    });
  }

  /// Queues an SPS request for the device thread (called on ORC's listener
  /// thread). While a lazy call waits for its compile, the requests that
  /// compile needs (JIT memory, stub updates) run at once on the listener
  /// thread: the device thread may be the one waiting.
  void post(unique_function<void()> work) {
    if (inlineRequests_.load(std::memory_order_acquire) > 0) {
      work();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(work));
    }
    ring();
  }

  /// Runs what is queued, then stops the loop and waits for the thread.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    ring();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id())
      thread_.join();
  }

  /// Asks the controller to compile the function behind `trampoline` and
  /// waits for its address (the first call of a function of a bitcode image).
  uint64_t lazyCall(uint64_t trampoline) {
    static std::mutex oneAtATime;
    std::lock_guard<std::mutex> lock(oneAtATime);
    ompsim::sim::LaunchMailbox &mb = *mailbox_;
    inlineRequests_.fetch_add(1, std::memory_order_acq_rel);
    mb.lazyTrampoline = trampoline;
    uint32_t seq = mb.lazyRequest.load(std::memory_order_relaxed) + 1;
    mb.lazyRequest.store(seq, std::memory_order_seq_cst);
    ompsim::sim::sharedFutexWake(mb.lazyRequest);
    for (;;) {
      uint32_t served = mb.lazyServed.load(std::memory_order_acquire);
      if (served == seq)
        break;
      ompsim::sim::sharedFutexWait(mb.lazyServed, served);
    }
    uint64_t landing = mb.lazyLanding;
    inlineRequests_.fetch_sub(1, std::memory_order_acq_rel);
    return landing;
  }

private:
  void ring() {
    mailbox_->doorbell.fetch_add(1, std::memory_order_seq_cst);
    if (mailbox_->executorSleeping.load(std::memory_order_seq_cst))
      ompsim::sim::sharedFutexWake(mailbox_->doorbell);
  }

  /// Runs the launch posted as `seq` and publishes its completion.
  void serveLaunch(uint32_t seq) {
    ompsim::sim::LaunchMailbox &mb = *mailbox_;
    mb.executorCpu.store(::sched_getcpu(), std::memory_order_relaxed);
    uint32_t n = std::min(mb.numArgs, ompsim::sim::LaunchMailbox::kMaxArgs);
    Error err = runKernel(mb.entry, ArrayRef<uint64_t>(mb.args, n), mb.teams, mb.threads);
    mb.status = err ? 1 : 0;
    mb.messageLength = 0;
    if (err) {
      std::string why = toString(std::move(err));
      mb.messageLength = uint32_t(std::min<size_t>(why.size(), sizeof mb.message));
      std::memcpy(mb.message, why.data(), mb.messageLength);
    }
    lastLaunch_ = seq;
    mb.done.store(seq, std::memory_order_seq_cst);
    if (mb.hostWaiting.load(std::memory_order_seq_cst))
      ompsim::sim::sharedFutexWake(mb.done);
  }

  void run() {
    ompsim::sim::LaunchMailbox &mb = *mailbox_;
    // After work, stay awake a little: the next launch usually follows at once.
    constexpr uint64_t kSpinNanos = 200000;
    bool spin = false;
    for (;;) {
      uint32_t bell = mb.doorbell.load(std::memory_order_seq_cst);
      uint32_t seq = mb.request.load(std::memory_order_acquire);
      if (seq != lastLaunch_) {
        serveLaunch(seq);
        spin = true;
        continue;
      }
      unique_function<void()> work;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!queue_.empty()) {
          work = std::move(queue_.front());
          queue_.pop_front();
        } else if (stopping_) {
          return;
        }
      }
      if (work) {
        work();
        spin = true;
        continue;
      }
      if (spin) {
        spin = false;
        ompsim::sim::spinFor(kSpinNanos, mb.executorCpu, mb.hostCpu, [&] {
          return mb.doorbell.load(std::memory_order_relaxed) != bell ||
                 mb.request.load(std::memory_order_relaxed) != lastLaunch_;
        });
        continue;
      }
      mb.executorSleeping.store(1, std::memory_order_seq_cst);
      if (mb.doorbell.load(std::memory_order_seq_cst) == bell)
        ompsim::sim::sharedFutexWait(mb.doorbell, bell);
      mb.executorSleeping.store(0, std::memory_order_seq_cst);
    }
  }

  ompsim::sim::LaunchMailbox *mailbox_ = nullptr;
  /// Lazy calls waiting for their compile (see post).
  std::atomic<int> inlineRequests_{0};
  uint32_t lastLaunch_ = 0;
  std::mutex mu_;
  std::deque<unique_function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

DeviceThread gDeviceThread;

/// The resolver block of the JIT calls this (with the registers of the
/// interrupted call saved) on the first call of a function of a bitcode image.
uint64_t lazyReenter(uint64_t /*context*/, uint64_t trampoline) {
  return gDeviceThread.lazyCall(trampoline);
}

/// Where a first call lands when its function could not be compiled; the
/// controller has the reason, the host reports the exit.
void lazyFailed() {
  std::fprintf(stderr, "ompsim-device: a device function of a bitcode image could not be compiled "
                       "on its first call\n");
  std::fflush(nullptr);
  ::_exit(70);
}

/// A token for ThreadSanitizer only. SimpleRemoteEPCServer::Create (inline,
/// so instrumented here) reads the server's service list on the main thread;
/// at disconnect ORC's listener thread (in uninstrumented libLLVM) destroys
/// that list right after calling our dispatcher's shutdown(). What orders the
/// two is the host: it disconnects only after it received the setup message
/// that Create sends after that read, a chain through another process that
/// TSan cannot see. main releases the token once Create returned, shutdown()
/// acquires it.
[[maybe_unused]] char gServerCreatedToken;

/// Hands every request to the device thread; at disconnect, lets it finish
/// what is queued.
class DeviceThreadDispatcher : public SimpleRemoteEPCServer::Dispatcher {
public:
  void dispatch(unique_function<void()> work) override { gDeviceThread.post(std::move(work)); }
  void shutdown() override {
#ifdef OMPSIM_TSAN_HANDOVER
    __tsan_acquire(&gServerCreatedToken);
#endif
    gDeviceThread.stop();
  }
};

int usage() {
  std::fprintf(stderr, "ompsim-device: started by the sim plugin, not by hand "
                       "(usage: ompsim-device --fd N --fault-fd N --arena-fd N --parent PID [--host-runtime PATH])\n");
  return 2;
}

} // namespace

/// Marks this process as a simulated device. A host library loaded here to
/// satisfy a device image's NEEDED entry may carry its own offload
/// registration; ompsim's runtime sees this symbol and leaves that
/// registration alone instead of starting a device inside the device.
extern "C" __attribute__((visibility("default"), used)) const char __ompsim_executor_marker[] =
    "ompsim-device";

int main(int argc, char **argv) {
  int fd = -1;
  long parent = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--fd")
      fd = std::atoi(argv[i + 1]);
    else if (a == "--fault-fd")
      gFaultFd = std::atoi(argv[i + 1]);
    else if (a == "--arena-fd")
      gArenaFd = std::atoi(argv[i + 1]);
    else if (a == "--parent")
      parent = std::atol(argv[i + 1]);
    else if (a == "--host-runtime")
      gHostRuntime = argv[i + 1];
    else
      return usage();
  }
  if (fd < 0 || parent <= 0 || gArenaFd < 0)
    return usage();
  // No executor outlives its host: die with the parent, and close the race
  // where the parent died before the prctl.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent)
    return 1;
  installFaultHandlers();
  if (!gDeviceThread.mapMailbox(gArenaFd)) {
    std::fprintf(stderr, "ompsim-device: cannot map the launch mailbox: %s\n", std::strerror(errno));
    return 1;
  }
  gDeviceThread.start();

  auto server = SimpleRemoteEPCServer::Create<FDSimpleRemoteEPCTransport>(
      [](SimpleRemoteEPCServer::Setup &S) -> Error {
        S.setDispatcher(std::make_unique<DeviceThreadDispatcher>());
        S.bootstrapSymbols() = SimpleRemoteEPCServer::defaultBootstrapSymbols();
        S.services().push_back(std::make_unique<ArenaJITMemoryService>());
        auto &syms = S.bootstrapSymbols();
        syms[proto::SetupName] = ExecutorAddr::fromPtr(&setupWrapper);
        syms[proto::LoadElfName] = ExecutorAddr::fromPtr(&loadElfWrapper);
        syms[proto::LookupName] = ExecutorAddr::fromPtr(&lookupWrapper);
        syms[proto::LookupManyName] = ExecutorAddr::fromPtr(&lookupManyWrapper);
        syms[proto::UnloadName] = ExecutorAddr::fromPtr(&unloadWrapper);
        syms[proto::AllocCodeName] = ExecutorAddr::fromPtr(&allocCodeWrapper);
        syms[proto::CallVoidName] = ExecutorAddr::fromPtr(&callVoidWrapper);
        syms[proto::LazyReenterName] = ExecutorAddr::fromPtr(&lazyReenter);
        syms[proto::LazyFailedName] = ExecutorAddr::fromPtr(&lazyFailed);
        syms[proto::SetFptrTableName] = ExecutorAddr::fromPtr(&setFptrTableWrapper);
        syms[proto::TranslateLogName] = ExecutorAddr::fromPtr(&translateLogWrapper);
        return Error::success();
      },
      fd, fd);
  if (!server) {
    logAllUnhandledErrors(server.takeError(), errs(), "ompsim-device: ");
    gDeviceThread.stop();
    return 1;
  }
#ifdef OMPSIM_TSAN_HANDOVER
  __tsan_release(&gServerCreatedToken);
#endif
  if (auto err = (*server)->waitForDisconnect())
    consumeError(std::move(err)); // the host went away; nothing to report to
  gDeviceThread.stop(); // the dispatcher's shutdown already drained it
  // Joins the transport's listener thread, which has finished by now.
  server->reset();
  DeviceState &d = DeviceState::get();
  {
    std::lock_guard<std::mutex> lock(d.mu);
    for (auto it = d.images.rbegin(); it != d.images.rend(); ++it)
      it->second->runFini();
  }
  std::fflush(nullptr);
  // Skip static destructors: device code may have registered atexit handlers
  // in memory that is about to go away with the process anyway.
  ::_exit(0);
}

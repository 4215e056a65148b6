// ompsim-device: the simulated device's executor process.
//
// Started by the sim plugin's controller with a socketpair end (the ORC
// SimpleRemoteEPC transport), a fault fd and a memfd it shares with the
// controller (launch mailbox and device arena, LaunchMailbox.h). Device
// code runs only here; the host copies to and from the shared arena pages,
// posts launches in the mailbox, and sends every other request through the
// SPS wrapper functions declared in Protocol.h.

#include "ExecutorServices.h"

#include "ElfImageLoader.h"
#include "LaunchMailbox.h"
#include "Protocol.h"
#include "RangeAllocator.h"

#include "ompsim/device_runtime.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ExecutionEngine/Orc/Shared/AllocationActions.h"
#include "llvm/ExecutionEngine/Orc/Shared/OrcRTBridge.h"
#include "llvm/ExecutionEngine/Orc/Shared/TargetProcessControlTypes.h"
#include "llvm/ExecutionEngine/Orc/TargetProcess/ExecutorBootstrapService.h"
#include "llvm/ExecutionEngine/Orc/TargetProcess/SimpleRemoteEPCServer.h"
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

// OMPSIM_TSAN_HANDOVER, the llvm/orc namespaces, `sps` and `proto` come from
// ExecutorServices.h.
using namespace ompsim::sim::executor;

namespace {

// ---- JIT memory in the arena ---------------------------------------------------

/// Serves EPCGenericJITLinkMemoryManager from the arena's code region, so
/// JIT-linked images get the same deterministic addresses as ELF images.
class ArenaJITMemoryService : public ExecutorBootstrapService {
public:
  Error shutdown() override { return Error::success(); }
  void addBootstrapSymbols(StringMap<ExecutorAddr> &M) override {
    M[rt::SimpleExecutorMemoryManagerInstanceName] = ExecutorAddr::fromPtr(this);
    M[rt::SimpleExecutorMemoryManagerReserveWrapperName] = ExecutorAddr::fromPtr(&reserveWrapper);
    M[rt::SimpleExecutorMemoryManagerInitializeWrapperName] = ExecutorAddr::fromPtr(&initializeWrapper);
    M[rt::SimpleExecutorMemoryManagerDeinitializeWrapperName] = ExecutorAddr::fromPtr(&deinitializeWrapper);
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
    void *p = ::mmap(nullptr, ompsim::sim::LaunchMailbox::kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
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
    // After a launch, stay awake a little: the next one usually follows at
    // once. Not after an SPS request: its caller waits on the socket, not in
    // the mailbox, so nothing says where it wakes up (perhaps behind us).
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
        spin = false;
        continue;
      }
      if (spin) {
        spin = false;
        ompsim::sim::spinFor(kSpinNanos, mb.executorCpu, mb.hostCpu, mb.hostWaiting, [&] {
          return mb.doorbell.load(std::memory_order_relaxed) != bell ||
                 mb.request.load(std::memory_order_relaxed) != lastLaunch_;
        });
        continue;
      }
      mb.executorSleeping.store(1, std::memory_order_seq_cst);
      if (mb.doorbell.load(std::memory_order_seq_cst) == bell)
        ompsim::sim::sharedFutexWait(mb.doorbell, bell);
      // Where we woke up, before saying we run (the host's spinFor reads the
      // flag first).
      mb.executorCpu.store(::sched_getcpu(), std::memory_order_relaxed);
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
uint64_t lazyReenter(uint64_t /*context*/, uint64_t trampoline) { return gDeviceThread.lazyCall(trampoline); }

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
  std::fprintf(
      stderr, "ompsim-device: started by the sim plugin, not by hand "
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
  gDeviceThread.stop();           // the dispatcher's shutdown already drained it
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

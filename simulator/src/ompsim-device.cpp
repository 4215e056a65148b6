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

#include <algorithm>
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

// The llvm/orc namespaces, `sps` and `proto` come from
// ExecutorServices.h.
using namespace ompsim::sim::executor;
using ompsim::makeError;

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
  static sps::CWrapperFunctionBuffer reserveWrapper(const char *Data, size_t Size) {
    return sps::WrapperFunction<rt::SPSSimpleExecutorMemoryManagerReserveSignature>::handle(
               Data, Size,
               [](ExecutorAddr, uint64_t Bytes) -> Expected<ExecutorAddr> {
                 DeviceState &D = DeviceState::get();
                 std::lock_guard<std::mutex> Lock(D.Mu);
                 uint64_t A = D.Code.allocate((Bytes + kPage - 1) & ~(kPage - 1), kPage);
                 if (!A)
                   return makeError("device code region exhausted (OMPSIM_DEVICE_MEMORY)");
                 return ExecutorAddr(A);
               })
        .release();
  }
  static sps::CWrapperFunctionBuffer initializeWrapper(const char *Data, size_t Size) {
    return sps::WrapperFunction<rt::SPSSimpleExecutorMemoryManagerInitializeSignature>::handle(
               Data, Size,
               [](ExecutorAddr, tpctypes::FinalizeRequest Fr) -> Expected<ExecutorAddr> {
                 ExecutorAddr Key;
                 for (auto &Seg : Fr.Segments) {
                   char *P = Seg.Addr.toPtr<char *>();
                   ::mprotect(reinterpret_cast<void *>(Seg.Addr.getValue() & ~(kPage - 1)),
                              ((Seg.Addr.getValue() + Seg.Size + kPage - 1) & ~(kPage - 1)) -
                                  (Seg.Addr.getValue() & ~(kPage - 1)),
                              PROT_READ | PROT_WRITE);
                   std::memcpy(P, Seg.Content.data(), Seg.Content.size());
                   if (Seg.Size > Seg.Content.size())
                     std::memset(P + Seg.Content.size(), 0, Seg.Size - Seg.Content.size());
                   if (!Key || Seg.Addr < Key)
                     Key = Seg.Addr;
                 }
                 for (auto &Seg : Fr.Segments) {
                   auto Prot = toSysMemoryProtectionFlags(Seg.RAG.Prot);
                   int P = ((Prot & sys::Memory::MF_READ) ? PROT_READ : 0) |
                           ((Prot & sys::Memory::MF_WRITE) ? PROT_WRITE : 0) |
                           ((Prot & sys::Memory::MF_EXEC) ? PROT_EXEC : 0);
                   uint64_t B = Seg.Addr.getValue() & ~(kPage - 1);
                   uint64_t E = (Seg.Addr.getValue() + Seg.Size + kPage - 1) & ~(kPage - 1);
                   if (::mprotect(reinterpret_cast<void *>(B), E - B, P) != 0)
                     return makeError("mprotect of JIT segment failed");
                   if (P & PROT_EXEC)
                     sys::Memory::InvalidateInstructionCache(reinterpret_cast<void *>(B), E - B);
                 }
                 auto Deallocs = shared::runFinalizeActions(Fr.Actions);
                 if (!Deallocs)
                   return Deallocs.takeError();
                 DeviceState &D = DeviceState::get();
                 std::lock_guard<std::mutex> Lock(D.Mu);
                 D.JitDeallocs[Key.getValue()] = std::move(*Deallocs);
                 return Key;
               })
        .release();
  }
  static sps::CWrapperFunctionBuffer deinitializeWrapper(const char *Data, size_t Size) {
    return sps::WrapperFunction<rt::SPSSimpleExecutorMemoryManagerDeinitializeSignature>::handle(
               Data, Size,
               [](ExecutorAddr, std::vector<ExecutorAddr> Keys) -> Error {
                 DeviceState &D = DeviceState::get();
                 Error Err = Error::success();
                 for (auto K : Keys) {
                   std::vector<sps::WrapperFunctionCall> Calls;
                   {
                     std::lock_guard<std::mutex> Lock(D.Mu);
                     Calls = std::move(D.JitDeallocs[K.getValue()]);
                     D.JitDeallocs.erase(K.getValue());
                   }
                   Err = joinErrors(std::move(Err), shared::runDeallocActions(Calls));
                 }
                 return Err;
               })
        .release();
  }
  static sps::CWrapperFunctionBuffer releaseWrapper(const char *Data, size_t Size) {
    return sps::WrapperFunction<rt::SPSSimpleExecutorMemoryManagerReleaseSignature>::handle(
               Data, Size,
               [](ExecutorAddr, std::vector<ExecutorAddr> Bases) -> Error {
                 DeviceState &D = DeviceState::get();
                 std::lock_guard<std::mutex> Lock(D.Mu);
                 for (auto B : Bases) {
                   uint64_t Len = D.Code.blockSize(B.getValue());
                   if (Len)
                     ::mprotect(B.toPtr<void *>(), Len, PROT_READ | PROT_WRITE);
                   D.Code.release(B.getValue());
                 }
                 return Error::success();
               })
        .release();
  }
};

using ompsim::sim::LaunchMailbox;

/// Lazy calls waiting for their compile (see DeviceThread::post).
std::atomic<int> GInlineRequests{0};

/// Asks the controller to compile the function behind `Trampoline` and
/// waits for its address (the first call of a function of a bitcode image),
/// on whichever device thread made the call.
uint64_t lazyCall(uint64_t Trampoline) {
  static std::mutex OneAtATime;
  std::lock_guard<std::mutex> Lock(OneAtATime);
  LaunchMailbox &Mb = *GMailbox;
  GInlineRequests.fetch_add(1, std::memory_order_acq_rel);
  Mb.LazyTrampoline = Trampoline;
  uint32_t Seq = Mb.LazyRequest.load(std::memory_order_relaxed) + 1;
  Mb.LazyRequest.store(Seq, std::memory_order_seq_cst);
  ompsim::sim::sharedFutexWake(Mb.LazyRequest);
  for (;;) {
    uint32_t Served = Mb.LazyServed.load(std::memory_order_acquire);
    if (Served == Seq)
      break;
    ompsim::sim::sharedFutexWait(Mb.LazyServed, Served);
  }
  uint64_t Landing = Mb.LazyLanding;
  GInlineRequests.fetch_sub(1, std::memory_order_acq_rel);
  return Landing;
}

/// A thread that runs device work: the launches posted in one slot of the
/// shared mailbox and, for slot 0, every SPS request ORC's listener thread
/// hands over (those never overlap one another). Each slot has its own
/// thread, so kernels of different slots run at once.
class DeviceThread {
public:
  /// Maps the mailbox from the shared memfd; false when it cannot.
  static bool mapMailbox(int Fd) {
    void *P = ::mmap(nullptr, LaunchMailbox::kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, Fd, 0);
    if (P == MAP_FAILED)
      return false;
    GMailbox = static_cast<LaunchMailbox *>(P); // also for the fault handlers' announceExit
    return true;
  }

  /// Starts the thread of slot `Index` (after mapMailbox).
  void start(uint32_t Index) {
    Slot = &GMailbox->Slots[Index];
    Thread = std::thread([this, Index] {
      TLaunchSlot = int32_t(Index);
      ensureAltStack();
      if (::sched_getaffinity(0, sizeof OwnCpus, &OwnCpus) != 0)
        CPU_ZERO(&OwnCpus);
      Slot->ExecutorTid.store(int32_t(::gettid()), std::memory_order_release);
      run();
    });
  }

  /// Queues an SPS request for slot 0's device thread (called on ORC's
  /// listener thread). While a lazy call waits for its compile, the requests
  /// that compile needs (JIT memory, stub updates) run at once on the
  /// listener thread: the device thread may be the one waiting.
  void post(unique_function<void()> Work) {
    if (GInlineRequests.load(std::memory_order_acquire) > 0) {
      Work();
      return;
    }
    {
      std::lock_guard<std::mutex> Lock(Mu);
      Queue.push_back(std::move(Work));
    }
    ring();
  }

  /// Runs what is queued, then stops the loop and waits for the thread.
  void stop() {
    {
      std::lock_guard<std::mutex> Lock(Mu);
      Stopping = true;
    }
    if (!Slot)
      return; // never started
    ring();
    if (Thread.joinable() && Thread.get_id() != std::this_thread::get_id())
      Thread.join();
  }

private:
  void ring() {
    Slot->Doorbell.fetch_add(1, std::memory_order_seq_cst);
    if (Slot->ExecutorSleeping.load(std::memory_order_seq_cst))
      ompsim::sim::sharedFutexWake(Slot->Doorbell);
  }

  /// Runs the launch posted as `Seq` and publishes its completion.
  void serveLaunch(uint32_t Seq) {
    LaunchMailbox::Slot &Mb = *Slot;
    // Woken on the host's CPU (handOver()): the kernel runs with the mask the
    // thread started with, so that the threads it starts inherit that one and
    // a long kernel may move.
    if (Mb.Pinned.exchange(0, std::memory_order_acquire) && CPU_COUNT(&OwnCpus) > 0)
      ::sched_setaffinity(0, sizeof OwnCpus, &OwnCpus);
    Mb.ExecutorCpu.store(::sched_getcpu(), std::memory_order_relaxed);
    uint32_t N = std::min(Mb.NumArgs, LaunchMailbox::kMaxArgs);
    ompsim::LaunchOptions Options;
    for (int Dim = 0; Dim < 2; ++Dim) {
      Options.TeamsYZ[Dim] = Mb.TeamsYZ[Dim];
      Options.ThreadsYZ[Dim] = Mb.ThreadsYZ[Dim];
    }
    Options.GpuWarpSize = Mb.GpuWarpSize;
    Options.Bare = Mb.Bare != 0;
    Options.DynamicSharedBytes = Mb.DynamicSharedBytes;
    Error Err = runKernel(Mb.Entry, ArrayRef<uint64_t>(Mb.Args, N), Mb.Teams, Mb.Threads, Mb.Device, Options);
    Mb.Status = Err ? 1 : 0;
    Mb.MessageLength = 0;
    if (Err) {
      std::string Why = toString(std::move(Err));
      Mb.MessageLength = uint32_t(std::min<size_t>(Why.size(), sizeof Mb.Message));
      std::memcpy(Mb.Message, Why.data(), Mb.MessageLength);
    }
    LastLaunch = Seq;
    Mb.Done.store(Seq, std::memory_order_seq_cst);
    Mb.HostBell.fetch_add(1, std::memory_order_seq_cst);
    if (Mb.HostWaiting.load(std::memory_order_seq_cst))
      ompsim::sim::sharedFutexWake(Mb.HostBell);
  }

  /// Steps off the CPU of the host thread that posted the last launch,
  /// while another CPU is idle. Sharing one CPU, the two hand every launch
  /// over with two context switches, and the scheduler tends to keep them
  /// together (a wakee goes where its waker runs, an idle CPU is not always
  /// searched); once apart, both sides spin on CPUs of their own. The device
  /// thread is moved by narrowing its affinity for a moment and restoring it
  /// at once, so libomp and device code never see a narrowed mask. At most
  /// once a millisecond.
  void leaveHostCpu() {
    constexpr uint64_t kEveryNanos = 1000000;
    int32_t Cpu = ::sched_getcpu();
    if (Cpu < 0 || Slot->HostCpu.load(std::memory_order_relaxed) != Cpu || CPU_COUNT(&OwnCpus) < 2 ||
        !CPU_ISSET(Cpu, &OwnCpus))
      return;
    uint64_t Now = ompsim::sim::monotonicNanos();
    if (Now - LastMove < kEveryNanos || !ompsim::sim::spinningIsFree())
      return;
    LastMove = Now;
    cpu_set_t Away = OwnCpus;
    CPU_CLR(Cpu, &Away);
    if (::sched_setaffinity(0, sizeof Away, &Away) == 0)
      ::sched_setaffinity(0, sizeof OwnCpus, &OwnCpus);
  }

  void run() {
    LaunchMailbox::Slot &Mb = *Slot;
    // After a launch, stay awake a little: the next one usually follows at
    // once. Not after an SPS request: its caller waits on the socket, not in
    // the mailbox, so nothing says where it wakes up (perhaps behind us).
    constexpr uint64_t kSpinNanos = 200000;
    bool Spin = false;
    for (;;) {
      uint32_t Bell = Mb.Doorbell.load(std::memory_order_seq_cst);
      uint32_t Seq = Mb.Request.load(std::memory_order_acquire);
      if (Seq != LastLaunch) {
        serveLaunch(Seq);
        leaveHostCpu();
        Spin = true;
        continue;
      }
      unique_function<void()> Work;
      {
        std::lock_guard<std::mutex> Lock(Mu);
        if (!Queue.empty()) {
          Work = std::move(Queue.front());
          Queue.pop_front();
        } else if (Stopping) {
          return;
        }
      }
      if (Work) {
        Work();
        Spin = false;
        continue;
      }
      if (Spin) {
        Spin = false;
        ompsim::sim::spinFor(kSpinNanos, Mb.ExecutorCpu, Mb.HostCpu, Mb.HostWaiting, [&] {
          return Mb.Doorbell.load(std::memory_order_relaxed) != Bell ||
                 Mb.Request.load(std::memory_order_relaxed) != LastLaunch;
        });
        continue;
      }
      Mb.ExecutorSleeping.store(1, std::memory_order_seq_cst);
      if (Mb.Doorbell.load(std::memory_order_seq_cst) == Bell)
        ompsim::sim::sharedFutexWait(Mb.Doorbell, Bell);
      // Where we woke up, before saying we run (the host's spinFor reads the
      // flag first).
      Mb.ExecutorCpu.store(::sched_getcpu(), std::memory_order_relaxed);
      Mb.ExecutorSleeping.store(0, std::memory_order_seq_cst);
    }
  }

  LaunchMailbox::Slot *Slot = nullptr;
  uint32_t LastLaunch = 0;
  cpu_set_t OwnCpus;     ///< the device thread's affinity when it started
  uint64_t LastMove = 0; ///< when leaveHostCpu last moved it (monotonic ns)
  std::mutex Mu;
  std::deque<unique_function<void()>> Queue; ///< SPS requests (slot 0 only)
  bool Stopping = false;
  std::thread Thread;
};

/// One device thread per launch slot; slot 0's also serves the SPS requests.
DeviceThread GDeviceThreads[LaunchMailbox::kSlots];

/// Starts the device threads of the slots the controller uses (from the
/// start-up set-up; slot 0's always).
void startDeviceThreads() {
  uint32_t Slots = std::clamp<uint32_t>(GMailbox->Setup.LaunchSlots, 1, LaunchMailbox::kSlots);
  for (uint32_t I = 0; I < Slots; ++I)
    GDeviceThreads[I].start(I);
}

void stopDeviceThreads() {
  for (DeviceThread &T : GDeviceThreads)
    T.stop();
}

/// The resolver block of the JIT calls this (with the registers of the
/// interrupted call saved) on the first call of a function of a bitcode image.
uint64_t lazyReenter(uint64_t /*context*/, uint64_t Trampoline) { return lazyCall(Trampoline); }

/// Where a first call lands when its function could not be compiled; the
/// controller has the reason, the host reports the exit.
void lazyFailed() {
  std::fprintf(stderr, "ompsim-device: a device function of a bitcode image could not be compiled "
                       "on its first call\n");
  std::fflush(nullptr);
  announceExit();
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
char GServerCreatedToken;

/// Hands every request to the device thread; at disconnect, lets it finish
/// what is queued.
class DeviceThreadDispatcher : public SimpleRemoteEPCServer::Dispatcher {
public:
  void dispatch(unique_function<void()> Work) override { GDeviceThreads[0].post(std::move(Work)); }
  void shutdown() override {
    ompsim::tsanAcquire(&GServerCreatedToken);
    stopDeviceThreads();
  }
};

int usage() {
  std::fprintf(stderr,
               "ompsim-device: started by the sim plugin, not by hand "
               "(usage: ompsim-device --fd N --fault-fd N --arena-fd N --lib-dir DIR [--device-threads N] "
               "[--host-runtime PATH] "
               "--parent PID)\n");
  return 2;
}

} // namespace

/// Marks this process as a simulated device. A host library loaded here to
/// satisfy a device image's NEEDED entry may carry its own offload
/// registration; ompsim's runtime sees this symbol and leaves that
/// registration alone instead of starting a device inside the device.
extern "C" __attribute__((visibility("default"), used)) const char __ompsim_executor_marker[] =
    "ompsim-device";

/// Teams x threads per team the simulated device runs at most (libomp's
/// KMP_TEAMS_THREAD_LIMIT in the executor).
constexpr const char *kSimTeamsThreadLimit = "1024";

int main(int argc, char **argv) {
  int Fd = -1;
  long Parent = -1;
  std::string LibDir;
  for (int I = 1; I + 1 < argc; I += 2) {
    std::string A = argv[I];
    if (A == "--fd")
      Fd = std::atoi(argv[I + 1]);
    else if (A == "--fault-fd")
      GFaultFd = std::atoi(argv[I + 1]);
    else if (A == "--arena-fd")
      GArenaFd = std::atoi(argv[I + 1]);
    else if (A == "--parent")
      Parent = std::atol(argv[I + 1]);
    else if (A == "--host-runtime")
      GHostRuntime = argv[I + 1];
    else if (A == "--lib-dir")
      LibDir = argv[I + 1];
    else if (A == "--device-threads")
      GTeamDefaults.ThreadBudget = std::max(std::atoi(argv[I + 1]), 1);
    else
      return usage();
  }
  if (Fd < 0 || Parent <= 0 || GArenaFd < 0 || LibDir.empty())
    return usage();
  // No executor outlives its host: die with the parent, and close the race
  // where the parent died before the prctl.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != Parent)
    return 1;
  installFaultHandlers();
  // The simulated device's teams: libomp caps teams x threads at
  // KMP_TEAMS_THREAD_LIMIT, by default the processors of the machine, so on
  // a 2-CPU host num_teams(4) would give 2 teams. The device reports (and
  // honours) kSimTeamsThreadLimit, unless the user set the variable.
  ::setenv("KMP_TEAMS_THREAD_LIMIT", kSimTeamsThreadLimit, /*overwrite=*/0);
  // And a team's threads: libomp caps them at nthreads-var (OMP_NUM_THREADS,
  // by default the CPUs), so thread_limit(5) would give 2 threads on a 2-CPU
  // host. The device honours a thread limit up to kSimTeamsThreadLimit;
  // runKernel sets each launch's defaults.
  captureTeamDefaults(kSimTeamsThreadLimit);
  if (!DeviceThread::mapMailbox(GArenaFd)) {
    std::fprintf(stderr, "ompsim-device: cannot map the launch mailbox: %s\n", std::strerror(errno));
    return 1;
  }
  // Before the handshake: the host is still starting meanwhile, and waits
  // only for the handshake, after which it reads the result.
  runStartSetup(GMailbox->Setup, LibDir);
  startDeviceThreads();

  auto Server = SimpleRemoteEPCServer::Create<FDSimpleRemoteEPCTransport>(
      [](SimpleRemoteEPCServer::Setup &S) -> Error {
        S.setDispatcher(std::make_unique<DeviceThreadDispatcher>());
        S.bootstrapSymbols() = SimpleRemoteEPCServer::defaultBootstrapSymbols();
        S.services().push_back(std::make_unique<ArenaJITMemoryService>());
        auto &Syms = S.bootstrapSymbols();
        Syms[proto::ReserveName] = ExecutorAddr::fromPtr(&reserveWrapper);
        Syms[proto::LoadElfName] = ExecutorAddr::fromPtr(&loadElfWrapper);
        Syms[proto::LookupName] = ExecutorAddr::fromPtr(&lookupWrapper);
        Syms[proto::LookupManyName] = ExecutorAddr::fromPtr(&lookupManyWrapper);
        Syms[proto::UnloadName] = ExecutorAddr::fromPtr(&unloadWrapper);
        Syms[proto::AllocCodeName] = ExecutorAddr::fromPtr(&allocCodeWrapper);
        Syms[proto::CallVoidName] = ExecutorAddr::fromPtr(&callVoidWrapper);
        Syms[proto::LazyReenterName] = ExecutorAddr::fromPtr(&lazyReenter);
        Syms[proto::LazyFailedName] = ExecutorAddr::fromPtr(&lazyFailed);
        Syms[proto::SetFptrTableName] = ExecutorAddr::fromPtr(&setFptrTableWrapper);
        Syms[proto::TranslateLogName] = ExecutorAddr::fromPtr(&translateLogWrapper);
        Syms[proto::ProtectName] = ExecutorAddr::fromPtr(&protectWrapper);
        return Error::success();
      },
      Fd, Fd);
  if (!Server) {
    logAllUnhandledErrors(Server.takeError(), errs(), "ompsim-device: ");
    stopDeviceThreads();
    return 1;
  }
  ompsim::tsanRelease(&GServerCreatedToken);
  if (auto Err = (*Server)->waitForDisconnect())
    consumeError(std::move(Err)); // the host went away; nothing to report to
  stopDeviceThreads();            // the dispatcher's shutdown already drained them
  // Joins the transport's listener thread, which has finished by now.
  Server->reset();
  DeviceState &D = DeviceState::get();
  {
    std::lock_guard<std::mutex> Lock(D.Mu);
    for (auto It = D.Images.rbegin(); It != D.Images.rend(); ++It)
      It->second->runFini();
  }
  std::fflush(nullptr);
  // Skip static destructors: device code may have registered atexit handlers
  // in memory that is about to go away with the process anyway.
  ::_exit(0);
}

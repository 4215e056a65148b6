#include "ompsim/simulator/DeviceController.h"

#include "DeviceControllerImpl.h"
#include "DeviceJit.h"
#include "GuardedArena.h"
#include "ImageSymbolTable.h"
#include "LaunchMailbox.h"
#include "LingeringTaskDispatcher.h"
#include "Protocol.h"
#include "RangeAllocator.h"

#include "ompsim/Config.h"
#include "ompsim/HostSymbolizer.h"
#include "ompsim/Trace.h"

#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/SimpleRemoteEPC.h"
#include "llvm/ExecutionEngine/Orc/TaskDispatch.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <optional>
#include <thread>

extern char **environ;

namespace ompsim::sim {

namespace {

/// The executor's environment: the host's, less the host runtime (a
/// libomptarget.so*) in LD_PRELOAD, which would load the whole libLLVM into
/// every executor; the executor loads it itself (`--host-runtime`) only
/// before a host library that may need it.
struct ExecutorEnvironment {
  std::vector<std::string> Entries;
  std::vector<char *> Pointers; ///< into entries, null-terminated
  std::string HostRuntime;      ///< the preload entry taken out, or ""
};

ExecutorEnvironment executorEnvironment() {
  ExecutorEnvironment Env;
  for (char **E = environ; *E; ++E) {
    StringRef Entry(*E);
    if (!Entry.starts_with("LD_PRELOAD=")) {
      Env.Entries.push_back(Entry.str());
      continue;
    }
    SmallVector<StringRef, 4> Parts;
    Entry.drop_front(strlen("LD_PRELOAD=")).split(Parts, ':', -1, /*KeepEmpty=*/false);
    std::string Kept;
    for (StringRef Part : Parts) {
      StringRef Base = Part.rsplit('/').second.empty() ? Part : Part.rsplit('/').second;
      if (Base.starts_with("libomptarget.so") && Env.HostRuntime.empty()) {
        Env.HostRuntime = Part.str();
        continue;
      }
      Kept += (Kept.empty() ? "" : ":") + Part.str();
    }
    if (!Kept.empty())
      Env.Entries.push_back("LD_PRELOAD=" + Kept);
  }
  for (std::string &Entry : Env.Entries)
    Env.Pointers.push_back(Entry.data());
  Env.Pointers.push_back(nullptr);
  return Env;
}

} // namespace

namespace {

/// Holds SIGPIPE off the calling thread for its scope and discards one raised
/// meanwhile. ORC's transport writes with write(2); a write after the
/// executor is gone (tearing the JIT down races the transport's own notice of
/// the hang-up) must fail with EPIPE, not kill the host program.
class SigpipeGuard {
public:
  SigpipeGuard() {
    sigemptyset(&Pipe);
    sigaddset(&Pipe, SIGPIPE);
    sigset_t Pending;
    WasPending = ::sigpending(&Pending) == 0 && sigismember(&Pending, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &Pipe, &Old);
  }
  ~SigpipeGuard() {
    if (!WasPending) {
      struct timespec Zero = {0, 0};
      while (::sigtimedwait(&Pipe, nullptr, &Zero) == SIGPIPE) {
      }
    }
    ::pthread_sigmask(SIG_SETMASK, &Old, nullptr);
  }
  SigpipeGuard(const SigpipeGuard &) = delete;
  SigpipeGuard &operator=(const SigpipeGuard &) = delete;

private:
  sigset_t Pipe, Old;
  bool WasPending = false;
};

} // namespace

void killExecutorGroup(pid_t Pid) {
  // The executor leads its own process group (set before its exec), so this
  // also reaches what it started (a script's children). A group that no
  // longer exists is ESRCH; the executor itself is then killed by pid. Pids
  // 0 and 1 would name the host's own group and every process.
  if (Pid <= 1)
    return;
  if (::kill(-Pid, SIGKILL) != 0)
    ::kill(Pid, SIGKILL);
}

/// Starts the guard of executor `Group`'s process group: a shell in that
/// group, whose death signal is SIGTERM, on which it kills the whole group.
/// The executor's own death signal takes only the executor along when the
/// host dies; what it started (a replacement executor's children) is in its
/// group, and the guard reaches it even after a SIGKILL of the host. -1 when
/// the guard cannot start (the executor is then protected as before).
pid_t spawnGroupGuard(pid_t Group) {
  static const char Script[] = "exec </dev/null >/dev/null 2>&1; trap 'kill -KILL 0' TERM; "
                               "while :; do sleep 86400 & wait; done";
  char Sh[] = "sh", Dash[] = "-c", Path[] = "PATH=/usr/bin:/bin";
  char *Argv[] = {Sh, Dash, const_cast<char *>(Script), nullptr};
  char *Envp[] = {Path, nullptr}; // no LD_PRELOAD (a sanitizer runtime) for a shell
  pid_t Host = ::getpid();
  pid_t Guard = ::vfork();
  if (Guard == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != Host || ::setpgid(0, Group) != 0)
      ::_exit(127);
    ::execve("/bin/sh", Argv, Envp);
    ::_exit(127);
  }
  return Guard;
}

/// Bounds an executor's start-up, in two steps of `Seconds` each: from the
/// spawn to its handshake (the first bytes on its socket, written once it has
/// set the device up), and from the host's connecting() to disarm() (the
/// set-up calls after the handshake). The first step is timed from the spawn
/// whatever the host does meanwhile; the second only once the host talks to
/// the executor, so a host busy elsewhere between spawn and connect is not
/// counted against it. When a step runs out, the executor's process group is
/// killed, which fails the host's blocked call.
class StartupWatch {
public:
  /// What the executor had not done when the watch fired.
  enum class Missed { Nothing, Handshake, Setup };

  StartupWatch(pid_t Pid, int Socket, double Seconds)
      : Socket(::fcntl(Socket, F_DUPFD_CLOEXEC, 0)), Wake(::eventfd(0, EFD_CLOEXEC)),
        Thread([this, Pid, Seconds] { watch(Pid, std::chrono::duration<double>(Seconds)); }) {}
  ~StartupWatch() {
    disarm();
    for (int Fd : {Socket, Wake})
      if (Fd >= 0)
        ::close(Fd);
  }
  StartupWatch(const StartupWatch &) = delete;
  StartupWatch &operator=(const StartupWatch &) = delete;

  /// The host begins the set-up calls after the handshake: the second step's clock starts.
  void connecting() {
    std::lock_guard<std::mutex> Lock(Mu);
    if (!ConnectStart)
      ConnectStart = std::chrono::steady_clock::now();
    Cv.notify_all();
  }
  /// Stops the watch; true when the executor was not killed by it.
  bool disarm() {
    {
      std::lock_guard<std::mutex> Lock(Mu);
      Done = true;
    }
    Cv.notify_all();
    if (Wake >= 0) {
      uint64_t One = 1;
      (void)!::write(Wake, &One, sizeof One);
    }
    if (Thread.joinable())
      Thread.join();
    return Fired == Missed::Nothing;
  }
  /// What the executor had not done when the bound ran out (Nothing: not fired).
  Missed fired() {
    std::lock_guard<std::mutex> Lock(Mu);
    return Fired;
  }

private:
  void watch(pid_t Pid, std::chrono::duration<double> Bound) {
    auto Fire = [&](Missed What) {
      std::lock_guard<std::mutex> Lock(Mu);
      if (Done)
        return;
      Fired = What;
      killExecutorGroup(Pid);
    };
    // Step 1: the handshake. Readable (or hung up) means the executor has
    // written it (or is gone, which the host's connect reports by itself).
    auto Deadline = std::chrono::steady_clock::now() + Bound;
    for (;;) {
      if (Socket < 0) // no descriptor to watch (EMFILE): time the set-up alone
        break;
      {
        std::lock_guard<std::mutex> Lock(Mu);
        if (Done)
          return;
      }
      auto Left = std::chrono::ceil<std::chrono::milliseconds>(Deadline - std::chrono::steady_clock::now());
      if (Left.count() <= 0)
        return Fire(Missed::Handshake);
      pollfd P[2] = {{Socket, POLLIN, 0}, {Wake, POLLIN, 0}};
      int N = ::poll(P, 2, int(std::min<int64_t>(Left.count(), 1000)));
      if (N < 0 && errno != EINTR)
        break; // cannot watch the socket: fall back to timing the set-up alone
      if (P[1].revents)
        return; // disarmed
      if (P[0].revents)
        break;
    }
    // Step 2: the set-up calls, from connecting() (or the handshake, if the
    // host was already waiting for it) to disarm().
    auto Answered = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> Lock(Mu);
    while (!Done) {
      if (!ConnectStart) {
        Cv.wait(Lock, [this] { return Done || ConnectStart; });
        continue;
      }
      auto End = std::max(*ConnectStart, Answered) +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(Bound);
      if (!Cv.wait_until(Lock, End, [this] { return Done; })) {
        Fired = Missed::Setup;
        killExecutorGroup(Pid);
        return;
      }
    }
  }

  std::mutex Mu;
  std::condition_variable Cv;
  bool Done = false;
  Missed Fired = Missed::Nothing;
  std::optional<std::chrono::steady_clock::time_point> ConnectStart;
  int Socket, Wake;   ///< our own descriptor of the host's end; the disarm wake-up
  std::thread Thread; // last: it starts once the state above exists
};

/// Waits up to `Seconds` for `Pid`; returns true and its status once it has exited.
bool waitFor(pid_t Pid, double Seconds, int &Status) {
  auto Deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(Seconds);
  // A pidfd turns readable the moment the process exits, so the wait ends
  // then and not at the next tick of a sleep loop (every program pays this
  // wait once at teardown). Without pidfd_open (old kernels) it sleeps in
  // short ticks instead.
  int Pidfd = static_cast<int>(::syscall(SYS_pidfd_open, Pid, 0));
  auto Done = [&](bool Exited) {
    if (Pidfd >= 0)
      ::close(Pidfd);
    return Exited;
  };
  for (;;) {
    siginfo_t Info{};
    int R = ::waitid(P_PID, id_t(Pid), &Info, WEXITED | WNOHANG | WNOWAIT);
    if (R == 0 && Info.si_pid == Pid) {
      // Nothing the executor started outlives it: its group is killed while
      // the unreaped executor still holds the group's id, so the id cannot
      // name anyone else yet.
      if (Pid > 1)
        ::kill(-Pid, SIGKILL);
      while (::waitpid(Pid, &Status, 0) < 0 && errno == EINTR) {
      }
      // Nothing of the executor's to remove: its libomp never made a file
      // (ExecutorOpenMPRegistration.cpp).
      return Done(true);
    }
    if (R < 0 && errno != EINTR) {
      Status = -1; // reaped elsewhere (SIGCHLD ignored): the status is lost
      return Done(true);
    }
    auto Now = std::chrono::steady_clock::now();
    if (Now >= Deadline)
      return Done(false);
    if (Pidfd < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    auto Left = std::chrono::ceil<std::chrono::milliseconds>(Deadline - Now).count();
    pollfd P{Pidfd, POLLIN, 0};
    ::poll(&P, 1, static_cast<int>(std::min<decltype(Left)>(Left, 1000)));
  }
}

std::string DeviceController::startTimeoutMessage(bool Handshake) const {
  return fmt::format(
      "executor {} did not {} within {:g}s (OMPSIM_EXECUTOR_START_TIMEOUT); it was killed with "
      "the processes it started",
      Opts.ExecutorPath,
      Handshake ? "complete its handshake" : "finish setting up the device after its handshake",
      Opts.StartTimeout);
}

DeviceOptions DeviceOptions::fromConfig(int32_t DeviceId, const std::string &DefaultLibDir) {
  const Config &C = config();
  DeviceOptions O;
  O.DeviceId = DeviceId;
  O.LibDir = C.LibDir.empty() ? DefaultLibDir : C.LibDir;
  O.ExecutorPath = C.Executor.empty() ? O.LibDir + "/../bin/ompsim-device" : C.Executor;
  O.ArenaBase = C.DeviceBase + uint64_t(DeviceId) * kArenaStride;
  O.ArenaSize = C.DeviceMemory;
  O.DeviceThreads = C.DeviceThreads;
  O.KernelTimeout = C.KernelTimeout;
  O.StartTimeout = C.ExecutorStartTimeout;
  O.JitOptLevel = C.JitOptLevel;
  O.JitCache = C.JitCache;
  O.JitCacheMax = C.JitCacheMax;
  O.StockJit = C.Jit;
  return O;
}

DeviceController::DeviceController(const DeviceOptions &Options) : Opts(Options) {}

Expected<std::unique_ptr<DeviceController>> DeviceController::create(const DeviceOptions &Options) {
  auto Dc = spawn(Options);
  if (!Dc)
    return Dc.takeError();
  return finishStart(std::move(*Dc));
}

Expected<std::unique_ptr<DeviceController>> DeviceController::spawn(const DeviceOptions &Options) {
  std::unique_ptr<DeviceController> Dc(new DeviceController(Options));
  if (auto Err = Dc->launchExecutor())
    return std::move(Err);
  return std::move(Dc);
}

Expected<std::unique_ptr<DeviceController>>
DeviceController::finishStart(std::unique_ptr<DeviceController> Dc) {
  const DeviceOptions &Options = Dc->Opts;
  std::vector<std::pair<uint64_t, uint64_t>> Collided;
  for (int Attempt = 1;; ++Attempt) {
    Collided.clear();
    // The first attempt connects to the executor spawn() started.
    if (auto Err = Attempt == 1 ? Dc->connectExecutor(Collided) : Dc->start(Collided))
      return std::move(Err);
    if (Collided.empty() || Attempt >= Options.MaxStartAttempts)
      break;
    // The executor's own libraries landed on a host range; a fresh process
    // gets a fresh (ASLR) layout.
    OMPSIM_TRACE_EVENT(Cat::Image, "executor-restart")
        .num("device", Options.DeviceId)
        .num("collisions", int64_t(Collided.size()));
    Dc->stop(/*graceful=*/false);
  }
  Dc->traceUnreserved(Collided);
  return std::move(Dc);
}

Error DeviceController::start(std::vector<std::pair<uint64_t, uint64_t>> &Collided) {
  if (auto Err = launchExecutor())
    return Err;
  return connectExecutor(Collided);
}

Error DeviceController::launchExecutor() {
  DeathMessage.clear();
  reapGroupGuard(); // a previous executor's
  std::string Prefix = fmt::format("device {}: ", Opts.DeviceId);
  if (::access(Opts.ExecutorPath.c_str(), X_OK) != 0)
    return makeError(Prefix + "executor " + Opts.ExecutorPath +
                     " not found or not executable (set OMPSIM_EXECUTOR)");
  int Sv[2], Fp[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, Sv) != 0)
    return makeError(Prefix + "socketpair failed: " + std::strerror(errno));
  if (::pipe2(Fp, O_CLOEXEC) != 0) {
    ::close(Sv[0]);
    ::close(Sv[1]);
    return makeError(Prefix + "pipe failed: " + std::strerror(errno));
  }
  int ArenaFd = -1;
  if (auto Err = mapSharedMemory(ArenaFd)) {
    for (int Fd : {Sv[0], Sv[1], Fp[0], Fp[1]})
      ::close(Fd);
    return Err;
  }
  writeStartSetup();
  std::string FdArg = std::to_string(Sv[1]), FaultArg = std::to_string(Fp[1]),
              ArenaArg = std::to_string(ArenaFd), ParentArg = std::to_string(::getpid()),
              ThreadsArg = std::to_string(Opts.DeviceThreads);
  std::vector<char *> Argv = {Opts.ExecutorPath.data(),
                              const_cast<char *>("--fd"),
                              FdArg.data(),
                              const_cast<char *>("--fault-fd"),
                              FaultArg.data(),
                              const_cast<char *>("--arena-fd"),
                              ArenaArg.data(),
                              const_cast<char *>("--lib-dir"),
                              Opts.LibDir.data(),
                              const_cast<char *>("--device-threads"),
                              ThreadsArg.data()};
  ExecutorEnvironment Env = executorEnvironment();
  std::string HostRuntimeFlag = "--host-runtime";
  if (!Env.HostRuntime.empty()) {
    Argv.push_back(HostRuntimeFlag.data());
    Argv.push_back(Env.HostRuntime.data());
  }
  // --parent stays last: tools find a host's executors by "--parent <pid>$".
  for (char *A : {const_cast<char *>("--parent"), ParentArg.data(), static_cast<char *>(nullptr)})
    Argv.push_back(A);
  // The executor must die with its host in every state, even before its own
  // main() runs: the death signal is armed in the child before exec, and the
  // child gives up if the host already died in between. vfork runs no
  // pthread_atfork handlers (libomp has some) and the child only makes
  // system calls before exec.
  pid_t Host = ::getpid();
  int Keep[] = {Sv[1], Fp[1], ArenaFd};
  volatile int ExecErrno = 0;
  pid_t Child = ::vfork();
  if (Child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != Host)
      ::_exit(127);
    // Its own process group, so that a timeout or the host's teardown kills
    // everything it starts. Not in the terminal's foreground group, its
    // output would stop it under `stty tostop`: job-control stops are
    // ignored (that survives exec; the dispositions are the child's own).
    ::setpgid(0, 0);
    ::signal(SIGTTOU, SIG_IGN);
    ::signal(SIGTTIN, SIG_IGN);
    for (int K : Keep)
      ::fcntl(K, F_SETFD, 0); // these three, and only these, outlive exec
    ::execve(Opts.ExecutorPath.c_str(), Argv.data(), Env.Pointers.data());
    ExecErrno = errno;
    ::_exit(127);
  }
  int Rc = Child < 0 ? errno : ExecErrno;
  if (Child > 0 && Rc != 0) {
    int Status = 0;
    ::waitpid(Child, &Status, 0);
  }
  Pid = Child > 0 && Rc == 0 ? Child : -1;
  ::close(Sv[1]);
  ::close(Fp[1]);
  // Kept for host-visible blocks (allocateHostVisible); the executor has its own fd.
  MemoryFd = ArenaFd;
  if (Rc != 0) {
    ::close(Sv[0]);
    ::close(Fp[0]);
    Pid = -1;
    unmapSharedMemory();
    return makeError(Prefix + "cannot start executor " + Opts.ExecutorPath + ": " + std::strerror(Rc));
  }
  GuardPid = spawnGroupGuard(Pid);
  // Start-up has a bound: an executor that never answers (stuck before its
  // handshake or in setup) is killed, which fails the blocked call in
  // connectExecutor().
  Watch = std::make_unique<StartupWatch>(Pid, Sv[0], Opts.StartTimeout);
  FaultFd = Fp[0];
  PendingSocket = Sv[0];
  // The transport closes sv[0] as soon as the executor hangs up, and the
  // number may be reused by then; stop() shuts the socket down through a
  // descriptor of its own. Without one, stop() kills instead of asking.
  PendingOwnFd = ::fcntl(Sv[0], F_DUPFD_CLOEXEC, 0);
  return Error::success();
}

Error DeviceController::connectExecutor(std::vector<std::pair<uint64_t, uint64_t>> &Collided) {
  std::string Prefix = fmt::format("device {}: ", Opts.DeviceId);
  int Socket = PendingSocket, OwnFd = PendingOwnFd;
  PendingSocket = PendingOwnFd = -1;
  Watch->connecting();
  auto RemoteEpc = SimpleRemoteEPC::Create<FDSimpleRemoteEPCTransport>(
      std::make_unique<LingeringTaskDispatcher>(), SimpleRemoteEPC::Setup(), Socket, Socket);
  if (!RemoteEpc) {
    std::string Why = toString(RemoteEpc.takeError());
    // Disarmed before the executor is reaped, so the watch never signals a
    // pid that may be reused.
    Watch->disarm();
    StartupWatch::Missed Fired = Watch->fired();
    Watch.reset();
    int Status = 0;
    if (!waitFor(Pid, 2.0, Status)) {
      killExecutorGroup(Pid);
      waitFor(Pid, 10.0, Status);
    }
    Pid = -1;
    reapGroupGuard();
    ::close(FaultFd);
    FaultFd = -1;
    if (OwnFd >= 0)
      ::close(OwnFd);
    unmapSharedMemory();
    if (Fired != StartupWatch::Missed::Nothing)
      return makeError(Prefix + startTimeoutMessage(Fired == StartupWatch::Missed::Handshake));
    return makeError(Prefix + "executor " + Opts.ExecutorPath + " did not start: " + Why);
  }
  Epc = RemoteEpc->get();
  Es = std::make_unique<ExecutionSession>(std::move(*RemoteEpc));
  HostFd = OwnFd;
  if (trace::enabled(trace::Cat::Image)) {
    trace::Event Ev(trace::Cat::Image, "executor-start");
    Ev.num("device", Opts.DeviceId);
    if (!trace::normalized()) // pids differ run to run; normalized traces must not
      Ev.num("executor_pid", Pid);
  }

  const char *Names[] = {proto::ReserveName,      proto::LoadElfName,      proto::LookupName,
                         proto::UnloadName,       proto::AllocCodeName,    proto::CallVoidName,
                         proto::SetFptrTableName, proto::TranslateLogName, proto::LazyReenterName,
                         proto::LazyFailedName,   proto::LookupManyName,   proto::ProtectName};
  const auto &Boot = Epc->getBootstrapSymbolsMap();
  for (const char *N : Names) {
    auto It = Boot.find(N);
    if (It == Boot.end()) {
      stop(false);
      return makeError(Prefix + "executor " + Opts.ExecutorPath + " lacks service " + N);
    }
    Fns[N] = It->second.getValue();
  }

  // The executor did the set-up written into the mailbox before its
  // handshake, which we have received.
  LaunchMailbox::StartSetup &Setup = Mailbox->Setup;
  uint32_t Result = Setup.Result.load(std::memory_order_acquire);
  if (Result != 1) {
    std::string Why = Result == 2
                          ? std::string(Setup.Message,
                                        std::min<uint32_t>(Setup.MessageLength, LaunchMailbox::kMessageBytes))
                          : "it answered without its set-up";
    stop(false);
    return makeError(Prefix + "executor " + Opts.ExecutorPath + " could not set up the device: " + Why);
  }
  for (uint32_t I = 0; I < std::min(Setup.NumCollided, LaunchMailbox::kMaxSetupRanges); ++I)
    Collided.emplace_back(Setup.Ranges[I][0], Setup.Ranges[I][1]);
  // Host libraries loaded since the spawn (and ranges beyond the mailbox's room).
  Expected<std::vector<std::pair<uint64_t, uint64_t>>> More = reserveNewHostRanges();
  bool Disarmed = Watch->disarm();
  StartupWatch::Missed Missed = Watch->fired();
  Watch.reset();
  if (!Disarmed) { // it fired while we waited: the executor is gone
    consumeError(More.takeError());
    stop(false);
    return makeError(Prefix + startTimeoutMessage(Missed == StartupWatch::Missed::Handshake));
  }
  if (!More) {
    stop(false);
    return More.takeError();
  }
  Collided.insert(Collided.end(), More->begin(), More->end());
  // The heap is the arena above the code region, exactly as the executor
  // splits it; its bookkeeping lives here, since allocating is only address
  // arithmetic and the host already reaches the memory itself.
  constexpr uint64_t kPage = 4096;
  uint64_t HeapBegin = Opts.ArenaBase + (std::min(codeBytes(), Opts.ArenaSize) & ~(kPage - 1));
  Heap = std::make_unique<RangeAllocator>(HeapBegin, Opts.ArenaBase + Opts.ArenaSize);
  Guarded.reset();
  if (config().Check)
    Guarded = std::make_unique<GuardedArena>(*Heap, kPage);
  return Error::success();
}

void DeviceController::traceUnreserved(const std::vector<std::pair<uint64_t, uint64_t>> &Ranges) const {
  for (auto [b, e] : Ranges)
    OMPSIM_TRACE_EVENT(Cat::Image, "host-range-not-reserved")
        .num("device", Opts.DeviceId)
        .host("begin", b)
        .hex("bytes", e - b);
}

void DeviceController::writeStartSetup() {
  LaunchMailbox::StartSetup &Setup = Mailbox->Setup;
  Setup.ArenaBase = Opts.ArenaBase;
  Setup.ArenaSize = Opts.ArenaSize;
  Setup.CodeBytes = codeBytes();
  Setup.LaunchSlots = launchSlots();
  Setup.Result.store(0, std::memory_order_relaxed);
  ReservedRanges.clear();
  uint32_t N = 0;
  for (const HostRange &R : HostSymbolizer::get().loadedRanges()) {
    if (N == LaunchMailbox::kMaxSetupRanges)
      break; // reserveNewHostRanges() sends the rest
    Setup.Ranges[N][0] = R.Begin;
    Setup.Ranges[N][1] = R.End;
    ReservedRanges.emplace(R.Begin, R.End);
    ++N;
  }
  Setup.NumRanges = N;
}

Expected<std::vector<std::pair<uint64_t, uint64_t>>> DeviceController::reserveNewHostRanges() {
  std::vector<std::tuple<uint64_t, uint64_t>> New;
  for (const HostRange &R : HostSymbolizer::get().loadedRanges())
    if (ReservedRanges.emplace(R.Begin, R.End).second)
      New.emplace_back(R.Begin, R.End);
  std::vector<std::pair<uint64_t, uint64_t>> Collided;
  if (New.empty())
    return Collided;
  std::vector<std::tuple<uint64_t, uint64_t>> Bad;
  if (auto Err = call<proto::ReserveSignature>(proto::ReserveName, "reserving host ranges", Bad, New))
    return std::move(Err);
  for (auto [b, e] : Bad)
    Collided.emplace_back(b, e);
  return Collided;
}

void DeviceController::stop(bool Graceful) {
  // Disarmed first: the watch must not kill a pid that is reaped (and maybe reused) below.
  Watch.reset();
  for (int *Fd : {&PendingSocket, &PendingOwnFd}) {
    if (*Fd >= 0)
      ::close(*Fd);
    *Fd = -1;
  }
  if (Pid > 0) {
    int Status = 0;
    bool Exited = false;
    if (Graceful && DeathMessage.empty() && HostFd >= 0) {
      // End-of-file lets the executor run fini functions and flush device output.
      ::shutdown(HostFd, SHUT_WR);
      Exited = waitFor(Pid, 5.0, Status);
    }
    if (!Exited) {
      killExecutorGroup(Pid);
      waitFor(Pid, 30.0, Status);
    }
    OMPSIM_TRACE_EVENT(Cat::Image, "executor-stop").num("device", Opts.DeviceId);
  }
  reapGroupGuard();
  if (Es) {
    // Closing the fd does not wake ORC's listener thread blocked in read();
    // shutting the socket down does.
    if (HostFd >= 0)
      ::shutdown(HostFd, SHUT_RDWR);
    // The executor is gone: what the JIT's teardown cannot free there is no
    // error worth reporting, and a write that tries is no signal either.
    SigpipeGuard NoSigpipe;
    Es->setErrorReporter([](Error Err) { consumeError(std::move(Err)); });
    stopLazyCalls();
    Jit.reset();
    consumeError(Es->endSession()); // disconnects the EPC
    Es.reset();
    Epc = nullptr;
  }
  if (HostFd >= 0)
    ::close(HostFd);
  HostFd = -1;
  if (FaultFd >= 0)
    ::close(FaultFd);
  FaultFd = -1;
  Pid = -1;
  Fns.clear();
  unmapSharedMemory();
}

void DeviceController::reapGroupGuard() {
  if (GuardPid <= 0)
    return;
  ::kill(GuardPid, SIGKILL);
  while (::waitpid(GuardPid, nullptr, 0) < 0 && errno == EINTR) {
  }
  GuardPid = -1;
}

bool DeviceController::executorExited() {
  siginfo_t Info{};
  if (::waitid(P_PID, id_t(Pid), &Info, WEXITED | WNOHANG | WNOWAIT) != 0)
    return errno != EINTR; // ECHILD: reaped elsewhere (SIGCHLD ignored), so gone
  return Info.si_pid == Pid;
}

DeviceController::~DeviceController() {
  std::lock_guard<std::recursive_mutex> Lock(Mu);
  stop(/*graceful=*/true);
}

bool DeviceController::alive() {
  std::lock_guard<std::recursive_mutex> Lock(Mu);
  return Pid > 0 && DeathMessage.empty();
}

Error DeviceController::checkAlive() {
  if (!DeathMessage.empty())
    return makeError(DeathMessage);
  if (Pid <= 0)
    return makeError(fmt::format("device {}: executor is not running", Opts.DeviceId));
  return Error::success();
}

} // namespace ompsim::sim

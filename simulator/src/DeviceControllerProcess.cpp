//===- DeviceControllerProcess.cpp - The executor process ---------------===//
//
// DeviceController: the executor as a process. Spawning it (its environment,
// arguments, process group and the guard that kills the group when the host
// dies), waiting for it and reaping it, killing it with what it started, and
// shutting it down with the JIT session over it.
//
//===----------------------------------------------------------------------===//

#include "DeviceControllerImpl.h"

#include "DeviceJit.h"
#include "GuardedArena.h"
#include "ImageSymbolTable.h"
#include "LaunchMailbox.h"
#include "RangeAllocator.h"
#include "StartupWatch.h"

#include "ompsim/Trace.h"

#include "llvm/ExecutionEngine/Orc/Core.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fmt/format.h>
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

} // namespace ompsim::sim

#include "ompsim/simulator/DeviceController.h"

#include "DeviceControllerImpl.h"
#include "DeviceJit.h"
#include "ImageSymbolTable.h"
#include "LaunchMailbox.h"
#include "Protocol.h"
#include "RangeAllocator.h"

#include "ompsim/Config.h"
#include "ompsim/HostSymbolizer.h"
#include "ompsim/OpenMPRegistration.h"
#include "ompsim/Trace.h"

#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/SimpleRemoteEPC.h"
#include "llvm/ExecutionEngine/Orc/TaskDispatch.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
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
#include <thread>

extern char **environ;

namespace ompsim::sim {

namespace {

/// The executor's environment: the host's, less the host runtime (a
/// libomptarget.so*) in LD_PRELOAD, which would load the whole libLLVM into
/// every executor; the executor loads it itself (`--host-runtime`) only
/// before a host library that may need it.
struct ExecutorEnvironment {
  std::vector<std::string> entries;
  std::vector<char *> pointers; ///< into entries, null-terminated
  std::string hostRuntime;      ///< the preload entry taken out, or ""
};

ExecutorEnvironment executorEnvironment() {
  ExecutorEnvironment env;
  for (char **e = environ; *e; ++e) {
    StringRef entry(*e);
    if (!entry.starts_with("LD_PRELOAD=")) {
      env.entries.push_back(entry.str());
      continue;
    }
    SmallVector<StringRef, 4> parts;
    entry.drop_front(strlen("LD_PRELOAD=")).split(parts, ':', -1, /*KeepEmpty=*/false);
    std::string kept;
    for (StringRef part : parts) {
      StringRef base = part.rsplit('/').second.empty() ? part : part.rsplit('/').second;
      if (base.starts_with("libomptarget.so") && env.hostRuntime.empty()) {
        env.hostRuntime = part.str();
        continue;
      }
      kept += (kept.empty() ? "" : ":") + part.str();
    }
    if (!kept.empty())
      env.entries.push_back("LD_PRELOAD=" + kept);
  }
  for (std::string &entry : env.entries)
    env.pointers.push_back(entry.data());
  env.pointers.push_back(nullptr);
  return env;
}

/// Kills a starting executor that has not finished starting within the bound.
class StartupWatch {
public:
  StartupWatch(pid_t pid, double seconds)
      : thread_([this, pid, seconds] {
          std::unique_lock<std::mutex> lock(mu_);
          if (!cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; })) {
            fired_ = true;
            ::kill(pid, SIGKILL);
          }
        }) {}
  ~StartupWatch() { disarm(); }
  StartupWatch(const StartupWatch &) = delete;
  StartupWatch &operator=(const StartupWatch &) = delete;

  /// Stops the watch; true when the executor was not killed by it.
  bool disarm() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable())
      thread_.join();
    return !fired_;
  }
  /// True once the bound passed and the executor was killed.
  bool fired() {
    std::lock_guard<std::mutex> lock(mu_);
    return fired_;
  }

private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false, fired_ = false;
  std::thread thread_; // last: it starts once the state above exists
};

} // namespace

/// Waits up to `seconds` for `pid`; returns true and its status once it has exited.
bool waitFor(pid_t pid, double seconds, int &status) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  // A pidfd turns readable the moment the process exits, so the wait ends
  // then and not at the next tick of a sleep loop (every program pays this
  // wait once at teardown). Without pidfd_open (old kernels) it sleeps in
  // short ticks instead.
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  auto done = [&](bool exited) {
    if (pidfd >= 0)
      ::close(pidfd);
    return exited;
  };
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      // The executor's libomp registered itself in /dev/shm; an executor that
      // ends with _exit or a signal never removes that file.
      removeOpenMPRegistration(pid);
      return done(true);
    }
    if (r < 0 && errno != EINTR) {
      status = -1; // reaped elsewhere (SIGCHLD ignored): the status is lost
      return done(true);
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline)
      return done(false);
    if (pidfd < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    pollfd p{pidfd, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(std::min<decltype(left)>(left, 1000)));
  }
}

std::string DeviceController::startTimeoutMessage() const {
  return fmt::format("executor {} did not finish starting within {:g}s (OMPSIM_EXECUTOR_START_TIMEOUT)",
                     opts_.executorPath, opts_.startTimeout);
}

DeviceOptions DeviceOptions::fromConfig(int32_t deviceId, const std::string &defaultLibDir) {
  const Config &c = config();
  DeviceOptions o;
  o.deviceId = deviceId;
  o.libDir = c.LibDir.empty() ? defaultLibDir : c.LibDir;
  o.executorPath = c.Executor.empty() ? o.libDir + "/../bin/ompsim-device" : c.Executor;
  o.arenaBase = c.DeviceBase + uint64_t(deviceId) * kArenaStride;
  o.arenaSize = c.DeviceMemory;
  o.kernelTimeout = c.KernelTimeout;
  o.startTimeout = c.ExecutorStartTimeout;
  o.jitOptLevel = c.JitOptLevel;
  o.jitCache = c.JitCache;
  return o;
}

DeviceController::DeviceController(const DeviceOptions &options) : opts_(options) {}

Expected<std::unique_ptr<DeviceController>> DeviceController::Create(const DeviceOptions &options) {
  std::unique_ptr<DeviceController> dc(new DeviceController(options));
  std::vector<std::pair<uint64_t, uint64_t>> collided;
  for (int attempt = 1;; ++attempt) {
    collided.clear();
    if (auto err = dc->start(collided))
      return std::move(err);
    if (collided.empty() || attempt >= options.maxStartAttempts)
      break;
    // The executor's own libraries landed on a host range; a fresh process
    // gets a fresh (ASLR) layout.
    OMPSIM_TRACE_EVENT(Cat::Image, "executor-restart")
        .num("device", options.deviceId)
        .num("collisions", int64_t(collided.size()));
    dc->stop(/*graceful=*/false);
  }
  for (auto [b, e] : collided)
    OMPSIM_TRACE_EVENT(Cat::Image, "host-range-not-reserved")
        .num("device", options.deviceId)
        .host("begin", b)
        .hex("bytes", e - b);
  return std::move(dc);
}

Error DeviceController::start(std::vector<std::pair<uint64_t, uint64_t>> &collided) {
  deathMessage_.clear();
  std::string prefix = fmt::format("device {}: ", opts_.deviceId);
  if (::access(opts_.executorPath.c_str(), X_OK) != 0)
    return makeError(prefix + "executor " + opts_.executorPath +
                     " not found or not executable (set OMPSIM_EXECUTOR)");
  int sv[2], fp[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return makeError(prefix + "socketpair failed: " + std::strerror(errno));
  if (::pipe2(fp, O_CLOEXEC) != 0) {
    ::close(sv[0]);
    ::close(sv[1]);
    return makeError(prefix + "pipe failed: " + std::strerror(errno));
  }
  int arenaFd = -1;
  if (auto err = mapSharedMemory(arenaFd)) {
    for (int fd : {sv[0], sv[1], fp[0], fp[1]})
      ::close(fd);
    return err;
  }
  std::string fdArg = std::to_string(sv[1]), faultArg = std::to_string(fp[1]),
              arenaArg = std::to_string(arenaFd), parentArg = std::to_string(::getpid());
  std::vector<char *> argv = {opts_.executorPath.data(),
                              const_cast<char *>("--fd"),
                              fdArg.data(),
                              const_cast<char *>("--fault-fd"),
                              faultArg.data(),
                              const_cast<char *>("--arena-fd"),
                              arenaArg.data()};
  ExecutorEnvironment env = executorEnvironment();
  std::string hostRuntimeFlag = "--host-runtime";
  if (!env.hostRuntime.empty()) {
    argv.push_back(hostRuntimeFlag.data());
    argv.push_back(env.hostRuntime.data());
  }
  // --parent stays last: tools find a host's executors by "--parent <pid>$".
  for (char *a : {const_cast<char *>("--parent"), parentArg.data(), static_cast<char *>(nullptr)})
    argv.push_back(a);
  // The executor must die with its host in every state, even before its own
  // main() runs: the death signal is armed in the child before exec, and the
  // child gives up if the host already died in between. vfork runs no
  // pthread_atfork handlers (libomp has some) and the child only makes
  // system calls before exec.
  pid_t host = ::getpid();
  int keep[] = {sv[1], fp[1], arenaFd};
  volatile int execErrno = 0;
  pid_t child = ::vfork();
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != host)
      ::_exit(127);
    for (int k : keep)
      ::fcntl(k, F_SETFD, 0); // these three, and only these, outlive exec
    ::execve(opts_.executorPath.c_str(), argv.data(), env.pointers.data());
    execErrno = errno;
    ::_exit(127);
  }
  int rc = child < 0 ? errno : execErrno;
  if (child > 0 && rc != 0) {
    int status = 0;
    ::waitpid(child, &status, 0);
    removeOpenMPRegistration(child);
  }
  pid_ = child > 0 && rc == 0 ? child : -1;
  ::close(sv[1]);
  ::close(fp[1]);
  ::close(arenaFd); // our mapping keeps the memory; the executor has its own fd
  if (rc != 0) {
    ::close(sv[0]);
    ::close(fp[0]);
    pid_ = -1;
    unmapSharedMemory();
    return makeError(prefix + "cannot start executor " + opts_.executorPath + ": " + std::strerror(rc));
  }
  // Start-up has a bound: an executor that never answers (stuck before its
  // handshake or in setup) is killed, which fails the blocked call below.
  StartupWatch watch(pid_, opts_.startTimeout);
  faultFd_ = fp[0];
  // The transport closes sv[0] as soon as the executor hangs up, and the
  // number may be reused by then; stop() shuts the socket down through a
  // descriptor of its own. Without one, stop() kills instead of asking.
  int ownFd = ::fcntl(sv[0], F_DUPFD_CLOEXEC, 0);
  auto epc = SimpleRemoteEPC::Create<FDSimpleRemoteEPCTransport>(
      std::make_unique<DynamicThreadPoolTaskDispatcher>(std::nullopt), SimpleRemoteEPC::Setup(), sv[0],
      sv[0]);
  if (!epc) {
    std::string why = toString(epc.takeError());
    int status = 0;
    if (!waitFor(pid_, 2.0, status)) {
      ::kill(pid_, SIGKILL);
      waitFor(pid_, 10.0, status);
    }
    pid_ = -1;
    ::close(faultFd_);
    faultFd_ = -1;
    if (ownFd >= 0)
      ::close(ownFd);
    unmapSharedMemory();
    if (watch.fired())
      return makeError(prefix + startTimeoutMessage());
    return makeError(prefix + "executor " + opts_.executorPath + " did not start: " + why);
  }
  epc_ = epc->get();
  es_ = std::make_unique<ExecutionSession>(std::move(*epc));
  hostFd_ = ownFd;
  if (trace::enabled(trace::Cat::Image)) {
    trace::Event ev(trace::Cat::Image, "executor-start");
    ev.num("device", opts_.deviceId);
    if (!trace::normalized()) // pids differ run to run; normalized traces must not
      ev.num("executor_pid", pid_);
  }

  const char *names[] = {proto::SetupName,        proto::LoadElfName,      proto::LookupName,
                         proto::UnloadName,       proto::AllocCodeName,    proto::CallVoidName,
                         proto::SetFptrTableName, proto::TranslateLogName, proto::LazyReenterName,
                         proto::LazyFailedName,   proto::LookupManyName};
  const auto &boot = epc_->getBootstrapSymbolsMap();
  for (const char *n : names) {
    auto it = boot.find(n);
    if (it == boot.end()) {
      stop(false);
      return makeError(prefix + "executor " + opts_.executorPath + " lacks service " + n);
    }
    fns_[n] = it->second.getValue();
  }

  std::vector<std::tuple<uint64_t, uint64_t>> ranges;
  for (const HostRange &r : HostSymbolizer::get().loadedRanges())
    ranges.emplace_back(r.Begin, r.End);
  uint64_t codeBytes = std::min<uint64_t>(opts_.arenaSize / 4, 256ULL << 20);
  Expected<std::vector<std::tuple<uint64_t, uint64_t>>> bad = std::vector<std::tuple<uint64_t, uint64_t>>();
  if (auto err = call<proto::SetupSignature>(proto::SetupName, "setup", bad, ranges, opts_.arenaBase,
                                             opts_.arenaSize, codeBytes, opts_.libDir)) {
    consumeError(bad.takeError());
    stop(false);
    if (watch.fired()) {
      consumeError(std::move(err));
      return makeError(prefix + startTimeoutMessage());
    }
    return err;
  }
  if (!watch.disarm()) { // it fired as setup returned: the executor is gone
    consumeError(bad.takeError());
    stop(false);
    return makeError(prefix + startTimeoutMessage());
  }
  if (!bad) {
    std::string why = toString(bad.takeError());
    stop(false);
    return makeError(prefix + why);
  }
  for (auto [b, e] : *bad)
    collided.emplace_back(b, e);
  // The heap is the arena above the code region, exactly as the executor
  // splits it; its bookkeeping lives here, since allocating is only address
  // arithmetic and the host already reaches the memory itself.
  constexpr uint64_t kPage = 4096;
  uint64_t heapBegin = opts_.arenaBase + (std::min(codeBytes, opts_.arenaSize) & ~(kPage - 1));
  heap_ = std::make_unique<RangeAllocator>(heapBegin, opts_.arenaBase + opts_.arenaSize);
  return Error::success();
}

void DeviceController::stop(bool graceful) {
  if (pid_ > 0) {
    int status = 0;
    bool exited = false;
    if (graceful && deathMessage_.empty() && hostFd_ >= 0) {
      // End-of-file lets the executor run fini functions and flush device output.
      ::shutdown(hostFd_, SHUT_WR);
      exited = waitFor(pid_, 5.0, status);
    }
    if (!exited) {
      ::kill(pid_, SIGKILL);
      waitFor(pid_, 30.0, status);
    }
    OMPSIM_TRACE_EVENT(Cat::Image, "executor-stop").num("device", opts_.deviceId);
  }
  if (es_) {
    // Closing the fd does not wake ORC's listener thread blocked in read();
    // shutting the socket down does.
    if (hostFd_ >= 0)
      ::shutdown(hostFd_, SHUT_RDWR);
    // The executor is gone: what the JIT's teardown cannot free there is no
    // error worth reporting.
    es_->setErrorReporter([](Error err) { consumeError(std::move(err)); });
    stopLazyCalls();
    jit_.reset();
    consumeError(es_->endSession()); // disconnects the EPC
    es_.reset();
    epc_ = nullptr;
  }
  if (hostFd_ >= 0)
    ::close(hostFd_);
  hostFd_ = -1;
  if (faultFd_ >= 0)
    ::close(faultFd_);
  faultFd_ = -1;
  pid_ = -1;
  fns_.clear();
  unmapSharedMemory();
}

bool DeviceController::executorExited() {
  siginfo_t info{};
  if (::waitid(P_PID, id_t(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0)
    return errno != EINTR; // ECHILD: reaped elsewhere (SIGCHLD ignored), so gone
  return info.si_pid == pid_;
}

DeviceController::~DeviceController() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  stop(/*graceful=*/true);
}

bool DeviceController::alive() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  return pid_ > 0 && deathMessage_.empty();
}

Error DeviceController::checkAlive() {
  if (!deathMessage_.empty())
    return makeError(deathMessage_);
  if (pid_ <= 0)
    return makeError(fmt::format("device {}: executor is not running", opts_.deviceId));
  return Error::success();
}

} // namespace ompsim::sim

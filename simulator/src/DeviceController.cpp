#include "ompsim/simulator/DeviceController.h"

#include "DeviceJit.h"
#include "ImageSymbolTable.h"
#include "LaunchMailbox.h"
#include "Protocol.h"
#include "RangeAllocator.h"

#include "ompsim/config.hpp"
#include "ompsim/host_symbolizer.hpp"
#include "ompsim/leftovers.hpp"
#include "ompsim/trace.hpp"

#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/SimpleRemoteEPC.h"
#include "llvm/ExecutionEngine/Orc/TaskDispatch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstring>
#include <fmt/format.h>
#include <thread>

extern char **environ;

namespace ompsim::sim {

using namespace llvm;
using namespace llvm::orc;
namespace proto = protocol;

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


Error makeError(const Twine &msg) { return createStringError(inconvertibleErrorCode(), msg); }

/// memfd_create's MFD_EXEC (Linux 6.3); older headers lack it, older kernels refuse it.
#ifdef MFD_EXEC
constexpr unsigned kMemfdExec = MFD_EXEC;
#else
constexpr unsigned kMemfdExec = 0x0010U;
#endif

const char *signalName(int sig) {
  switch (sig) {
  case SIGSEGV: return "SIGSEGV";
  case SIGBUS: return "SIGBUS";
  case SIGILL: return "SIGILL";
  case SIGFPE: return "SIGFPE";
  case SIGKILL: return "SIGKILL";
  case SIGTERM: return "SIGTERM";
  case SIGABRT: return "SIGABRT";
  case SIGINT: return "SIGINT";
  case SIGQUIT: return "SIGQUIT";
  default: return "signal";
  }
}

std::string faultKind(const proto::FaultRecord &f) {
  switch (f.signo) {
  case SIGSEGV: return "segmentation fault";
  case SIGBUS: return "bus error";
  case SIGILL: return "illegal instruction";
  case SIGFPE: return f.code == FPE_INTDIV ? "integer division by zero" : "arithmetic exception";
  default: return fmt::format("signal {}", f.signo);
  }
}

/// Whether a fault is the faulting thread running off the bottom of its stack:
/// both the address and the stack pointer at or below the stack's lowest page
/// (in its guard, or past it by a large frame; 16 MiB covers any guard gap).
bool isStackOverflow(const proto::FaultRecord &f) {
  constexpr uint64_t kReach = 16ull << 20, kPage = 4096, kSlack = 64 * 1024;
  if (f.signo != SIGSEGV || f.stackLow < kReach || f.stackHigh <= f.stackLow)
    return false;
  bool addrNearBottom = f.addr < f.stackLow + kPage && f.addr >= f.stackLow - kReach;
  bool rspNearBottom = f.rsp < f.stackLow + kSlack && f.rsp >= f.stackLow - kReach;
  return addrNearBottom && rspNearBottom;
}

/// Waits up to `seconds` for `pid`; returns true and its status once it has exited.
bool waitFor(pid_t pid, double seconds, int &status) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      // The executor's libomp registered itself in /dev/shm; an executor that
      // ends with _exit or a signal never removes that file.
      removeOpenMPRegistration(pid);
      return true;
    }
    if (r < 0 && errno != EINTR) {
      status = -1; // reaped elsewhere (SIGCHLD ignored): the status is lost
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
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

std::string DeviceController::startTimeoutMessage() const {
  return fmt::format("executor {} did not finish starting within {:g}s (OMPSIM_EXECUTOR_START_TIMEOUT)",
                     opts_.executorPath, opts_.startTimeout);
}

DeviceOptions DeviceOptions::fromConfig(int32_t deviceId, const std::string &defaultLibDir) {
  const Config &c = config();
  DeviceOptions o;
  o.deviceId = deviceId;
  o.libDir = c.libDir.empty() ? defaultLibDir : c.libDir;
  o.executorPath = c.executor.empty() ? o.libDir + "/../bin/ompsim-device" : c.executor;
  o.arenaBase = c.deviceBase + uint64_t(deviceId) * kArenaStride;
  o.arenaSize = c.deviceMemory;
  o.kernelTimeout = c.kernelTimeout;
  o.startTimeout = c.executorStartTimeout;
  o.jitOptLevel = c.jitOptLevel;
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
  std::vector<char *> argv = {opts_.executorPath.data(), const_cast<char *>("--fd"), fdArg.data(),
                              const_cast<char *>("--fault-fd"), faultArg.data(),
                              const_cast<char *>("--arena-fd"), arenaArg.data()};
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
  auto epc = SimpleRemoteEPC::Create<FDSimpleRemoteEPCTransport>(
      std::make_unique<DynamicThreadPoolTaskDispatcher>(std::nullopt), SimpleRemoteEPC::Setup(),
      sv[0], sv[0]);
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
    unmapSharedMemory();
    if (watch.fired())
      return makeError(prefix + startTimeoutMessage());
    return makeError(prefix + "executor " + opts_.executorPath + " did not start: " + why);
  }
  epc_ = epc->get();
  es_ = std::make_unique<ExecutionSession>(std::move(*epc));
  hostFd_ = sv[0];
  if (trace::enabled(trace::Cat::Image)) {
    trace::Event ev(trace::Cat::Image, "executor-start");
    ev.num("device", opts_.deviceId);
    if (!trace::normalized()) // pids differ run to run; normalized traces must not
      ev.num("executor_pid", pid_);
  }

  const char *names[] = {proto::SetupName,       proto::LoadElfName,  proto::LookupName,
                         proto::UnloadName,      proto::AllocCodeName, proto::CallVoidName,
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
    ranges.emplace_back(r.begin, r.end);
  uint64_t codeBytes = std::min<uint64_t>(opts_.arenaSize / 4, 256ULL << 20);
  Expected<std::vector<std::tuple<uint64_t, uint64_t>>> bad =
      std::vector<std::tuple<uint64_t, uint64_t>>();
  if (auto err = call<proto::SetupSignature>(proto::SetupName, "setup", bad, ranges,
                                             opts_.arenaBase, opts_.arenaSize, codeBytes,
                                             opts_.libDir)) {
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
  hostFd_ = -1;
  if (faultFd_ >= 0)
    ::close(faultFd_);
  faultFd_ = -1;
  pid_ = -1;
  fns_.clear();
  unmapSharedMemory();
}

Error DeviceController::mapSharedMemory(int &fd) {
  std::string prefix = fmt::format("device {}: ", opts_.deviceId);
  // Image code runs from these pages in the executor; where the kernel
  // supports MFD_EXEC say so, so that a vm.memfd_noexec default cannot seal it.
  fd = ::memfd_create("ompsim-device-memory", MFD_CLOEXEC | kMemfdExec);
  if (fd < 0 && errno == EINVAL)
    fd = ::memfd_create("ompsim-device-memory", MFD_CLOEXEC);
  if (fd < 0)
    return makeError(prefix + "cannot create device memory (memfd_create): " + std::strerror(errno));
  uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  sharedBytes_ = LaunchMailbox::kBytes + ((opts_.arenaSize + page - 1) & ~(page - 1));
  if (::ftruncate(fd, off_t(sharedBytes_)) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    fd = -1;
    return makeError(prefix + fmt::format("cannot size device memory to {} bytes: {}", sharedBytes_, why));
  }
  void *p = ::mmap(nullptr, sharedBytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) {
    std::string why = std::strerror(errno);
    ::close(fd);
    fd = -1;
    return makeError(prefix + fmt::format("cannot map {} bytes of device memory: {}", sharedBytes_, why));
  }
  // A child the host program forks must not write into device memory.
  ::madvise(p, sharedBytes_, MADV_DONTFORK);
  shared_ = static_cast<char *>(p);
  mailbox_ = reinterpret_cast<LaunchMailbox *>(shared_);
  launchSeq_ = 0;
  return Error::success();
}

void DeviceController::unmapSharedMemory() {
  if (shared_)
    ::munmap(shared_, sharedBytes_);
  shared_ = nullptr;
  mailbox_ = nullptr;
  sharedBytes_ = 0;
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

Error DeviceController::checkRange(uint64_t addr, uint64_t size, StringRef what) {
  if (addr < opts_.arenaBase || size > opts_.arenaSize ||
      addr - opts_.arenaBase > opts_.arenaSize - size)
    return makeError(fmt::format("device {}: {} of {} bytes at 0x{:x} is outside device memory "
                                 "[0x{:x}, 0x{:x})",
                                 opts_.deviceId, what.str(), size, addr, opts_.arenaBase,
                                 opts_.arenaBase + opts_.arenaSize));
  return Error::success();
}

std::string DeviceController::describeDeath(int status, const std::string &context) {
  std::string dev = fmt::format("device {}: ", opts_.deviceId);
  proto::FaultRecord f{};
  bool haveFault = false;
  if (faultFd_ >= 0) {
    int fl = ::fcntl(faultFd_, F_GETFL);
    ::fcntl(faultFd_, F_SETFL, fl | O_NONBLOCK);
    haveFault = ::read(faultFd_, &f, sizeof f) == ssize_t(sizeof f) &&
                f.magic == proto::FaultRecord::kMagic;
    // The faulting kernel's translate log follows the record when the device
    // runtime was loaded; keep it for takeTranslateLog.
    auto log = std::make_unique<proto::FaultTranslateLog>();
    if (haveFault && ::read(faultFd_, log.get(), sizeof *log) == ssize_t(sizeof *log) &&
        log->magic == proto::FaultTranslateLog::kMagic &&
        log->count <= proto::FaultTranslateLog::kMaxRecords) {
      TranslateLog t;
      t.hits = log->hits;
      t.misses = log->misses;
      t.recorded = log->count;
      t.dropped = log->dropped;
      for (uint32_t i = 0; i < log->count; ++i)
        t.records.push_back({log->records[i].host, log->records[i].result, log->records[i].hit != 0});
      faultTranslateLog_ = std::move(t);
    }
  }
  if (haveFault && f.signo == 0) {
    // The host ends with the status device code gave exit(), as stock does.
    trace::setFatalExitStatus(f.code);
    std::string sym = symbolize(f.rip);
    OMPSIM_TRACE_EVENT(Cat::Fault, "device-exit")
        .num("device", opts_.deviceId)
        .str("context", context)
        .num("status", f.code);
    return fmt::format("{}{} called exit({}){}", dev, context, f.code,
                       sym.empty() ? std::string() : fmt::format(" from dev:{}", sym));
  }
  if (haveFault) {
    HostSymbolizer &hs = HostSymbolizer::get();
    if (trace::enabled(trace::Cat::Fault)) {
      // Name both addresses on the side they belong to, so the trace alone says
      // which host function or object the device touched.
      trace::Event ev(trace::Cat::Fault, "device-fault");
      ev.num("device", opts_.deviceId).str("context", context).num("signal", f.signo);
      for (auto [key, a] : {std::pair<const char *, uint64_t>{"addr", f.addr}, {"rip", f.rip}}) {
        if (!hs.objectOf(a).empty())
          ev.host(key, a);
        else
          ev.dev(key, a, symbolize(a));
      }
    }
    std::string hostObject = (f.signo == SIGSEGV || f.signo == SIGBUS) ? hs.objectOf(f.addr) : "";
    auto hostSymbolText = [&](uint64_t a) {
      auto sym = hs.lookup(a);
      if (!sym)
        return fmt::format("in {}", hostObject);
      std::string n = sym->offset ? fmt::format("{}+0x{:x}", sym->name, sym->offset) : sym->name;
      return fmt::format("host symbol '{}' in {}", n, sym->object.empty() ? hostObject : sym->object);
    };
    if (!hostObject.empty()) {
      HostFault &hf = hostFault_.emplace();
      hf.access = f.rip == f.addr                                  ? HostFault::Access::Call
                  : f.signo == SIGSEGV && (f.pageFaultCode & 2) ? HostFault::Access::Write
                                                                 : HostFault::Access::Read;
      hf.addr = f.addr;
      if (faultTranslateLog_) {
        for (const TranslateLog::Record &r : faultTranslateLog_->records)
          hf.lookups.push_back(r);
        hf.lookupsComplete = faultTranslateLog_->dropped == 0;
      }
    }
    if (!hostObject.empty() && f.rip == f.addr)
      return fmt::format("{}{} called untranslated host function pointer 0x{:x} ({})", dev, context,
                         f.addr, hostSymbolText(f.addr));
    std::string where;
    std::string sym = symbolize(f.rip);
    where = sym.empty() ? fmt::format("0x{:x}", f.rip) : fmt::format("dev:{} (0x{:x})", sym, f.rip);
    bool write = f.signo == SIGSEGV && (f.pageFaultCode & 2);
    if (isStackOverflow(f)) {
      uint64_t stackKiB = (f.stackHigh - f.stackLow) / 1024;
      std::string place = f.addr < f.stackLow
                              ? fmt::format("{} bytes below the {} KiB stack of the device thread",
                                            f.stackLow - f.addr, stackKiB)
                              : fmt::format("at the bottom of the {} KiB stack of the device thread", stackKiB);
      return fmt::format("{}stack overflow {} {}: {} ({}) at address 0x{:x}, {}, instruction at {}", dev,
                         StringRef(context).starts_with("kernel ") ? "in" : "while", context, faultKind(f),
                         signalName(f.signo), f.addr, place, where);
    }
    if (!hostObject.empty())
      return fmt::format("{}{} {} host data at 0x{:x} ({}) from {}", dev, context,
                         write ? "wrote" : "read", f.addr, hostSymbolText(f.addr), where);
    if (f.signo == SIGSEGV && f.rip == f.addr && f.addr < 4096)
      return fmt::format("{}{} called a null function pointer (0x{:x})", dev, context, f.addr);
    if (f.signo == SIGSEGV || f.signo == SIGBUS)
      return fmt::format("{}{}: {} ({}) at address 0x{:x}, instruction at {}", dev, context,
                         faultKind(f), signalName(f.signo), f.addr, where);
    return fmt::format("{}{}: {} ({}) at {}", dev, context, faultKind(f), signalName(f.signo), where);
  }
  if (status == -1)
    return fmt::format("{}executor (pid {}) died during {}", dev, pid_, context);
  if (WIFSIGNALED(status))
    return fmt::format("{}executor (pid {}) was killed by signal {} ({}) during {}", dev, pid_,
                       WTERMSIG(status), signalName(WTERMSIG(status)), context);
  return fmt::format("{}executor (pid {}) exited with status {} during {}", dev, pid_,
                     WEXITSTATUS(status), context);
}

Error DeviceController::diagnose(Error callError, const std::string &context) {
  if (!callError)
    return callError;
  int status = 0;
  // A lost connection means the executor is exiting or gone; give it a moment.
  if (!waitFor(pid_, 2.0, status)) {
    // Still alive: an ordinary error the executor reported (bad image, ...).
    return makeError(fmt::format("device {}: {}: {}", opts_.deviceId, context,
                                 toString(std::move(callError))));
  }
  consumeError(std::move(callError));
  deathMessage_ = describeDeath(status, context);
  if (hostFault_ && faultAdvisor_) {
    std::string note = faultAdvisor_(*hostFault_);
    if (!note.empty())
      deathMessage_ += "; " + note;
  }
  int dummy;
  (void)dummy;
  pid_t old = pid_;
  pid_ = -1; // reaped
  (void)old;
  OMPSIM_TRACE_EVENT(Cat::Fault, "executor-death").num("device", opts_.deviceId).str("message", deathMessage_);
  return makeError(deathMessage_);
}

template <typename Sig, typename RetT, typename... ArgTs>
Error DeviceController::call(const char *fnName, const std::string &context, RetT &result,
                             const ArgTs &...args) {
  if (auto err = checkAlive())
    return err;
  ExecutorAddr fn(fns_.at(fnName));
  Error err = epc_->callSPSWrapper<Sig>(fn, result, args...);
  return diagnose(std::move(err), context);
}

Expected<uint64_t> DeviceController::loadImage(ArrayRef<char> bytes, StringRef name,
                                               ArrayRef<std::string> provides) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (bytes.size() >= 4 && StringRef(bytes.data(), 4) == StringRef("BC\xC0\xDE", 4))
    return loadBitcode(bytes, name);
  Expected<std::tuple<uint64_t, uint64_t, uint64_t>> loaded =
      std::make_tuple(uint64_t(0), uint64_t(0), uint64_t(0));
  std::string context = "loading image " + name.str();
  // The image travels through the shared arena (one memcpy) when a heap block
  // can hold it for the call, else through the socket.
  uint64_t scratch = bytes.empty() ? 0 : heap_->allocate(bytes.size(), 4096);
  if (scratch)
    std::memcpy(shared_ + LaunchMailbox::kBytes + (scratch - opts_.arenaBase), bytes.data(), bytes.size());
  Error sent = call<proto::LoadElfSignature>(
      proto::LoadElfName, context, loaded, scratch ? std::vector<char>() : std::vector<char>(bytes.begin(), bytes.end()),
      scratch, scratch ? uint64_t(bytes.size()) : uint64_t(0), name.str(), provides.vec());
  if (scratch)
    heap_->release(scratch);
  if (sent)
    return std::move(sent);
  if (!loaded)
    return makeError(fmt::format("device {}: {}", opts_.deviceId, toString(loaded.takeError())));
  auto [handle, base, size] = *loaded;
  Image img;
  img.name = name.str();
  img.remoteHandle = handle;
  img.base = base;
  img.size = size;
  // Built on the first symbolize: only traces and fault reports name device
  // addresses, and an image with many symbols would pay for it at every load.
  img.elfBytes.assign(bytes.begin(), bytes.end());
  uint64_t id = nextImage_++;
  images_[id] = std::move(img);
  OMPSIM_TRACE_EVENT(Cat::Image, "load")
      .num("device", opts_.deviceId)
      .str("image", name)
      .str("kind", "elf")
      .dev("base", base, "")
      .hex("size", size);
  return id;
}

Expected<uint64_t> DeviceController::loadBitcode(ArrayRef<char> bytes, StringRef name) {
  if (auto err = checkAlive())
    return std::move(err);
  std::string prefix = fmt::format("device {}: ", opts_.deviceId);
  if (!jit_) {
    // JIT-linked code imports from libomp like an ELF image's NEEDED list does.
    auto libomp = epc_->getDylibMgr().loadDylib("libomp.so.5");
    if (!libomp)
      return diagnose(libomp.takeError(), "loading libomp.so.5 for JIT images");
    auto jit = DeviceJIT::Create(*es_, opts_.arenaBase, fns_[proto::LazyReenterName],
                                 fns_[proto::LazyFailedName], opts_.jitOptLevel);
    if (!jit)
      return makeError(prefix + toString(jit.takeError()));
    jit_ = std::move(*jit);
    lazyStop_ = false;
    lazyThread_ = std::thread([this] { serveLazyCalls(); });
  }
  auto added = jit_->add(bytes, name);
  if (!added) {
    std::string why = toString(added.takeError());
    if (!alive())
      return makeError(deathMessage_.empty() ? prefix + why : deathMessage_);
    return makeError(prefix + why);
  }
  Image img;
  img.name = name.str();
  img.jit = std::make_unique<JITImage>(std::move(*added));
  img.symbols = std::make_unique<ImageSymbolTable>();
  uint64_t lo = UINT64_MAX, hi = 0;
  for (auto &[n, a] : img.jit->symbols) {
    img.symbols->add(n, a, 0);
    lo = std::min(lo, a);
    hi = std::max(hi, a + 1);
  }
  img.base = lo == UINT64_MAX ? 0 : lo;
  img.size = hi > lo ? hi - lo : 0;
  if (img.jit->init) {
    Error result = Error::success();
    if (auto err = call<proto::CallVoidSignature>(proto::CallVoidName, "initializing image " + img.name,
                                                  result, img.jit->init))
      return std::move(err);
    if (result)
      return makeError(prefix + toString(std::move(result)));
  }
  uint64_t id = nextImage_++;
  OMPSIM_TRACE_EVENT(Cat::Image, "load")
      .num("device", opts_.deviceId)
      .str("image", name)
      .str("kind", "bitcode")
      .dev("base", img.base, "")
      .num("symbols", int64_t(img.jit->symbols.size()));
  images_[id] = std::move(img);
  return id;
}

void DeviceController::serveLazyCalls() {
  LaunchMailbox &mb = *mailbox_;
  uint32_t served = mb.lazyServed.load(std::memory_order_acquire);
  for (;;) {
    uint32_t request = mb.lazyRequest.load(std::memory_order_acquire);
    if (lazyStop_.load(std::memory_order_acquire))
      return;
    if (request == served) {
      sharedFutexWait(mb.lazyRequest, request);
      continue;
    }
    // Not under mu_: the thread that holds it may be waiting for the very
    // kernel (or initializer) that made this call.
    uint64_t landing = jit_->resolveLazyCall(mb.lazyTrampoline);
    OMPSIM_TRACE_EVENT(Cat::Image, "jit-first-call")
        .num("device", opts_.deviceId)
        .dev("function", landing, "");
    mb.lazyLanding = landing;
    mb.lazyServed.store(request, std::memory_order_seq_cst);
    sharedFutexWake(mb.lazyServed);
    served = request;
  }
}

void DeviceController::stopLazyCalls() {
  if (!lazyThread_.joinable())
    return;
  lazyStop_.store(true, std::memory_order_seq_cst);
  mailbox_->lazyRequest.fetch_add(1, std::memory_order_seq_cst);
  sharedFutexWake(mailbox_->lazyRequest);
  lazyThread_.join();
}

Expected<uint64_t> DeviceController::lookup(uint64_t image, StringRef name) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  auto it = images_.find(image);
  if (it == images_.end())
    return makeError(fmt::format("device {}: no loaded image {}", opts_.deviceId, image));
  Expected<uint64_t> addr = uint64_t(0);
  if (it->second.jit)
    addr = jit_->lookup(*it->second.jit, name);
  else if (auto err = call<proto::LookupSignature>(proto::LookupName, "symbol lookup", addr,
                                              it->second.remoteHandle, name.str()))
    return std::move(err);
  if (!addr)
    return addr.takeError();
  if (!*addr)
    return makeError(fmt::format("device {}: image {} defines no symbol '{}'", opts_.deviceId,
                                 it->second.name, name.str()));
  return *addr;
}

Expected<std::vector<uint64_t>> DeviceController::lookupMany(uint64_t image,
                                                            const std::vector<std::string> &names) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  auto it = images_.find(image);
  if (it == images_.end())
    return makeError(fmt::format("device {}: no loaded image {}", opts_.deviceId, image));
  if (it->second.jit) {
    StringMap<uint64_t> byName;
    for (auto &[n, a] : it->second.jit->symbols)
      byName[n] = a;
    std::vector<uint64_t> addrs;
    addrs.reserve(names.size());
    for (const std::string &n : names)
      addrs.push_back(byName.lookup(n));
    return addrs;
  }
  Expected<std::vector<uint64_t>> addrs = std::vector<uint64_t>();
  if (auto err = call<proto::LookupManySignature>(proto::LookupManyName,
                                                  fmt::format("looking up {} symbols", names.size()),
                                                  addrs, it->second.remoteHandle, names))
    return std::move(err);
  if (!addrs)
    return addrs.takeError();
  if (addrs->size() != names.size())
    return makeError(fmt::format("device {}: asked for {} symbols of image {}, got {}", opts_.deviceId,
                                 names.size(), it->second.name, addrs->size()));
  return addrs;
}

Error DeviceController::unloadImage(uint64_t image) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  auto it = images_.find(image);
  if (it == images_.end())
    return makeError(fmt::format("device {}: no loaded image {}", opts_.deviceId, image));
  Error result = Error::success();
  if (it->second.jit) {
    if (it->second.jit->fini)
      if (auto err = call<proto::CallVoidSignature>(proto::CallVoidName,
                                                    "finalizing image " + it->second.name, result,
                                                    it->second.jit->fini))
        return err;
    result = joinErrors(std::move(result), jit_->remove(*it->second.jit));
  } else if (auto err = call<proto::UnloadSignature>(proto::UnloadName,
                                                     "unloading image " + it->second.name, result,
                                                     it->second.remoteHandle)) {
    return err;
  }
  images_.erase(it);
  return result;
}

uint64_t DeviceController::allocate(uint64_t size, uint64_t align) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (auto err = checkAlive()) {
    consumeError(std::move(err));
    return 0;
  }
  if (!align || (align & (align - 1)))
    align = 16;
  uint64_t addr = heap_->allocate(size, std::max<uint64_t>(align, 16));
  OMPSIM_TRACE_EVENT(Cat::Alloc, addr ? "alloc" : "alloc-failed")
      .num("device", opts_.deviceId)
      .num("size", int64_t(size))
      .dev("addr", addr, "");
  return addr;
}

Error DeviceController::release(uint64_t addr) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (auto err = checkAlive())
    return err;
  if (!heap_->release(addr))
    return makeError(fmt::format("device {}: 0x{:x} is not a live device allocation", opts_.deviceId, addr));
  OMPSIM_TRACE_EVENT(Cat::Alloc, "free").num("device", opts_.deviceId).dev("addr", addr, "");
  return Error::success();
}

Error DeviceController::write(uint64_t dst, const void *src, uint64_t size) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (size == 0)
    return Error::success();
  if (auto err = checkAlive())
    return err;
  if (auto err = checkRange(dst, size, "write"))
    return err;
  std::memcpy(shared_ + LaunchMailbox::kBytes + (dst - opts_.arenaBase), src, size);
  return Error::success();
}

Error DeviceController::read(void *dst, uint64_t src, uint64_t size) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (size == 0)
    return Error::success();
  if (auto err = checkAlive())
    return err;
  if (auto err = checkRange(src, size, "read"))
    return err;
  std::memcpy(dst, shared_ + LaunchMailbox::kBytes + (src - opts_.arenaBase), size);
  return Error::success();
}

Error DeviceController::launch(uint64_t entry, ArrayRef<uint64_t> args, uint32_t numTeams,
                               uint32_t threadLimit, StringRef kernelName) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (auto err = checkAlive())
    return err;
  std::string context = "kernel " + kernelName.str();
  if (args.size() > LaunchMailbox::kMaxArgs)
    return makeError(fmt::format("device {}: {} takes {} arguments; the simulated device passes at most {}",
                                 opts_.deviceId, context, args.size(), LaunchMailbox::kMaxArgs));
  LaunchMailbox &mb = *mailbox_;
  mb.entry = entry;
  mb.teams = numTeams;
  mb.threads = threadLimit;
  mb.numArgs = uint32_t(args.size());
  if (!args.empty())
    std::memcpy(mb.args, args.data(), args.size() * sizeof(uint64_t));
  uint32_t seq = ++launchSeq_;
  mb.hostCpu.store(::sched_getcpu(), std::memory_order_relaxed);
  mb.request.store(seq, std::memory_order_release);
  mb.doorbell.fetch_add(1, std::memory_order_seq_cst);
  if (mb.executorSleeping.load(std::memory_order_seq_cst))
    sharedFutexWake(mb.doorbell);

  auto finished = [&] { return mb.done.load(std::memory_order_acquire) == seq; };
  // Short kernels finish while we spin; longer ones are waited for in slices
  // so that an executor that dies under a kernel (fault, killed from outside)
  // is noticed within a slice, and a hang at the kernel timeout.
  constexpr uint64_t kSpinNanos = 100000;
  constexpr long kSliceNanos = 5000000;
  if (!spinFor(kSpinNanos, mb.hostCpu, mb.executorCpu, finished)) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(opts_.kernelTimeout);
    for (;;) {
      mb.hostWaiting.store(1, std::memory_order_seq_cst);
      uint32_t seen = mb.done.load(std::memory_order_seq_cst);
      if (seen != seq) {
        struct timespec slice = {0, kSliceNanos};
        sharedFutexWait(mb.done, seen, &slice);
      }
      mb.hostWaiting.store(0, std::memory_order_relaxed);
      if (finished())
        break;
      if (executorExited())
        return diagnose(makeError("the executor exited"), context);
      if (std::chrono::steady_clock::now() >= deadline) {
        ::kill(pid_, SIGKILL);
        int status = 0;
        waitFor(pid_, 30.0, status);
        pid_ = -1;
        deathMessage_ = fmt::format("device {}: kernel {} timed out after {:g}s (OMPSIM_KERNEL_TIMEOUT)",
                                    opts_.deviceId, kernelName.str(), opts_.kernelTimeout);
        OMPSIM_TRACE_EVENT(Cat::Fault, "timeout").num("device", opts_.deviceId).str("kernel", kernelName);
        return makeError(deathMessage_);
      }
    }
  }
  if (mb.status != 0)
    return makeError(fmt::format("device {}: {}: {}", opts_.deviceId, context,
                                 std::string(mb.message, std::min<uint32_t>(mb.messageLength,
                                                                            LaunchMailbox::kMessageBytes))));
  return Error::success();
}

Error DeviceController::setFunctionPointerTable(ArrayRef<__omp_offloading_fptr_map_ty> table) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (auto err = checkAlive())
    return err;
  uint64_t bytes = table.size() * sizeof(__omp_offloading_fptr_map_ty);
  uint64_t addr = 0;
  if (bytes) {
    addr = allocate(bytes, 16);
    if (!addr)
      return makeError(fmt::format("device {}: no device memory for the {}-entry function-pointer table",
                                   opts_.deviceId, table.size()));
    if (auto err = write(addr, table.data(), bytes))
      return err;
  }
  Error result = Error::success();
  if (auto err = call<proto::SetFptrTableSignature>(proto::SetFptrTableName, "publishing the function-pointer table",
                                                    result, addr, uint64_t(table.size())))
    return err;
  if (result) {
    if (addr)
      consumeError(release(addr));
    return makeError(fmt::format("device {}: {}", opts_.deviceId, toString(std::move(result))));
  }
  // The device runtime keeps its own copy.
  if (tableAddr_)
    consumeError(release(tableAddr_));
  tableAddr_ = addr;
  return Error::success();
}

Expected<TranslateLog> DeviceController::takeTranslateLog(uint64_t nextCap, uint64_t maxRecords) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (!deathMessage_.empty() && faultTranslateLog_) {
    TranslateLog saved = std::move(*faultTranslateLog_);
    faultTranslateLog_.reset();
    return saved;
  }
  Expected<std::vector<uint64_t>> raw = std::vector<uint64_t>();
  if (auto err = call<proto::TranslateLogSignature>(proto::TranslateLogName, "reading the translate log",
                                                    raw, nextCap, maxRecords))
    return std::move(err);
  if (!raw)
    return makeError(fmt::format("device {}: {}", opts_.deviceId, toString(raw.takeError())));
  TranslateLog log;
  if (raw->size() < 4)
    return log;
  log.hits = (*raw)[0];
  log.misses = (*raw)[1];
  log.recorded = (*raw)[2];
  log.dropped = (*raw)[3];
  for (size_t i = 4; i + 2 < raw->size() + 0 && i + 2 <= raw->size() - 1; i += 3)
    log.records.push_back({(*raw)[i], (*raw)[i + 1], (*raw)[i + 2] != 0});
  return log;
}

void DeviceController::setFaultAdvisor(std::function<std::string(const HostFault &)> advisor) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  faultAdvisor_ = std::move(advisor);
}

std::string DeviceController::symbolize(uint64_t addr) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  for (auto &[id, img] : images_)
    if (!img.symbols && !img.elfBytes.empty())
      img.symbols = std::make_unique<ImageSymbolTable>(ImageSymbolTable::fromElf(img.elfBytes, img.base));
  for (auto &[id, img] : images_)
    if (addr >= img.base && addr < img.base + img.size && img.symbols) {
      std::string s = img.symbols->symbolize(addr);
      if (!s.empty())
        return s;
    }
  for (auto &[id, img] : images_)
    if (img.symbols) {
      std::string s = img.symbols->symbolize(addr);
      if (!s.empty())
        return s;
    }
  return "";
}

} // namespace ompsim::sim

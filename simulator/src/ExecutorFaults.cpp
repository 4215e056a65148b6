//===- ExecutorFaults.cpp - Reporting faults to the controller ------------===//
//
// The executor's fatal-signal handlers and exit(): each sends a fault record
// to the controller over the fault fd and ends the process.
//
//===----------------------------------------------------------------------===//

#include "ExecutorServices.h"

namespace ompsim::sim::executor {

int gFaultFd = -1;
/// The memfd shared with the controller: the launch mailbox, then the arena.
int gArenaFd = -1;
/// The host runtime the controller took out of LD_PRELOAD (may be empty).
std::string gHostRuntime;
std::atomic<TakeTranslateLogFn> gTakeTranslateLog{nullptr};

namespace {

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
      uint64_t count = st.recorded < proto::FaultTranslateLog::kMaxRecords
                           ? st.recorded
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

} // namespace

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
  struct sigaction sa{};
  sa.sa_sigaction = onFatalSignal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGSEGV, SIGBUS, SIGILL, SIGFPE})
    ::sigaction(s, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  ensureAltStack();
}

} // namespace ompsim::sim::executor

//===- ExecutorFaults.cpp - Reporting faults to the controller ------------===//
//
// The executor's fatal-signal handlers, exit() and the device runtime's
// stops of a launch: each sends a fault record to the controller over the
// fault fd and ends the process.
//
//===----------------------------------------------------------------------===//

#include "ExecutorServices.h"

#include <fcntl.h>

namespace ompsim::sim::executor {

int GFaultFd = -1;
/// The memfd shared with the controller: the launch mailbox, then the arena.
int GArenaFd = -1;
ompsim::sim::LaunchMailbox *GMailbox = nullptr;
/// The host runtime the controller took out of LD_PRELOAD (may be empty).
std::string GHostRuntime;
std::atomic<TakeTranslateLogFn> GTakeTranslateLog{nullptr};
std::atomic<DescribeAddressFn> GDescribeAddress{nullptr};
std::atomic<CheckedAccessFn> GCheckedAccess{nullptr};

thread_local int32_t TLaunchSlot = -1;

namespace {

/// The calling thread's stack [low, high), captured by ensureAltStack: the
/// fault handler reports it so the controller can tell a stack overflow
/// (pthread_getattr_np itself is not async-signal-safe). Local-exec TLS in
/// this non-PIE executable, so reading it in the handler is safe.
thread_local uint64_t TStackLow = 0, TStackHigh = 0;

/// Reads a hex number at `P` and moves past it.
uint64_t readHex(const char *&P) {
  uint64_t V = 0;
  for (;; ++P) {
    char C = *P;
    unsigned D = C >= '0' && C <= '9'   ? unsigned(C - '0')
                 : C >= 'a' && C <= 'f' ? unsigned(C - 'a' + 10)
                                        : 16;
    if (D == 16)
      return V;
    V = V * 16 + D;
  }
}

/// Moves `P` past one field of a /proc/self/maps line and the blanks after it.
void skipField(const char *&P) {
  while (*P && *P != ' ')
    ++P;
  while (*P == ' ')
    ++P;
}

/// Whether the line of /proc/self/maps ("begin-end perms offset dev inode
/// path") is the mapping that holds Rec.Rip; when it is a library's file,
/// its path and Rip's offset in it go into `Rec`.
bool holdsCode(const char *Line, proto::FaultRecord &Rec) {
  const char *P = Line;
  uint64_t Begin = readHex(P);
  if (*P++ != '-')
    return false;
  uint64_t End = readHex(P);
  if (Rec.Rip < Begin || Rec.Rip >= End)
    return false;
  while (*P == ' ')
    ++P;
  skipField(P); // perms
  uint64_t Offset = readHex(P);
  skipField(P); // offset
  skipField(P); // dev
  skipField(P); // inode
  // Device code lies in anonymous memory or in the arena's memfd.
  const char Memfd[] = "/memfd:";
  if (*P != '/' || __builtin_strncmp(P, Memfd, sizeof Memfd - 1) == 0)
    return true;
  size_t Len = 0;
  while (P[Len] && Len + 1 < sizeof Rec.CodeObject)
    ++Len;
  __builtin_memcpy(Rec.CodeObject, P, Len);
  Rec.CodeObject[Len] = 0;
  Rec.CodeFileOffset = Rec.Rip - Begin + Offset;
  return true;
}

/// Names the library whose code faulted (libm, libc, the device runtime), so
/// the controller can name its function: scans /proc/self/maps for the
/// mapping of Rec.Rip. Async-signal-safe: open, read and close on buffers
/// of the handler's stack.
void findCodeObject(proto::FaultRecord &Rec) {
  int Fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (Fd < 0)
    return;
  char Chunk[2048];
  char Line[512];
  size_t Len = 0;
  bool Found = false;
  for (ssize_t N; !Found && (N = ::read(Fd, Chunk, sizeof Chunk)) > 0;)
    for (ssize_t I = 0; I < N && !Found; ++I) {
      if (Chunk[I] != '\n') {
        if (Len + 1 < sizeof Line)
          Line[Len++] = Chunk[I];
        continue;
      }
      Line[Len] = 0;
      Found = holdsCode(Line, Rec);
      Len = 0;
    }
  ::close(Fd);
}

/// A fault record of the calling thread (its thread and launch slot), the
/// rest zero. Async-signal-safe.
proto::FaultRecord recordOfThisThread() {
  proto::FaultRecord Rec{};
  Rec.Magic = proto::FaultRecord::kMagic;
  Rec.Tid = int32_t(::syscall(SYS_gettid));
  Rec.Slot = TLaunchSlot;
  return Rec;
}

/// Sends `Bytes` at `Data` to the controller; false without a fault fd.
/// Async-signal-safe.
bool sendToController(const void *Data, size_t Bytes) {
  if (GFaultFd < 0)
    return false;
  ssize_t N = ::write(GFaultFd, Data, Bytes);
  (void)N;
  return true;
}

/// Tells the controller that the executor ends (its record sent), and ends
/// it. Async-signal-safe.
[[noreturn]] void endExecutor() {
  announceExit();
  ::_exit(proto::kFaultExitStatus);
}

/// Reports a fatal signal to the controller and exits. Async-signal-safe.
void onFatalSignal(int Signo, siginfo_t *Info, void *Ctx) {
  proto::FaultRecord Rec = recordOfThisThread();
  Rec.Signo = Signo;
  Rec.Code = Info ? Info->si_code : 0;
  Rec.Addr = Info ? reinterpret_cast<uint64_t>(Info->si_addr) : 0;
  Rec.Rip = Ctx ? uint64_t(static_cast<ucontext_t *>(Ctx)->uc_mcontext.gregs[REG_RIP]) : 0;
  Rec.PageFaultCode = Ctx ? uint64_t(static_cast<ucontext_t *>(Ctx)->uc_mcontext.gregs[REG_ERR]) : 0;
  Rec.Rsp = Ctx ? uint64_t(static_cast<ucontext_t *>(Ctx)->uc_mcontext.gregs[REG_RSP]) : 0;
  Rec.StackLow = TStackLow;
  Rec.StackHigh = TStackHigh;
  if (Rec.Rip)
    findCodeObject(Rec);
  // An address of the heap the checker places: the runtime says which block.
  if (DescribeAddressFn Describe = GDescribeAddress.load(std::memory_order_acquire);
      Describe && (Signo == SIGSEGV || Signo == SIGBUS))
    Describe(Rec.Addr, Rec.Message, sizeof Rec.Message, Rec.Advice, sizeof Rec.Advice);
  if (CheckedAccessFn Checked = GCheckedAccess.load(std::memory_order_acquire);
      Checked && (Signo == SIGSEGV || Signo == SIGBUS))
    Checked(Rec.Addr, Rec.CheckedSite, sizeof Rec.CheckedSite, &Rec.CheckedWrite);
  if (sendToController(&Rec, sizeof Rec)) {
    // Publication never overlaps a kernel, so the runtime's publish lock is
    // free here; static buffers keep the handler free of allocation.
    if (TakeTranslateLogFn Take = GTakeTranslateLog.load(std::memory_order_acquire)) {
      static ompsim_translate_record Recs[proto::FaultTranslateLog::kMaxRecords];
      static proto::FaultTranslateLog Log;
      ompsim_translate_stats St = Take(Recs, proto::FaultTranslateLog::kMaxRecords);
      uint64_t Count = St.recorded < proto::FaultTranslateLog::kMaxRecords
                           ? St.recorded
                           : proto::FaultTranslateLog::kMaxRecords;
      Log.Magic = proto::FaultTranslateLog::kMagic;
      Log.Count = uint32_t(Count);
      Log.Hits = St.hits;
      Log.Misses = St.misses;
      Log.Dropped = St.dropped + (St.recorded - Count);
      for (uint64_t I = 0; I < Count; ++I)
        Log.Records[I] = {Recs[I].host_ptr, Recs[I].result, Recs[I].hit};
      sendToController(&Log, sizeof Log);
    }
  }
  endExecutor();
}

} // namespace

void announceExit() {
  if (!GMailbox)
    return;
  GMailbox->ExecutorExiting.store(1, std::memory_order_seq_cst);
  // Every slot: the host may wait on several launches at once.
  for (auto &Slot : GMailbox->Slots) {
    Slot.HostBell.fetch_add(1, std::memory_order_seq_cst);
    sharedFutexWake(Slot.HostBell);
  }
}

/// What device code calls for exit(): reports the call and its status to the
/// controller and ends the executor at once. The real exit() would run the
/// executor's atexit handlers and static destructors while its service and
/// device threads still run (std::terminate, SIGABRT).
[[noreturn]] void deviceExit(int Status) {
  proto::FaultRecord Rec = recordOfThisThread();
  Rec.Signo = 0; // no signal: exit() was called
  Rec.Code = Status;
  Rec.Rip = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  sendToController(&Rec, sizeof Rec);
  endExecutor();
}

/// What the device runtime calls when it stops a launch: hands its line to
/// the controller, which names the kernel, and ends the executor.
[[noreturn]] void deviceStop(const char *Message) {
  proto::FaultRecord Rec = recordOfThisThread();
  Rec.RuntimeStop = 1;
  std::strncpy(Rec.Message, Message ? Message : "", sizeof Rec.Message - 1);
  std::fflush(stdout);
  if (!sendToController(&Rec, sizeof Rec))
    std::fprintf(stderr, "ompsim: device runtime: %s\n", Rec.Message);
  endExecutor();
}

/// Gives the calling thread an alternate signal stack so a stack overflow in
/// device code is still reported.
void ensureAltStack() {
  static thread_local bool Done = false;
  if (Done)
    return;
  Done = true;
  stack_t Ss{};
  Ss.ss_size = 64 * 1024;
  Ss.ss_sp = std::malloc(Ss.ss_size);
  if (Ss.ss_sp)
    ::sigaltstack(&Ss, nullptr);
  pthread_attr_t Attr;
  if (::pthread_getattr_np(::pthread_self(), &Attr) == 0) {
    void *Low = nullptr;
    size_t Size = 0;
    if (::pthread_attr_getstack(&Attr, &Low, &Size) == 0) {
      TStackLow = reinterpret_cast<uint64_t>(Low);
      TStackHigh = TStackLow + Size;
    }
    ::pthread_attr_destroy(&Attr);
  }
}

void installFaultHandlers() {
  struct sigaction Sa{};
  Sa.sa_sigaction = onFatalSignal;
  Sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&Sa.sa_mask);
  for (int S : {SIGSEGV, SIGBUS, SIGILL, SIGFPE})
    ::sigaction(S, &Sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  ensureAltStack();
}

} // namespace ompsim::sim::executor

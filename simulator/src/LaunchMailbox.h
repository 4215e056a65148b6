// ompsim simulator: the shared memory between the controller and its executor.
//
// The controller creates one memfd per executor: the launch mailbox at offset
// 0, the device arena at offset LaunchMailbox::kBytes. The executor maps the
// arena at the device's fixed base and the controller maps the same pages
// anywhere in the host, so host<->device copies are plain memcpy on the host
// side, and a launch is a few stores plus a futex wake instead of a socket
// round trip. Everything rare (setup, image load, allocation, the translate
// log) stays on ORC's SimpleRemoteEPC.
#pragma once

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <ctime>

namespace ompsim::sim {

/// The launch mailbox at offset 0 of the executor's memfd.
///
/// It holds kSlots launch slots, each served by a device thread of its own in
/// the executor, so that as many kernels as slots run at once (independent
/// `nowait` regions, several host threads). The controller hands a slot to
/// one launch at a time. For a launch it fills the slot's
/// entry/teams/threads/args, publishes `Request` = seq, bumps the slot's
/// `Doorbell` and wakes its device thread if it sleeps; that thread runs the
/// kernel, fills status/message, publishes `Done` = seq, bumps `HostBell`
/// and wakes the host if it sleeps. Where a CPU is idle both sides spin a
/// little before they sleep in FUTEX_WAIT (spinFor), so back-to-back
/// launches take no system call; on a busy machine they block at once, and
/// the host hands its CPU over to the device thread it wakes (Pinned). Slot
/// 0's device thread also runs the SPS requests (their doorbell is slot 0's).
/// The futex words are shared between processes, so FUTEX_PRIVATE_FLAG must
/// not be used.
struct LaunchMailbox {
  /// Bytes reserved for the mailbox in the memfd; the arena follows.
  static constexpr uint64_t kBytes = 8ULL << 20;
  /// Launch slots: the most kernels one device runs at once. The controller
  /// uses as many as the machine has CPUs (at least 2, at most this).
  static constexpr uint32_t kSlots = 8;
  /// Most kernel arguments a launch carries.
  static constexpr uint32_t kMaxArgs = 65536;
  /// Room for the executor's error message.
  static constexpr uint32_t kMessageBytes = 1024;
  /// Most host ranges the start-up set-up carries; the controller reserves
  /// any beyond them with a call once the executor answers.
  static constexpr uint32_t kMaxSetupRanges = 8192;

  /// The set-up the controller writes before it starts the executor, and
  /// the executor performs before its handshake: reserve the host's ranges
  /// PROT_NONE, map the arena, load the device runtime. The executor does it
  /// while the host program is still starting, instead of in a round trip
  /// on the host's critical path.
  struct StartSetup {
    uint64_t ArenaBase;
    uint64_t ArenaSize;
    uint64_t CodeBytes;
    /// Launch slots the controller uses (1..kSlots): the executor starts a
    /// device thread for each of them and for no other.
    uint32_t LaunchSlots;
    /// Non-zero under the checker (OMPSIM_CHECK): the executor turns the
    /// device runtime's checks on (__ompsim_device_set_check).
    uint32_t Check;
    /// Host ranges to reserve, [begin, end) each, in `Ranges`.
    uint32_t NumRanges;
    /// Set by the executor once done: 1 succeeded, 2 failed (`Message` says
    /// why). On success the first `NumCollided` of `Ranges` are those that
    /// collided with the executor's own mappings.
    std::atomic<uint32_t> Result;
    uint32_t NumCollided;
    uint32_t MessageLength;
    char Message[kMessageBytes];
    uint64_t Ranges[kMaxSetupRanges][2];
  };

  /// One launch at a time, and the device thread that runs it. Cache-line
  /// aligned: the slots' futex words are written by different threads.
  struct alignas(64) Slot {
    /// Bumped by anyone with work for this slot's device thread (the host
    /// posting a launch; for slot 0 also ORC's listener thread queueing a
    /// request); that thread sleeps on it.
    std::atomic<uint32_t> Doorbell;
    /// Non-zero while the device thread sleeps (or is about to) on `Doorbell`.
    std::atomic<uint32_t> ExecutorSleeping;
    /// Sequence number of the last launch posted in this slot by the host.
    std::atomic<uint32_t> Request;
    /// Sequence number of the last launch of this slot finished by the executor.
    std::atomic<uint32_t> Done;
    /// Bumped by the executor after it publishes `Done` and when it is about
    /// to exit; the host sleeps on it.
    std::atomic<uint32_t> HostBell;
    /// Non-zero while the host sleeps (or is about to) on `HostBell`.
    std::atomic<uint32_t> HostWaiting;
    /// CPUs the host's launching thread and the device thread last ran on
    /// (hints for spinFor; -1 unknown).
    std::atomic<int32_t> HostCpu;
    std::atomic<int32_t> ExecutorCpu;
    /// The device thread's kernel thread id, for handOver() (0 until it
    /// runs; the host checks it names a thread of the executor).
    std::atomic<int32_t> ExecutorTid;
    /// Set by the host, before it publishes a launch, when it narrowed the
    /// sleeping device thread's affinity to its own CPU (handOver()); the
    /// device thread restores its mask before it runs that kernel.
    std::atomic<uint32_t> Pinned;
    uint32_t Teams;              ///< 0: the device default
    uint32_t Threads;            ///< 0: the device default
    uint32_t TeamsYZ[2];         ///< a bare launch's y and z blocks (0: 1)
    uint32_t ThreadsYZ[2];       ///< a bare launch's y and z threads per block (0: 1)
    uint32_t GpuWarpSize;        ///< a GPU image's kernel: its warp size (else 0)
    uint32_t Bare;               ///< non-zero for a GPU image's bare kernel
    uint32_t DynamicSharedBytes; ///< a GPU image's dynamic shared memory per block
    int32_t Device;              ///< the device's number (omp_get_device_num in device code)
    uint32_t NumArgs;
    uint64_t Entry; ///< kernel address in the arena
    /// 0 when the kernel ran; otherwise `Message` says why it could not.
    int32_t Status;
    uint32_t MessageLength;
    char Message[kMessageBytes];
    uint64_t Args[kMaxArgs];
  };

  /// Set by the executor once it has reported a fault or an exit() to the
  /// controller and is about to end, so that a launch whose kernel killed the
  /// executor is diagnosed at once, not at the end of the host's wait slice.
  std::atomic<uint32_t> ExecutorExiting;
  /// First calls of not yet compiled functions of bitcode images: the device
  /// thread that made one stores the trampoline it came through in
  /// `LazyTrampoline` and bumps `LazyRequest` (the controller's lazy-call
  /// thread sleeps on it); the controller compiles, stores the function's
  /// address in `LazyLanding` and publishes `LazyServed` = `LazyRequest` (the
  /// caller sleeps on it). One request at a time.
  std::atomic<uint32_t> LazyRequest;
  std::atomic<uint32_t> LazyServed;
  uint64_t LazyTrampoline;
  uint64_t LazyLanding;
  StartSetup Setup;
  Slot Slots[kSlots];
};

static_assert(sizeof(LaunchMailbox) <= LaunchMailbox::kBytes, "the mailbox outgrew its memfd slot");
static_assert(std::atomic<uint32_t>::is_always_lock_free && sizeof(std::atomic<uint32_t>) == 4,
              "futex words must be plain lock-free 32-bit integers");

/// FUTEX_WAIT on a word shared between processes: sleeps while `*word ==
/// expected`, at most `Timeout` when it is not null. Spurious returns are fine.
inline void sharedFutexWait(std::atomic<uint32_t> &Word, uint32_t Expected,
                            const struct timespec *Timeout = nullptr) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&Word), FUTEX_WAIT, Expected, Timeout, nullptr, 0);
}

/// FUTEX_WAKE of every waiter on a word shared between processes.
inline void sharedFutexWake(std::atomic<uint32_t> &Word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&Word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

/// Runnable threads on the whole machine, from /proc/loadavg (its fourth
/// field, "running/total"); -1 when it cannot be read. The file stays open
/// (a pread costs a quarter of an open/read/close).
inline int32_t runnableThreads() {
  static const int Fd = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (Fd < 0)
    return -1;
  char Buf[128];
  ssize_t N = ::pread(Fd, Buf, sizeof Buf - 1, 0);
  if (N <= 0)
    return -1;
  Buf[N] = 0;
  // Skip the three load averages.
  char *P = Buf;
  for (int Field = 0; Field < 3; ++Field) {
    while (*P && *P != ' ')
      ++P;
    while (*P == ' ')
      ++P;
  }
  if (*P < '0' || *P > '9')
    return -1;
  int32_t Running = 0;
  for (; *P >= '0' && *P <= '9'; ++P)
    Running = Running * 10 + (*P - '0');
  return Running;
}

/// CPUs this process may run on (at least 1).
inline int32_t usableCpus() {
  static const int32_t Cpus = [] {
    cpu_set_t Set;
    CPU_ZERO(&Set);
    if (::sched_getaffinity(0, sizeof Set, &Set) != 0)
      return 1;
    return CPU_COUNT(&Set) > 0 ? CPU_COUNT(&Set) : 1;
  }();
  return Cpus;
}

inline uint64_t monotonicNanos() {
  struct timespec T;
  ::clock_gettime(CLOCK_MONOTONIC, &T);
  return uint64_t(T.tv_sec) * 1000000000ULL + uint64_t(T.tv_nsec);
}

/// Whether spinning takes no CPU from anyone: every runnable thread of the
/// machine (the spinner and the partner doing the work included) has a CPU
/// of its own. On a busy machine the thread that has to make progress may be
/// waiting for the CPU a spinner holds, so then both sides block instead.
/// `Wakees` counts the threads the caller has just woken and that the count
/// may not include yet (a sleeping device thread a launch wakes needs a CPU
/// of its own too, or it is queued behind a running thread).
/// The count is kept for kFreeForNanos per process while it leaves a CPU
/// free (reading /proc/loadavg costs about a microsecond, a launch less);
/// otherwise only for kBusyForNanos: a thread that ran for a moment when the
/// count was taken (a kernel worker, a timer) must not send every launch of
/// the next millisecond down the futex path. Unreadable counts as busy.
inline bool spinningIsFree(int32_t Wakees = 0) {
  constexpr uint64_t kFreeForNanos = 1000000;
  constexpr uint64_t kBusyForNanos = 50000;
  constexpr int32_t kUnknown = INT32_MIN / 2;
  static std::atomic<uint64_t> CheckedAt{0};
  static std::atomic<int32_t> SpareCpus{kUnknown};
  uint64_t Now = monotonicNanos();
  uint64_t Last = CheckedAt.load(std::memory_order_relaxed);
  if (Last != 0) {
    int32_t Spare = SpareCpus.load(std::memory_order_relaxed);
    if (Now - Last < (Spare >= 0 ? kFreeForNanos : kBusyForNanos))
      return Spare >= Wakees;
  }
  // One thread refreshes; the others use the count it had.
  if (!CheckedAt.compare_exchange_strong(Last, Now, std::memory_order_relaxed))
    return SpareCpus.load(std::memory_order_relaxed) >= Wakees;
  int32_t Running = runnableThreads();
  int32_t Spare = Running > 0 ? usableCpus() - Running : kUnknown;
  SpareCpus.store(Spare, std::memory_order_relaxed);
  return Spare >= Wakees;
}

/// Spins until `ready()` or until about `Nanos` have passed; true when ready.
///
/// A spin only pays when the partner runs on another CPU at the same time:
/// then a round trip costs well under a microsecond instead of a futex wake
/// and a reschedule. It must never take the CPU from the partner (or from
/// anyone else the partner waits for), so it spins only while spinningIsFree()
/// and the partner is known to run elsewhere: `PartnerCpu` is the CPU the
/// other side last said it runs on (`OwnCpu` is where we publish ours), and
/// `PartnerAsleep` its sleep flag (executorSleeping, hostWaiting), set from
/// just before it blocks until it runs again. A partner we just woke has not
/// said where it runs yet, and a futex wake may well queue it behind us on
/// our own CPU (the load count cannot tell): where it last ran on ours we
/// block at once, otherwise we wait for it to come up only kWakeGraceNanos;
/// once it is up on another CPU we spin the rest of
/// `Nanos`. It never yields: on a busy machine sched_yield only keeps the
/// spinner runnable. Returning false makes the caller block in FUTEX_WAIT.
template <typename PredicateT>
bool spinFor(uint64_t Nanos, std::atomic<int32_t> &OwnCpu, const std::atomic<int32_t> &PartnerCpu,
             const std::atomic<uint32_t> &PartnerAsleep, PredicateT Ready, int32_t Wakees = 0) {
  // About the time a wakee needs to get onto an idle CPU; waiting longer for
  // one that sits behind us only delays it.
  constexpr uint64_t kWakeGraceNanos = 30000;
  int32_t Cpu = ::sched_getcpu();
  OwnCpu.store(Cpu, std::memory_order_relaxed);
  if (Ready())
    return true;
  // A partner that runs, or last ran, on our CPU: running, it cannot progress
  // while we spin; asleep (we just woke it), the wake usually queues it on
  // the CPU it left, behind us, so any grace we spun would be its delay.
  // (The CPU check first: it costs a load, the count may cost a read of
  // /proc/loadavg.)
  if (PartnerCpu.load(std::memory_order_relaxed) == Cpu || !spinningIsFree(Wakees))
    return false;
  uint64_t T0 = monotonicNanos();
  for (uint32_t I = 1;; ++I) {
    if (Ready())
      return true;
    __builtin_ia32_pause();
    if ((I & 63) == 0) {
      Cpu = ::sched_getcpu();
      OwnCpu.store(Cpu, std::memory_order_relaxed);
      uint64_t Spent = monotonicNanos() - T0;
      bool PartnerUp = PartnerAsleep.load(std::memory_order_acquire) == 0;
      if (Spent >= Nanos ||
          (PartnerUp ? PartnerCpu.load(std::memory_order_relaxed) == Cpu : Spent >= kWakeGraceNanos) ||
          !spinningIsFree(PartnerUp ? 0 : Wakees))
        return Ready();
    }
  }
}

/// The host's side of a launch that wakes `Mb`'s sleeping device thread
/// (kernel thread `Tid`, checked to be the executor's; -1 none) from `Cpu`:
/// on a busy machine, narrows that thread's affinity to `Cpu`
/// first, so that the wake queues it where the host is about to block and
/// it gets that CPU at once. Woken onto another CPU it would wait behind
/// whatever runs there, which on Linux's EEVDF scheduler may be a spinning
/// thread with most of a 3 ms slice left (in a VM, waking an idle vCPU
/// costs an IPI round trip as well). The device thread restores its own
/// mask before it runs the kernel (`Pinned`). Nothing is narrowed where the
/// device thread last ran on `Cpu` (the wake-up goes there anyway), nor where
/// spinning is free: both sides then run on CPUs of their own.
inline void handOver(LaunchMailbox::Slot &Mb, int32_t Cpu, int32_t Tid) {
  if (Tid <= 0 || Cpu < 0 || Cpu >= CPU_SETSIZE || Mb.ExecutorCpu.load(std::memory_order_relaxed) == Cpu ||
      spinningIsFree(/*Wakees=*/1))
    return;
  cpu_set_t Here;
  CPU_ZERO(&Here);
  CPU_SET(Cpu, &Here);
  if (::sched_setaffinity(Tid, sizeof Here, &Here) == 0)
    Mb.Pinned.store(1, std::memory_order_relaxed);
}

} // namespace ompsim::sim

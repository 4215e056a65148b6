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
/// One launch is in flight at a time (the controller serializes its calls).
/// The controller fills entry/teams/threads/args, publishes `request` = seq,
/// bumps `doorbell` and wakes the executor if it sleeps; the executor runs the
/// kernel, fills status/message, publishes `done` = seq and wakes the host if
/// it sleeps. Both sides spin a little before they sleep in FUTEX_WAIT, so
/// back-to-back launches usually take no system call at all. The futex words
/// are shared between processes, so FUTEX_PRIVATE_FLAG must not be used.
struct LaunchMailbox {
  /// Bytes reserved for the mailbox in the memfd; the arena follows.
  static constexpr uint64_t kBytes = 1ULL << 20;
  /// Most kernel arguments a launch carries.
  static constexpr uint32_t kMaxArgs = 65536;
  /// Room for the executor's error message.
  static constexpr uint32_t kMessageBytes = 1024;

  /// Bumped by anyone with work for the executor's device thread (the host
  /// posting a launch, ORC's listener thread queueing a request); that thread
  /// sleeps on it.
  std::atomic<uint32_t> doorbell;
  /// Non-zero while the device thread sleeps (or is about to) on `doorbell`.
  std::atomic<uint32_t> executorSleeping;
  /// Sequence number of the last launch posted by the host.
  std::atomic<uint32_t> request;
  /// Sequence number of the last launch finished by the executor; the host sleeps on it.
  std::atomic<uint32_t> done;
  /// Non-zero while the host sleeps (or is about to) on `done`.
  std::atomic<uint32_t> hostWaiting;
  /// CPUs the host's launching thread and the device thread last ran on
  /// (hints for spinFor; -1 unknown).
  std::atomic<int32_t> hostCpu;
  std::atomic<int32_t> executorCpu;
  uint32_t teams;   ///< 0: the device default
  uint32_t threads; ///< 0: the device default
  uint32_t numArgs;
  uint64_t entry; ///< kernel address in the arena
  /// 0 when the kernel ran; otherwise `message` says why it could not.
  int32_t status;
  uint32_t messageLength;
  char message[kMessageBytes];
  uint64_t args[kMaxArgs];
};

static_assert(sizeof(LaunchMailbox) <= LaunchMailbox::kBytes, "the mailbox outgrew its memfd slot");
static_assert(std::atomic<uint32_t>::is_always_lock_free && sizeof(std::atomic<uint32_t>) == 4,
              "futex words must be plain lock-free 32-bit integers");

/// FUTEX_WAIT on a word shared between processes: sleeps while `*word ==
/// expected`, at most `timeout` when it is not null. Spurious returns are fine.
inline void sharedFutexWait(std::atomic<uint32_t> &word, uint32_t expected,
                            const struct timespec *timeout = nullptr) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAIT, expected, timeout, nullptr, 0);
}

/// FUTEX_WAKE of every waiter on a word shared between processes.
inline void sharedFutexWake(std::atomic<uint32_t> &word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

/// Spins until `ready()` or until about `nanos` have passed; true when ready.
///
/// `partnerCpu` is the CPU the other side last said it runs on (`ownCpu` is
/// where we publish ours). A futex wake pulls the wakee onto the waker's CPU,
/// so host and executor threads often share one CPU on a busy machine; a pure
/// spin would then burn the partner's time. So we yield whenever the partner
/// sits on our CPU, and pure-spin (no system call) otherwise, where a round
/// trip costs well under a microsecond. After kPureSpinRounds we yield now and
/// then anyway, in case the hint is stale.
template <typename Ready>
bool spinFor(uint64_t nanos, std::atomic<int32_t> &ownCpu, const std::atomic<int32_t> &partnerCpu,
             Ready ready) {
  constexpr uint32_t kPureSpinRounds = 1024;
  struct timespec t0;
  ::clock_gettime(CLOCK_MONOTONIC, &t0);
  int32_t cpu = ::sched_getcpu();
  ownCpu.store(cpu, std::memory_order_relaxed);
  for (uint32_t i = 1;; ++i) {
    if (ready())
      return true;
    if (partnerCpu.load(std::memory_order_relaxed) == cpu ||
        (i > kPureSpinRounds && (i & 15) == 0))
      ::sched_yield();
    else
      __builtin_ia32_pause();
    if ((i & 63) == 0) {
      cpu = ::sched_getcpu();
      ownCpu.store(cpu, std::memory_order_relaxed);
      struct timespec t;
      ::clock_gettime(CLOCK_MONOTONIC, &t);
      uint64_t spent = uint64_t(t.tv_sec - t0.tv_sec) * 1000000000ULL + uint64_t(t.tv_nsec) -
                       uint64_t(t0.tv_nsec);
      if (spent >= nanos)
        return ready();
    }
  }
}

} // namespace ompsim::sim

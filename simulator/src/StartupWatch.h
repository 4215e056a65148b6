//===- StartupWatch.h - The bound on an executor's start-up ----*- C++ -*-===//
//
// StartupWatch: kills an executor that does not finish starting in time.
// DeviceController arms it when it spawns the executor
// (DeviceControllerProcess.cpp), and the handshake and set-up calls
// (DeviceController.cpp) move it on and disarm it. Private to the simulator.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "DeviceControllerImpl.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

namespace ompsim::sim {

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

} // namespace ompsim::sim

// ompsim simulator: ORC's task dispatcher for the controller, with threads kept for the next task.
#pragma once

#include "llvm/ExecutionEngine/Orc/TaskDispatch.h"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>

namespace ompsim::sim {

/// Runs each ORC task on a thread of its own, as DynamicThreadPoolTaskDispatcher
/// does (a task may block on one dispatched after it, so there is no bound),
/// but a thread that runs out of tasks waits `Linger` for another before it
/// ends.
///
/// Every executor round trip and materialization is a task: loading a
/// bitcode image and its first calls dispatch some thirty, and ORC's
/// dispatcher starts a thread for each. On a loaded machine each new thread
/// waits for a CPU before it runs, which made a warm bitcode image's time to
/// its first kernel vary several-fold; reusing the threads takes that away.
class LingeringTaskDispatcher : public llvm::orc::TaskDispatcher {
public:
  explicit LingeringTaskDispatcher(std::chrono::milliseconds Linger = std::chrono::milliseconds(200))
      : Linger(Linger) {}
  ~LingeringTaskDispatcher() override;

  /// Hands `T` to an idle thread, or to a new one when none is idle. Tasks
  /// dispatched after shutdown() are dropped (as ORC's own dispatchers do).
  void dispatch(std::unique_ptr<llvm::orc::Task> T) override;
  /// Waits until every task has run and every thread has ended.
  void shutdown() override;

  /// What ThreadSanitizer is told a task hands over when it ends, and takes
  /// over when it starts: ORC passes a task's results to the next task, or to
  /// a thread that waits for them, inside libLLVM, where TSan cannot see it.
  /// A thread that waited for ORC's tasks acquires it
  /// (ompsim::tsanAcquire) before it reads what they made.
  static const void *handoverToken();

  /// In a ThreadSanitizer build: waits (up to two seconds) until no task of
  /// any dispatcher runs, then acquires handoverToken(). For a thread that
  /// got an ORC task's result through a wait inside libLLVM: the task that
  /// fulfilled it releases the token only as it ends, after the wait may
  /// already have returned. Nothing in other builds.
  static void takeOverFinishedTasks();

private:
  void work();

  std::chrono::milliseconds Linger;
  std::mutex Mu;
  std::condition_variable Work; ///< a task was queued (or shutdown began)
  std::condition_variable Done; ///< a thread ended
  std::deque<std::unique_ptr<llvm::orc::Task>> Queue;
  size_t Threads = 0; ///< threads alive
  size_t Waiting = 0; ///< of those, waiting for a task
  bool Stopping = false;
};

} // namespace ompsim::sim

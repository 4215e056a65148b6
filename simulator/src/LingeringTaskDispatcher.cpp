#include "LingeringTaskDispatcher.h"

#include "ompsim/TsanHandover.h"

#include <atomic>
#include <chrono>
#include <thread>

namespace ompsim::sim {

LingeringTaskDispatcher::~LingeringTaskDispatcher() { shutdown(); }

namespace {
/// Tasks running now, over every dispatcher (kept in TSan builds only).
std::atomic<int> RunningTasks{0};
} // namespace

const void *LingeringTaskDispatcher::handoverToken() {
  static const char Token = 0;
  return &Token;
}

void LingeringTaskDispatcher::takeOverFinishedTasks() {
  if constexpr (!TsanBuild)
    return;
  auto Deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (RunningTasks.load() != 0 && std::chrono::steady_clock::now() < Deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  tsanAcquire(handoverToken());
}

void LingeringTaskDispatcher::dispatch(std::unique_ptr<llvm::orc::Task> T) {
  std::lock_guard<std::mutex> Lock(Mu);
  if (Stopping)
    return;
  Queue.push_back(std::move(T));
  // Every queued task has a thread of its own coming: a waiting one, or a
  // new one (a task may block until one dispatched after it has run).
  if (Waiting >= Queue.size()) {
    Work.notify_one();
    return;
  }
  ++Threads;
  std::thread([this] { work(); }).detach();
}

void LingeringTaskDispatcher::work() {
  std::unique_lock<std::mutex> Lock(Mu);
  for (;;) {
    if (!Queue.empty()) {
      std::unique_ptr<llvm::orc::Task> T = std::move(Queue.front());
      Queue.pop_front();
      Lock.unlock();
      if constexpr (TsanBuild)
        RunningTasks.fetch_add(1);
      tsanAcquire(handoverToken());
      T->run();
      T.reset(); // its destructor may dispatch too: not under the lock
      tsanRelease(handoverToken());
      if constexpr (TsanBuild)
        RunningTasks.fetch_sub(1);
      Lock.lock();
      continue;
    }
    if (Stopping)
      break;
    ++Waiting;
    bool Woken = Work.wait_for(Lock, Linger, [&] { return !Queue.empty() || Stopping; });
    --Waiting;
    if (!Woken && Queue.empty())
      break;
  }
  --Threads;
  Done.notify_all();
}

void LingeringTaskDispatcher::shutdown() {
  std::unique_lock<std::mutex> Lock(Mu);
  Stopping = true;
  Work.notify_all();
  Done.wait(Lock, [&] { return Threads == 0; });
}

} // namespace ompsim::sim

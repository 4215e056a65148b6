#include "LingeringTaskDispatcher.h"

#include <thread>

namespace ompsim::sim {

LingeringTaskDispatcher::~LingeringTaskDispatcher() { shutdown(); }

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
      T->run();
      T.reset(); // its destructor may dispatch too: not under the lock
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

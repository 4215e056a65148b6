//===- DeviceController.cpp - Starting a simulated device ----------------===//
//
// DeviceController: its options, creating it (spawn, then connect, with a
// restart when the executor lands on host ranges), the handshake and the
// set-up calls after it, the host ranges the executor reserves, and whether
// the executor is alive. The process itself is DeviceControllerProcess.cpp.
//
//===----------------------------------------------------------------------===//

#include "ompsim/simulator/DeviceController.h"

#include "DeviceControllerImpl.h"
#include "DeviceJit.h"
#include "GuardedArena.h"
#include "ImageSymbolTable.h"
#include "LaunchMailbox.h"
#include "LingeringTaskDispatcher.h"
#include "Protocol.h"
#include "RangeAllocator.h"
#include "StartupWatch.h"

#include "ompsim/Config.h"
#include "ompsim/HostSymbolizer.h"
#include "ompsim/Trace.h"

#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/SimpleRemoteEPC.h"
#include "llvm/ExecutionEngine/Orc/TaskDispatch.h"

#include <fmt/format.h>
#include <mutex>

namespace ompsim::sim {

std::string DeviceController::startTimeoutMessage(bool Handshake) const {
  return fmt::format(
      "executor {} did not {} within {:g}s (OMPSIM_EXECUTOR_START_TIMEOUT); it was killed with "
      "the processes it started",
      Opts.ExecutorPath,
      Handshake ? "complete its handshake" : "finish setting up the device after its handshake",
      Opts.StartTimeout);
}

DeviceOptions DeviceOptions::fromConfig(int32_t DeviceId, const std::string &DefaultLibDir) {
  const Config &C = config();
  DeviceOptions O;
  O.DeviceId = DeviceId;
  O.LibDir = C.LibDir.empty() ? DefaultLibDir : C.LibDir;
  O.ExecutorPath = C.Executor.empty() ? O.LibDir + "/../bin/ompsim-device" : C.Executor;
  O.ArenaBase = C.DeviceBase + uint64_t(DeviceId) * kArenaStride;
  O.ArenaSize = C.DeviceMemory;
  O.DeviceThreads = C.DeviceThreads;
  O.KernelTimeout = C.KernelTimeout;
  O.StartTimeout = C.ExecutorStartTimeout;
  O.JitOptLevel = C.JitOptLevel;
  O.JitCache = C.JitCache;
  O.JitCacheMax = C.JitCacheMax;
  O.StockJit = C.Jit;
  return O;
}

DeviceController::DeviceController(const DeviceOptions &Options) : Opts(Options) {}

Expected<std::unique_ptr<DeviceController>> DeviceController::create(const DeviceOptions &Options) {
  auto Dc = spawn(Options);
  if (!Dc)
    return Dc.takeError();
  return finishStart(std::move(*Dc));
}

Expected<std::unique_ptr<DeviceController>> DeviceController::spawn(const DeviceOptions &Options) {
  std::unique_ptr<DeviceController> Dc(new DeviceController(Options));
  if (auto Err = Dc->launchExecutor())
    return std::move(Err);
  return std::move(Dc);
}

Expected<std::unique_ptr<DeviceController>>
DeviceController::finishStart(std::unique_ptr<DeviceController> Dc) {
  const DeviceOptions &Options = Dc->Opts;
  std::vector<std::pair<uint64_t, uint64_t>> Collided;
  for (int Attempt = 1;; ++Attempt) {
    Collided.clear();
    // The first attempt connects to the executor spawn() started.
    if (auto Err = Attempt == 1 ? Dc->connectExecutor(Collided) : Dc->start(Collided))
      return std::move(Err);
    if (Collided.empty() || Attempt >= Options.MaxStartAttempts)
      break;
    // The executor's own libraries landed on a host range; a fresh process
    // gets a fresh (ASLR) layout.
    OMPSIM_TRACE_EVENT(Cat::Image, "executor-restart")
        .num("device", Options.DeviceId)
        .num("collisions", int64_t(Collided.size()));
    Dc->stop(/*graceful=*/false);
  }
  Dc->traceUnreserved(Collided);
  return std::move(Dc);
}

Error DeviceController::start(std::vector<std::pair<uint64_t, uint64_t>> &Collided) {
  if (auto Err = launchExecutor())
    return Err;
  return connectExecutor(Collided);
}

Error DeviceController::connectExecutor(std::vector<std::pair<uint64_t, uint64_t>> &Collided) {
  std::string Prefix = fmt::format("device {}: ", Opts.DeviceId);
  int Socket = PendingSocket, OwnFd = PendingOwnFd;
  PendingSocket = PendingOwnFd = -1;
  Watch->connecting();
  auto RemoteEpc = SimpleRemoteEPC::Create<FDSimpleRemoteEPCTransport>(
      std::make_unique<LingeringTaskDispatcher>(), SimpleRemoteEPC::Setup(), Socket, Socket);
  if (!RemoteEpc) {
    std::string Why = toString(RemoteEpc.takeError());
    // Disarmed before the executor is reaped, so the watch never signals a
    // pid that may be reused.
    Watch->disarm();
    StartupWatch::Missed Fired = Watch->fired();
    Watch.reset();
    int Status = 0;
    if (!waitFor(Pid, 2.0, Status)) {
      killExecutorGroup(Pid);
      waitFor(Pid, 10.0, Status);
    }
    Pid = -1;
    reapGroupGuard();
    ::close(FaultFd);
    FaultFd = -1;
    if (OwnFd >= 0)
      ::close(OwnFd);
    unmapSharedMemory();
    if (Fired != StartupWatch::Missed::Nothing)
      return makeError(Prefix + startTimeoutMessage(Fired == StartupWatch::Missed::Handshake));
    return makeError(Prefix + "executor " + Opts.ExecutorPath + " did not start: " + Why);
  }
  Epc = RemoteEpc->get();
  Es = std::make_unique<ExecutionSession>(std::move(*RemoteEpc));
  HostFd = OwnFd;
  if (trace::enabled(trace::Cat::Image)) {
    trace::Event Ev(trace::Cat::Image, "executor-start");
    Ev.num("device", Opts.DeviceId);
    if (!trace::normalized()) // pids differ run to run; normalized traces must not
      Ev.num("executor_pid", Pid);
  }

  const char *Names[] = {proto::ReserveName,      proto::LoadElfName,      proto::LookupName,
                         proto::UnloadName,       proto::AllocCodeName,    proto::CallVoidName,
                         proto::SetFptrTableName, proto::TranslateLogName, proto::LazyReenterName,
                         proto::LazyFailedName,   proto::LookupManyName,   proto::ProtectName};
  const auto &Boot = Epc->getBootstrapSymbolsMap();
  for (const char *N : Names) {
    auto It = Boot.find(N);
    if (It == Boot.end()) {
      stop(false);
      return makeError(Prefix + "executor " + Opts.ExecutorPath + " lacks service " + N);
    }
    Fns[N] = It->second.getValue();
  }

  // The executor did the set-up written into the mailbox before its
  // handshake, which we have received.
  LaunchMailbox::StartSetup &Setup = Mailbox->Setup;
  uint32_t Result = Setup.Result.load(std::memory_order_acquire);
  if (Result != 1) {
    std::string Why = Result == 2
                          ? std::string(Setup.Message,
                                        std::min<uint32_t>(Setup.MessageLength, LaunchMailbox::kMessageBytes))
                          : "it answered without its set-up";
    stop(false);
    return makeError(Prefix + "executor " + Opts.ExecutorPath + " could not set up the device: " + Why);
  }
  for (uint32_t I = 0; I < std::min(Setup.NumCollided, LaunchMailbox::kMaxSetupRanges); ++I)
    Collided.emplace_back(Setup.Ranges[I][0], Setup.Ranges[I][1]);
  // Host libraries loaded since the spawn (and ranges beyond the mailbox's room).
  Expected<std::vector<std::pair<uint64_t, uint64_t>>> More = reserveNewHostRanges();
  bool Disarmed = Watch->disarm();
  StartupWatch::Missed Missed = Watch->fired();
  Watch.reset();
  if (!Disarmed) { // it fired while we waited: the executor is gone
    consumeError(More.takeError());
    stop(false);
    return makeError(Prefix + startTimeoutMessage(Missed == StartupWatch::Missed::Handshake));
  }
  if (!More) {
    stop(false);
    return More.takeError();
  }
  Collided.insert(Collided.end(), More->begin(), More->end());
  // The heap is the arena above the code region, exactly as the executor
  // splits it; its bookkeeping lives here, since allocating is only address
  // arithmetic and the host already reaches the memory itself.
  constexpr uint64_t kPage = 4096;
  uint64_t HeapBegin = Opts.ArenaBase + (std::min(codeBytes(), Opts.ArenaSize) & ~(kPage - 1));
  Heap = std::make_unique<RangeAllocator>(HeapBegin, Opts.ArenaBase + Opts.ArenaSize);
  Guarded.reset();
  if (config().Check)
    Guarded = std::make_unique<GuardedArena>(*Heap, kPage);
  return Error::success();
}

void DeviceController::traceUnreserved(const std::vector<std::pair<uint64_t, uint64_t>> &Ranges) const {
  for (auto [b, e] : Ranges)
    OMPSIM_TRACE_EVENT(Cat::Image, "host-range-not-reserved")
        .num("device", Opts.DeviceId)
        .host("begin", b)
        .hex("bytes", e - b);
}

void DeviceController::writeStartSetup() {
  LaunchMailbox::StartSetup &Setup = Mailbox->Setup;
  Setup.ArenaBase = Opts.ArenaBase;
  Setup.ArenaSize = Opts.ArenaSize;
  Setup.CodeBytes = codeBytes();
  Setup.LaunchSlots = launchSlots();
  Setup.Check = config().Check ? 1 : 0;
  Setup.Result.store(0, std::memory_order_relaxed);
  ReservedRanges.clear();
  uint32_t N = 0;
  for (const HostRange &R : HostSymbolizer::get().loadedRanges()) {
    if (N == LaunchMailbox::kMaxSetupRanges)
      break; // reserveNewHostRanges() sends the rest
    Setup.Ranges[N][0] = R.Begin;
    Setup.Ranges[N][1] = R.End;
    ReservedRanges.emplace(R.Begin, R.End);
    ++N;
  }
  Setup.NumRanges = N;
}

Expected<std::vector<std::pair<uint64_t, uint64_t>>> DeviceController::reserveNewHostRanges() {
  std::vector<std::tuple<uint64_t, uint64_t>> New;
  for (const HostRange &R : HostSymbolizer::get().loadedRanges())
    if (ReservedRanges.emplace(R.Begin, R.End).second)
      New.emplace_back(R.Begin, R.End);
  std::vector<std::pair<uint64_t, uint64_t>> Collided;
  if (New.empty())
    return Collided;
  std::vector<std::tuple<uint64_t, uint64_t>> Bad;
  if (auto Err = call<proto::ReserveSignature>(proto::ReserveName, "reserving host ranges", Bad, New))
    return std::move(Err);
  for (auto [b, e] : Bad)
    Collided.emplace_back(b, e);
  return Collided;
}

DeviceController::~DeviceController() {
  std::lock_guard<std::recursive_mutex> Lock(Mu);
  stop(/*graceful=*/true);
}

bool DeviceController::alive() {
  std::lock_guard<std::recursive_mutex> Lock(Mu);
  return Pid > 0 && DeathMessage.empty();
}

Error DeviceController::checkAlive() {
  if (!DeathMessage.empty())
    return makeError(DeathMessage);
  if (Pid <= 0)
    return makeError(fmt::format("device {}: executor is not running", Opts.DeviceId));
  return Error::success();
}

} // namespace ompsim::sim

//===- DeviceControllerImages.cpp - Device images and launches -----------===//
//
// DeviceController: loading device images (ELF and bitcode), the JIT's lazy
// calls, symbol lookup, unloading, and kernel launches.
//
//===----------------------------------------------------------------------===//

#include "DeviceControllerImpl.h"

#include "DeviceJit.h"
#include "ImageSymbolTable.h"
#include "LaunchMailbox.h"
#include "Protocol.h"
#include "RangeAllocator.h"

#include "ompsim/Config.h"
#include "ompsim/HostSymbolizer.h"
#include "ompsim/Trace.h"

#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/SimpleRemoteEPC.h"
#include "llvm/ExecutionEngine/Orc/TaskDispatch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <thread>

namespace ompsim::sim {

Expected<uint64_t> DeviceController::loadImage(ArrayRef<char> Bytes, StringRef Name,
                                               ArrayRef<std::string> Provides, bool BytesOutliveImage) {
  std::lock_guard<std::recursive_mutex> Lock(Mu);
  // Host libraries loaded since the device started (the one that brought
  // this image, say): an untranslated pointer into them must fault too.
  Expected<std::vector<std::pair<uint64_t, uint64_t>>> Unreserved = reserveNewHostRanges();
  if (!Unreserved)
    return Unreserved.takeError();
  traceUnreserved(*Unreserved);
  if (Bytes.size() >= 4 && StringRef(Bytes.data(), 4) == StringRef("BC\xC0\xDE", 4))
    return loadBitcode(Bytes, Name);
  Expected<std::tuple<uint64_t, uint64_t, uint64_t>> Loaded =
      std::make_tuple(uint64_t(0), uint64_t(0), uint64_t(0));
  std::string Context = "loading image " + Name.str();
  // The image travels through the shared arena (one memcpy) when a heap block
  // can hold it for the call, else through the socket.
  uint64_t Scratch = Bytes.empty() ? 0 : Heap->allocate(Bytes.size(), 4096);
  char *ScratchBytes = Scratch ? sharedBytesOf(Scratch) : nullptr;
  if (Scratch)
    std::memcpy(ScratchBytes, Bytes.data(), Bytes.size());
  Error Sent = call<proto::LoadElfSignature>(
      proto::LoadElfName, Context, Loaded,
      Scratch ? std::vector<char>() : std::vector<char>(Bytes.begin(), Bytes.end()), Scratch,
      Scratch ? uint64_t(Bytes.size()) : uint64_t(0), Name.str(), Provides.vec());
  if (Scratch) {
    // Cleared before the heap hands the block out again: the program's next
    // allocation must not start with the image's bytes (what fresh device
    // memory holds would then depend on the image's layout, and on whether
    // the map checker's guarded heap or this one placed the block).
    std::memset(ScratchBytes, 0, Bytes.size());
    Heap->release(Scratch);
  }
  if (Sent)
    return std::move(Sent);
  if (!Loaded)
    return makeError(fmt::format("device {}: {}", Opts.DeviceId, toString(Loaded.takeError())));
  auto [handle, base, size] = *Loaded;
  Image Img;
  Img.Name = Name.str();
  Img.RemoteHandle = handle;
  Img.Base = base;
  Img.Size = size;
  // Built on the first symbolize: only traces and fault reports name device
  // addresses, and an image with many symbols would pay for it at every load.
  if (BytesOutliveImage)
    Img.ElfView = Bytes;
  else
    Img.ElfBytes.assign(Bytes.begin(), Bytes.end());
  uint64_t Id = NextImage++;
  Images[Id] = std::move(Img);
  OMPSIM_TRACE_EVENT(Cat::Image, "load")
      .num("device", Opts.DeviceId)
      .str("image", Name)
      .str("kind", "elf")
      .dev("base", base, "")
      .hex("size", size);
  return Id;
}

Expected<uint64_t> DeviceController::loadBitcode(ArrayRef<char> Bytes, StringRef Name) {
  if (auto Err = checkAlive())
    return std::move(Err);
  std::string Prefix = fmt::format("device {}: ", Opts.DeviceId);
  if (!Jit) {
    // JIT-linked code imports from libomp like an ELF image's NEEDED list does.
    auto Libomp = Epc->getDylibMgr().loadDylib("libomp.so.5");
    if (!Libomp)
      return diagnose(Libomp.takeError(), "loading libomp.so.5 for JIT images");
    auto NewJit =
        DeviceJIT::create(*Es, Opts.ArenaBase, Fns[proto::LazyReenterName], Fns[proto::LazyFailedName],
                          Opts.JitOptLevel, Opts.JitCache, Opts.JitCacheMax, Opts.StockJit, Opts.LibDir);
    if (!NewJit)
      return makeError(Prefix + toString(NewJit.takeError()));
    Jit = std::move(*NewJit);
    LazyStop = false;
    LazyThread = std::thread([this] { serveLazyCalls(); });
  }
  auto Added = Jit->add(Bytes, Name);
  if (!Added) {
    std::string Why = toString(Added.takeError());
    if (!alive())
      return makeError(DeathMessage.empty() ? Prefix + Why : DeathMessage);
    return makeError(Prefix + Why);
  }
  Image Img;
  Img.Name = Name.str();
  Img.Jit = std::make_unique<JITImage>(std::move(*Added));
  Img.Symbols = std::make_unique<ImageSymbolTable>();
  uint64_t Lo = UINT64_MAX, Hi = 0;
  for (auto &[n, a] : Img.Jit->Symbols) {
    Img.Symbols->add(n, a, 0);
    Lo = std::min(Lo, a);
    Hi = std::max(Hi, a + 1);
  }
  Img.Base = Lo == UINT64_MAX ? 0 : Lo;
  Img.Size = Hi > Lo ? Hi - Lo : 0;
  if (Img.Jit->Init) {
    Error Result = Error::success();
    if (auto Err = call<proto::CallVoidSignature>(proto::CallVoidName, "initializing image " + Img.Name,
                                                  Result, Img.Jit->Init))
      return std::move(Err);
    if (Result)
      return makeError(Prefix + toString(std::move(Result)));
  }
  uint64_t Id = NextImage++;
  OMPSIM_TRACE_EVENT(Cat::Image, "load")
      .num("device", Opts.DeviceId)
      .str("image", Name)
      .str("kind", "bitcode")
      .dev("base", Img.Base, "")
      .num("symbols", int64_t(Img.Jit->Symbols.size()));
  Images[Id] = std::move(Img);
  return Id;
}

void DeviceController::serveLazyCalls() {
  LaunchMailbox &Mb = *Mailbox;
  uint32_t Served = Mb.LazyServed.load(std::memory_order_acquire);
  for (;;) {
    uint32_t Request = Mb.LazyRequest.load(std::memory_order_acquire);
    if (LazyStop.load(std::memory_order_acquire))
      return;
    if (Request == Served) {
      sharedFutexWait(Mb.LazyRequest, Request);
      continue;
    }
    // Not under mu_: the thread that holds it may be waiting for the very
    // kernel (or initializer) that made this call.
    uint64_t Landing = Jit->resolveLazyCall(Mb.LazyTrampoline);
    OMPSIM_TRACE_EVENT(Cat::Image, "jit-first-call")
        .num("device", Opts.DeviceId)
        .dev("function", Landing, "");
    Mb.LazyLanding = Landing;
    Mb.LazyServed.store(Request, std::memory_order_seq_cst);
    sharedFutexWake(Mb.LazyServed);
    Served = Request;
  }
}

void DeviceController::stopLazyCalls() {
  if (!LazyThread.joinable())
    return;
  LazyStop.store(true, std::memory_order_seq_cst);
  Mailbox->LazyRequest.fetch_add(1, std::memory_order_seq_cst);
  sharedFutexWake(Mailbox->LazyRequest);
  LazyThread.join();
}

Expected<uint64_t> DeviceController::lookup(uint64_t Image, StringRef Name) {
  std::lock_guard<std::recursive_mutex> Lock(Mu);
  auto It = Images.find(Image);
  if (It == Images.end())
    return makeError(fmt::format("device {}: no loaded image {}", Opts.DeviceId, Image));
  Expected<uint64_t> Addr = uint64_t(0);
  if (It->second.Jit)
    Addr = Jit->lookup(*It->second.Jit, Name);
  else if (auto Err = call<proto::LookupSignature>(proto::LookupName, "symbol lookup", Addr,
                                                   It->second.RemoteHandle, Name.str()))
    return std::move(Err);
  if (!Addr)
    return Addr.takeError();
  if (!*Addr)
    return makeError(fmt::format("device {}: image {} defines no symbol '{}'", Opts.DeviceId, It->second.Name,
                                 Name.str()));
  return *Addr;
}

Expected<std::vector<uint64_t>> DeviceController::lookupMany(uint64_t Image, ArrayRef<StringRef> Names) {
  std::lock_guard<std::recursive_mutex> Lock(Mu);
  auto It = Images.find(Image);
  if (It == Images.end())
    return makeError(fmt::format("device {}: no loaded image {}", Opts.DeviceId, Image));
  if (It->second.Jit) {
    StringMap<uint64_t> ByName;
    for (auto &[n, a] : It->second.Jit->Symbols)
      ByName[n] = a;
    std::vector<uint64_t> Addrs;
    Addrs.reserve(Names.size());
    for (StringRef N : Names)
      Addrs.push_back(ByName.lookup(N));
    return Addrs;
  }
  Expected<std::vector<uint64_t>> Addrs = std::vector<uint64_t>();
  if (auto Err = call<proto::LookupManySignature>(proto::LookupManyName,
                                                  fmt::format("looking up {} symbols", Names.size()), Addrs,
                                                  It->second.RemoteHandle, Names))
    return std::move(Err);
  if (!Addrs)
    return Addrs.takeError();
  if (Addrs->size() != Names.size())
    return makeError(fmt::format("device {}: asked for {} symbols of image {}, got {}", Opts.DeviceId,
                                 Names.size(), It->second.Name, Addrs->size()));
  return Addrs;
}

Error DeviceController::unloadImage(uint64_t Image) {
  std::lock_guard<std::recursive_mutex> Lock(Mu);
  auto It = Images.find(Image);
  if (It == Images.end())
    return makeError(fmt::format("device {}: no loaded image {}", Opts.DeviceId, Image));
  Error Result = Error::success();
  if (It->second.Jit) {
    if (It->second.Jit->Fini)
      if (auto Err = call<proto::CallVoidSignature>(
              proto::CallVoidName, "finalizing image " + It->second.Name, Result, It->second.Jit->Fini))
        return Err;
    Result = joinErrors(std::move(Result), Jit->remove(*It->second.Jit));
  } else if (auto Err = call<proto::UnloadSignature>(proto::UnloadName, "unloading image " + It->second.Name,
                                                     Result, It->second.RemoteHandle)) {
    return Err;
  }
  Images.erase(It);
  return Result;
}

int32_t DeviceController::deviceThreadOf(uint32_t Slot, pid_t Executor) {
  int32_t &Tid = SlotTids[Slot];
  if (Tid != 0)
    return Tid;
  int32_t Seen = Mailbox->Slots[Slot].ExecutorTid.load(std::memory_order_acquire);
  if (Seen <= 0 || Executor <= 0)
    return -1; // not started yet: asked again next time
  std::string Task = fmt::format("/proc/{}/task/{}", Executor, Seen);
  Tid = ::access(Task.c_str(), F_OK) == 0 ? Seen : -1;
  return Tid;
}

Error DeviceController::launch(uint64_t Entry, ArrayRef<uint64_t> Args, uint32_t NumTeams,
                               uint32_t ThreadLimit, StringRef KernelName, const LaunchOptions &Options) {
  // Only the error paths name the kernel: a launch that works formats nothing.
  auto Context = [&] { return "kernel " + KernelName.str(); };
  pid_t Executor = -1;
  {
    std::lock_guard<std::recursive_mutex> Lock(Mu);
    if (auto Err = checkAlive())
      return Err;
    Executor = Pid;
  }
  if (Args.size() > LaunchMailbox::kMaxArgs)
    return makeError(fmt::format("device {}: {} takes {} arguments; the simulated device passes at most {}",
                                 Opts.DeviceId, Context(), Args.size(), LaunchMailbox::kMaxArgs));
  // Under the map checker: the guard pages and quarantine of what was
  // allocated and freed since the last launch (Guarded is set at start-up).
  if (Guarded)
    if (auto Err = applyProtections())
      return Err;
  // A slot of our own for the whole launch, the lowest free one (slot 0 when
  // launches do not overlap: its device thread is the one kept warm). On a
  // busy machine, a free slot whose device thread last ran on our CPU first:
  // host threads on different CPUs then keep to device threads of their own
  // CPUs, and a hand-over moves nobody (handOver()). No lock is held while
  // the kernel runs.
  int32_t Cpu = ::sched_getcpu();
  bool Busy = !spinningIsFree(/*Wakees=*/1);
  uint32_t SlotIndex = 0;
  for (;;) {
    uint32_t Free = FreeSlots.load(std::memory_order_acquire);
    if (Free) {
      SlotIndex = uint32_t(__builtin_ctz(Free));
      if (Busy)
        for (uint32_t Rest = Free; Rest; Rest &= Rest - 1)
          if (Mailbox->Slots[__builtin_ctz(Rest)].ExecutorCpu.load(std::memory_order_relaxed) == Cpu) {
            SlotIndex = uint32_t(__builtin_ctz(Rest));
            break;
          }
      if (FreeSlots.compare_exchange_weak(Free, Free & ~(1u << SlotIndex), std::memory_order_acq_rel))
        break;
      continue;
    }
    // Every slot busy: sleep until one is given back. The count before the
    // check, both seq_cst: a slot given back after the check sees the waiter.
    std::unique_lock<std::mutex> Lock(SlotMu);
    SlotWaiters.fetch_add(1, std::memory_order_seq_cst);
    SlotFreed.wait(Lock, [&] { return FreeSlots.load(std::memory_order_seq_cst) != 0; });
    SlotWaiters.fetch_sub(1, std::memory_order_seq_cst);
  }
  Cpu = ::sched_getcpu(); // it may have moved while it waited for a slot
  uint32_t Seq = ++SlotSeq[SlotIndex];
  auto FreeSlot = [&] {
    FreeSlots.fetch_or(1u << SlotIndex, std::memory_order_seq_cst);
    if (SlotWaiters.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> Lock(SlotMu);
      SlotFreed.notify_one();
    }
  };
  LaunchMailbox::Slot &Mb = Mailbox->Slots[SlotIndex];
  Mb.Entry = Entry;
  Mb.Teams = NumTeams;
  Mb.Threads = ThreadLimit;
  for (int Dim = 0; Dim < 2; ++Dim) {
    Mb.TeamsYZ[Dim] = Options.TeamsYZ[Dim];
    Mb.ThreadsYZ[Dim] = Options.ThreadsYZ[Dim];
  }
  Mb.GpuWarpSize = Options.GpuWarpSize;
  Mb.Bare = Options.Bare;
  Mb.DynamicSharedBytes = Options.DynamicSharedBytes;
  Mb.Device = Opts.DeviceId;
  Mb.NumArgs = uint32_t(Args.size());
  if (!Args.empty())
    std::memcpy(Mb.Args, Args.data(), Args.size() * sizeof(uint64_t));
  Mb.HostCpu.store(Cpu, std::memory_order_relaxed);
  bool Sleeping = Mb.ExecutorSleeping.load(std::memory_order_seq_cst);
  if (Sleeping)
    handOver(Mb, Cpu, deviceThreadOf(SlotIndex, Executor));
  Mb.Request.store(Seq, std::memory_order_release);
  Mb.Doorbell.fetch_add(1, std::memory_order_seq_cst);
  if (Sleeping || Mb.ExecutorSleeping.load(std::memory_order_seq_cst))
    sharedFutexWake(Mb.Doorbell);

  auto Finished = [&] { return Mb.Done.load(std::memory_order_acquire) == Seq; };
  // Short kernels finish while we spin; longer ones are waited for in slices
  // so that an executor that dies under a kernel (fault, killed from outside)
  // is noticed within a slice, and a hang at the kernel timeout.
  constexpr uint64_t kSpinNanos = 100000;
  constexpr long kSliceNanos = 5000000;
  if (!spinFor(kSpinNanos, Mb.HostCpu, Mb.ExecutorCpu, Mb.ExecutorSleeping, Finished, Sleeping ? 1 : 0)) {
    auto Deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(Opts.KernelTimeout);
    for (;;) {
      Mb.HostWaiting.store(1, std::memory_order_seq_cst);
      // The bell before the checks: a completion or an exit announced after
      // them bumps it, and the wait returns at once.
      uint32_t Bell = Mb.HostBell.load(std::memory_order_seq_cst);
      if (!Finished() && !Mailbox->ExecutorExiting.load(std::memory_order_seq_cst)) {
        struct timespec Slice = {0, kSliceNanos};
        sharedFutexWait(Mb.HostBell, Bell, &Slice);
      }
      // Where we woke up, before saying we run (the executor's spinFor reads
      // the flag first).
      Mb.HostCpu.store(::sched_getcpu(), std::memory_order_relaxed);
      Mb.HostWaiting.store(0, std::memory_order_release);
      if (Finished())
        break;
      // The executor's end is handled under mu_, once: the first launch that
      // sees it diagnoses it; the others (and a launch after a timeout) report
      // the same death.
      std::lock_guard<std::recursive_mutex> Lock(Mu);
      if (!DeathMessage.empty() || Pid <= 0) {
        Error Err = checkAlive();
        FreeSlot();
        return Err;
      }
      if (Mailbox->ExecutorExiting.load(std::memory_order_acquire) || executorExited()) {
        Error Err = diagnose(makeError("the executor exited"), Context());
        FreeSlot();
        return Err;
      }
      if (std::chrono::steady_clock::now() >= Deadline) {
        killExecutorGroup(Pid);
        int Status = 0;
        waitFor(Pid, 30.0, Status);
        Pid = -1;
        DeathMessage = fmt::format("device {}: kernel {} timed out after {:g}s (OMPSIM_KERNEL_TIMEOUT)",
                                   Opts.DeviceId, KernelName.str(), Opts.KernelTimeout);
        OMPSIM_TRACE_EVENT(Cat::Fault, "timeout").num("device", Opts.DeviceId).str("kernel", KernelName);
        FreeSlot();
        return makeError(DeathMessage);
      }
    }
  }
  Error Result = Error::success();
  if (Mb.Status != 0)
    Result = makeError(fmt::format(
        "device {}: {}: {}", Opts.DeviceId, Context(),
        std::string(Mb.Message, std::min<uint32_t>(Mb.MessageLength, LaunchMailbox::kMessageBytes))));
  FreeSlot();
  return Result;
}

} // namespace ompsim::sim

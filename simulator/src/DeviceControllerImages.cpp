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
#include "ompsim/OpenMPRegistration.h"
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

Expected<uint64_t> DeviceController::loadImage(ArrayRef<char> bytes, StringRef name,
                                               ArrayRef<std::string> provides, bool bytesOutliveImage) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (bytes.size() >= 4 && StringRef(bytes.data(), 4) == StringRef("BC\xC0\xDE", 4))
    return loadBitcode(bytes, name);
  Expected<std::tuple<uint64_t, uint64_t, uint64_t>> loaded =
      std::make_tuple(uint64_t(0), uint64_t(0), uint64_t(0));
  std::string context = "loading image " + name.str();
  // The image travels through the shared arena (one memcpy) when a heap block
  // can hold it for the call, else through the socket.
  uint64_t scratch = bytes.empty() ? 0 : heap_->allocate(bytes.size(), 4096);
  if (scratch)
    std::memcpy(shared_ + LaunchMailbox::kBytes + (scratch - opts_.arenaBase), bytes.data(), bytes.size());
  Error sent = call<proto::LoadElfSignature>(
      proto::LoadElfName, context, loaded,
      scratch ? std::vector<char>() : std::vector<char>(bytes.begin(), bytes.end()), scratch,
      scratch ? uint64_t(bytes.size()) : uint64_t(0), name.str(), provides.vec());
  if (scratch)
    heap_->release(scratch);
  if (sent)
    return std::move(sent);
  if (!loaded)
    return makeError(fmt::format("device {}: {}", opts_.deviceId, toString(loaded.takeError())));
  auto [handle, base, size] = *loaded;
  Image img;
  img.name = name.str();
  img.remoteHandle = handle;
  img.base = base;
  img.size = size;
  // Built on the first symbolize: only traces and fault reports name device
  // addresses, and an image with many symbols would pay for it at every load.
  if (bytesOutliveImage)
    img.elfView = bytes;
  else
    img.elfBytes.assign(bytes.begin(), bytes.end());
  uint64_t id = nextImage_++;
  images_[id] = std::move(img);
  OMPSIM_TRACE_EVENT(Cat::Image, "load")
      .num("device", opts_.deviceId)
      .str("image", name)
      .str("kind", "elf")
      .dev("base", base, "")
      .hex("size", size);
  return id;
}

Expected<uint64_t> DeviceController::loadBitcode(ArrayRef<char> bytes, StringRef name) {
  if (auto err = checkAlive())
    return std::move(err);
  std::string prefix = fmt::format("device {}: ", opts_.deviceId);
  if (!jit_) {
    // JIT-linked code imports from libomp like an ELF image's NEEDED list does.
    auto libomp = epc_->getDylibMgr().loadDylib("libomp.so.5");
    if (!libomp)
      return diagnose(libomp.takeError(), "loading libomp.so.5 for JIT images");
    auto jit = DeviceJIT::Create(*es_, opts_.arenaBase, fns_[proto::LazyReenterName],
                                 fns_[proto::LazyFailedName], opts_.jitOptLevel, opts_.jitCache);
    if (!jit)
      return makeError(prefix + toString(jit.takeError()));
    jit_ = std::move(*jit);
    lazyStop_ = false;
    lazyThread_ = std::thread([this] { serveLazyCalls(); });
  }
  auto added = jit_->add(bytes, name);
  if (!added) {
    std::string why = toString(added.takeError());
    if (!alive())
      return makeError(deathMessage_.empty() ? prefix + why : deathMessage_);
    return makeError(prefix + why);
  }
  Image img;
  img.name = name.str();
  img.jit = std::make_unique<JITImage>(std::move(*added));
  img.symbols = std::make_unique<ImageSymbolTable>();
  uint64_t lo = UINT64_MAX, hi = 0;
  for (auto &[n, a] : img.jit->symbols) {
    img.symbols->add(n, a, 0);
    lo = std::min(lo, a);
    hi = std::max(hi, a + 1);
  }
  img.base = lo == UINT64_MAX ? 0 : lo;
  img.size = hi > lo ? hi - lo : 0;
  if (img.jit->init) {
    Error result = Error::success();
    if (auto err = call<proto::CallVoidSignature>(proto::CallVoidName, "initializing image " + img.name,
                                                  result, img.jit->init))
      return std::move(err);
    if (result)
      return makeError(prefix + toString(std::move(result)));
  }
  uint64_t id = nextImage_++;
  OMPSIM_TRACE_EVENT(Cat::Image, "load")
      .num("device", opts_.deviceId)
      .str("image", name)
      .str("kind", "bitcode")
      .dev("base", img.base, "")
      .num("symbols", int64_t(img.jit->symbols.size()));
  images_[id] = std::move(img);
  return id;
}

void DeviceController::serveLazyCalls() {
  LaunchMailbox &mb = *mailbox_;
  uint32_t served = mb.lazyServed.load(std::memory_order_acquire);
  for (;;) {
    uint32_t request = mb.lazyRequest.load(std::memory_order_acquire);
    if (lazyStop_.load(std::memory_order_acquire))
      return;
    if (request == served) {
      sharedFutexWait(mb.lazyRequest, request);
      continue;
    }
    // Not under mu_: the thread that holds it may be waiting for the very
    // kernel (or initializer) that made this call.
    uint64_t landing = jit_->resolveLazyCall(mb.lazyTrampoline);
    OMPSIM_TRACE_EVENT(Cat::Image, "jit-first-call")
        .num("device", opts_.deviceId)
        .dev("function", landing, "");
    mb.lazyLanding = landing;
    mb.lazyServed.store(request, std::memory_order_seq_cst);
    sharedFutexWake(mb.lazyServed);
    served = request;
  }
}

void DeviceController::stopLazyCalls() {
  if (!lazyThread_.joinable())
    return;
  lazyStop_.store(true, std::memory_order_seq_cst);
  mailbox_->lazyRequest.fetch_add(1, std::memory_order_seq_cst);
  sharedFutexWake(mailbox_->lazyRequest);
  lazyThread_.join();
}

Expected<uint64_t> DeviceController::lookup(uint64_t image, StringRef name) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  auto it = images_.find(image);
  if (it == images_.end())
    return makeError(fmt::format("device {}: no loaded image {}", opts_.deviceId, image));
  Expected<uint64_t> addr = uint64_t(0);
  if (it->second.jit)
    addr = jit_->lookup(*it->second.jit, name);
  else if (auto err = call<proto::LookupSignature>(proto::LookupName, "symbol lookup", addr,
                                                   it->second.remoteHandle, name.str()))
    return std::move(err);
  if (!addr)
    return addr.takeError();
  if (!*addr)
    return makeError(fmt::format("device {}: image {} defines no symbol '{}'", opts_.deviceId,
                                 it->second.name, name.str()));
  return *addr;
}

Expected<std::vector<uint64_t>> DeviceController::lookupMany(uint64_t image, ArrayRef<StringRef> names) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  auto it = images_.find(image);
  if (it == images_.end())
    return makeError(fmt::format("device {}: no loaded image {}", opts_.deviceId, image));
  if (it->second.jit) {
    StringMap<uint64_t> byName;
    for (auto &[n, a] : it->second.jit->symbols)
      byName[n] = a;
    std::vector<uint64_t> addrs;
    addrs.reserve(names.size());
    for (StringRef n : names)
      addrs.push_back(byName.lookup(n));
    return addrs;
  }
  Expected<std::vector<uint64_t>> addrs = std::vector<uint64_t>();
  if (auto err = call<proto::LookupManySignature>(proto::LookupManyName,
                                                  fmt::format("looking up {} symbols", names.size()), addrs,
                                                  it->second.remoteHandle, names))
    return std::move(err);
  if (!addrs)
    return addrs.takeError();
  if (addrs->size() != names.size())
    return makeError(fmt::format("device {}: asked for {} symbols of image {}, got {}", opts_.deviceId,
                                 names.size(), it->second.name, addrs->size()));
  return addrs;
}

Error DeviceController::unloadImage(uint64_t image) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  auto it = images_.find(image);
  if (it == images_.end())
    return makeError(fmt::format("device {}: no loaded image {}", opts_.deviceId, image));
  Error result = Error::success();
  if (it->second.jit) {
    if (it->second.jit->fini)
      if (auto err = call<proto::CallVoidSignature>(
              proto::CallVoidName, "finalizing image " + it->second.name, result, it->second.jit->fini))
        return err;
    result = joinErrors(std::move(result), jit_->remove(*it->second.jit));
  } else if (auto err = call<proto::UnloadSignature>(proto::UnloadName, "unloading image " + it->second.name,
                                                     result, it->second.remoteHandle)) {
    return err;
  }
  images_.erase(it);
  return result;
}

Error DeviceController::launch(uint64_t entry, ArrayRef<uint64_t> args, uint32_t numTeams,
                               uint32_t threadLimit, StringRef kernelName) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (auto err = checkAlive())
    return err;
  // Only the error paths name the kernel: a launch that works formats nothing.
  auto context = [&] { return "kernel " + kernelName.str(); };
  if (args.size() > LaunchMailbox::kMaxArgs)
    return makeError(fmt::format("device {}: {} takes {} arguments; the simulated device passes at most {}",
                                 opts_.deviceId, context(), args.size(), LaunchMailbox::kMaxArgs));
  LaunchMailbox &mb = *mailbox_;
  mb.entry = entry;
  mb.teams = numTeams;
  mb.threads = threadLimit;
  mb.numArgs = uint32_t(args.size());
  if (!args.empty())
    std::memcpy(mb.args, args.data(), args.size() * sizeof(uint64_t));
  uint32_t seq = ++launchSeq_;
  mb.hostCpu.store(::sched_getcpu(), std::memory_order_relaxed);
  mb.request.store(seq, std::memory_order_release);
  mb.doorbell.fetch_add(1, std::memory_order_seq_cst);
  if (mb.executorSleeping.load(std::memory_order_seq_cst))
    sharedFutexWake(mb.doorbell);

  auto finished = [&] { return mb.done.load(std::memory_order_acquire) == seq; };
  // Short kernels finish while we spin; longer ones are waited for in slices
  // so that an executor that dies under a kernel (fault, killed from outside)
  // is noticed within a slice, and a hang at the kernel timeout.
  constexpr uint64_t kSpinNanos = 100000;
  constexpr long kSliceNanos = 5000000;
  if (!spinFor(kSpinNanos, mb.hostCpu, mb.executorCpu, mb.executorSleeping, finished)) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(opts_.kernelTimeout);
    for (;;) {
      mb.hostWaiting.store(1, std::memory_order_seq_cst);
      uint32_t seen = mb.done.load(std::memory_order_seq_cst);
      if (seen != seq) {
        struct timespec slice = {0, kSliceNanos};
        sharedFutexWait(mb.done, seen, &slice);
      }
      // Where we woke up, before saying we run (the executor's spinFor reads
      // the flag first).
      mb.hostCpu.store(::sched_getcpu(), std::memory_order_relaxed);
      mb.hostWaiting.store(0, std::memory_order_release);
      if (finished())
        break;
      if (executorExited())
        return diagnose(makeError("the executor exited"), context());
      if (std::chrono::steady_clock::now() >= deadline) {
        ::kill(pid_, SIGKILL);
        int status = 0;
        waitFor(pid_, 30.0, status);
        pid_ = -1;
        deathMessage_ = fmt::format("device {}: kernel {} timed out after {:g}s (OMPSIM_KERNEL_TIMEOUT)",
                                    opts_.deviceId, kernelName.str(), opts_.kernelTimeout);
        OMPSIM_TRACE_EVENT(Cat::Fault, "timeout").num("device", opts_.deviceId).str("kernel", kernelName);
        return makeError(deathMessage_);
      }
    }
  }
  if (mb.status != 0)
    return makeError(fmt::format(
        "device {}: {}: {}", opts_.deviceId, context(),
        std::string(mb.message, std::min<uint32_t>(mb.messageLength, LaunchMailbox::kMessageBytes))));
  return Error::success();
}

} // namespace ompsim::sim

//===- DeviceControllerMemory.cpp - Device memory of the executor ---------===//
//
// DeviceController: the shared memory map, device allocations, reads and
// writes, the function-pointer table and the translate log.
//
//===----------------------------------------------------------------------===//

#include "DeviceControllerImpl.h"

#include "DeviceJit.h"
#include "GuardedArena.h"
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

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <thread>

namespace ompsim::sim {

namespace {

/// memfd_create's MFD_EXEC (Linux 6.3); older headers lack it, older kernels refuse it.
#ifdef MFD_EXEC
constexpr unsigned kMemfdExec = MFD_EXEC;
#else
constexpr unsigned kMemfdExec = 0x0010U;
#endif

} // namespace

Error DeviceController::mapSharedMemory(int &Fd) {
  std::string Prefix = fmt::format("device {}: ", Opts.DeviceId);
  // Image code runs from these pages in the executor; where the kernel
  // supports MFD_EXEC say so, so that a vm.memfd_noexec default cannot seal it.
  Fd = ::memfd_create("ompsim-device-memory", MFD_CLOEXEC | kMemfdExec);
  if (Fd < 0 && errno == EINVAL)
    Fd = ::memfd_create("ompsim-device-memory", MFD_CLOEXEC);
  if (Fd < 0)
    return makeError(Prefix + "cannot create device memory (memfd_create): " + std::strerror(errno));
  uint64_t Page = uint64_t(::sysconf(_SC_PAGESIZE));
  SharedBytes = LaunchMailbox::kBytes + ((Opts.ArenaSize + Page - 1) & ~(Page - 1));
  if (::ftruncate(Fd, off_t(SharedBytes)) != 0) {
    std::string Why = std::strerror(errno);
    ::close(Fd);
    Fd = -1;
    return makeError(Prefix + fmt::format("cannot size device memory to {} bytes: {}", SharedBytes, Why));
  }
  void *P = ::mmap(nullptr, SharedBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, Fd, 0);
  if (P == MAP_FAILED) {
    std::string Why = std::strerror(errno);
    ::close(Fd);
    Fd = -1;
    return makeError(Prefix + fmt::format("cannot map {} bytes of device memory: {}", SharedBytes, Why));
  }
  // A child the host program forks must not write into device memory.
  ::madvise(P, SharedBytes, MADV_DONTFORK);
  Shared = static_cast<char *>(P);
  Mailbox = reinterpret_cast<LaunchMailbox *>(Shared);
  SlotSeq.assign(LaunchMailbox::kSlots, 0);
  SlotTids.assign(LaunchMailbox::kSlots, 0);
  FreeSlots.store((1u << launchSlots()) - 1, std::memory_order_release);
  return Error::success();
}

uint32_t DeviceController::launchSlots() {
  // Independent launches run at once up to the CPUs there are to run them
  // (at least 2, so that two kernels that wait for each other can).
  return uint32_t(std::clamp<int32_t>(usableCpus(), 2, int32_t(LaunchMailbox::kSlots)));
}

void DeviceController::unmapSharedMemory() {
  for (auto [Addr, Bytes] : HostVisible)
    ::munmap(reinterpret_cast<void *>(Addr), Bytes);
  HostVisible.clear();
  if (MemoryFd >= 0)
    ::close(MemoryFd);
  MemoryFd = -1;
  if (Shared)
    ::munmap(Shared, SharedBytes);
  Shared = nullptr;
  Mailbox = nullptr;
  SharedBytes = 0;
}

Error DeviceController::checkRange(uint64_t Addr, uint64_t Size, StringRef What) {
  if (Addr < Opts.ArenaBase || Size > Opts.ArenaSize || Addr - Opts.ArenaBase > Opts.ArenaSize - Size)
    return makeError(fmt::format("device {}: {} of {} bytes at 0x{:x} is outside device memory "
                                 "[0x{:x}, 0x{:x})",
                                 Opts.DeviceId, What.str(), Size, Addr, Opts.ArenaBase,
                                 Opts.ArenaBase + Opts.ArenaSize));
  return Error::success();
}

uint64_t DeviceController::allocate(uint64_t Size, uint64_t Align) {
  std::lock_guard<std::recursive_mutex> Lock(Mu);
  if (auto Err = checkAlive()) {
    consumeError(std::move(Err));
    return 0;
  }
  if (!Align || (Align & (Align - 1)))
    Align = 16;
  uint64_t Addr = 0;
  if (Guarded) {
    Addr = Guarded->allocate(Size, std::max<uint64_t>(Align, 16));
    if (!Addr && Guarded->wantsFlush()) {
      // The heap is full of quarantined blocks: give them back and retry.
      if (auto Err = applyProtections())
        consumeError(std::move(Err));
      Addr = Guarded->allocate(Size, std::max<uint64_t>(Align, 16));
    }
  } else {
    Addr = Heap->allocate(Size, std::max<uint64_t>(Align, 16));
  }
  OMPSIM_TRACE_EVENT(Cat::Alloc, Addr ? "alloc" : "alloc-failed")
      .num("device", Opts.DeviceId)
      .num("size", int64_t(Size))
      .dev("addr", Addr, "");
  return Addr;
}

Expected<uint64_t> DeviceController::allocateHostVisible(uint64_t Size) {
  std::lock_guard<std::recursive_mutex> Lock(Mu);
  if (auto Err = checkAlive())
    return std::move(Err);
  if (MemoryFd < 0)
    return makeError(fmt::format("device {}: device memory is not mapped", Opts.DeviceId));
  // Whole pages: the host maps them, and no other block may share one.
  uint64_t Page = uint64_t(::sysconf(_SC_PAGESIZE));
  uint64_t Bytes = (std::max<uint64_t>(Size, 1) + Page - 1) & ~(Page - 1);
  if (Bytes < Size)
    return makeError(fmt::format("device {}: cannot allocate {} bytes of host-visible memory: larger than "
                                 "any address space",
                                 Opts.DeviceId, Size));
  uint64_t Addr = Heap->allocate(Bytes, Page);
  if (!Addr)
    return makeError(fmt::format("device {}: out of device memory allocating {} bytes of host-visible "
                                 "memory (OMPSIM_DEVICE_MEMORY)",
                                 Opts.DeviceId, Size));
  // The same memfd pages the executor has at this address, here at the same
  // address: a pointer into the block means the same bytes on both sides.
  void *P =
      ::mmap(reinterpret_cast<void *>(Addr), Bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
             MemoryFd, off_t(LaunchMailbox::kBytes + (Addr - Opts.ArenaBase)));
  if (P != reinterpret_cast<void *>(Addr)) {
    std::string Why = P == MAP_FAILED ? std::strerror(errno) : "the kernel placed it elsewhere";
    if (P != MAP_FAILED)
      ::munmap(P, Bytes);
    Heap->release(Addr);
    return makeError(fmt::format("device {}: cannot map {} bytes of host-visible memory at device address "
                                 "0x{:x} in the host process: {} (move the device with OMPSIM_DEVICE_BASE)",
                                 Opts.DeviceId, Bytes, Addr, Why));
  }
  HostVisible[Addr] = Bytes;
  OMPSIM_TRACE_EVENT(Cat::Alloc, "alloc")
      .num("device", Opts.DeviceId)
      .num("size", int64_t(Size))
      .str("kind", "host-visible")
      .dev("addr", Addr, "");
  return Addr;
}

Error DeviceController::release(uint64_t Addr) {
  std::lock_guard<std::recursive_mutex> Lock(Mu);
  if (auto Err = checkAlive())
    return Err;
  if (Guarded && Guarded->release(Addr)) {
    OMPSIM_TRACE_EVENT(Cat::Alloc, "free").num("device", Opts.DeviceId).dev("addr", Addr, "");
    return Error::success();
  }
  if (!Heap->release(Addr))
    return makeError(fmt::format("device {}: 0x{:x} is not a live device allocation", Opts.DeviceId, Addr));
  if (auto It = HostVisible.find(Addr); It != HostVisible.end()) {
    ::munmap(reinterpret_cast<void *>(Addr), It->second);
    HostVisible.erase(It);
  }
  OMPSIM_TRACE_EVENT(Cat::Alloc, "free").num("device", Opts.DeviceId).dev("addr", Addr, "");
  return Error::success();
}

Error DeviceController::write(uint64_t Dst, const void *Src, uint64_t Size) {
  if (Size == 0)
    return Error::success();
  {
    // The copy itself runs unlocked: copies of different host threads (and
    // of one thread while another's kernel runs) go on at once; the pages
    // stay mapped as long as the controller lives.
    std::lock_guard<std::recursive_mutex> Lock(Mu);
    if (auto Err = checkAlive())
      return Err;
    if (auto Err = checkRange(Dst, Size, "write"))
      return Err;
  }
  std::memcpy(sharedBytesOf(Dst), Src, Size);
  return Error::success();
}

char *DeviceController::sharedBytesOf(uint64_t Addr) const {
  return Shared + LaunchMailbox::kBytes + (Addr - Opts.ArenaBase);
}

Error DeviceController::read(void *Dst, uint64_t Src, uint64_t Size) {
  if (Size == 0)
    return Error::success();
  {
    std::lock_guard<std::recursive_mutex> Lock(Mu); // as in write()
    if (auto Err = checkAlive())
      return Err;
    if (auto Err = checkRange(Src, Size, "read"))
      return Err;
  }
  std::memcpy(Dst, sharedBytesOf(Src), Size);
  return Error::success();
}

Error DeviceController::applyProtections() {
  std::lock_guard<std::recursive_mutex> Lock(Mu);
  if (!Guarded)
    return Error::success();
  std::vector<PageProtection> Changes = Guarded->takeProtections();
  if (Changes.empty())
    return Error::success();
  std::vector<std::tuple<uint64_t, uint64_t, bool>> Sent;
  Sent.reserve(Changes.size());
  for (const PageProtection &C : Changes)
    Sent.emplace_back(C.Begin, C.End, C.Accessible);
  Error Result = Error::success();
  if (auto Err = call<proto::ProtectSignature>(
          proto::ProtectName, "protecting device memory for the map checker", Result, Sent)) {
    consumeError(std::move(Result));
    return Err;
  }
  if (Result)
    return makeError(fmt::format("device {}: {}", Opts.DeviceId, toString(std::move(Result))));
  Guarded->releaseEvicted();
  return Error::success();
}

Error DeviceController::setFunctionPointerTable(ArrayRef<__omp_offloading_fptr_map_ty> Table) {
  std::lock_guard<std::recursive_mutex> Lock(Mu);
  if (auto Err = checkAlive())
    return Err;
  uint64_t Bytes = Table.size() * sizeof(__omp_offloading_fptr_map_ty);
  uint64_t Addr = 0;
  if (Bytes) {
    Addr = allocate(Bytes, 16);
    if (!Addr)
      return makeError(fmt::format("device {}: no device memory for the {}-entry function-pointer table",
                                   Opts.DeviceId, Table.size()));
    if (auto Err = write(Addr, Table.data(), Bytes))
      return Err;
  }
  Error Result = Error::success();
  if (auto Err =
          call<proto::SetFptrTableSignature>(proto::SetFptrTableName, "publishing the function-pointer table",
                                             Result, Addr, uint64_t(Table.size())))
    return Err;
  if (Result) {
    if (Addr)
      consumeError(release(Addr));
    return makeError(fmt::format("device {}: {}", Opts.DeviceId, toString(std::move(Result))));
  }
  // The device runtime keeps its own copy.
  if (TableAddr)
    consumeError(release(TableAddr));
  TableAddr = Addr;
  return Error::success();
}

Expected<TranslateLog> DeviceController::takeTranslateLog(uint64_t NextCap, uint64_t MaxRecords) {
  std::lock_guard<std::recursive_mutex> Lock(Mu);
  if (!DeathMessage.empty() && FaultTranslateLog) {
    TranslateLog Saved = std::move(*FaultTranslateLog);
    FaultTranslateLog.reset();
    return Saved;
  }
  Expected<std::vector<uint64_t>> Raw = std::vector<uint64_t>();
  if (auto Err = call<proto::TranslateLogSignature>(proto::TranslateLogName, "reading the translate log", Raw,
                                                    NextCap, MaxRecords))
    return std::move(Err);
  if (!Raw)
    return makeError(fmt::format("device {}: {}", Opts.DeviceId, toString(Raw.takeError())));
  TranslateLog Log;
  if (Raw->size() < 4)
    return Log;
  Log.Hits = (*Raw)[0];
  Log.Misses = (*Raw)[1];
  Log.Recorded = (*Raw)[2];
  Log.Dropped = (*Raw)[3];
  for (size_t I = 4; I + 2 < Raw->size() + 0 && I + 2 <= Raw->size() - 1; I += 3)
    Log.Records.push_back({(*Raw)[I], (*Raw)[I + 1], (*Raw)[I + 2] != 0});
  return Log;
}

} // namespace ompsim::sim

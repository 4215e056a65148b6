//===- DeviceControllerMemory.cpp - Device memory of the executor ---------===//
//
// DeviceController: the shared memory map, device allocations, reads and
// writes, the function-pointer table and the translate log.
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

namespace {

/// memfd_create's MFD_EXEC (Linux 6.3); older headers lack it, older kernels refuse it.
#ifdef MFD_EXEC
constexpr unsigned kMemfdExec = MFD_EXEC;
#else
constexpr unsigned kMemfdExec = 0x0010U;
#endif

} // namespace

Error DeviceController::mapSharedMemory(int &fd) {
  std::string prefix = fmt::format("device {}: ", opts_.deviceId);
  // Image code runs from these pages in the executor; where the kernel
  // supports MFD_EXEC say so, so that a vm.memfd_noexec default cannot seal it.
  fd = ::memfd_create("ompsim-device-memory", MFD_CLOEXEC | kMemfdExec);
  if (fd < 0 && errno == EINVAL)
    fd = ::memfd_create("ompsim-device-memory", MFD_CLOEXEC);
  if (fd < 0)
    return makeError(prefix + "cannot create device memory (memfd_create): " + std::strerror(errno));
  uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  sharedBytes_ = LaunchMailbox::kBytes + ((opts_.arenaSize + page - 1) & ~(page - 1));
  if (::ftruncate(fd, off_t(sharedBytes_)) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    fd = -1;
    return makeError(prefix + fmt::format("cannot size device memory to {} bytes: {}", sharedBytes_, why));
  }
  void *p = ::mmap(nullptr, sharedBytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) {
    std::string why = std::strerror(errno);
    ::close(fd);
    fd = -1;
    return makeError(prefix + fmt::format("cannot map {} bytes of device memory: {}", sharedBytes_, why));
  }
  // A child the host program forks must not write into device memory.
  ::madvise(p, sharedBytes_, MADV_DONTFORK);
  shared_ = static_cast<char *>(p);
  mailbox_ = reinterpret_cast<LaunchMailbox *>(shared_);
  launchSeq_ = 0;
  return Error::success();
}

void DeviceController::unmapSharedMemory() {
  if (shared_)
    ::munmap(shared_, sharedBytes_);
  shared_ = nullptr;
  mailbox_ = nullptr;
  sharedBytes_ = 0;
}

Error DeviceController::checkRange(uint64_t addr, uint64_t size, StringRef what) {
  if (addr < opts_.arenaBase || size > opts_.arenaSize || addr - opts_.arenaBase > opts_.arenaSize - size)
    return makeError(fmt::format("device {}: {} of {} bytes at 0x{:x} is outside device memory "
                                 "[0x{:x}, 0x{:x})",
                                 opts_.deviceId, what.str(), size, addr, opts_.arenaBase,
                                 opts_.arenaBase + opts_.arenaSize));
  return Error::success();
}

uint64_t DeviceController::allocate(uint64_t size, uint64_t align) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (auto err = checkAlive()) {
    consumeError(std::move(err));
    return 0;
  }
  if (!align || (align & (align - 1)))
    align = 16;
  uint64_t addr = heap_->allocate(size, std::max<uint64_t>(align, 16));
  OMPSIM_TRACE_EVENT(Cat::Alloc, addr ? "alloc" : "alloc-failed")
      .num("device", opts_.deviceId)
      .num("size", int64_t(size))
      .dev("addr", addr, "");
  return addr;
}

Error DeviceController::release(uint64_t addr) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (auto err = checkAlive())
    return err;
  if (!heap_->release(addr))
    return makeError(fmt::format("device {}: 0x{:x} is not a live device allocation", opts_.deviceId, addr));
  OMPSIM_TRACE_EVENT(Cat::Alloc, "free").num("device", opts_.deviceId).dev("addr", addr, "");
  return Error::success();
}

Error DeviceController::write(uint64_t dst, const void *src, uint64_t size) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (size == 0)
    return Error::success();
  if (auto err = checkAlive())
    return err;
  if (auto err = checkRange(dst, size, "write"))
    return err;
  std::memcpy(shared_ + LaunchMailbox::kBytes + (dst - opts_.arenaBase), src, size);
  return Error::success();
}

Error DeviceController::read(void *dst, uint64_t src, uint64_t size) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (size == 0)
    return Error::success();
  if (auto err = checkAlive())
    return err;
  if (auto err = checkRange(src, size, "read"))
    return err;
  std::memcpy(dst, shared_ + LaunchMailbox::kBytes + (src - opts_.arenaBase), size);
  return Error::success();
}

Error DeviceController::setFunctionPointerTable(ArrayRef<__omp_offloading_fptr_map_ty> table) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (auto err = checkAlive())
    return err;
  uint64_t bytes = table.size() * sizeof(__omp_offloading_fptr_map_ty);
  uint64_t addr = 0;
  if (bytes) {
    addr = allocate(bytes, 16);
    if (!addr)
      return makeError(fmt::format("device {}: no device memory for the {}-entry function-pointer table",
                                   opts_.deviceId, table.size()));
    if (auto err = write(addr, table.data(), bytes))
      return err;
  }
  Error result = Error::success();
  if (auto err =
          call<proto::SetFptrTableSignature>(proto::SetFptrTableName, "publishing the function-pointer table",
                                             result, addr, uint64_t(table.size())))
    return err;
  if (result) {
    if (addr)
      consumeError(release(addr));
    return makeError(fmt::format("device {}: {}", opts_.deviceId, toString(std::move(result))));
  }
  // The device runtime keeps its own copy.
  if (tableAddr_)
    consumeError(release(tableAddr_));
  tableAddr_ = addr;
  return Error::success();
}

Expected<TranslateLog> DeviceController::takeTranslateLog(uint64_t nextCap, uint64_t maxRecords) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (!deathMessage_.empty() && faultTranslateLog_) {
    TranslateLog saved = std::move(*faultTranslateLog_);
    faultTranslateLog_.reset();
    return saved;
  }
  Expected<std::vector<uint64_t>> raw = std::vector<uint64_t>();
  if (auto err = call<proto::TranslateLogSignature>(proto::TranslateLogName, "reading the translate log", raw,
                                                    nextCap, maxRecords))
    return std::move(err);
  if (!raw)
    return makeError(fmt::format("device {}: {}", opts_.deviceId, toString(raw.takeError())));
  TranslateLog log;
  if (raw->size() < 4)
    return log;
  log.hits = (*raw)[0];
  log.misses = (*raw)[1];
  log.recorded = (*raw)[2];
  log.dropped = (*raw)[3];
  for (size_t i = 4; i + 2 < raw->size() + 0 && i + 2 <= raw->size() - 1; i += 3)
    log.records.push_back({(*raw)[i], (*raw)[i + 1], (*raw)[i + 2] != 0});
  return log;
}

} // namespace ompsim::sim

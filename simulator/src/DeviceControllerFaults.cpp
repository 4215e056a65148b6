//===- DeviceControllerFaults.cpp - Why an executor died -----------------===//
//
// DeviceController: describing an executor's death and the fault it reported,
// and symbolizing the addresses a fault names.
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

const char *signalName(int sig) {
  switch (sig) {
  case SIGSEGV:
    return "SIGSEGV";
  case SIGBUS:
    return "SIGBUS";
  case SIGILL:
    return "SIGILL";
  case SIGFPE:
    return "SIGFPE";
  case SIGKILL:
    return "SIGKILL";
  case SIGTERM:
    return "SIGTERM";
  case SIGABRT:
    return "SIGABRT";
  case SIGINT:
    return "SIGINT";
  case SIGQUIT:
    return "SIGQUIT";
  default:
    return "signal";
  }
}

std::string faultKind(const proto::FaultRecord &f) {
  switch (f.signo) {
  case SIGSEGV:
    return "segmentation fault";
  case SIGBUS:
    return "bus error";
  case SIGILL:
    return "illegal instruction";
  case SIGFPE:
    return f.code == FPE_INTDIV ? "integer division by zero" : "arithmetic exception";
  default:
    return fmt::format("signal {}", f.signo);
  }
}

/// Whether a fault is the faulting thread running off the bottom of its stack:
/// both the address and the stack pointer at or below the stack's lowest page
/// (in its guard, or past it by a large frame; 16 MiB covers any guard gap).
bool isStackOverflow(const proto::FaultRecord &f) {
  constexpr uint64_t kReach = 16ull << 20, kPage = 4096, kSlack = 64 * 1024;
  if (f.signo != SIGSEGV || f.stackLow < kReach || f.stackHigh <= f.stackLow)
    return false;
  bool addrNearBottom = f.addr < f.stackLow + kPage && f.addr >= f.stackLow - kReach;
  bool rspNearBottom = f.rsp < f.stackLow + kSlack && f.rsp >= f.stackLow - kReach;
  return addrNearBottom && rspNearBottom;
}

} // namespace

std::string DeviceController::describeDeath(int status, const std::string &context) {
  std::string dev = fmt::format("device {}: ", opts_.deviceId);
  proto::FaultRecord f{};
  bool haveFault = false;
  if (faultFd_ >= 0) {
    int fl = ::fcntl(faultFd_, F_GETFL);
    ::fcntl(faultFd_, F_SETFL, fl | O_NONBLOCK);
    haveFault = ::read(faultFd_, &f, sizeof f) == ssize_t(sizeof f) && f.magic == proto::FaultRecord::kMagic;
    // The faulting kernel's translate log follows the record when the device
    // runtime was loaded; keep it for takeTranslateLog.
    auto log = std::make_unique<proto::FaultTranslateLog>();
    if (haveFault && ::read(faultFd_, log.get(), sizeof *log) == ssize_t(sizeof *log) &&
        log->magic == proto::FaultTranslateLog::kMagic &&
        log->count <= proto::FaultTranslateLog::kMaxRecords) {
      TranslateLog t;
      t.hits = log->hits;
      t.misses = log->misses;
      t.recorded = log->count;
      t.dropped = log->dropped;
      for (uint32_t i = 0; i < log->count; ++i)
        t.records.push_back({log->records[i].host, log->records[i].result, log->records[i].hit != 0});
      faultTranslateLog_ = std::move(t);
    }
  }
  if (haveFault && f.signo == 0) {
    // The host ends with the status device code gave exit(), as stock does.
    trace::setFatalExitStatus(f.code);
    std::string sym = symbolize(f.rip);
    OMPSIM_TRACE_EVENT(Cat::Fault, "device-exit")
        .num("device", opts_.deviceId)
        .str("context", context)
        .num("status", f.code);
    return fmt::format("{}{} called exit({}){}", dev, context, f.code,
                       sym.empty() ? std::string() : fmt::format(" from dev:{}", sym));
  }
  if (haveFault) {
    HostSymbolizer &hs = HostSymbolizer::get();
    if (trace::enabled(trace::Cat::Fault)) {
      // Name both addresses on the side they belong to, so the trace alone says
      // which host function or object the device touched.
      trace::Event ev(trace::Cat::Fault, "device-fault");
      ev.num("device", opts_.deviceId).str("context", context).num("signal", f.signo);
      for (auto [key, a] : {std::pair<const char *, uint64_t>{"addr", f.addr}, {"rip", f.rip}}) {
        if (!hs.objectOf(a).empty())
          ev.host(key, a);
        else
          ev.dev(key, a, symbolize(a));
      }
    }
    std::string hostObject = (f.signo == SIGSEGV || f.signo == SIGBUS) ? hs.objectOf(f.addr) : "";
    auto hostSymbolText = [&](uint64_t a) {
      auto sym = hs.lookup(a);
      if (!sym)
        return fmt::format("in {}", hostObject);
      std::string n = sym->Offset ? fmt::format("{}+0x{:x}", sym->Name, sym->Offset) : sym->Name;
      return fmt::format("host symbol '{}' in {}", n, sym->Object.empty() ? hostObject : sym->Object);
    };
    if (!hostObject.empty()) {
      HostFault &hf = hostFault_.emplace();
      hf.access = f.rip == f.addr                               ? HostFault::Access::Call
                  : f.signo == SIGSEGV && (f.pageFaultCode & 2) ? HostFault::Access::Write
                                                                : HostFault::Access::Read;
      hf.addr = f.addr;
      if (faultTranslateLog_) {
        for (const TranslateLog::Record &r : faultTranslateLog_->records)
          hf.lookups.push_back(r);
        hf.lookupsComplete = faultTranslateLog_->dropped == 0;
      }
    }
    if (!hostObject.empty() && f.rip == f.addr)
      return fmt::format("{}{} called untranslated host function pointer 0x{:x} ({})", dev, context, f.addr,
                         hostSymbolText(f.addr));
    std::string where;
    std::string sym = symbolize(f.rip);
    where = sym.empty() ? fmt::format("0x{:x}", f.rip) : fmt::format("dev:{} (0x{:x})", sym, f.rip);
    bool write = f.signo == SIGSEGV && (f.pageFaultCode & 2);
    if (isStackOverflow(f)) {
      uint64_t stackKiB = (f.stackHigh - f.stackLow) / 1024;
      std::string place =
          f.addr < f.stackLow
              ? fmt::format("{} bytes below the {} KiB stack of the device thread", f.stackLow - f.addr,
                            stackKiB)
              : fmt::format("at the bottom of the {} KiB stack of the device thread", stackKiB);
      return fmt::format("{}stack overflow {} {}: {} ({}) at address 0x{:x}, {}, instruction at {}", dev,
                         StringRef(context).starts_with("kernel ") ? "in" : "while", context, faultKind(f),
                         signalName(f.signo), f.addr, place, where);
    }
    if (!hostObject.empty())
      return fmt::format("{}{} {} host data at 0x{:x} ({}) from {}", dev, context, write ? "wrote" : "read",
                         f.addr, hostSymbolText(f.addr), where);
    if (f.signo == SIGSEGV && f.rip == f.addr && f.addr < 4096)
      return fmt::format("{}{} called a null function pointer (0x{:x})", dev, context, f.addr);
    if (f.signo == SIGSEGV || f.signo == SIGBUS)
      return fmt::format("{}{}: {} ({}) at address 0x{:x}, instruction at {}", dev, context, faultKind(f),
                         signalName(f.signo), f.addr, where);
    return fmt::format("{}{}: {} ({}) at {}", dev, context, faultKind(f), signalName(f.signo), where);
  }
  if (status == -1)
    return fmt::format("{}executor (pid {}) died during {}", dev, pid_, context);
  if (WIFSIGNALED(status))
    return fmt::format("{}executor (pid {}) was killed by signal {} ({}) during {}", dev, pid_,
                       WTERMSIG(status), signalName(WTERMSIG(status)), context);
  return fmt::format("{}executor (pid {}) exited with status {} during {}", dev, pid_, WEXITSTATUS(status),
                     context);
}

Error DeviceController::diagnose(Error callError, const std::string &context) {
  if (!callError)
    return callError;
  int status = 0;
  // A lost connection means the executor is exiting or gone; give it a moment.
  if (!waitFor(pid_, 2.0, status)) {
    // Still alive: an ordinary error the executor reported (bad image, ...).
    return makeError(
        fmt::format("device {}: {}: {}", opts_.deviceId, context, toString(std::move(callError))));
  }
  consumeError(std::move(callError));
  deathMessage_ = describeDeath(status, context);
  if (hostFault_ && faultAdvisor_) {
    std::string note = faultAdvisor_(*hostFault_);
    if (!note.empty())
      deathMessage_ += "; " + note;
  }
  int dummy;
  (void)dummy;
  pid_t old = pid_;
  pid_ = -1; // reaped
  (void)old;
  OMPSIM_TRACE_EVENT(Cat::Fault, "executor-death")
      .num("device", opts_.deviceId)
      .str("message", deathMessage_);
  return makeError(deathMessage_);
}

void DeviceController::setFaultAdvisor(std::function<std::string(const HostFault &)> advisor) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  faultAdvisor_ = std::move(advisor);
}

std::string DeviceController::symbolize(uint64_t addr) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  for (auto &[id, img] : images_)
    if (!img.symbols && (!img.elfBytes.empty() || !img.elfView.empty()))
      img.symbols = std::make_unique<ImageSymbolTable>(ImageSymbolTable::fromElf(
          img.elfBytes.empty() ? img.elfView : llvm::ArrayRef<char>(img.elfBytes), img.base));
  for (auto &[id, img] : images_)
    if (addr >= img.base && addr < img.base + img.size && img.symbols) {
      std::string s = img.symbols->symbolize(addr);
      if (!s.empty())
        return s;
    }
  for (auto &[id, img] : images_)
    if (img.symbols) {
      std::string s = img.symbols->symbolize(addr);
      if (!s.empty())
        return s;
    }
  // Lazily compiled bodies of bitcode images lie outside their image's stubs.
  return jit_ ? jit_->symbolize(addr) : "";
}

} // namespace ompsim::sim

//===- DeviceControllerFaults.cpp - Why an executor died -----------------===//
//
// DeviceController: describing an executor's death and the fault it reported,
// and symbolizing the addresses a fault names.
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
#include "ompsim/HostMemoryMap.h"
#include "ompsim/HostSymbolizer.h"
#include "ompsim/Trace.h"

#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/SimpleRemoteEPC.h"
#include "llvm/ExecutionEngine/Orc/TaskDispatch.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

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

/// Device code at `Addr` as a fault's line gives it: "dev:<symbol> (0x...)",
/// or the address alone when `Sym` (its symbol) is empty.
std::string deviceCodeText(uint64_t Addr, const std::string &Sym) {
  return Sym.empty() ? fmt::format("0x{:x}", Addr) : fmt::format("dev:{} (0x{:x})", Sym, Addr);
}

/// `Message` with each "called from 0x..." the device runtime wrote naming
/// the code there, as a fault's line does.
std::string nameCalledCode(StringRef Message, function_ref<std::string(uint64_t)> Symbolize) {
  static const llvm::Regex CalledFrom("called from 0x([0-9a-f]+)");
  std::string Named;
  SmallVector<StringRef, 2> Match;
  while (CalledFrom.match(Message, &Match)) {
    size_t At = Match[0].data() - Message.data();
    uint64_t Addr = 0;
    Match[1].getAsInteger(16, Addr);
    Named += Message.take_front(At).str() + "called from " + deviceCodeText(Addr, Symbolize(Addr));
    Message = Message.drop_front(At + Match[0].size());
  }
  return Named + Message.str();
}

const char *signalName(int Sig) {
  switch (Sig) {
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

std::string faultKind(const proto::FaultRecord &F) {
  switch (F.Signo) {
  case SIGSEGV:
    return "segmentation fault";
  case SIGBUS:
    return "bus error";
  case SIGILL:
    // ud2: what __builtin_trap (and a check the compiler turned into a trap)
    // becomes; stock's GPU plugins say "execution interrupted by hardware
    // trap instruction".
    return F.Code == ILL_ILLOPN ? "execution interrupted by a trap instruction" : "illegal instruction";
  case SIGFPE:
    return F.Code == FPE_INTDIV ? "integer division by zero" : "arithmetic exception";
  default:
    return fmt::format("signal {}", F.Signo);
  }
}

/// Whether a fault is the faulting thread running off the bottom of its stack:
/// both the address and the stack pointer at or below the stack's lowest page
/// (in its guard, or past it by a large frame; 16 MiB covers any guard gap).
bool isStackOverflow(const proto::FaultRecord &F) {
  constexpr uint64_t kReach = 16ull << 20, kPage = 4096, kSlack = 64 * 1024;
  if (F.Signo != SIGSEGV || F.StackLow < kReach || F.StackHigh <= F.StackLow)
    return false;
  bool AddrNearBottom = F.Addr < F.StackLow + kPage && F.Addr >= F.StackLow - kReach;
  bool RspNearBottom = F.Rsp < F.StackLow + kSlack && F.Rsp >= F.StackLow - kReach;
  return AddrNearBottom && RspNearBottom;
}

} // namespace

std::string DeviceController::faultContext(int32_t Slot, uint64_t Rip, const std::string &Context) {
  if (!Mailbox)
    return Context;
  auto InFlight = [&](uint32_t I) {
    const LaunchMailbox::Slot &Mb = Mailbox->Slots[I];
    return Mb.Request.load(std::memory_order_acquire) != Mb.Done.load(std::memory_order_acquire);
  };
  auto KernelOf = [&](uint32_t I) {
    std::string Name = symbolize(Mailbox->Slots[I].Entry);
    return StringRef(Name).split('+').first.str();
  };
  // A device thread says which launch it ran.
  if (Slot >= 0 && uint32_t(Slot) < LaunchMailbox::kSlots && InFlight(uint32_t(Slot))) {
    std::string Name = KernelOf(uint32_t(Slot));
    return Name.empty() ? Context : "kernel " + Name;
  }
  // Another thread (a libomp worker of a team) while a launch noticed the
  // death: with other launches in flight, the one whose code faulted (an
  // outlined region's name starts with its kernel's).
  if (!StringRef(Context).starts_with("kernel "))
    return Context;
  std::vector<std::string> Running;
  for (uint32_t I = 0; I < LaunchMailbox::kSlots; ++I)
    if (InFlight(I))
      if (std::string Name = KernelOf(I); !Name.empty())
        Running.push_back(std::move(Name));
  if (Running.size() < 2)
    return Context; // the launch that noticed it
  std::string At = symbolize(Rip);
  for (const std::string &Name : Running)
    if (StringRef(At).starts_with(Name))
      return "kernel " + Name;
  return Context;
}

std::string DeviceController::describeDeath(int Status, const std::string &LaunchContext) {
  std::string Dev = fmt::format("device {}: ", Opts.DeviceId);
  std::string Context = LaunchContext;
  proto::FaultRecord F{};
  bool HaveFault = false;
  if (FaultFd >= 0) {
    int Fl = ::fcntl(FaultFd, F_GETFL);
    ::fcntl(FaultFd, F_SETFL, Fl | O_NONBLOCK);
    HaveFault = ::read(FaultFd, &F, sizeof F) == ssize_t(sizeof F) && F.Magic == proto::FaultRecord::kMagic;
    // The faulting kernel's translate log follows the record when the device
    // runtime was loaded; keep it for takeTranslateLog.
    auto Log = std::make_unique<proto::FaultTranslateLog>();
    if (HaveFault && ::read(FaultFd, Log.get(), sizeof *Log) == ssize_t(sizeof *Log) &&
        Log->Magic == proto::FaultTranslateLog::kMagic &&
        Log->Count <= proto::FaultTranslateLog::kMaxRecords) {
      TranslateLog T;
      T.Hits = Log->Hits;
      T.Misses = Log->Misses;
      T.Recorded = Log->Count;
      T.Dropped = Log->Dropped;
      for (uint32_t I = 0; I < Log->Count; ++I)
        T.Records.push_back({Log->Records[I].Host, Log->Records[I].Result, Log->Records[I].Hit != 0});
      FaultTranslateLog = std::move(T);
    }
  }
  if (HaveFault)
    Context = faultContext(F.Slot, F.Rip, Context);
  // The runtime's line (a stop, or what a fault address is) names device
  // code by address: add the function.
  auto RuntimeText = [&] {
    return nameCalledCode(StringRef(F.Message, strnlen(F.Message, sizeof F.Message)),
                          [&](uint64_t Addr) { return symbolize(Addr); });
  };
  if (HaveFault && F.RuntimeStop) {
    std::string Message = RuntimeText();
    OMPSIM_TRACE_EVENT(Cat::Fault, "device-stop")
        .num("device", Opts.DeviceId)
        .str("context", Context)
        .str("message", Message);
    return fmt::format("{}{}: {}", Dev, Context, Message);
  }
  if (HaveFault && F.Signo == 0) {
    // The host ends with the status device code gave exit(), as stock does.
    trace::setFatalExitStatus(F.Code);
    std::string Sym = symbolize(F.Rip);
    OMPSIM_TRACE_EVENT(Cat::Fault, "device-exit")
        .num("device", Opts.DeviceId)
        .str("context", Context)
        .num("status", F.Code);
    return fmt::format("{}{} called exit({}){}", Dev, Context, F.Code,
                       Sym.empty() ? std::string() : fmt::format(" from dev:{}", Sym));
  }
  if (HaveFault) {
    HostSymbolizer &Hs = HostSymbolizer::get();
    if (trace::enabled(trace::Cat::Fault)) {
      // Name both addresses on the side they belong to, so the trace alone says
      // which host function or object the device touched.
      trace::Event Ev(trace::Cat::Fault, "device-fault");
      Ev.num("device", Opts.DeviceId).str("context", Context).num("signal", F.Signo);
      for (auto [key, a] : {std::pair<const char *, uint64_t>{"addr", F.Addr}, {"rip", F.Rip}}) {
        std::string Sym = symbolize(a);
        bool InArena = a >= Opts.ArenaBase && a - Opts.ArenaBase < Opts.ArenaSize;
        if (!InArena && Sym.empty() && (!Hs.objectOf(a).empty() || hostMemoryRegion(a)))
          Ev.host(key, a); // heap and stack too: mapped in this (the host) process
        else if (InArena || !Sym.empty())
          Ev.dev(key, a, Sym);
        else
          Ev.hex(key, a);
      }
    }
    std::string HostObject = (F.Signo == SIGSEGV || F.Signo == SIGBUS) ? Hs.objectOf(F.Addr) : "";
    auto HostSymbolText = [&](uint64_t A) {
      auto Sym = Hs.lookup(A);
      if (!Sym)
        return fmt::format("in {}", HostObject);
      std::string N = Sym->Offset ? fmt::format("{}+0x{:x}", Sym->Name, Sym->Offset) : Sym->Name;
      return fmt::format("host symbol '{}' in {}", N, Sym->Object.empty() ? HostObject : Sym->Object);
    };
    if (!HostObject.empty()) {
      HostFault &Hf = LastHostFault.emplace();
      Hf.Access = F.Rip == F.Addr                               ? HostFault::Access::Call
                  : F.Signo == SIGSEGV && (F.PageFaultCode & 2) ? HostFault::Access::Write
                                                                : HostFault::Access::Read;
      Hf.Addr = F.Addr;
      if (FaultTranslateLog) {
        for (const TranslateLog::Record &R : FaultTranslateLog->Records)
          Hf.Lookups.push_back(R);
        Hf.LookupsComplete = FaultTranslateLog->Dropped == 0;
      }
    }
    if (!HostObject.empty() && F.Rip == F.Addr)
      return fmt::format("{}{} called untranslated host function pointer 0x{:x} ({})", Dev, Context, F.Addr,
                         HostSymbolText(F.Addr));
    std::string Where, Library, LibraryFunction;
    bool Write = F.Signo == SIGSEGV && (F.PageFaultCode & 2);
    if (F.CheckedSite[0]) {
      // The checker reads what a kernel's store would change before the store
      // lands: a fault there is the kernel's access at its site, not a read of
      // the checker's code.
      Where = std::string(F.CheckedSite, strnlen(F.CheckedSite, sizeof F.CheckedSite));
      Write = F.CheckedWrite != 0;
    } else {
      std::string Sym = symbolize(F.Rip);
      Where = deviceCodeText(F.Rip, Sym);
      // Code of a library the device code called (libm's sincos, libc's
      // memcpy): its function and file, which the runtime's advice names.
      if (Sym.empty() && F.CodeObject[0]) {
        std::string Path(F.CodeObject, strnlen(F.CodeObject, sizeof F.CodeObject));
        Library = llvm::sys::path::filename(Path).str();
        uint64_t LinkAddress = 0;
        std::optional<ImageSymbolTable::SymbolAt> At;
        if (auto Symbols = ImageSymbolTable::fromLibraryFile(Path, F.CodeFileOffset, LinkAddress))
          At = Symbols->lookup(LinkAddress);
        if (At)
          LibraryFunction = At->Name;
        Where = At ? fmt::format("{}+0x{:x} in {} (0x{:x})", At->Name, At->Offset, Library, F.Rip)
                   : fmt::format("{}+0x{:x} (0x{:x})", Library, F.CodeFileOffset, F.Rip);
      }
    }
    if (isStackOverflow(F)) {
      uint64_t StackKiB = (F.StackHigh - F.StackLow) / 1024;
      std::string Place =
          F.Addr < F.StackLow
              ? fmt::format("{} bytes below the {} KiB stack of the device thread", F.StackLow - F.Addr,
                            StackKiB)
              : fmt::format("at the bottom of the {} KiB stack of the device thread", StackKiB);
      return fmt::format("{}stack overflow {} {}: {} ({}) at address 0x{:x}, {}, instruction at {}", Dev,
                         StringRef(Context).starts_with("kernel ") ? "in" : "while", Context, faultKind(F),
                         signalName(F.Signo), F.Addr, Place, Where);
    }
    // A read of a host vtable keeps the function-pointer advisor's line (the
    // call site's missing translation); any other data address goes to the
    // runtime, which knows the mappings.
    auto HostSym = HostObject.empty() ? std::nullopt : Hs.lookup(F.Addr);
    bool Vtable = HostSym && StringRef(HostSym->Name).starts_with("vtable for ");
    if (F.Signo == SIGSEGV && F.Rip != F.Addr && !Vtable) {
      LastDataFault = DataFault{F.Addr, Write, Context, Where, Library, LibraryFunction};
      if (std::optional<GuardHit> Hit = Guarded ? Guarded->classify(F.Addr) : std::nullopt) {
        LastDataFault->GuardKind =
            Hit->What == GuardHit::PastEnd ? DataFault::Guard::PastEnd : DataFault::Guard::Freed;
        LastDataFault->GuardBlock = Hit->Block;
        LastDataFault->GuardOffset = Hit->Offset;
      }
      if (F.Message[0]) {
        LastDataFault->DeviceWhat = RuntimeText();
        LastDataFault->DeviceNote = std::string(F.Advice, strnlen(F.Advice, sizeof F.Advice));
      }
    }
    if (!HostObject.empty())
      return fmt::format("{}{} {} host data at host:0x{:x} ({}) from {}", Dev, Context,
                         Write ? "wrote" : "read", F.Addr, HostSymbolText(F.Addr), Where);
    if (F.Signo == SIGSEGV && F.Rip == F.Addr && F.Addr < 4096)
      return fmt::format("{}{} called a null function pointer (0x{:x})", Dev, Context, F.Addr);
    if (F.Signo == SIGSEGV || F.Signo == SIGBUS) {
      // Say on which side the address lies, where that is known; under the map
      // checker, a guard page or a quarantined block says why.
      bool InArena = F.Addr >= Opts.ArenaBase && F.Addr - Opts.ArenaBase < Opts.ArenaSize;
      const char *Side = InArena ? "dev:" : F.Addr >= 4096 && hostMemoryRegion(F.Addr) ? "host:" : "";
      std::string Guard = LastDataFault && !LastDataFault->DeviceWhat.empty() ? LastDataFault->DeviceWhat
                          : Guarded                                           ? Guarded->describe(F.Addr)
                                                                              : std::string();
      return fmt::format("{}{}: {} ({}) at address {}0x{:x}{}, instruction at {}", Dev, Context, faultKind(F),
                         signalName(F.Signo), Side, F.Addr, Guard.empty() ? Guard : ", " + Guard, Where);
    }
    return fmt::format("{}{}: {} ({}) at {}", Dev, Context, faultKind(F), signalName(F.Signo), Where);
  }
  if (Status == -1)
    return fmt::format("{}executor (pid {}) died during {}", Dev, Pid, Context);
  if (WIFSIGNALED(Status))
    return fmt::format("{}executor (pid {}) was killed by signal {} ({}) during {}", Dev, Pid,
                       WTERMSIG(Status), signalName(WTERMSIG(Status)), Context);
  return fmt::format("{}executor (pid {}) exited with status {} during {}", Dev, Pid, WEXITSTATUS(Status),
                     Context);
}

Error DeviceController::diagnose(Error CallError, const std::string &Context) {
  if (!CallError)
    return CallError;
  int Status = 0;
  // A lost connection means the executor is exiting or gone; give it a moment.
  if (!waitFor(Pid, 2.0, Status)) {
    // Still alive: an ordinary error the executor reported (bad image, ...).
    return makeError(
        fmt::format("device {}: {}: {}", Opts.DeviceId, Context, toString(std::move(CallError))));
  }
  consumeError(std::move(CallError));
  DeathMessage = describeDeath(Status, Context);
  if (LastHostFault && FaultAdvisor) {
    std::string Note = FaultAdvisor(*LastHostFault);
    if (!Note.empty())
      DeathMessage += "; " + Note;
  }
  Pid = -1; // reaped
  OMPSIM_TRACE_EVENT(Cat::Fault, "executor-death").num("device", Opts.DeviceId).str("message", DeathMessage);
  return makeError(DeathMessage);
}

std::optional<DataFault> DeviceController::lastDataFault() {
  std::lock_guard<std::recursive_mutex> Lock(Mu);
  return LastDataFault;
}

void DeviceController::setFaultAdvisor(std::function<std::string(const HostFault &)> Advisor) {
  std::lock_guard<std::recursive_mutex> Lock(Mu);
  FaultAdvisor = std::move(Advisor);
}

std::string DeviceController::symbolize(uint64_t Addr) {
  std::lock_guard<std::recursive_mutex> Lock(Mu);
  for (auto &[id, img] : Images)
    if (!img.Symbols && (!img.ElfBytes.empty() || !img.ElfView.empty()))
      img.Symbols = std::make_unique<ImageSymbolTable>(ImageSymbolTable::fromElf(
          img.ElfBytes.empty() ? img.ElfView : llvm::ArrayRef<char>(img.ElfBytes), img.Base));
  for (auto &[id, img] : Images)
    if (Addr >= img.Base && Addr < img.Base + img.Size && img.Symbols) {
      std::string S = img.Symbols->symbolize(Addr);
      if (!S.empty())
        return S;
    }
  for (auto &[id, img] : Images)
    if (img.Symbols) {
      std::string S = img.Symbols->symbolize(Addr);
      if (!S.empty())
        return S;
    }
  // Lazily compiled bodies of bitcode images lie outside their image's stubs.
  return Jit ? Jit->symbolize(Addr) : "";
}

} // namespace ompsim::sim

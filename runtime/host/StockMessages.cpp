// The diagnostics stock libomptarget 22 prints, in its own words (see
// StockMessages.h). The texts follow LLVM 22's offload/libomptarget
// (omptarget.cpp, OpenMP/Mapping.cpp, PluginManager.cpp) and its
// Shared/Debug.h prefixes; tests/mapping/test_stock_messages.py compares them
// with what stock prints for the same programs.
#include "StockMessages.h"

#include "InfoLevel.h"
#include "MapFlags.h"
#include "MapNames.h"

#include "ompsim/OpenMPRegistration.h"
#include "ompsim/Trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <unistd.h>

namespace ompsim::host::stock {

char StockError::ID = 0;

void StockError::log(llvm::raw_ostream &OS) const { OS << Explanation; }

std::error_code StockError::convertToErrorCode() const { return llvm::inconvertibleErrorCode(); }

llvm::Error makeError(std::vector<std::string> Lines, std::string Explanation) {
  return llvm::make_error<StockError>(std::move(Lines), std::move(Explanation));
}

llvm::Error addLine(llvm::Error Err, std::string Line) {
  return llvm::handleErrors(std::move(Err), [&](std::unique_ptr<StockError> E) -> llvm::Error {
    E->Lines.push_back(std::move(Line));
    return llvm::Error(std::move(E));
  });
}

namespace {

/// Stock's DPxMOD: "0x" and the address in 16 zero-padded hex digits.
std::string address(uint64_t Addr) { return fmt::format("{:#018x}", Addr); }

/// OpenMPOffloadingRequiresDirFlags (clang's `requires` entry data), in the
/// order stock checks them.
constexpr std::pair<int64_t, const char *> RequiresClauses[] = {
    {0x2, "reverse_offload"},
    {0x4, "unified_address"},
    {0x8, "unified_shared_memory"},
    {0x10, "dynamic_allocators"},
};

/// The file base name, line and column of an ident_t
/// (";file;function;line;col;;") as stock's SourceInfo reads them; "unknown"
/// and zeros where the program was built without debug information.
struct SourceInfo {
  std::string File = "unknown";
  std::string Line = "0";
  std::string Column = "0";

  explicit SourceInfo(const ompsim_ident *Loc) {
    if (!Loc || !Loc->psource)
      return;
    std::vector<std::string_view> Fields;
    std::string_view S(Loc->psource);
    for (size_t Pos = 0; Pos <= S.size();) {
      size_t End = std::min(S.find(';', Pos), S.size());
      Fields.push_back(S.substr(Pos, End - Pos));
      Pos = End + 1;
    }
    // Fields: "", file, function, line, column, ...
    if (Fields.size() < 5)
      return;
    std::string_view Name = Fields[1];
    if (size_t Slash = Name.rfind('/'); Slash != std::string_view::npos)
      Name.remove_prefix(Slash + 1);
    if (!Name.empty())
      File = Name;
    if (!Fields[3].empty())
      Line = Fields[3];
    if (!Fields[4].empty())
      Column = Fields[4];
  }

  bool available() const { return Line != "0" || Column != "0"; }
};

/// What Runtime::fatal does before the process ends, then abort() as stock.
[[noreturn]] void abortProcess(const std::string &Explanation) {
  std::fflush(nullptr);
  if (!Explanation.empty())
    trace::error(Explanation);
  trace::flush();
  // abort() skips libomp's destructor, which would remove this file.
  removeOpenMPRegistration(::getpid());
  std::abort();
}

} // namespace

std::string message(const std::string &Text) { return "omptarget message: " + Text; }

std::string error(const std::string &Text) { return "omptarget error: " + Text; }

std::string presentMissing(uint64_t HostAddr, int64_t Size) {
  return message(fmt::format("device mapping required by 'present' map type modifier does not exist for "
                             "host address {} ({} bytes)",
                             address(HostAddr), Size));
}

std::string presentMotionMissing(uint64_t HostAddr, int64_t Size) {
  return message(fmt::format("device mapping required by 'present' motion modifier does not exist for "
                             "host address {} ({} bytes)",
                             address(HostAddr), Size));
}

std::string explicitExtension(uint64_t HostAddr, int64_t Size, uint64_t MappedAddr, int64_t MappedSize) {
  return message(fmt::format("explicit extension not allowed: host address specified is {} ({} bytes), but "
                             "device allocation maps to host at {} ({} bytes)",
                             address(HostAddr), Size, address(MappedAddr), MappedSize));
}

std::string nullTargetPointer(bool Present) {
  return error(fmt::format("Call to getTargetPointer returned null pointer ({}).",
                           Present ? "'present' map type modifier" : "device failure or illegal mapping"));
}

std::string imagesNotLoaded(int64_t DeviceNum) {
  return fmt::format("\"the plugin backend is in an invalid or unsupported state\" failed to load images on "
                     "device '{}'",
                     DeviceNum);
}

std::string mapperFailed(const char *Function) {
  // Stock ends the begin line without a period and the others with one.
  std::string_view F(Function);
  return error(fmt::format("Call to {} via targetDataMapper for custom mapper failed{}", F,
                           F == "targetDataBegin" ? "" : "."));
}

const char *const DataBeginFailed = "Call to targetDataBegin failed, abort target.";
const char *const DataEndFailed = "Call to targetDataEnd failed, abort target.";
const char *const BeforeKernelFailed = "Failed to process data before launching the kernel.";
const char *const AfterKernelFailed = "Failed to process data after launching the kernel.";
const char *const KernelFailed = "Executing target region abort target.";
const char *const DisassociateHeld = "Trying to disassociate a pointer with a non-zero hold reference count";
const char *const DisassociateNotAssociated =
    "Trying to disassociate a pointer which was not mapped via omp_target_associate_ptr";
const char *const AssociationNotFound = "Association not found";

std::string infoLine(int DeviceNum, const std::string &Text) {
  return fmt::format("omptarget device {} info: {}", DeviceNum, Text);
}

bool infoOn(uint32_t Bit) { return (infoLevel() & Bit) != 0; }

void printInfo(int DeviceNum, const std::string &Text) { print(infoLine(DeviceNum, Text)); }

namespace {

/// A map name's parts as stock's SourceInfo reads them for a table row.
struct MapNameParts {
  std::string Name = "unknown", File = "unknown", Line = "0", Column = "0";

  explicit MapNameParts(const void *MapName) {
    std::string_view S = MapName ? static_cast<const char *>(MapName) : "";
    if (S.empty())
      return;
    if (S.find(';') == std::string_view::npos) {
      Name = S;
      return;
    }
    Name = mapNameField(S, 0);
    std::string_view F = mapNameField(S, 1);
    if (size_t Slash = F.rfind('/'); Slash != std::string_view::npos)
      F.remove_prefix(Slash + 1);
    if (!F.empty())
      File = F;
    if (!mapNameField(S, 2).empty())
      Line = mapNameField(S, 2);
    if (!mapNameField(S, 3).empty())
      Column = mapNameField(S, 3);
  }
};

const char *actionText(RefAction Action) {
  switch (Action) {
  case RefAction::Incremented:
    return " (incremented)";
  case RefAction::UpdateSuppressed:
    return " (update suppressed)";
  case RefAction::Decremented:
    return " (decremented)";
  case RefAction::DelayedDeletion:
    return " (decremented, delayed deletion)";
  case RefAction::ResetDeletion:
    return " (reset, delayed deletion)";
  }
  return "";
}

/// "DynRefCount=D<action>, HoldRefCount=H<action>": the action follows the
/// count it applies to.
std::string counts(uint64_t DynRef, uint64_t HoldRef, bool Hold, RefAction Action) {
  const char *Text = actionText(Action);
  return fmt::format("DynRefCount={}{}, HoldRefCount={}{}", refCount(DynRef), Hold ? "" : Text,
                     refCount(HoldRef), Hold ? Text : "");
}

/// The name of a map item's type in a kernel-arguments line, in the order
/// stock tests the bits.
const char *itemType(int64_t Type, int64_t Size) {
  using mapflag::has;
  if (has(Type, mapflag::Attach))
    return "attach";
  if (has(Type, mapflag::To) && has(Type, mapflag::From))
    return "tofrom";
  if (has(Type, mapflag::To))
    return "to";
  if (has(Type, mapflag::From))
    return "from";
  if (has(Type, mapflag::Private))
    return "private";
  if (has(Type, mapflag::Literal))
    return "firstprivate";
  return Size != 0 ? "alloc" : "use_address";
}

} // namespace

std::string itemName(const void *MapName) {
  if (!MapName)
    return "unknown";
  std::string_view S(static_cast<const char *>(MapName));
  return std::string(S.find(';') == std::string_view::npos ? S : mapNameField(S, 0));
}

std::string refCount(uint64_t Count) {
  return Count == std::numeric_limits<uint64_t>::max() ? std::string("INF") : std::to_string(Count);
}

const char *const RegionKernel = "Entering OpenMP kernel";
const char *const RegionDataBegin = "Entering OpenMP data region with being_mapper";
const char *const RegionDataEnd = "Exiting OpenMP data region with end_mapper";
const char *const RegionDataUpdate = "Updating data within the OpenMP data region with update_mapper";
const char *const RegionDataBeginNowait = "Entering OpenMP data region with being_nowait_mapper";
const char *const RegionDataEndNowait = "Exiting OpenMP data region with end_nowait_mapper";
const char *const RegionDataUpdateNowait =
    "Updating data within the OpenMP data region with update_nowait_mapper";
const char *const ExitBlock = "libomptarget:0:0";

std::vector<std::string> regionArguments(const char *Region, const ompsim_ident *Loc, size_t N,
                                         const int64_t *Sizes, const int64_t *Types, void *const *Names) {
  std::vector<std::string> Lines;
  Lines.reserve(N + 1);
  Lines.push_back(fmt::format("{} at {} with {} arguments:", Region, blockLocation(Loc), N));
  for (size_t I = 0; I < N; ++I) {
    int64_t Size = Sizes ? Sizes[I] : 0;
    int64_t Type = Types ? Types[I] : 0;
    // Stock ends the line with a space, then "(implicit)" or nothing.
    Lines.push_back(fmt::format("{}({})[{}] {}", itemType(Type, Size), itemName(Names ? Names[I] : nullptr),
                                Size, mapflag::has(Type, mapflag::Implicit) ? "(implicit)" : ""));
  }
  return Lines;
}

std::string mappingExistsOnEntry(bool Implicit, uint64_t HstBegin, uint64_t TgtBegin, int64_t Size,
                                 uint64_t DynRef, uint64_t HoldRef, bool Hold, RefAction Action,
                                 const std::string &Name) {
  return fmt::format("Mapping exists{} with HstPtrBegin={}, TgtPtrBegin={}, Size={}, {}, Name={}",
                     Implicit ? " (implicit)" : "", address(HstBegin), address(TgtBegin), Size,
                     counts(DynRef, HoldRef, Hold, Action), Name);
}

std::string mappingExists(uint64_t HstBegin, uint64_t TgtBegin, int64_t Size, uint64_t DynRef,
                          uint64_t HoldRef, bool Hold, RefAction Action) {
  return fmt::format("Mapping exists with HstPtrBegin={}, TgtPtrBegin={}, Size={}, {}", address(HstBegin),
                     address(TgtBegin), Size, counts(DynRef, HoldRef, Hold, Action));
}

std::string creatingEntry(uint64_t HstBase, uint64_t HstBegin, uint64_t TgtAllocBegin, uint64_t TgtBegin,
                          int64_t Size, uint64_t DynRef, uint64_t HoldRef, const std::string &Name) {
  return fmt::format("Creating new map entry with HstPtrBase={}, HstPtrBegin={}, TgtAllocBegin={}, "
                     "TgtPtrBegin={}, Size={}, DynRefCount={}, HoldRefCount={}, Name={}",
                     address(HstBase), address(HstBegin), address(TgtAllocBegin), address(TgtBegin), Size,
                     refCount(DynRef), refCount(HoldRef), Name);
}

std::string removingEntry(uint64_t HstBegin, uint64_t TgtBegin, int64_t Size, const std::string &Name) {
  return fmt::format("Removing map entry with HstPtrBegin={}, TgtPtrBegin={}, Size={}, Name={}",
                     address(HstBegin), address(TgtBegin), Size, Name);
}

std::string noDeviceCounterpart(const std::string &Name) {
  return fmt::format("variable {} does not have a valid device counterpart", Name);
}

std::string copyLine(bool ToDevice, uint64_t Hst, uint64_t Tgt, uint64_t Size, const std::string &Name) {
  const std::string &Shown = Name.empty() ? std::string("unknown") : Name;
  if (ToDevice)
    return fmt::format("Copying data from host to device, HstPtr={}, TgtPtr={}, Size={}, Name={}",
                       address(Hst), address(Tgt), Size, Shown);
  return fmt::format("Copying data from device to host, TgtPtr={}, HstPtr={}, Size={}, Name={}", address(Tgt),
                     address(Hst), Size, Shown);
}

std::string tableEmpty() { return "OpenMP Host-Device pointer mappings table empty"; }

std::string tableHeader(const std::string &Where) {
  return fmt::format("OpenMP Host-Device pointer mappings after block at {}:", Where);
}

std::string tableColumns() {
  return "Host Ptr           Target Ptr         Size (B) DynRefCount HoldRefCount Declaration";
}

std::string tableRow(uint64_t HstBegin, uint64_t TgtBegin, uint64_t Size, uint64_t DynRef, uint64_t HoldRef,
                     const void *MapName, const std::string &Symbol) {
  MapNameParts Parts(MapName);
  if (!MapName && !Symbol.empty())
    Parts.Name = Symbol;
  return fmt::format("{} {} {:<8} {:<11} {:<12} {} at {}:{}:{}", address(HstBegin), address(TgtBegin), Size,
                     refCount(DynRef), refCount(HoldRef), Parts.Name, Parts.File, Parts.Line, Parts.Column);
}

std::string requiresMismatch(int64_t First, int64_t Later) {
  for (const auto &[Flag, Clause] : RequiresClauses)
    if ((First & Flag) != (Later & Flag))
      return fmt::format("'#pragma omp requires {}' not used consistently!", Clause);
  return {};
}

void print(const std::string &Line) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s\n", Line.c_str());
  std::fflush(stderr);
}

std::string blockLocation(const ompsim_ident *Loc) {
  SourceInfo Info(Loc);
  return fmt::format("{}:{}:{}", Info.File, Info.Line, Info.Column);
}

std::string sourceLine(const ompsim_ident *Loc) {
  SourceInfo Info(Loc);
  return Info.available() ? fmt::format("{}:{}", Info.File, Info.Line) : std::string();
}

void claimProcessEnd() {
  static std::atomic<pid_t> Ender{0};
  pid_t Self = ::gettid();
  pid_t None = 0;
  if (Ender.compare_exchange_strong(None, Self) || None == Self)
    return;
  for (;;)
    ::pause(); // the other thread's exit or abort() ends this one too
}

void abortWithReport(const std::string &Report) {
  claimProcessEnd();
  std::fflush(stdout);
  std::fputs(Report.c_str(), stderr);
  abortProcess("");
}

void fatal(int Code, const std::string &Text, const std::string &Explanation, const ompsim_ident *Loc) {
  claimProcessEnd();
  std::fflush(stdout);
  SourceInfo Info(Loc);
  std::string Where = Info.available() ? blockLocation(Loc) + ": " : std::string();
  std::fprintf(stderr, "%somptarget fatal error %d: %s\n", Where.c_str(), Code, Text.c_str());
  abortProcess(Explanation);
}

void failTargetConstruct(StockError &Err, const ompsim_ident *Loc, llvm::function_ref<void()> DumpTables) {
  for (const std::string &Line : Err.Lines)
    print(Line);
  if (infoOn(info::DumpTable)) {
    if (DumpTables)
      DumpTables();
  } else {
    print(error("Consult https://openmp.llvm.org/design/Runtimes.html for debugging options."));
  }
  if (!SourceInfo(Loc).available())
    print(error("Source location information not present. Compile with -g or -gline-tables-only."));
  fatal(1, "failure of target construct while offloading is mandatory", Err.Explanation, Loc);
}

} // namespace ompsim::host::stock

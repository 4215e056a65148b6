// The diagnostics stock libomptarget 22 prints, in its own words (see
// StockMessages.h). The texts follow LLVM 22's offload/libomptarget
// (omptarget.cpp, OpenMP/Mapping.cpp, PluginManager.cpp) and its
// Shared/Debug.h prefixes; tests/mapping/test_stock_messages.py compares them
// with what stock prints for the same programs.
#include "StockMessages.h"

#include "InfoLevel.h"

#include "ompsim/OpenMPRegistration.h"
#include "ompsim/Trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
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

/// OMP_INFOTYPE_DUMP_TABLE of LIBOMPTARGET_INFO.
constexpr uint32_t InfoDumpTable = 0x4;

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
  if (infoLevel() & InfoDumpTable) {
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

// Reads every OMPSIM_* variable (see README for the table) and the variables of stock
// libomptarget 22 (see docs/environment.md).
#include "ompsim/Config.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>

#include <unistd.h>

namespace ompsim {
namespace {

const char *env(const char *Name) {
  const char *V = std::getenv(Name);
  return (V && *V) ? V : nullptr;
}

void warnBad(const char *Name, const char *Value, const char *Problem, const char *Expected) {
  std::fprintf(stderr, "ompsim: ignoring %s='%s': %s (expected %s)\n", Name, Value, Problem, Expected);
}

/// Parses the whole of `s` as an unsigned integer (decimal, or hex with 0x);
/// no sign, no spaces, no trailing characters. Returns the problem, or null.
const char *parseWholeU64(std::string_view S, uint64_t &Out) {
  if (S.empty())
    return "not a number";
  int Base = 10;
  if (S.size() > 2 && S[0] == '0' && (S[1] == 'x' || S[1] == 'X')) {
    Base = 16;
    S.remove_prefix(2);
  }
  uint64_t X = 0;
  for (char Ch : S) {
    unsigned D;
    if (Ch >= '0' && Ch <= '9')
      D = unsigned(Ch - '0');
    else if (Base == 16 && Ch >= 'a' && Ch <= 'f')
      D = unsigned(Ch - 'a' + 10);
    else if (Base == 16 && Ch >= 'A' && Ch <= 'F')
      D = unsigned(Ch - 'A' + 10);
    else
      return "not a whole non-negative number";
    if (X > (UINT64_MAX - D) / uint64_t(Base))
      return "too large";
    X = X * uint64_t(Base) + D;
  }
  Out = X;
  return nullptr;
}

/// Reads an unsigned integer variable, strictly: the whole string, an
/// optional K/M/G (or KiB/MiB/GiB) suffix when `sizes`, no overflow, and a
/// value in [lo, hi]. A bad value is named once and the default is kept.
void readU64(const char *Name, uint64_t &Out, uint64_t Lo, uint64_t Hi, const char *Expected,
             bool Sizes = false) {
  const char *V = env(Name);
  if (!V)
    return;
  std::string_view S(V);
  uint64_t Mul = 1;
  if (Sizes) {
    for (auto [suffix, m] : {std::pair<std::string_view, uint64_t>{"KiB", 1ULL << 10},
                             {"MiB", 1ULL << 20},
                             {"GiB", 1ULL << 30},
                             {"K", 1ULL << 10},
                             {"M", 1ULL << 20},
                             {"G", 1ULL << 30}}) {
      if (S.size() > suffix.size() && S.substr(S.size() - suffix.size()) == suffix) {
        S.remove_suffix(suffix.size());
        Mul = m;
        break;
      }
    }
  }
  uint64_t X = 0;
  if (const char *Problem = parseWholeU64(S, X))
    return warnBad(Name, V, Problem, Expected);
  if (X > UINT64_MAX / Mul)
    return warnBad(Name, V, "too large", Expected);
  X *= Mul;
  if (X < Lo || X > Hi)
    return warnBad(Name, V, "out of range", Expected);
  Out = X;
}

/// Reads a positive, finite number of seconds (at most a year); strtod's
/// "nan", "inf" and hex floats are refused, as is anything after the number.
/// True when a valid value was read.
bool readSeconds(const char *Name, double &Out) {
  const char *V = env(Name);
  if (!V)
    return false;
  constexpr const char *kExpected = "seconds, a number > 0 and <= 31536000";
  for (const char *P = V; *P; ++P)
    if (!std::isdigit(static_cast<unsigned char>(*P)) && *P != '.' && *P != 'e' && *P != 'E' && *P != '-' &&
        *P != '+')
      return warnBad(Name, V, "not a number", kExpected), false;
  char *End = nullptr;
  errno = 0;
  double T = std::strtod(V, &End);
  if (End == V || *End || errno == ERANGE || !std::isfinite(T))
    return warnBad(Name, V, "not a number", kExpected), false;
  if (T <= 0 || T > 31536000)
    return warnBad(Name, V, "out of range", kExpected), false;
  Out = T;
  return true;
}

std::vector<std::string> splitList(std::string_view S) {
  std::vector<std::string> Out;
  while (!S.empty()) {
    size_t Comma = S.find(',');
    std::string_view Item = S.substr(0, Comma);
    if (!Item.empty())
      Out.emplace_back(Item);
    if (Comma == std::string_view::npos)
      break;
    S.remove_prefix(Comma + 1);
  }
  return Out;
}

/// Reads a stock int variable the way stock libomptarget 22 does (std::stoi:
/// leading white space, an optional sign, decimal digits within int, so -1 is
/// every bit of a mask), but wholly: stock takes "32abc" as 32 and aborts on
/// "abc"; here both are refused with one line. Beyond stock, a 0x hex mask and
/// decimals up to 0xffffffff are taken as the bits they spell (stock reads
/// "0x20" as 0 and aborts on 4294967295).
void readStockBits(const char *Name, uint32_t &Out) {
  const char *V = env(Name);
  if (!V)
    return;
  constexpr const char *kExpected = "a decimal integer as stock reads it (-1: every bit) or a 0x hex mask, "
                                    "at most 0xffffffff";
  std::string_view S(V);
  while (!S.empty() && std::isspace(static_cast<unsigned char>(S.front())))
    S.remove_prefix(1);
  bool Negative = false;
  if (!S.empty() && (S.front() == '-' || S.front() == '+')) {
    Negative = S.front() == '-';
    S.remove_prefix(1);
    if (S.size() > 1 && S[0] == '0' && (S[1] == 'x' || S[1] == 'X'))
      return warnBad(Name, V, "a sign before a hex number", kExpected);
  }
  uint64_t X = 0;
  if (const char *Problem = parseWholeU64(S, X))
    return warnBad(Name, V, std::string_view(Problem) == "too large" ? Problem : "not a whole number",
                   kExpected);
  if (Negative ? X > (1ULL << 31) : X > UINT32_MAX)
    return warnBad(Name, V, "out of range", kExpected);
  // A negative int's bits, as stock stores std::stoi's result in a uint32_t.
  Out = Negative ? static_cast<uint32_t>(-static_cast<int64_t>(X)) : static_cast<uint32_t>(X);
}

/// The set ones of the variables stock libomptarget 22 and its plugins read
/// that ompsim does not honour, in the order of docs/environment.md's table.
std::vector<std::string> ignoredStockVariables() {
  static constexpr const char *kNotHonoured[] = {
      "LIBOMPTARGET_DEBUG",
      "LIBOMPTARGET_KERNEL_TRACE",
      "LIBOMPTARGET_STACK_SIZE",
      "LIBOMPTARGET_HEAP_SIZE",
      "LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD",
      "LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS",
      "LIBOMPTARGET_TREAT_ATTACH_AUTO_AS_ALWAYS",
      "LIBOMPTARGET_NUM_INITIAL_STREAMS",
      "LIBOMPTARGET_NUM_INITIAL_EVENTS",
      "LIBOMPTARGET_JIT_REPLACEMENT_OBJECT",
      "LIBOMPTARGET_RECORD",
      "LIBOMPTARGET_RR_SAVE_OUTPUT",
      "LIBOMPTARGET_DEVICE_RTL_DEBUG",
      "OMPTARGET_DUMP_OFFLOAD_ENTRIES",
      "OMPTARGET_QUERY_COUNT_MAX",
      "OMPTARGET_QUERY_COUNT_THRESHOLD",
      "OMPTARGET_QUERY_COUNT_BACKOFF_FACTOR",
      "OMPX_APU_MAPS",
      "OMP_TEAM_LIMIT",
  };
  std::vector<std::string> Set;
  for (const char *Name : kNotHonoured)
    if (env(Name))
      Set.emplace_back(Name);
  // Maps are always atomic here (each device's table is locked), which is
  // stock's default; only a request to turn that off goes unhonoured.
  if (const char *V = env("LIBOMPTARGET_MAP_FORCE_ATOMIC"))
    if (parseStockBool(V) != std::optional<bool>(true))
      Set.emplace_back("LIBOMPTARGET_MAP_FORCE_ATOMIC");
  // The AMD GPU plugin's own variables have nothing to act on here.
  for (char **E = environ; *E; ++E) {
    std::string_view Entry(*E);
    size_t Eq = Entry.find('=');
    if (Entry.starts_with("LIBOMPTARGET_AMDGPU_") && Eq != std::string_view::npos && Eq + 1 < Entry.size())
      Set.emplace_back(Entry.substr(0, Eq));
  }
  return Set;
}

/// Reads a stock flag as stock's BoolEnvar does; an unreadable value is named
/// once and `Out` kept.
void readStockFlag(const char *Name, bool &Out) {
  const char *V = env(Name);
  if (!V)
    return;
  if (std::optional<bool> B = parseStockBool(V))
    Out = *B;
  else
    warnBad(Name, V, "not a flag", "true/yes/on/1 or false/no/off/0");
}

/// Reads stock libomptarget's JIT variables. Stock reads the level as an
/// unsigned int and fails on one above 3; here that is refused in one line.
void readStockJit(Config::StockJit &Jit) {
  if (const char *V = env("LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE"))
    Jit.PreOptIrModule = V;
  if (const char *V = env("LIBOMPTARGET_JIT_POST_OPT_IR_MODULE"))
    Jit.PostOptIrModule = V;
  if (const char *V = env("LIBOMPTARGET_JIT_SAVE_IMAGE_FILENAME"))
    Jit.SaveImage = V;
  if (const char *V = env("LIBOMPTARGET_JIT_REPLACEMENT_MODULE"))
    Jit.ReplacementModule = V;
  uint64_t Level = UINT64_MAX;
  readU64("LIBOMPTARGET_JIT_OPT_LEVEL", Level, 0, 3, "an integer 0..3");
  if (Level <= 3)
    Jit.OptLevel = int32_t(Level);
  readStockFlag("LIBOMPTARGET_JIT_SKIP_OPT", Jit.SkipOpt);
}

/// The JIT cache's folder: OMPSIM_JIT_CACHE, or "" for "off", or by default
/// (like CUDA's ComputeCache, on unless turned off) "ompsim/jit" under the
/// XDG cache folder: $XDG_CACHE_HOME when it is an absolute path (the XDG
/// base directory rule), else $HOME/.cache; "" without either.
std::string jitCacheFolder() {
  if (const char *V = env("OMPSIM_JIT_CACHE"))
    return std::string_view(V) == "off" ? std::string() : std::string(V);
  if (const char *Xdg = env("XDG_CACHE_HOME"); Xdg && *Xdg == '/')
    return std::string(Xdg) + "/ompsim/jit";
  if (const char *Home = env("HOME"))
    return std::string(Home) + "/.cache/ompsim/jit";
  return std::string();
}

Config load() {
  Config C;
  if (const char *V = env("OMPSIM_TRACE"))
    C.Trace = V;
  if (const char *V = env("OMPSIM_TRACE_FILE"))
    C.TraceFile = V;
  if (const char *V = env("OMPSIM_CHECK")) {
    std::string_view S(V);
    if (S == "0" || S == "off")
      C.Check = 0;
    else if (S == "1" || S == "report")
      C.Check = 1;
    else if (S == "strict")
      C.Check = 2;
    else
      warnBad("OMPSIM_CHECK", V, "not a checker mode", "0, 1 (report) or strict");
  }
  if (const char *V = env("OMPSIM_TRACE_NORMALIZE")) {
    if (std::string_view(V) == "0" || std::string_view(V) == "1")
      C.TraceNormalize = *V == '1';
    else
      warnBad("OMPSIM_TRACE_NORMALIZE", V, "not a flag", "0 or 1");
  }
  if (const char *V = env("OMPSIM_GPU_FIBERS")) {
    if (std::string_view(V) == "0" || std::string_view(V) == "1")
      C.GpuFibers = *V == '1';
    else
      warnBad("OMPSIM_GPU_FIBERS", V, "not a flag", "0 or 1");
  }
  if (const char *V = env("OMPSIM_GPU_BLOCK_LOOPS")) {
    if (std::string_view(V) == "0" || std::string_view(V) == "1")
      C.GpuBlockLoops = *V == '1';
    else
      warnBad("OMPSIM_GPU_BLOCK_LOOPS", V, "not a flag", "0 or 1");
  }
  if (const char *V = env("OMPSIM_SIM_GPU")) {
    if (std::string_view(V) == "nvptx64" || std::string_view(V) == "amdgcn")
      C.SimGpu = V;
    else
      warnBad("OMPSIM_SIM_GPU", V, "not a GPU the simulated device runs", "nvptx64 or amdgcn");
  }
  readU64("OMPSIM_TRACE_TRANSLATE_CAP", C.TraceTranslateCap, 0, 1ULL << 32, "an integer 0..4294967296");
  if (const char *V = env("OMPSIM_PLUGINS"))
    C.Plugins = splitList(V);
  uint64_t NumDevices = uint64_t(C.NumDevices);
  readU64("OMPSIM_NUM_DEVICES", NumDevices, 1, 64, "an integer 1..64");
  C.NumDevices = int32_t(NumDevices);
  // User space ends at 2^47 on x86-64 and the arenas of up to 64 devices
  // sit 2^40 apart from the base.
  constexpr const char *kBaseExpected = "a page-aligned address 0x100000000..0x7f0000000000";
  readU64("OMPSIM_DEVICE_BASE", C.DeviceBase, 1ULL << 32, 0x7f0000000000ULL, kBaseExpected);
  if (C.DeviceBase % 4096) {
    warnBad("OMPSIM_DEVICE_BASE", env("OMPSIM_DEVICE_BASE"), "not page-aligned", kBaseExpected);
    C.DeviceBase = Config().DeviceBase;
  }
  readU64("OMPSIM_DEVICE_MEMORY", C.DeviceMemory, 1ULL << 20, 1ULL << 40,
          "a size 1M..1024G (suffixes K, M, G)", /*sizes=*/true);
  uint64_t DeviceThreads = C.DeviceThreads;
  readU64("OMPSIM_DEVICE_THREADS", DeviceThreads, 1, 4096, "an integer 1..4096");
  C.DeviceThreads = uint32_t(DeviceThreads);
  uint64_t SliceUs = C.HiddenHelperSliceUs;
  readU64("OMPSIM_HIDDEN_HELPER_SLICE_US", SliceUs, 0, 100000, "an integer 0..100000");
  C.HiddenHelperSliceUs = uint32_t(SliceUs);
  C.KernelTimeoutSet = readSeconds("OMPSIM_KERNEL_TIMEOUT", C.KernelTimeout);
  readSeconds("OMPSIM_EXECUTOR_START_TIMEOUT", C.ExecutorStartTimeout);
  readStockJit(C.Jit);
  // Stock's JIT generates code at its IR level; OMPSIM_JIT_OPT_LEVEL, when set, decides.
  uint64_t JitOptLevel = C.Jit.OptLevel >= 0 ? uint64_t(C.Jit.OptLevel) : uint64_t(C.JitOptLevel);
  readU64("OMPSIM_JIT_OPT_LEVEL", JitOptLevel, 0, 3, "an integer 0..3");
  C.JitOptLevel = int32_t(JitOptLevel);
  C.JitCache = jitCacheFolder();
  readU64("OMPSIM_JIT_CACHE_MAX", C.JitCacheMax, 1ULL << 10, 1ULL << 40,
          "a size 1K..1024G (suffixes K, M, G)",
          /*sizes=*/true);
  if (const char *V = env("OMPSIM_EXECUTOR"))
    C.Executor = V;
  if (const char *V = env("OMPSIM_LIB_DIR"))
    C.LibDir = V;
  if (const char *V = env("OMP_TARGET_OFFLOAD")) {
    for (const char *P = V; *P; ++P)
      C.OmpTargetOffload.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(*P))));
    if (C.OmpTargetOffload != "MANDATORY" && C.OmpTargetOffload != "DISABLED" &&
        C.OmpTargetOffload != "DEFAULT") {
      warnBad("OMP_TARGET_OFFLOAD", V, "unknown policy", "MANDATORY, DISABLED or DEFAULT");
      C.OmpTargetOffload.clear();
    }
  }
  readStockBits("LIBOMPTARGET_INFO", C.LibomptargetInfo);
  if (const char *V = env("LIBOMPTARGET_PROFILE"))
    C.ProfileFile = V;
  uint64_t Granularity = C.ProfileGranularity;
  readU64("LIBOMPTARGET_PROFILE_GRANULARITY", Granularity, 0, INT32_MAX,
          "microseconds, an integer 0..2147483647");
  C.ProfileGranularity = static_cast<uint32_t>(Granularity);
  readStockFlag("OFFLOAD_TRACK_ALLOCATION_TRACES", C.TrackAllocationTraces);
  if (env("OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES")) {
    uint64_t Traces = 0;
    readU64("OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES", Traces, 0, INT32_MAX, "an integer 0..2147483647");
    C.TrackKernelLaunchTraces = int32_t(Traces);
  }
  C.IgnoredStockVariables = ignoredStockVariables();
  return C;
}

} // namespace

const Config &config() {
  static const Config C = load();
  return C;
}

std::optional<bool> parseStockBool(std::string_view S) {
  std::string Lower;
  for (char Ch : S)
    Lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(Ch))));
  if (Lower == "true" || Lower == "yes" || Lower == "on" || Lower == "1")
    return true;
  if (Lower == "false" || Lower == "no" || Lower == "off" || Lower == "0")
    return false;
  return std::nullopt;
}

} // namespace ompsim

// Reads every OMPSIM_* variable (see README for the table).
#include "ompsim/Config.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace ompsim {
namespace {

const char *env(const char *name) {
  const char *v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

void warnBad(const char *name, const char *value, const char *problem, const char *expected) {
  std::fprintf(stderr, "ompsim: ignoring %s='%s': %s (expected %s)\n", name, value, problem, expected);
}

/// Parses the whole of `s` as an unsigned integer (decimal, or hex with 0x);
/// no sign, no spaces, no trailing characters. Returns the problem, or null.
const char *parseWholeU64(std::string_view s, uint64_t &out) {
  if (s.empty())
    return "not a number";
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  uint64_t x = 0;
  for (char ch : s) {
    unsigned d;
    if (ch >= '0' && ch <= '9')
      d = unsigned(ch - '0');
    else if (base == 16 && ch >= 'a' && ch <= 'f')
      d = unsigned(ch - 'a' + 10);
    else if (base == 16 && ch >= 'A' && ch <= 'F')
      d = unsigned(ch - 'A' + 10);
    else
      return "not a whole non-negative number";
    if (x > (UINT64_MAX - d) / uint64_t(base))
      return "too large";
    x = x * uint64_t(base) + d;
  }
  out = x;
  return nullptr;
}

/// Reads an unsigned integer variable, strictly: the whole string, an
/// optional K/M/G (or KiB/MiB/GiB) suffix when `sizes`, no overflow, and a
/// value in [lo, hi]. A bad value is named once and the default is kept.
void readU64(const char *name, uint64_t &out, uint64_t lo, uint64_t hi, const char *expected,
             bool sizes = false) {
  const char *v = env(name);
  if (!v)
    return;
  std::string_view s(v);
  uint64_t mul = 1;
  if (sizes) {
    for (auto [suffix, m] : {std::pair<std::string_view, uint64_t>{"KiB", 1ULL << 10},
                             {"MiB", 1ULL << 20},
                             {"GiB", 1ULL << 30},
                             {"K", 1ULL << 10},
                             {"M", 1ULL << 20},
                             {"G", 1ULL << 30}}) {
      if (s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix) {
        s.remove_suffix(suffix.size());
        mul = m;
        break;
      }
    }
  }
  uint64_t x = 0;
  if (const char *problem = parseWholeU64(s, x))
    return warnBad(name, v, problem, expected);
  if (x > UINT64_MAX / mul)
    return warnBad(name, v, "too large", expected);
  x *= mul;
  if (x < lo || x > hi)
    return warnBad(name, v, "out of range", expected);
  out = x;
}

/// Reads a positive, finite number of seconds (at most a year); strtod's
/// "nan", "inf" and hex floats are refused, as is anything after the number.
/// True when a valid value was read.
bool readSeconds(const char *name, double &out) {
  const char *v = env(name);
  if (!v)
    return false;
  constexpr const char *kExpected = "seconds, a number > 0 and <= 31536000";
  for (const char *p = v; *p; ++p)
    if (!std::isdigit(static_cast<unsigned char>(*p)) && *p != '.' && *p != 'e' && *p != 'E' && *p != '-' &&
        *p != '+')
      return warnBad(name, v, "not a number", kExpected), false;
  char *end = nullptr;
  errno = 0;
  double t = std::strtod(v, &end);
  if (end == v || *end || errno == ERANGE || !std::isfinite(t))
    return warnBad(name, v, "not a number", kExpected), false;
  if (t <= 0 || t > 31536000)
    return warnBad(name, v, "out of range", kExpected), false;
  out = t;
  return true;
}

std::vector<std::string> splitList(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    if (!item.empty())
      out.emplace_back(item);
    if (comma == std::string_view::npos)
      break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

Config load() {
  Config c;
  if (const char *v = env("OMPSIM_TRACE"))
    c.trace = v;
  if (const char *v = env("OMPSIM_TRACE_FILE"))
    c.traceFile = v;
  if (const char *v = env("OMPSIM_TRACE_NORMALIZE")) {
    if (std::string_view(v) == "0" || std::string_view(v) == "1")
      c.traceNormalize = *v == '1';
    else
      warnBad("OMPSIM_TRACE_NORMALIZE", v, "not a flag", "0 or 1");
  }
  readU64("OMPSIM_TRACE_TRANSLATE_CAP", c.traceTranslateCap, 0, 1ULL << 32, "an integer 0..4294967296");
  if (const char *v = env("OMPSIM_PLUGINS"))
    c.plugins = splitList(v);
  uint64_t numDevices = uint64_t(c.numDevices);
  readU64("OMPSIM_NUM_DEVICES", numDevices, 1, 64, "an integer 1..64");
  c.numDevices = int32_t(numDevices);
  // User space ends at 2^47 on x86-64 and the arenas of up to 64 devices
  // sit 2^40 apart from the base.
  constexpr const char *kBaseExpected = "a page-aligned address 0x100000000..0x7f0000000000";
  readU64("OMPSIM_DEVICE_BASE", c.deviceBase, 1ULL << 32, 0x7f0000000000ULL, kBaseExpected);
  if (c.deviceBase % 4096) {
    warnBad("OMPSIM_DEVICE_BASE", env("OMPSIM_DEVICE_BASE"), "not page-aligned", kBaseExpected);
    c.deviceBase = Config().deviceBase;
  }
  readU64("OMPSIM_DEVICE_MEMORY", c.deviceMemory, 1ULL << 20, 1ULL << 40,
          "a size 1M..1024G (suffixes K, M, G)", /*sizes=*/true);
  c.kernelTimeoutSet = readSeconds("OMPSIM_KERNEL_TIMEOUT", c.kernelTimeout);
  readSeconds("OMPSIM_EXECUTOR_START_TIMEOUT", c.executorStartTimeout);
  uint64_t jitOptLevel = uint64_t(c.jitOptLevel);
  readU64("OMPSIM_JIT_OPT_LEVEL", jitOptLevel, 0, 3, "an integer 0..3");
  c.jitOptLevel = int32_t(jitOptLevel);
  if (const char *v = env("OMPSIM_JIT_CACHE"))
    c.jitCache = v;
  if (const char *v = env("OMPSIM_EXECUTOR"))
    c.executor = v;
  if (const char *v = env("OMPSIM_LIB_DIR"))
    c.libDir = v;
  if (const char *v = env("OMP_TARGET_OFFLOAD")) {
    for (const char *p = v; *p; ++p)
      c.ompTargetOffload.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(*p))));
    if (c.ompTargetOffload != "MANDATORY" && c.ompTargetOffload != "DISABLED" &&
        c.ompTargetOffload != "DEFAULT") {
      warnBad("OMP_TARGET_OFFLOAD", v, "unknown policy", "MANDATORY, DISABLED or DEFAULT");
      c.ompTargetOffload.clear();
    }
  }
  uint64_t info = 0;
  readU64("LIBOMPTARGET_INFO", info, 0, UINT32_MAX, "a bit mask 0..0xffffffff");
  c.libomptargetInfo = static_cast<uint32_t>(info);
  return c;
}

} // namespace

const Config &config() {
  static const Config c = load();
  return c;
}

} // namespace ompsim

// Reads every OMPSIM_* variable (see README for the table).
#include "ompsim/config.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace ompsim {
namespace {

const char *env(const char *name) {
  const char *v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

void warnBad(const char *name, const char *value, const char *expected) {
  std::fprintf(stderr, "ompsim: ignoring %s='%s': expected %s\n", name, value, expected);
}

void readU64(const char *name, uint64_t &out) {
  const char *v = env(name);
  if (!v)
    return;
  char *end = nullptr;
  unsigned long long x = std::strtoull(v, &end, 0);
  uint64_t mul = 1;
  if (end && *end) {
    std::string_view suffix(end);
    if (suffix == "K" || suffix == "KiB") mul = 1ULL << 10;
    else if (suffix == "M" || suffix == "MiB") mul = 1ULL << 20;
    else if (suffix == "G" || suffix == "GiB") mul = 1ULL << 30;
    else return warnBad(name, v, "an integer, optionally with K, M or G");
  }
  out = x * mul;
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
  if (const char *v = env("OMPSIM_TRACE")) c.trace = v;
  if (const char *v = env("OMPSIM_TRACE_FILE")) c.traceFile = v;
  if (const char *v = env("OMPSIM_TRACE_NORMALIZE")) c.traceNormalize = std::string_view(v) != "0";
  readU64("OMPSIM_TRACE_TRANSLATE_CAP", c.traceTranslateCap);
  if (const char *v = env("OMPSIM_PLUGINS")) c.plugins = splitList(v);
  if (const char *v = env("OMPSIM_NUM_DEVICES")) {
    int n = std::atoi(v);
    if (n < 1 || n > 64) warnBad("OMPSIM_NUM_DEVICES", v, "1..64");
    else c.numDevices = n;
  }
  readU64("OMPSIM_DEVICE_BASE", c.deviceBase);
  readU64("OMPSIM_DEVICE_MEMORY", c.deviceMemory);
  if (const char *v = env("OMPSIM_KERNEL_TIMEOUT")) {
    char *end = nullptr;
    double t = std::strtod(v, &end);
    if (!end || *end || t <= 0) warnBad("OMPSIM_KERNEL_TIMEOUT", v, "seconds > 0");
    else c.kernelTimeout = t;
  }
  if (const char *v = env("OMPSIM_JIT_OPT_LEVEL")) {
    if (std::string_view(v).size() != 1 || *v < '0' || *v > '3') warnBad("OMPSIM_JIT_OPT_LEVEL", v, "0..3");
    else c.jitOptLevel = *v - '0';
  }
  if (const char *v = env("OMPSIM_EXECUTOR")) c.executor = v;
  if (const char *v = env("OMPSIM_LIB_DIR")) c.libDir = v;
  if (const char *v = env("OMP_TARGET_OFFLOAD")) {
    for (const char *p = v; *p; ++p)
      c.ompTargetOffload.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(*p))));
    if (c.ompTargetOffload != "MANDATORY" && c.ompTargetOffload != "DISABLED" &&
        c.ompTargetOffload != "DEFAULT") {
      warnBad("OMP_TARGET_OFFLOAD", v, "MANDATORY, DISABLED or DEFAULT");
      c.ompTargetOffload.clear();
    }
  }
  uint64_t info = 0;
  readU64("LIBOMPTARGET_INFO", info);
  c.libomptargetInfo = static_cast<uint32_t>(info);
  return c;
}

} // namespace

const Config &config() {
  static const Config c = load();
  return c;
}

} // namespace ompsim

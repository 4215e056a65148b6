// The trace facility: JSON lines to OMPSIM_TRACE_FILE, or spdlog lines on stderr.
#include "ompsim/Trace.h"

#include "ompsim/Config.h"
#include "ompsim/HostSymbolizer.h"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <unistd.h>

namespace ompsim::trace {
namespace {

constexpr std::array<std::string_view, size_t(Cat::Count)> kNames = {
    "image", "entry", "map", "table", "launch", "translate", "fault", "alloc", "transfer"};

struct Sink {
  uint32_t mask = 0;
  bool normalize = false;
  std::FILE *file = nullptr; // JSON lines
  /// Why the trace file could not be written (empty while all is well);
  /// reported once, at the end of the run.
  std::string writeError;
  std::string path;  ///< OMPSIM_TRACE_FILE (a copy: config() is gone by the exit check)
  uint64_t lost = 0; ///< events that did not reach the trace file
  std::shared_ptr<spdlog::logger> human;
  std::mutex mu;
  uint64_t seq = 0;

  Sink() {
    const Config &c = config();
    normalize = c.traceNormalize;
    for (size_t b = 0, e; b < c.trace.size(); b = e + 1) {
      e = c.trace.find(',', b);
      if (e == std::string::npos)
        e = c.trace.size();
      std::string_view item(c.trace.data() + b, e - b);
      if (item == "all") {
        mask = ~0u;
        continue;
      }
      bool known = false;
      for (size_t i = 0; i < kNames.size(); ++i)
        if (kNames[i] == item) {
          mask |= 1u << i;
          known = true;
        }
      if (!known && !item.empty())
        std::fprintf(stderr, "ompsim: unknown trace category '%.*s' in OMPSIM_TRACE\n", int(item.size()),
                     item.data());
    }
    if (!c.traceFile.empty()) {
      path = c.traceFile;
      file = std::fopen(c.traceFile.c_str(), "a");
      if (!file)
        writeError = fmt::format("cannot open it: {}", std::strerror(errno));
    }
    human = std::make_shared<spdlog::logger>("ompsim", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    human->set_pattern("[ompsim %v");
    human->set_level(spdlog::level::info);
  }
  ~Sink() {
    if (file)
      std::fclose(file);
  }
};

/// The sink once built; the exit check below looks at nothing else, so a
/// process that never traced (an executor, a tool) never builds one there.
std::atomic<Sink *> gBuiltSink{nullptr};

Sink &sink() {
  static Sink *s = new Sink(); // never destroyed: events may come from atexit handlers
  gBuiltSink.store(s, std::memory_order_release);
  return *s;
}

/// Length of the well-formed UTF-8 sequence at s[i], or 0 if there is none.
size_t utf8SequenceLength(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b = byte(i);
  size_t len = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xC2 && b <= 0xDF ? 2 : 0;
  if (len == 0 || i + len > s.size())
    return 0;
  for (size_t k = 1; k < len; ++k)
    if ((byte(i + k) & 0xC0) != 0x80)
      return 0;
  unsigned char b1 = byte(i + 1);
  // Overlong forms, UTF-16 surrogates and code points past U+10FFFF.
  if ((b == 0xE0 && b1 < 0xA0) || (b == 0xED && b1 >= 0xA0) || (b == 0xF0 && b1 < 0x90) ||
      (b == 0xF4 && b1 >= 0x90))
    return 0;
  return len;
}

/// Appends `s` as a JSON string. Names and paths are bytes, not always UTF-8:
/// a byte that starts no well-formed UTF-8 sequence is written as the code
/// point of the same number (\u00XX), so every line stays valid JSON.
void appendJsonString(std::string &out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    char ch = s[i];
    if (static_cast<unsigned char>(ch) >= 0x80) {
      if (size_t len = utf8SequenceLength(s, i)) {
        out.append(s.substr(i, len));
        i += len - 1;
      } else {
        out += fmt::format("\\u{:04x}", static_cast<unsigned char>(ch));
      }
      continue;
    }
    switch (ch) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (static_cast<unsigned char>(ch) < 0x20)
        out += fmt::format("\\u{:04x}", int(ch));
      else
        out += ch;
    }
  }
  out += '"';
}

} // namespace

std::string_view name(Cat c) { return kNames[size_t(c)]; }
bool enabled(Cat c) { return sink().mask & (1u << unsigned(c)); }
bool normalized() { return sink().normalize; }

Event::Event(Cat c, std::string_view event) : cat_(c) {
  json_ = "{\"cat\":\"";
  json_ += name(c);
  json_ += "\",\"event\":";
  appendJsonString(json_, event);
  human_ = fmt::format("{}] {}", name(c), event);
}

namespace {
/// Offload symbol names embed the source file's device and inode ids
/// (`__omp_offloading_fe00_a72249_main_l10`); normalized traces replace them
/// so a rebuild or another checkout gives the same trace.
std::string normalizeOffloadIds(std::string_view v) {
  static constexpr std::string_view kPrefix = "__omp_offloading_";
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t at = v.find(kPrefix, pos);
    if (at == std::string_view::npos)
      break;
    size_t i = at + kPrefix.size();
    auto hexRun = [&](size_t j) {
      while (j < v.size() && std::isxdigit(static_cast<unsigned char>(v[j])))
        ++j;
      return j;
    };
    size_t a = hexRun(i);
    size_t b = (a > i && a < v.size() && v[a] == '_') ? hexRun(a + 1) : a;
    out.append(v.substr(pos, i - pos));
    if (b > a + 1 && b < v.size() && v[b] == '_') {
      out += "<id>";
      pos = b;
    } else {
      pos = i;
    }
  }
  out.append(v.substr(pos));
  return out;
}

/// Absolute paths (of the program, libraries, temporary folders) depend on
/// where things live; normalized traces keep only the file name.
std::string normalizePaths(std::string_view v) {
  auto delimiter = [](char c) {
    return c == ' ' || c == '(' || c == ')' || c == '\'' || c == '=' || c == ',';
  };
  std::string out;
  size_t i = 0;
  while (i < v.size()) {
    if (delimiter(v[i])) {
      out += v[i++];
      continue;
    }
    size_t end = i;
    while (end < v.size() && !delimiter(v[end]))
      ++end;
    std::string_view token = v.substr(i, end - i);
    size_t slash = token.rfind('/');
    // "host:<./prog>"-style tokens keep their prefix up to the path.
    size_t pathStart = token.find_first_of("./");
    if (slash != std::string_view::npos && token.find("://") == std::string_view::npos) {
      size_t lt = token.rfind('<', slash);
      if (lt != std::string_view::npos)
        out.append(token.substr(0, lt + 1));
      else if (pathStart != std::string_view::npos && token.find(':') < pathStart)
        out.append(token.substr(0, token.find(':') + 1));
      out.append(token.substr(slash + 1));
    } else {
      out.append(token);
    }
    i = end;
  }
  return out;
}
} // namespace

Event &Event::str(std::string_view key, std::string_view value) {
  if (sink().normalize && (value.find("__omp_offloading_") != std::string_view::npos ||
                           value.find('/') != std::string_view::npos)) {
    std::string n = normalizePaths(normalizeOffloadIds(value));
    json_ += ',';
    appendJsonString(json_, key);
    json_ += ':';
    appendJsonString(json_, n);
    human_ += fmt::format(" {}={}", key, n);
    return *this;
  }
  json_ += ',';
  appendJsonString(json_, key);
  json_ += ':';
  appendJsonString(json_, value);
  human_ += fmt::format(" {}={}", key, value);
  return *this;
}

Event &Event::num(std::string_view key, int64_t value) {
  json_ += ',';
  appendJsonString(json_, key);
  json_ += fmt::format(":{}", value);
  human_ += fmt::format(" {}={}", key, value);
  return *this;
}

Event &Event::hex(std::string_view key, uint64_t value) { return str(key, fmt::format("{:#x}", value)); }

Event &Event::host(std::string_view key, uint64_t addr) {
  return str(key, hostAddress(addr, !sink().normalize));
}

Event &Event::dev(std::string_view key, uint64_t addr, std::string_view symbol) {
  if (symbol.empty())
    return str(key, fmt::format("dev:{:#x}", addr));
  return str(key, fmt::format("dev:{} ({:#x})", symbol, addr));
}

Event::~Event() {
  Sink &s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.writeError.empty()) {
    ++s.lost; // OMPSIM_TRACE_FILE is unusable: the end of the run says so
  } else if (s.file) {
    if (!s.normalize) {
      auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
      json_ += fmt::format(",\"pid\":{},\"ts_us\":{}", getpid(), us);
    }
    json_ += fmt::format(",\"seq\":{}}}\n", s.seq++);
    errno = 0;
    if (std::fwrite(json_.data(), 1, json_.size(), s.file) != json_.size() || std::fflush(s.file) != 0) {
      s.writeError = fmt::format("cannot write to it: {}", std::strerror(errno ? errno : EIO));
      ++s.lost;
    }
  } else {
    s.human->info(human_);
  }
}

std::string hostAddress(uint64_t addr, bool withRaw) {
  if (addr == 0)
    return "null";
  auto sym = HostSymbolizer::get().lookup(addr);
  std::string named = sym ? fmt::format("host:{}+{:#x}", sym->name, sym->offset) : "host:?";
  if (!withRaw) {
    if (!sym) {
      // Keep unknown host addresses stable under ASLR: name the object and offset.
      std::string obj = HostSymbolizer::get().objectOf(addr);
      return obj.empty() ? "host:<unknown>" : fmt::format("host:<{}>", obj);
    }
    return named;
  }
  return fmt::format("{} ({:#x})", named, addr);
}

void error(std::string_view message) {
  std::fprintf(stderr, "ompsim: %.*s\n", int(message.size()), message.data());
  std::fflush(stderr);
  if (enabled(Cat::Fault))
    Event(Cat::Fault, "error").str("message", message);
}

void flush() {
  Sink &s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.file)
    std::fflush(s.file);
  s.human->flush();
}

namespace {
std::atomic<int> gFatalExitStatus{-1};
} // namespace

void setFatalExitStatus(int status) {
  int none = -1;
  gFatalExitStatus.compare_exchange_strong(none, status & 0xff);
}

int fatalExitStatus(int fallback) {
  int s = gFatalExitStatus.load();
  return s < 0 ? fallback : s;
}

namespace {

/// Runs when the process exits, after every atexit handler (the runtime's and
/// the plugins' last events come from those): a trace that was asked for but
/// could not be written is an error of the run, not a silent loss.
__attribute__((destructor)) void reportLostTrace() {
  Sink *built = gBuiltSink.load(std::memory_order_acquire);
  if (!built)
    return;
  Sink &s = *built;
  std::string why;
  uint64_t lost = 0;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.file && s.writeError.empty() && std::fflush(s.file) != 0)
      s.writeError = fmt::format("cannot write to it: {}", std::strerror(errno ? errno : EIO));
    why = s.writeError;
    lost = s.lost;
  }
  if (why.empty())
    return;
  std::fflush(nullptr);
  std::fprintf(stderr, "ompsim: trace lost: OMPSIM_TRACE_FILE '%s': %s (%llu event%s not written)\n",
               s.path.c_str(), why.c_str(), static_cast<unsigned long long>(lost), lost == 1 ? "" : "s");
  std::fflush(stderr);
  std::_Exit(1);
}

} // namespace

} // namespace ompsim::trace

// The trace facility: JSON lines to OMPSIM_TRACE_FILE, or spdlog lines on stderr.
#include "ompsim/Trace.h"

#include "ompsim/Config.h"
#include "ompsim/HostSymbolizer.h"
#include "ompsim/OpenMPRegistration.h"

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
    "image", "entry", "map", "table", "launch", "translate", "fault", "alloc", "transfer", "check"};

struct Sink {
  uint32_t Mask = 0;
  bool Normalize = false;
  std::FILE *File = nullptr; // JSON lines
  /// Why the trace file could not be written (empty while all is well);
  /// reported once, at the end of the run.
  std::string WriteError;
  std::string Path;  ///< OMPSIM_TRACE_FILE (a copy: config() is gone by the exit check)
  uint64_t Lost = 0; ///< events that did not reach the trace file
  std::shared_ptr<spdlog::logger> Human;
  std::mutex Mu;
  uint64_t Seq = 0;

  Sink() {
    const Config &C = config();
    Normalize = C.TraceNormalize;
    for (size_t B = 0, E; B < C.Trace.size(); B = E + 1) {
      E = C.Trace.find(',', B);
      if (E == std::string::npos)
        E = C.Trace.size();
      std::string_view Item(C.Trace.data() + B, E - B);
      if (Item == "all") {
        Mask = ~0u;
        continue;
      }
      bool Known = false;
      for (size_t I = 0; I < kNames.size(); ++I)
        if (kNames[I] == Item) {
          Mask |= 1u << I;
          Known = true;
        }
      if (!Known && !Item.empty())
        std::fprintf(stderr, "ompsim: unknown trace category '%.*s' in OMPSIM_TRACE\n", int(Item.size()),
                     Item.data());
    }
    if (!C.TraceFile.empty()) {
      Path = C.TraceFile;
      File = std::fopen(C.TraceFile.c_str(), "a");
      if (!File)
        WriteError = fmt::format("cannot open it: {}", std::strerror(errno));
    }
    Human = std::make_shared<spdlog::logger>("ompsim", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    Human->set_pattern("[ompsim %v");
    Human->set_level(spdlog::level::info);
  }
  ~Sink() {
    if (File)
      std::fclose(File);
  }
};

/// The sink once built; the exit check below looks at nothing else, so a
/// process that never traced (an executor, a tool) never builds one there.
std::atomic<Sink *> GBuiltSink{nullptr};

Sink &sink() {
  static Sink *S = new Sink(); // never destroyed: events may come from atexit handlers
  GBuiltSink.store(S, std::memory_order_release);
  return *S;
}

/// Length of the well-formed UTF-8 sequence at s[i], or 0 if there is none.
size_t utf8SequenceLength(std::string_view S, size_t I) {
  auto Byte = [&](size_t K) { return static_cast<unsigned char>(S[K]); };
  unsigned char B = Byte(I);
  size_t Len = B >= 0xF0 && B <= 0xF4 ? 4 : B >= 0xE0 && B <= 0xEF ? 3 : B >= 0xC2 && B <= 0xDF ? 2 : 0;
  if (Len == 0 || I + Len > S.size())
    return 0;
  for (size_t K = 1; K < Len; ++K)
    if ((Byte(I + K) & 0xC0) != 0x80)
      return 0;
  unsigned char B1 = Byte(I + 1);
  // Overlong forms, UTF-16 surrogates and code points past U+10FFFF.
  if ((B == 0xE0 && B1 < 0xA0) || (B == 0xED && B1 >= 0xA0) || (B == 0xF0 && B1 < 0x90) ||
      (B == 0xF4 && B1 >= 0x90))
    return 0;
  return Len;
}

/// Appends `s` as a JSON string. Names and paths are bytes, not always UTF-8:
/// a byte that starts no well-formed UTF-8 sequence is written as the code
/// point of the same number (\u00XX), so every line stays valid JSON.
void appendJsonString(std::string &Out, std::string_view S) {
  Out += '"';
  for (size_t I = 0; I < S.size(); ++I) {
    char Ch = S[I];
    if (static_cast<unsigned char>(Ch) >= 0x80) {
      if (size_t Len = utf8SequenceLength(S, I)) {
        Out.append(S.substr(I, Len));
        I += Len - 1;
      } else {
        Out += fmt::format("\\u{:04x}", static_cast<unsigned char>(Ch));
      }
      continue;
    }
    switch (Ch) {
    case '"':
      Out += "\\\"";
      break;
    case '\\':
      Out += "\\\\";
      break;
    case '\n':
      Out += "\\n";
      break;
    case '\t':
      Out += "\\t";
      break;
    default:
      if (static_cast<unsigned char>(Ch) < 0x20)
        Out += fmt::format("\\u{:04x}", int(Ch));
      else
        Out += Ch;
    }
  }
  Out += '"';
}

} // namespace

std::string_view name(Cat C) { return kNames[size_t(C)]; }
bool enabled(Cat C) { return sink().Mask & (1u << unsigned(C)); }
bool normalized() { return sink().Normalize; }

Event::Event(Cat C, std::string_view Name) : Category(C) {
  Json = "{\"cat\":\"";
  Json += name(C);
  Json += "\",\"event\":";
  appendJsonString(Json, Name);
  Human = fmt::format("{}] {}", name(C), Name);
}

namespace {
/// Offload symbol names embed the source file's device and inode ids
/// (`__omp_offloading_fe00_a72249_main_l10`); normalized traces replace them
/// so a rebuild or another checkout gives the same trace.
std::string normalizeOffloadIds(std::string_view V) {
  static constexpr std::string_view kPrefix = "__omp_offloading_";
  std::string Out;
  size_t Pos = 0;
  while (true) {
    size_t At = V.find(kPrefix, Pos);
    if (At == std::string_view::npos)
      break;
    size_t I = At + kPrefix.size();
    auto HexRun = [&](size_t J) {
      while (J < V.size() && std::isxdigit(static_cast<unsigned char>(V[J])))
        ++J;
      return J;
    };
    size_t A = HexRun(I);
    size_t B = (A > I && A < V.size() && V[A] == '_') ? HexRun(A + 1) : A;
    Out.append(V.substr(Pos, I - Pos));
    if (B > A + 1 && B < V.size() && V[B] == '_') {
      Out += "<id>";
      Pos = B;
    } else {
      Pos = I;
    }
  }
  Out.append(V.substr(Pos));
  return Out;
}

/// Absolute paths (of the program, libraries, temporary folders) depend on
/// where things live; normalized traces keep only the file name.
std::string normalizePaths(std::string_view V) {
  auto Delimiter = [](char C) {
    return C == ' ' || C == '(' || C == ')' || C == '\'' || C == '=' || C == ',';
  };
  std::string Out;
  size_t I = 0;
  while (I < V.size()) {
    if (Delimiter(V[I])) {
      Out += V[I++];
      continue;
    }
    size_t End = I;
    while (End < V.size() && !Delimiter(V[End]))
      ++End;
    std::string_view Token = V.substr(I, End - I);
    size_t Slash = Token.rfind('/');
    // "host:<./prog>"-style tokens keep their prefix up to the path.
    size_t PathStart = Token.find_first_of("./");
    if (Slash != std::string_view::npos && Token.find("://") == std::string_view::npos) {
      size_t Lt = Token.rfind('<', Slash);
      if (Lt != std::string_view::npos)
        Out.append(Token.substr(0, Lt + 1));
      else if (PathStart != std::string_view::npos && Token.find(':') < PathStart)
        Out.append(Token.substr(0, Token.find(':') + 1));
      Out.append(Token.substr(Slash + 1));
    } else {
      Out.append(Token);
    }
    I = End;
  }
  return Out;
}
} // namespace

Event &Event::str(std::string_view Key, std::string_view Value) {
  if (sink().Normalize && (Value.find("__omp_offloading_") != std::string_view::npos ||
                           Value.find('/') != std::string_view::npos)) {
    std::string N = normalizePaths(normalizeOffloadIds(Value));
    Json += ',';
    appendJsonString(Json, Key);
    Json += ':';
    appendJsonString(Json, N);
    Human += fmt::format(" {}={}", Key, N);
    return *this;
  }
  Json += ',';
  appendJsonString(Json, Key);
  Json += ':';
  appendJsonString(Json, Value);
  Human += fmt::format(" {}={}", Key, Value);
  return *this;
}

Event &Event::num(std::string_view Key, int64_t Value) {
  Json += ',';
  appendJsonString(Json, Key);
  Json += fmt::format(":{}", Value);
  Human += fmt::format(" {}={}", Key, Value);
  return *this;
}

Event &Event::hex(std::string_view Key, uint64_t Value) { return str(Key, fmt::format("{:#x}", Value)); }

Event &Event::host(std::string_view Key, uint64_t Addr) {
  return str(Key, hostAddress(Addr, !sink().Normalize));
}

Event &Event::dev(std::string_view Key, uint64_t Addr, std::string_view Symbol) {
  if (Symbol.empty())
    return str(Key, fmt::format("dev:{:#x}", Addr));
  return str(Key, fmt::format("dev:{} ({:#x})", Symbol, Addr));
}

Event::~Event() {
  Sink &S = sink();
  std::lock_guard<std::mutex> Lock(S.Mu);
  if (!S.WriteError.empty()) {
    ++S.Lost; // OMPSIM_TRACE_FILE is unusable: the end of the run says so
  } else if (S.File) {
    if (!S.Normalize) {
      auto Us = std::chrono::duration_cast<std::chrono::microseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
      // The writing thread, so `ompsim trace export` gives each host thread its track.
      Json += fmt::format(",\"pid\":{},\"tid\":{},\"ts_us\":{}", getpid(), gettid(), Us);
    }
    Json += fmt::format(",\"seq\":{}}}\n", S.Seq++);
    errno = 0;
    if (std::fwrite(Json.data(), 1, Json.size(), S.File) != Json.size() || std::fflush(S.File) != 0) {
      S.WriteError = fmt::format("cannot write to it: {}", std::strerror(errno ? errno : EIO));
      ++S.Lost;
    }
  } else {
    S.Human->info(Human);
  }
}

std::string hostAddress(uint64_t Addr, bool WithRaw) {
  if (Addr == 0)
    return "null";
  auto Sym = HostSymbolizer::get().lookup(Addr);
  std::string Named = Sym ? fmt::format("host:{}+{:#x}", Sym->Name, Sym->Offset) : "host:?";
  if (!WithRaw) {
    if (!Sym) {
      // Keep unknown host addresses stable under ASLR: name the object and offset.
      std::string Obj = HostSymbolizer::get().objectOf(Addr);
      return Obj.empty() ? "host:<unknown>" : fmt::format("host:<{}>", Obj);
    }
    return Named;
  }
  return fmt::format("{} ({:#x})", Named, Addr);
}

void error(std::string_view Message) {
  std::fprintf(stderr, "ompsim: %.*s\n", int(Message.size()), Message.data());
  std::fflush(stderr);
  if (enabled(Cat::Fault))
    Event(Cat::Fault, "error").str("message", Message);
}

void flush() {
  Sink &S = sink();
  std::lock_guard<std::mutex> Lock(S.Mu);
  if (S.File)
    std::fflush(S.File);
  S.Human->flush();
}

namespace {
std::atomic<int> GFatalExitStatus{-1};
} // namespace

void setFatalExitStatus(int Status) {
  int None = -1;
  GFatalExitStatus.compare_exchange_strong(None, Status & 0xff);
}

int fatalExitStatus(int Fallback) {
  int S = GFatalExitStatus.load();
  return S < 0 ? Fallback : S;
}

namespace {

/// Runs when the process exits, after every atexit handler (the runtime's and
/// the plugins' last events come from those): a trace that was asked for but
/// could not be written is an error of the run, not a silent loss.
__attribute__((destructor)) void reportLostTrace() {
  Sink *Built = GBuiltSink.load(std::memory_order_acquire);
  if (!Built)
    return;
  Sink &S = *Built;
  std::string Why;
  uint64_t Lost = 0;
  {
    std::lock_guard<std::mutex> Lock(S.Mu);
    if (S.File && S.WriteError.empty() && std::fflush(S.File) != 0)
      S.WriteError = fmt::format("cannot write to it: {}", std::strerror(errno ? errno : EIO));
    Why = S.WriteError;
    Lost = S.Lost;
  }
  if (Why.empty())
    return;
  std::fflush(nullptr);
  std::fprintf(stderr, "ompsim: trace lost: OMPSIM_TRACE_FILE '%s': %s (%llu event%s not written)\n",
               S.Path.c_str(), Why.c_str(), static_cast<unsigned long long>(Lost), Lost == 1 ? "" : "s");
  std::fflush(stderr);
  // _Exit skips libomp's destructor, which would remove this file.
  removeOpenMPRegistration(::getpid());
  std::_Exit(1);
}

} // namespace

} // namespace ompsim::trace

// ompsim: the trace facility shared by the runtime, the plugins and the simulator.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ompsim::trace {

/// Trace categories (OMPSIM_TRACE=all or a comma list of these names).
enum class Cat : uint16_t {
  Image,
  Entry,
  Map,
  Table,
  Launch,
  Translate,
  Fault,
  Alloc,
  Transfer,
  Check,
  Count
};

/// Name of a category as used in OMPSIM_TRACE and in the "cat" JSON field.
std::string_view name(Cat C);

/// True when events of category `C` are recorded. Cheap; call it first.
bool enabled(Cat C);

/// True when OMPSIM_TRACE_NORMALIZE is set: raw host addresses, pids and
/// times are left out so two runs under ASLR produce identical traces.
bool normalized();

/// One trace event, emitted when the object is destroyed.
///
/// Fields keep their insertion order. In JSON mode an event is one line:
/// {"cat":"table","event":"publish","device":0,...}; otherwise one human line
/// on stderr through spdlog.
class Event {
public:
  Event(Cat C, std::string_view Name);
  ~Event();
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;

  Event &str(std::string_view Key, std::string_view Value);
  Event &num(std::string_view Key, int64_t Value);
  Event &hex(std::string_view Key, uint64_t Value);
  /// A host address, symbolized: "host:add1+0x0 (0x55...)"; normalized: "host:add1+0x0".
  Event &host(std::string_view Key, uint64_t Addr);
  /// A device address with its symbol ("add1+0x0", may be empty): "dev:add1+0x0 (0x2000...)".
  Event &dev(std::string_view Key, uint64_t Addr, std::string_view Symbol);

  /// The category this event was created with.
  Cat category() const { return Category; }

private:
  Cat Category;
  std::string Json;
  std::string Human;
};

/// Formats a host address the way traces and diagnostics show it.
std::string hostAddress(uint64_t Addr, bool WithRaw = true);

/// Prints one diagnostic line "ompsim: <message>" on stderr (always, trace or
/// not) and records it as a fault-category "error" event.
void error(std::string_view Message);

/// Flushes the trace sinks (called at exit and before a fatal exit).
void flush();

/// Records the exit status the process should end with when a fatal error
/// follows: device code that called exit(N) makes the host exit with N, as
/// it would had the code run in the host. Later calls keep the first status.
void setFatalExitStatus(int Status);

/// The status recorded by setFatalExitStatus, or `Fallback` when none was.
int fatalExitStatus(int Fallback);

} // namespace ompsim::trace

/// Records an event only when its category is enabled:
/// OMPSIM_TRACE_EVENT(Cat::Table, "publish").num("n", n);
#define OMPSIM_TRACE_EVENT(cat, ev)                                                                          \
  if (!::ompsim::trace::enabled(::ompsim::trace::cat)) {                                                     \
  } else                                                                                                     \
    ::ompsim::trace::Event(::ompsim::trace::cat, ev)

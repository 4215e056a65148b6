// ompsim sim plugin: the translate trace of a device (TranslateTrace.h).
#include "TranslateTrace.h"

#include "ompsim/Config.h"
#include "ompsim/HostSymbolizer.h"
#include "ompsim/Trace.h"

#include <fmt/format.h>
#include <string>

namespace ompsim::sim {

/// Emits the per-device translate summary of the whole run (at exit or deinit).
void emitTranslateExitSummary(SimDevice &D, int32_t Id) {
  if (!trace::enabled(trace::Cat::Translate) || D.TranslateHits + D.TranslateMisses == 0)
    return;
  for (const auto &[fn, c] : D.TranslateCalls)
    OMPSIM_TRACE_EVENT(Cat::Translate, "exit-function")
        .num("device", Id)
        .str("function", fn)
        .num("calls", int64_t(c.Calls))
        .num("misses", int64_t(c.Misses));
  OMPSIM_TRACE_EVENT(Cat::Translate, "exit-summary")
      .num("device", Id)
      .num("hits", int64_t(D.TranslateHits))
      .num("misses", int64_t(D.TranslateMisses))
      .num("dropped", int64_t(D.TranslateDropped))
      .str("note", D.TranslateDropped ? "per-function counts cover recorded calls only; raise "
                                        "OMPSIM_TRACE_TRANSLATE_CAP"
                                      : "per-function counts are exact");
}

void emitTranslateTrace(SimDevice &D, int32_t Id, llvm::StringRef Kernel) {
  if (!trace::enabled(trace::Cat::Translate))
    return;
  uint64_t Cap = config().TraceTranslateCap;
  auto Log = D.Controller->takeTranslateLog(Cap, Cap);
  if (!Log) {
    OMPSIM_TRACE_EVENT(Cat::Translate, "unavailable")
        .num("device", Id)
        .str("reason", llvm::toString(Log.takeError()));
    return;
  }
  HostSymbolizer &Hs = HostSymbolizer::get();
  for (const TranslateLog::Record &R : Log->Records) {
    trace::Event Ev(trace::Cat::Translate, "translate");
    Ev.num("device", Id).str("kernel", Kernel);
    // A pointer already translated (e.g. by the mapping table) reaches the
    // lookup as a device address: name it on the device side.
    std::string ResultSym = D.Controller->symbolize(R.Result);
    auto Named = [&](const char *Key, uint64_t A, const std::string &DevSym) {
      if (A == 0 || !Hs.objectOf(A).empty())
        Ev.host(Key, A);
      else
        Ev.dev(Key, A, DevSym);
    };
    Named("host_ptr", R.HostPtr, D.Controller->symbolize(R.HostPtr));
    Named("result", R.Result, ResultSym);
    Ev.str("outcome", R.Hit ? "hit" : "miss");
    std::string Fn = ResultSym.empty() ? (R.Hit ? fmt::format("dev:{:#x}", R.Result)
                                                : trace::hostAddress(R.HostPtr, !trace::normalized()))
                                       : ResultSym.substr(0, ResultSym.rfind('+'));
    SimDevice::FunctionCalls &C = D.TranslateCalls[Fn];
    ++C.Calls;
    C.Misses += R.Hit ? 0 : 1;
  }
  D.TranslateHits += Log->Hits;
  D.TranslateMisses += Log->Misses;
  D.TranslateDropped += Log->Dropped;
  OMPSIM_TRACE_EVENT(Cat::Translate, "summary")
      .num("device", Id)
      .str("kernel", Kernel)
      .num("hits", int64_t(Log->Hits))
      .num("misses", int64_t(Log->Misses))
      .num("dropped", int64_t(Log->Dropped));
}

} // namespace ompsim::sim

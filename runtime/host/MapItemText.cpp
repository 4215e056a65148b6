// How a map item is named in ompsim's messages and trace events (see MapItemText.h).
#include "MapItemText.h"

#include "ompsim/HostMemoryMap.h"
#include "ompsim/HostSymbolizer.h"
#include "ompsim/Trace.h"

#include <fmt/format.h>

namespace ompsim::host {

/// A host address for messages: symbolized when it is inside a named object
/// (a global), else the raw value (stack and heap).
std::string hostAddressForMessage(uint64_t Addr) {
  if (HostSymbolizer::get().lookup(Addr))
    return trace::hostAddress(Addr);
  return fmt::format("{:#x}", Addr);
}

/// A map item's name for a trace event: the clause's spelling (built with
/// -g), else what the host symbolizer tells of the address.
std::string mapItemTraceName(const std::string &Name, uint64_t Host) {
  return Name.empty() && Host ? hostDataName(Host) : Name;
}

std::string describeMapItem(const MapArg &Arg) {
  // Without map names (no -g), what the symbolizer tells: a global, a frame.
  std::string Var = mapItemTraceName(mapArgVariable(Arg.Name), reinterpret_cast<uint64_t>(Arg.Begin));
  std::string Addr = hostAddressForMessage(reinterpret_cast<uint64_t>(Arg.Begin));
  if (Var.empty())
    return fmt::format("host address {} ({} bytes)", Addr, Arg.Size);
  if (Var[0] == '<')
    return fmt::format("{} at host address {} ({} bytes)", Var, Addr, Arg.Size);
  return fmt::format("'{}' at host address {} ({} bytes)", Var, Addr, Arg.Size);
}

} // namespace ompsim::host

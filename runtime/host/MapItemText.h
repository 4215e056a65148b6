// ompsim runtime: how a map item is named in messages and trace events.
#pragma once

#include "MapClauseProcessor.h"

#include <cstdint>
#include <string>

namespace ompsim::host {

/// A host address for messages: symbolized when it is inside a named object
/// (a global), else the raw value (stack and heap).
std::string hostAddressForMessage(uint64_t Addr);

/// A map item's name for a trace event: the clause's spelling (built with
/// -g), else what the host symbolizer tells of the address.
std::string mapItemTraceName(const std::string &Name, uint64_t Host);

/// "'<variable>' at host address <address> (<size> bytes)", or without a
/// variable name what the symbolizer tells of the address (a global, a frame).
std::string describeMapItem(const MapArg &Arg);

} // namespace ompsim::host

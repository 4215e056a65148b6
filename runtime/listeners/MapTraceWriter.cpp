// ompsim runtime: the map category of OMPSIM_TRACE (docs/trace.md): one
// trace event per map event, with the host and device addresses symbolized.
#include "Listeners.h"

#include "../events/OffloadEvents.h"
#include "DeviceMemory.h"
#include "MapItemText.h"
#include "MapNames.h"
#include "MappingTable.h"

#include "ompsim/Trace.h"

#include <mutex>

namespace ompsim::listeners {
namespace {

using host::mapArgVariable;
using host::mapItemTraceName;

std::string refCount(const host::MapEntry &Entry) {
  return Entry.isInfinite() ? std::string("inf") : std::to_string(Entry.totalRef());
}

class MapTraceWriter final : public events::Listener {
public:
  void mapCreated(const events::MapCreated &E) override {
    uint64_t Tgt = E.Entry.TgtBegin;
    OMPSIM_TRACE_EVENT(Cat::Map, "enter")
        .str("name", mapItemTraceName(E.Entry.Name, E.Item.Begin))
        .host("host", E.Item.Begin)
        .dev("device", Tgt, E.Memory.symbolize(Tgt))
        .num("size", E.Item.Size)
        .hex("type", E.Item.Type)
        .str("refcount", "1")
        .num("new", 1);
  }

  void mapFound(const events::MapFound &E) override {
    if (E.Point != events::Endpoint::End)
      return;
    OMPSIM_TRACE_EVENT(Cat::Map, "enter")
        .str("name", mapItemTraceName(mapArgVariable(E.Item.Name), E.Item.Begin))
        .host("host", E.Item.Begin)
        .dev("device", E.TgtBegin, E.Memory.symbolize(E.TgtBegin))
        .num("size", E.Item.Size)
        .hex("type", E.Item.Type)
        .str("refcount", refCount(E.Entry))
        .num("new", 0);
  }

  void mapReleased(const events::MapReleased &E) override {
    if (E.Point != events::Endpoint::End)
      return;
    OMPSIM_TRACE_EVENT(Cat::Map, "exit")
        .str("name", mapItemTraceName(mapArgVariable(E.Item.Name), E.Item.Begin))
        .host("host", E.Item.Begin)
        .num("size", E.Item.Size)
        .hex("type", E.Item.Type)
        .str("refcount", refCount(E.Entry));
  }

  void mapRemoved(const events::MapRemoved &E) override {
    const host::MapEntry &Entry = E.Entry;
    OMPSIM_TRACE_EVENT(Cat::Map, "remove")
        .str("name", mapItemTraceName(Entry.Name, Entry.HstBegin))
        .host("host", Entry.HstBegin)
        .dev("device", Entry.TgtBegin, E.Memory.symbolize(Entry.TgtBegin))
        .num("size", static_cast<int64_t>(Entry.size()));
  }

  void mapperComponent(const events::MapperComponent &E) override {
    OMPSIM_TRACE_EVENT(Cat::Map, "mapper_component")
        .str("name", mapItemTraceName(mapArgVariable(E.Caller.Name), E.Component.Begin))
        .host("base", E.Base)
        .host("begin", E.Component.Begin)
        .num("size", E.Component.Size)
        .hex("type", E.Component.Type)
        .hex("caller_type", E.Caller.Type);
  }

  void mapPointerAttached(const events::MapPointerAttached &E) override {
    OMPSIM_TRACE_EVENT(Cat::Map, "attach")
        .host("pointer", E.Pointer)
        .dev("device_pointer", E.DevicePointer, "")
        .dev("value", E.Value, E.Memory.symbolize(E.Value));
  }

  void mapLambdaCapture(const events::MapLambdaCapture &E) override {
    OMPSIM_TRACE_EVENT(Cat::Map, "lambda_capture")
        .str("name", mapArgVariable(E.Name))
        .host("captured", E.Captured)
        .dev("field", E.Field, "")
        .dev("value", E.Value, E.Memory.symbolize(E.Value));
  }

  void mapUpdate(const events::MapUpdate &E) override {
    OMPSIM_TRACE_EVENT(Cat::Map, "update")
        .str("name", mapItemTraceName(mapArgVariable(E.Item.Name), E.Item.Begin))
        .host("host", E.Item.Begin)
        .num("size", E.Item.Size)
        .str("direction", E.ToDevice ? "to" : "from");
  }
};

} // namespace

void subscribeMapTraceWriter() {
  static std::once_flag Once;
  std::call_once(Once, [] {
    static MapTraceWriter Writer;
    events::subscribe(Writer);
  });
}

} // namespace ompsim::listeners

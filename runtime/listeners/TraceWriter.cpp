// ompsim runtime: OMPSIM_TRACE's events of the offload stream (docs/trace.md):
// the map, alloc, transfer and launch categories and the device's
// initialization, with host and device addresses symbolized.
#include "Listeners.h"

#include "../events/OffloadEvents.h"
#include "DeviceMemory.h"
#include "MapItemText.h"
#include "MapNames.h"
#include "MappingTable.h"

#include "ompsim/Trace.h"

namespace ompsim::listeners {
namespace {

using host::mapArgVariable;
using host::mapItemTraceName;

uint64_t address(const void *P) { return reinterpret_cast<uint64_t>(P); }

std::string refCount(const host::MapEntry &Entry) {
  return Entry.isInfinite() ? std::string("inf") : std::to_string(Entry.totalRef());
}

class TraceWriter final : public events::Listener {
public:
  void deviceInitialize(const events::DeviceInitialize &E) override {
    if (E.Point != events::Endpoint::End || !E.Succeeded)
      return;
    OMPSIM_TRACE_EVENT(Cat::Image, "device_init")
        .num("device", E.Device)
        .str("plugin", E.Type)
        .num("local_id", E.LocalId);
  }

  void dataOp(const events::DataOp &E) override {
    using events::DataOpKind;
    bool Begin = E.Point == events::Endpoint::Begin;
    if (E.Kind == DataOpKind::Alloc && !Begin && E.Dst) {
      OMPSIM_TRACE_EVENT(Cat::Alloc, "alloc")
          .num("device", E.DstDevice)
          .num("size", static_cast<int64_t>(E.Bytes))
          .dev("ptr", address(E.Dst), "");
    } else if (E.Kind == DataOpKind::Delete && Begin) {
      OMPSIM_TRACE_EVENT(Cat::Alloc, "free").num("device", E.SrcDevice).dev("ptr", address(E.Src), "");
    } else if (E.Kind == DataOpKind::TransferToDevice && Begin) {
      OMPSIM_TRACE_EVENT(Cat::Transfer, "to_device")
          .num("device", E.DstDevice)
          .host("host", address(E.Src))
          .dev("ptr", address(E.Dst), "")
          .num("size", static_cast<int64_t>(E.Bytes));
    } else if (E.Kind == DataOpKind::TransferFromDevice && Begin) {
      OMPSIM_TRACE_EVENT(Cat::Transfer, "from_device")
          .num("device", E.SrcDevice)
          .host("host", address(E.Dst))
          .dev("ptr", address(E.Src), "")
          .num("size", static_cast<int64_t>(E.Bytes));
    }
  }

  void submit(const events::Submit &E) override {
    const char *Kernel = E.Kernel ? E.Kernel : "";
    if (E.Point == events::Endpoint::Begin) {
      OMPSIM_TRACE_EVENT(Cat::Launch, "launch")
          .num("device", E.Device)
          .str("kernel", Kernel)
          .num("args", static_cast<int64_t>(E.NumArgs))
          .num("teams", E.NumTeams)
          .num("thread_limit", E.ThreadLimit);
    } else if (E.Succeeded) {
      OMPSIM_TRACE_EVENT(Cat::Launch, "done").num("device", E.Device).str("kernel", Kernel);
    }
  }

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

void subscribeTraceWriter() { events::subscribeOnce<TraceWriter>(); }

} // namespace ompsim::listeners

// ompsim runtime: the map checker's view of the map events. The checker
// (runtime/check) keeps a shadow of each block and reports what a transfer,
// a present use or a removal reveals; this listener tells it what happened.
#include "Listeners.h"

#include "../check/MapChecker.h"
#include "../events/OffloadEvents.h"
#include "MapFlags.h"

namespace ompsim::listeners {
namespace {

using host::mapflag::has;
namespace flag = host::mapflag;

class MapCheckListener final : public events::Listener {
public:
  void mapCreated(const events::MapCreated &E) override {
    // A block copied whole right away needs no poison.
    check::onCreate(E.Entry, E.Memory, /*Poison=*/!E.CopiedWhole,
                    /*MovesData=*/has(E.Item.Type, flag::To) || has(E.Item.Type, flag::From));
  }

  void mapPresentUse(const events::MapPresentUse &E) override {
    check::onPresentUse(E.Entry, E.Begin, E.Size, E.Name);
  }

  void mapCopied(const events::MapCopied &E) override {
    if (E.ToDevice)
      check::onCopiedTo(E.Entry, E.Begin, E.Size);
    else
      check::onCopiedFrom(E.Entry, E.Memory, E.Begin, E.Size, E.Name);
  }

  void mapReleased(const events::MapReleased &E) override {
    if (E.Point == events::Endpoint::Begin)
      check::onExitItem(E.Entry);
  }

  void mapRemoved(const events::MapRemoved &E) override { check::onRemove(E.Entry, E.Memory); }

  void mapLeftByMapper(const events::MapLeftByMapper &E) override { check::markLeftByMapper(E.Entry); }
};

} // namespace

void subscribeMapChecker() { events::subscribeOnce<MapCheckListener>(); }

} // namespace ompsim::listeners

// ompsim runtime: stock's LIBOMPTARGET_INFO lines about the mapping table
// ("Creating new map entry", "Mapping exists", "Removing map entry", "does
// not have a valid device counterpart") and its copies ("Copying data"),
// printed from the offload events where stock prints them, under the bit
// stock prints each under.
#include "Listeners.h"

#include "../events/OffloadEvents.h"
#include "DeviceMemory.h"
#include "MapFlags.h"
#include "MappingTable.h"
#include "StockMessages.h"

namespace ompsim::listeners {
namespace {

namespace stock = host::stock;
namespace info = host::stock::info;
using host::mapflag::has;
namespace flag = host::mapflag;

/// The item's name in stock's lines: the pointer of a pointer-and-object
/// pair has none.
std::string itemName(const events::MapItem &Item) {
  return stock::itemName(Item.PointerOfPair ? nullptr : Item.Name);
}

class InfoPrinter final : public events::Listener {
public:
  void targetRegion(const events::TargetRegion &E) override {
    if (E.Point != events::Endpoint::Begin || !stock::infoOn(info::KernelArgs))
      return;
    using events::TargetKind;
    const char *Region = E.Kind == TargetKind::Target ? stock::RegionKernel
                         : E.Kind == TargetKind::EnterData
                             ? (E.Nowait ? stock::RegionDataBeginNowait : stock::RegionDataBegin)
                         : E.Kind == TargetKind::ExitData
                             ? (E.Nowait ? stock::RegionDataEndNowait : stock::RegionDataEnd)
                             : (E.Nowait ? stock::RegionDataUpdateNowait : stock::RegionDataUpdate);
    for (const std::string &Line :
         stock::regionArguments(Region, E.Loc, E.NumItems, E.Sizes, E.Types, E.Names))
      stock::printInfo(E.Device, Line);
  }

  void dataOp(const events::DataOp &E) override {
    bool ToDevice = E.Kind == events::DataOpKind::TransferToDevice;
    if (E.Point != events::Endpoint::Begin ||
        (!ToDevice && E.Kind != events::DataOpKind::TransferFromDevice) || !stock::infoOn(info::DataTransfer))
      return;
    const void *Hst = ToDevice ? E.Src : E.Dst;
    const void *Tgt = ToDevice ? E.Dst : E.Src;
    stock::printInfo(ToDevice ? E.DstDevice : E.SrcDevice,
                     stock::copyLine(ToDevice, reinterpret_cast<uintptr_t>(Hst),
                                     reinterpret_cast<uintptr_t>(Tgt), E.Bytes, std::string(E.Name)));
  }

  void mapCreated(const events::MapCreated &E) override {
    if (!stock::infoOn(info::MappingChanged))
      return;
    const host::MapEntry &Entry = E.Entry;
    stock::printInfo(E.Memory.deviceNumber(),
                     stock::creatingEntry(Entry.HstBase, E.Item.Begin, Entry.TgtBegin, Entry.TgtBegin,
                                          E.Item.Size, Entry.DynamicRef, Entry.HoldRef, itemName(E.Item)));
  }

  void mapFound(const events::MapFound &E) override {
    if (E.Point != events::Endpoint::Begin || !stock::infoOn(info::MappingExists))
      return;
    stock::printInfo(E.Memory.deviceNumber(),
                     stock::mappingExistsOnEntry(
                         has(E.Item.Type, flag::Implicit), E.Item.Begin, E.TgtBegin, E.Item.Size,
                         E.Entry.DynamicRef, E.Entry.HoldRef, has(E.Item.Type, flag::OmpxHold),
                         E.Counted ? stock::RefAction::Incremented : stock::RefAction::UpdateSuppressed,
                         itemName(E.Item)));
  }

  void mapLookedUp(const events::MapLookedUp &E) override {
    if (!stock::infoOn(info::MappingExists))
      return;
    stock::printInfo(E.Memory.deviceNumber(),
                     stock::mappingExists(E.Begin, E.Entry.translate(E.Begin), E.Size, E.Entry.DynamicRef,
                                          E.Entry.HoldRef, /*Hold=*/false,
                                          stock::RefAction::UpdateSuppressed));
  }

  void mapReleased(const events::MapReleased &E) override {
    if (E.Point != events::Endpoint::Begin || !stock::infoOn(info::MappingExists))
      return;
    using stock::RefAction;
    RefAction Action = !E.Counted ? RefAction::UpdateSuppressed
                       : E.Last   ? (E.Delete ? RefAction::ResetDeletion : RefAction::DelayedDeletion)
                                  : RefAction::Decremented;
    stock::printInfo(E.Memory.deviceNumber(),
                     stock::mappingExists(E.Item.Begin, E.Entry.translate(E.Item.Begin), E.Item.Size,
                                          E.Entry.DynamicRef, E.Entry.HoldRef,
                                          has(E.Item.Type, flag::OmpxHold), Action));
  }

  void mapRemoved(const events::MapRemoved &E) override {
    if (!stock::infoOn(info::MappingChanged))
      return;
    const host::MapEntry &Entry = E.Entry;
    stock::printInfo(E.Memory.deviceNumber(),
                     stock::removingEntry(Entry.HstBegin, Entry.TgtBegin, E.ItemSize,
                                          Entry.InfoName.empty() ? std::string("unknown") : Entry.InfoName));
  }

  void mapNothingMapped(const events::MapNothingMapped &E) override {
    if (stock::infoOn(info::EmptyMapping))
      stock::printInfo(E.Memory.deviceNumber(), stock::noDeviceCounterpart(stock::itemName(E.Name)));
  }
};

} // namespace

void subscribeInfoPrinter() { events::subscribeOnce<InfoPrinter>(); }

} // namespace ompsim::listeners

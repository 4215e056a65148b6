// The map events the map-clause rules say (events/OffloadEvents.h), in order,
// as the INFO printer, the trace writer and the checker hear them.
#include "FakeDeviceMemory.h"
#include "MapClauseProcessor.h"
#include "MapFlags.h"
#include "MapTestItems.h"
#include "TwoComponentMapper.h"

#include "../events/OffloadEvents.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace ompsim::host;
using namespace ompsim::host::testing;
namespace events = ompsim::events;

namespace {

const char *point(events::Endpoint P) { return P == events::Endpoint::Begin ? "begin" : "end"; }

/// Writes each map event as one line: its kind and what the listeners use.
class Recorder final : public events::Listener {
public:
  std::vector<std::string> Lines;

  void mapCreated(const events::MapCreated &E) override {
    Lines.push_back(
        fmt::format("created size={} dyn={} whole={}", E.Item.Size, E.Entry.DynamicRef, E.CopiedWhole));
  }
  void mapFound(const events::MapFound &E) override {
    Lines.push_back(fmt::format("found {} dyn={} counted={}", point(E.Point), E.Entry.DynamicRef, E.Counted));
  }
  void mapPresentUse(const events::MapPresentUse &E) override {
    Lines.push_back(fmt::format("present-use size={}", E.Size));
  }
  void mapCopied(const events::MapCopied &E) override {
    Lines.push_back(fmt::format("copied {} size={}", E.ToDevice ? "to" : "from", E.Size));
  }
  void mapLookedUp(const events::MapLookedUp &E) override {
    Lines.push_back(fmt::format("looked-up size={}", E.Size));
  }
  void mapReleased(const events::MapReleased &E) override {
    Lines.push_back(fmt::format("released {} dyn={} counted={} last={} delete={}", point(E.Point),
                                E.Entry.DynamicRef, E.Counted, E.Last, E.Delete));
  }
  void mapRemoved(const events::MapRemoved &E) override {
    Lines.push_back(fmt::format("removed item-size={}", E.ItemSize));
  }
  void mapperComponent(const events::MapperComponent &E) override {
    Lines.push_back(fmt::format("mapper-component size={} type={:#x}", E.Component.Size, E.Component.Type));
  }
  void mapLeftByMapper(const events::MapLeftByMapper &) override { Lines.push_back("left-by-mapper"); }
  void mapNothingMapped(const events::MapNothingMapped &) override { Lines.push_back("nothing-mapped"); }
  void mapPointerAttached(const events::MapPointerAttached &E) override {
    Lines.push_back(fmt::format("attached value-is-device={}", E.Value >= FakeDeviceMemory::Base));
  }
  void mapUpdate(const events::MapUpdate &E) override {
    Lines.push_back(fmt::format("update {} size={}", E.ToDevice ? "to" : "from", E.Item.Size));
  }
};

/// The listener stays subscribed for the whole test program (a stream never
/// loses a listener); each test starts with an empty record.
Recorder &recorder() {
  static Recorder *R = [] {
    auto *New = new Recorder;
    events::subscribe(*New);
    return New;
  }();
  return *R;
}

class MapEvents : public ::testing::Test {
protected:
  MappingTable Table;
  FakeDeviceMemory Device;

  void SetUp() override { recorder().Lines.clear(); }

  std::vector<std::string> enter(std::vector<MapArg> Args, bool KernelLaunch = false) {
    MapClauseProcessor P(Table, Device);
    P.setKernelLaunch(KernelLaunch);
    EXPECT_FALSE(static_cast<bool>(P.enter(Args, nullptr)));
    return take();
  }
  std::vector<std::string> exit(std::vector<MapArg> Args) {
    MapClauseProcessor P(Table, Device);
    EXPECT_FALSE(static_cast<bool>(P.exit(Args)));
    return take();
  }
  std::vector<std::string> update(std::vector<MapArg> Args) {
    MapClauseProcessor P(Table, Device);
    EXPECT_FALSE(static_cast<bool>(P.update(Args)));
    return take();
  }
  std::vector<std::string> take() {
    std::vector<std::string> Lines;
    Lines.swap(recorder().Lines);
    return Lines;
  }
};

using Lines = std::vector<std::string>;

TEST_F(MapEvents, ABlockIsCreatedFoundReleasedAndRemovedInOrder) {
  int A[4] = {1, 2, 3, 4};
  EXPECT_EQ(enter({item(A, sizeof(A), TO | FROM)}),
            (Lines{"created size=16 dyn=1 whole=true", "copied to size=16"}));
  // Present already: counted before anything moves; `to` copies nothing.
  EXPECT_EQ(enter({item(A, sizeof(A), TO | FROM)}),
            (Lines{"found begin dyn=2 counted=true", "found end dyn=2 counted=true"}));
  EXPECT_EQ(exit({item(A, sizeof(A), TO | FROM)}),
            (Lines{"released begin dyn=1 counted=true last=false delete=false",
                   "released end dyn=1 counted=true last=false delete=false"}));
  // The last release copies back between its two ends, then the block goes.
  EXPECT_EQ(exit({item(A, sizeof(A), FROM)}),
            (Lines{"released begin dyn=0 counted=true last=true delete=false", "copied from size=16",
                   "released end dyn=0 counted=true last=true delete=false", "removed item-size=16"}));
}

TEST_F(MapEvents, DeleteReleasesTheLastReferenceWhateverTheCount) {
  int X = 0;
  enter({item(&X, 4, 0)});
  enter({item(&X, 4, 0)});
  EXPECT_EQ(exit({item(&X, 4, DELETE)}),
            (Lines{"released begin dyn=0 counted=true last=true delete=true",
                   "released end dyn=0 counted=true last=true delete=true", "removed item-size=4"}));
}

TEST_F(MapEvents, ARegionUsingPresentDataItDoesNotCopySaysSo) {
  int X = 5;
  enter({item(&X, 4, TO)});
  EXPECT_EQ(enter({item(&X, 4, TO | PARAM)}, /*KernelLaunch=*/true),
            (Lines{"found begin dyn=2 counted=true", "present-use size=4", "found end dyn=2 counted=true"}));
  // A data construct's present item is no use by a kernel.
  EXPECT_EQ(enter({item(&X, 4, TO)}),
            (Lines{"found begin dyn=3 counted=true", "found end dyn=3 counted=true"}));
}

TEST_F(MapEvents, AZeroLengthSectionOfUnmappedDataMapsNothing) {
  int X = 0;
  EXPECT_EQ(enter({item(&X, 0, TO)}), (Lines{"nothing-mapped"}));
}

TEST_F(MapEvents, UpdateLooksUpThenMovesThePresentItem) {
  int A[2] = {1, 2};
  enter({item(A, sizeof(A), 0)});
  EXPECT_EQ(update({item(A, sizeof(A), TO)}),
            (Lines{"looked-up size=8", "update to size=8", "copied to size=8"}));
  EXPECT_EQ(update({item(A, sizeof(A), FROM)}),
            (Lines{"looked-up size=8", "update from size=8", "copied from size=8"}));
  int Absent = 0;
  EXPECT_EQ(update({item(&Absent, 4, TO)}), Lines{});
}

TEST_F(MapEvents, AMapperSaysItsComponentsThenMapsThem) {
  int Data[2] = {8, 9};
  CountedArray Obj{2, Data};
  MapArg WithMapper{&Obj, &Obj,    sizeof(CountedArray),
                    TO,   nullptr, reinterpret_cast<void *>(&pushTwoComponents)};
  Lines Got = enter({WithMapper});
  Lines Want{
      "mapper-component size=16 type=0x1",
      fmt::format("mapper-component size=8 type={:#x}", (uint64_t(1) << 48) | uint64_t(PtrAndObj | TO)),
      // The struct: made by the mapper's first component, never released (stock).
      "created size=16 dyn=1 whole=true", "copied to size=16", "left-by-mapper",
      // The pointer half of the pair, found in the struct's block, not counted.
      "found begin dyn=1 counted=false", "found end dyn=1 counted=false",
      // The pointee, then the pointer's device copy attached to it.
      "created size=8 dyn=1 whole=true", "copied to size=8", "attached value-is-device=true"};
  EXPECT_EQ(Got, Want);
}

} // namespace

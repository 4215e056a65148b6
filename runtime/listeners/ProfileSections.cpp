// ompsim runtime: LIBOMPTARGET_PROFILE's sections for the offload events that
// span time (a device's initialization, a transfer, a kernel), with stock's
// names and details. Sections open and close on the thread that records the
// profile (the one that started the runtime), as stock's do.
#include "Listeners.h"

#include "../events/OffloadEvents.h"

#include "ompsim/ProfileWriter.h"

#include <fmt/format.h>

namespace ompsim::listeners {
namespace {

class ProfileSections final : public events::Listener {
public:
  void targetRegion(const events::TargetRegion &E) override {
    if (E.Kind == events::TargetKind::Target)
      section(E.Point, "Runtime: target exe",
              [&] { return fmt::format("NumTeams={};NumArgs={}", E.Teams > 0 ? E.Teams : 0, E.NumItems); });
    else
      section(E.Point, "Runtime: Data Copy", [&] { return fmt::format("NumArgs={}", E.NumItems); });
  }

  void deviceInitialize(const events::DeviceInitialize &E) override {
    section(E.Point, "Device init", [&] { return fmt::format("Device={};Plugin={}", E.Device, E.Type); });
  }

  void dataOp(const events::DataOp &E) override {
    if (E.Kind == events::DataOpKind::TransferToDevice)
      section(E.Point, "HostToDev", [&] { return fmt::format("Size={}B", E.Bytes); });
    else if (E.Kind == events::DataOpKind::TransferFromDevice)
      section(E.Point, "DevToHost", [&] { return fmt::format("Size={}B", E.Bytes); });
  }

  void submit(const events::Submit &E) override {
    // Stock's section name and detail, with the kernel's name added (stock's
    // host plugin names no kernel).
    section(E.Point, "Kernel Target", [&] {
      return fmt::format("NumArguments={};NumTeams={};TripCount={};Kernel={};Device={}", E.NumArgs,
                         E.NumTeams, E.TripCount, E.Kernel ? E.Kernel : "?", E.Device);
    });
  }

private:
  /// Opens the section at a Begin, closes it at the End; on a thread that
  /// records no profile, neither.
  template <typename DetailFn>
  static void section(events::Endpoint Point, std::string_view Name, DetailFn Detail) {
    if (!profile::enabled())
      return;
    if (Point == events::Endpoint::Begin)
      profile::beginSection(Name, Detail());
    else
      profile::endSection();
  }
};

} // namespace

void subscribeProfileSections() { events::subscribeOnce<ProfileSections>(); }

} // namespace ompsim::listeners

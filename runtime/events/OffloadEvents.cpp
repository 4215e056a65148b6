// ompsim runtime: the offload event stream (see OffloadEvents.h).
#include "OffloadEvents.h"

#include <array>
#include <atomic>
#include <cassert>
#include <mutex>

namespace ompsim::events {

namespace {

/// Enough for every listener the runtime has; subscribing one more is a bug.
constexpr size_t MaxListeners = 8;
std::array<Listener *, MaxListeners> Listeners{};
std::atomic<size_t> NumListeners{0};
/// Serializes subscriptions; emitters read the list without it (a slot is
/// written before the count that publishes it).
std::mutex SubscribeLock;

thread_local const void *TApiCode = nullptr;

template <typename EventT> void dispatch(void (Listener::*Hear)(const EventT &), const EventT &E) {
  size_t N = NumListeners.load(std::memory_order_acquire);
  for (size_t I = 0; I < N; ++I)
    (Listeners[I]->*Hear)(E);
}

} // namespace

Listener::~Listener() = default;

void subscribe(Listener &L) {
  std::lock_guard<std::mutex> Lock(SubscribeLock);
  size_t N = NumListeners.load(std::memory_order_relaxed);
  assert(N < MaxListeners && "more offload event listeners than the stream holds");
  if (N >= MaxListeners)
    return;
  Listeners[N] = &L;
  NumListeners.store(N + 1, std::memory_order_release);
}

bool observed() { return NumListeners.load(std::memory_order_acquire) != 0; }

void emit(const TargetRegion &E) { dispatch(&Listener::targetRegion, E); }
void emit(const DataOp &E) { dispatch(&Listener::dataOp, E); }
void emit(const Submit &E) { dispatch(&Listener::submit, E); }
void emit(const DeviceInitialize &E) { dispatch(&Listener::deviceInitialize, E); }
void emit(const DeviceFinalize &E) { dispatch(&Listener::deviceFinalize, E); }
void emit(const DeviceLoad &E) { dispatch(&Listener::deviceLoad, E); }
void emit(const MapCreated &E) { dispatch(&Listener::mapCreated, E); }
void emit(const MapFound &E) { dispatch(&Listener::mapFound, E); }
void emit(const MapPresentUse &E) { dispatch(&Listener::mapPresentUse, E); }
void emit(const MapCopied &E) { dispatch(&Listener::mapCopied, E); }
void emit(const MapLookedUp &E) { dispatch(&Listener::mapLookedUp, E); }
void emit(const MapReleased &E) { dispatch(&Listener::mapReleased, E); }
void emit(const MapRemoved &E) { dispatch(&Listener::mapRemoved, E); }
void emit(const MapperComponent &E) { dispatch(&Listener::mapperComponent, E); }
void emit(const MapLeftByMapper &E) { dispatch(&Listener::mapLeftByMapper, E); }
void emit(const MapNothingMapped &E) { dispatch(&Listener::mapNothingMapped, E); }
void emit(const MapPointerAttached &E) { dispatch(&Listener::mapPointerAttached, E); }
void emit(const MapLambdaCapture &E) { dispatch(&Listener::mapLambdaCapture, E); }
void emit(const MapUpdate &E) { dispatch(&Listener::mapUpdate, E); }

const void *apiCode() { return TApiCode; }

ApiCall::ApiCall(const void *Code) : Outermost(TApiCode == nullptr) {
  if (Outermost)
    TApiCode = Code;
}

ApiCall::~ApiCall() {
  if (Outermost)
    TApiCode = nullptr;
}

TargetRegionScope::TargetRegionScope(const TargetRegion &Begin) : Event(Begin), Observed(observed()) {
  Event.Point = Endpoint::Begin;
  Event.Code = TApiCode;
  if (Observed)
    emit(Event);
}

TargetRegionScope::~TargetRegionScope() {
  if (!Observed)
    return;
  Event.Point = Endpoint::End;
  emit(Event);
}

DataOpScope::DataOpScope(DataOpKind Kind, const void *Src, int32_t SrcDevice, const void *Dst,
                         int32_t DstDevice, uint64_t Bytes, std::string_view Name)
    : Event{Endpoint::Begin, Kind, Src, SrcDevice, Dst, DstDevice, Bytes, TApiCode, Name},
      Observed(observed()) {
  if (Observed)
    emit(Event);
}

DataOpScope::~DataOpScope() {
  if (!Observed)
    return;
  Event.Point = Endpoint::End;
  emit(Event);
}

SubmitScope::SubmitScope(const Submit &Begin) : Event(Begin), Observed(observed()) {
  Event.Point = Endpoint::Begin;
  Event.Succeeded = false;
  if (Observed)
    emit(Event);
}

SubmitScope::~SubmitScope() {
  if (!Observed)
    return;
  Event.Point = Endpoint::End;
  emit(Event);
}

} // namespace ompsim::events

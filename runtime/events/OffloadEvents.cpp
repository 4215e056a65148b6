// ompsim runtime: the offload event stream (see OffloadEvents.h).
#include "OffloadEvents.h"

#include <array>
#include <atomic>
#include <cassert>

namespace ompsim::events {

namespace {

/// Enough for every listener the runtime has; subscribing one more is a bug.
constexpr size_t MaxListeners = 8;
std::array<Listener *, MaxListeners> Listeners{};
std::atomic<size_t> NumListeners{0};

thread_local const void *TApiCode = nullptr;

template <typename EventT, typename Fn> void forEach(const EventT &E, Fn Call) {
  size_t N = NumListeners.load(std::memory_order_acquire);
  for (size_t I = 0; I < N; ++I)
    Call(*Listeners[I], E);
}

} // namespace

Listener::~Listener() = default;

void subscribe(Listener &L) {
  size_t N = NumListeners.load(std::memory_order_relaxed);
  assert(N < MaxListeners && "more offload event listeners than the stream holds");
  if (N >= MaxListeners)
    return;
  Listeners[N] = &L;
  NumListeners.store(N + 1, std::memory_order_release);
}

bool observed() { return NumListeners.load(std::memory_order_acquire) != 0; }

void emit(const TargetRegion &E) {
  forEach(E, [](Listener &L, const TargetRegion &Ev) { L.targetRegion(Ev); });
}
void emit(const DataOp &E) {
  forEach(E, [](Listener &L, const DataOp &Ev) { L.dataOp(Ev); });
}
void emit(const Submit &E) {
  forEach(E, [](Listener &L, const Submit &Ev) { L.submit(Ev); });
}
void emit(const DeviceInitialize &E) {
  forEach(E, [](Listener &L, const DeviceInitialize &Ev) { L.deviceInitialize(Ev); });
}
void emit(const DeviceFinalize &E) {
  forEach(E, [](Listener &L, const DeviceFinalize &Ev) { L.deviceFinalize(Ev); });
}
void emit(const DeviceLoad &E) {
  forEach(E, [](Listener &L, const DeviceLoad &Ev) { L.deviceLoad(Ev); });
}

const void *apiCode() { return TApiCode; }

ApiCall::ApiCall(const void *Code) : Outermost(TApiCode == nullptr) {
  if (Outermost)
    TApiCode = Code;
}

ApiCall::~ApiCall() {
  if (Outermost)
    TApiCode = nullptr;
}

TargetRegionScope::TargetRegionScope(TargetKind Kind, int32_t Device) : Kind(Kind), Device(Device) {
  if (observed())
    emit(TargetRegion{Endpoint::Begin, Kind, Device, TApiCode});
}

TargetRegionScope::~TargetRegionScope() {
  if (observed())
    emit(TargetRegion{Endpoint::End, Kind, Device, TApiCode});
}

DataOpScope::DataOpScope(DataOpKind Kind, const void *Src, int32_t SrcDevice, const void *Dst,
                         int32_t DstDevice, uint64_t Bytes)
    : Event{Endpoint::Begin, Kind, Src, SrcDevice, Dst, DstDevice, Bytes, TApiCode}, Observed(observed()) {
  if (Observed)
    emit(Event);
}

DataOpScope::~DataOpScope() {
  if (!Observed)
    return;
  Event.Point = Endpoint::End;
  emit(Event);
}

SubmitScope::SubmitScope(int32_t Device, uint32_t RequestedTeams)
    : Event{Endpoint::Begin, Device, RequestedTeams}, Observed(observed()) {
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

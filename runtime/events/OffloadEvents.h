// ompsim runtime: the one stream of offload events, in OMPT's vocabulary.
//
// The code that decides (launch, data transfer, allocation, device and image
// lifecycle, the constructs) says what happened once, as a typed event; the
// listeners (the OMPT dispatcher for tools, and each observer of ours) turn it
// into what they need. A new observer is a new Listener, never an edit of the
// code that decides.
#pragma once

#include <cstdint>
#include <string_view>

struct ompsim_ident;

namespace ompsim::host {
struct MapEntry;
class DeviceMemory;
} // namespace ompsim::host

namespace ompsim::events {

/// The construct a target-region event belongs to (OMPT's ompt_target_t).
enum class TargetKind : uint8_t { Target = 1, EnterData = 2, ExitData = 3, Update = 4 };

/// Which end of a scoped event this is (OMPT's ompt_scope_endpoint_t).
enum class Endpoint : uint8_t { Begin = 1, End = 2 };

/// A data operation (OMPT's ompt_target_data_op_t).
enum class DataOpKind : uint8_t {
  Alloc = 1,
  TransferToDevice = 2,
  TransferFromDevice = 3,
  Delete = 4,
  Associate = 5,
  Disassociate = 6
};

/// The device number an event gives the host (omp_get_initial_device() to a
/// listener that reports numbers).
constexpr int32_t HostDevice = -2;
/// "No device": the destination of a delete, as stock reports it.
constexpr int32_t NoDevice = -1;

/// A target, target data enter/exit or target update construct begins or
/// ends on `Device`. `Code` is the return address of the API call.
struct TargetRegion {
  Endpoint Point;
  TargetKind Kind;
  int32_t Device;
  const void *Code;
  const ompsim_ident *Loc = nullptr; ///< the construct's source location, or null
  bool Nowait = false;               ///< through a `nowait` entry point
  int32_t Teams = 0;                 ///< a target's num_teams (0: none asked)
  /// The construct's map items as the program passes them: `NumItems`
  /// entries of each array (any may be null when `NumItems` is 0).
  size_t NumItems = 0;
  const int64_t *Sizes = nullptr;
  const int64_t *Types = nullptr;
  void *const *Names = nullptr;
};

/// A data operation begins or ends. For an allocation, `Dst` is null at the
/// beginning and the new block at the end.
struct DataOp {
  Endpoint Point;
  DataOpKind Kind;
  const void *Src;
  int32_t SrcDevice;
  const void *Dst;
  int32_t DstDevice;
  uint64_t Bytes;
  const void *Code;
  /// A transfer's mapped item, as stock's copy lines name it ("" for none).
  std::string_view Name = {};
};

/// A kernel is submitted to `Device` (begins) or has completed (ends).
/// `RequestedTeams` is the teams the construct asked for (0: unspecified);
/// the rest is the launch the runtime asks the plugin for.
struct Submit {
  Endpoint Point;
  int32_t Device;
  uint32_t RequestedTeams;
  const char *Kernel; ///< the kernel's name, or null
  uint64_t NumArgs;
  uint32_t NumTeams;    ///< 0: the plugin's default
  uint32_t ThreadLimit; ///< 0: the plugin's default
  uint64_t TripCount;
  bool Succeeded = false; ///< End: the kernel ran to completion
};

/// A device's plugin initializes it (begins), and it is usable or not
/// (ends). `Type` names its plugin; `LocalId` is the plugin's number of it.
struct DeviceInitialize {
  Endpoint Point;
  int32_t Device;
  const char *Type;
  int32_t LocalId;
  bool Succeeded = false; ///< End: the device is usable
};

/// A device is finished with (at the end of the program).
struct DeviceFinalize {
  int32_t Device;
};

/// A device image was loaded on `Device`: the image's bytes in the host
/// program, [HostImage, HostImage + Bytes).
struct DeviceLoad {
  int32_t Device;
  const void *HostImage;
  uint64_t Bytes;
};

// ---- map clauses ---------------------------------------------------------------
// What the map rules did to one item or one block of a device's mapping
// table, said where it happened (runtime/host/MapClause*.cpp). `Memory` is
// the device's memory: its number and the symbols of its addresses.

/// A map item as the construct gives it.
struct MapItem {
  uintptr_t Begin;
  int64_t Size;
  uint64_t Type;    ///< its OpenMPOffloadMappingFlags
  const void *Name; ///< its map name (";var;file;line;col;;"), or null
  /// The pointer half of a PTR_AND_OBJ item, mapped under the object's name
  /// (stock's messages call it unknown).
  bool PointerOfPair = false;
};

/// A map-entering item created its block: allocated and counted once, before
/// any copy. `CopiedWhole`: the item copies the whole block to the device next.
struct MapCreated {
  host::MapEntry &Entry;
  host::DeviceMemory &Memory;
  MapItem Item;
  bool CopiedWhole;
};

/// A map-entering item found its block. Begin: its count changed (when
/// `Counted`), no data moved yet. End: the data the item copies is on the
/// device.
struct MapFound {
  Endpoint Point;
  host::MapEntry &Entry;
  host::DeviceMemory &Memory;
  MapItem Item;
  uint64_t TgtBegin;
  bool Counted;
};

/// A target region uses data of a block that was present before it and that
/// it does not copy to the device.
struct MapPresentUse {
  host::MapEntry &Entry;
  uintptr_t Begin;
  uint64_t Size;
  const void *Name;
};

/// A map or motion clause copied [Begin, Begin+Size) of a block to the
/// device or back (attached pointers already restored on the host).
struct MapCopied {
  host::MapEntry &Entry;
  host::DeviceMemory &Memory;
  bool ToDevice;
  uintptr_t Begin;
  uint64_t Size;
  const void *Name; ///< the copying item's map name, or null
};

/// A look-up that changes no count found `Size` bytes at `Begin` in a block
/// (pointer attachment, kernel arguments, target update, lambda captures).
struct MapLookedUp {
  const host::MapEntry &Entry;
  host::DeviceMemory &Memory;
  uintptr_t Begin;
  int64_t Size;
};

/// A map-exiting item released its block. Begin: its count changed, no data
/// moved yet; `Counted`: it dropped a reference, `Last`: that was the last
/// one, `Delete`: the item has `delete`. End: its data is back on the host.
struct MapReleased {
  Endpoint Point;
  host::MapEntry &Entry;
  host::DeviceMemory &Memory;
  MapItem Item;
  bool Counted;
  bool Last;
  bool Delete;
};

/// A block's counts reached zero: it is removed from the table, its device
/// memory not yet freed. `ItemSize`: the size of the item that released it.
struct MapRemoved {
  host::MapEntry &Entry;
  host::DeviceMemory &Memory;
  int64_t ItemSize;
};

/// A declare mapper gave `Component` for the item `Caller` (one event per
/// component, in order).
struct MapperComponent {
  MapItem Caller;
  MapItem Component;
  uintptr_t Base; ///< the component's base
};

/// A block new in this construct was created by a declare mapper's first
/// component, which stock never releases.
struct MapLeftByMapper {
  host::MapEntry &Entry;
};

/// An explicit map item left nothing on the device (a zero-length section of
/// data that is not mapped).
struct MapNothingMapped {
  host::DeviceMemory &Memory;
  const void *Name;
};

/// The device copy of the pointer at host address `Pointer` (device address
/// `DevicePointer`) was set to `Value`, its pointee's device address.
struct MapPointerAttached {
  host::DeviceMemory &Memory;
  uintptr_t Pointer;
  uint64_t DevicePointer;
  uint64_t Value;
};

/// A C++ lambda's capture field (device address `Field`) was set to the
/// device address `Value` of the variable it captured (host `Captured`).
struct MapLambdaCapture {
  host::DeviceMemory &Memory;
  const void *Name;
  uintptr_t Captured;
  uint64_t Field;
  uint64_t Value;
};

/// A target update moves `Item`'s [Begin, Begin+Size) of a mapped block.
struct MapUpdate {
  host::DeviceMemory &Memory;
  MapItem Item;
  bool ToDevice;
};

/// An observer of the stream. Each callback runs on the thread where the
/// event happened, synchronously; the default ignores the event.
class Listener {
public:
  virtual ~Listener();
  virtual void targetRegion(const TargetRegion &) {}
  virtual void dataOp(const DataOp &) {}
  virtual void submit(const Submit &) {}
  virtual void deviceInitialize(const DeviceInitialize &) {}
  virtual void deviceFinalize(const DeviceFinalize &) {}
  virtual void deviceLoad(const DeviceLoad &) {}
  virtual void mapCreated(const MapCreated &) {}
  virtual void mapFound(const MapFound &) {}
  virtual void mapPresentUse(const MapPresentUse &) {}
  virtual void mapCopied(const MapCopied &) {}
  virtual void mapLookedUp(const MapLookedUp &) {}
  virtual void mapReleased(const MapReleased &) {}
  virtual void mapRemoved(const MapRemoved &) {}
  virtual void mapperComponent(const MapperComponent &) {}
  virtual void mapLeftByMapper(const MapLeftByMapper &) {}
  virtual void mapNothingMapped(const MapNothingMapped &) {}
  virtual void mapPointerAttached(const MapPointerAttached &) {}
  virtual void mapLambdaCapture(const MapLambdaCapture &) {}
  virtual void mapUpdate(const MapUpdate &) {}
};

/// Adds `L` to the stream; it stays for the life of the process. Listeners
/// hear each event in the order they subscribed. Safe at any time: an event
/// emitted meanwhile on another thread reaches `L` or not.
void subscribe(Listener &L);

/// Subscribes one instance of `ListenerT`, made on the first call, which
/// stays for the life of the process; later calls do nothing.
template <typename ListenerT> void subscribeOnce() {
  static ListenerT Instance;
  static const bool Subscribed = (subscribe(Instance), true);
  (void)Subscribed;
}

/// True when some listener is subscribed: emitters skip building events
/// when not.
bool observed();

void emit(const TargetRegion &E);
void emit(const DataOp &E);
void emit(const Submit &E);
void emit(const DeviceInitialize &E);
void emit(const DeviceFinalize &E);
void emit(const DeviceLoad &E);
void emit(const MapCreated &E);
void emit(const MapFound &E);
void emit(const MapPresentUse &E);
void emit(const MapCopied &E);
void emit(const MapLookedUp &E);
void emit(const MapReleased &E);
void emit(const MapRemoved &E);
void emit(const MapperComponent &E);
void emit(const MapLeftByMapper &E);
void emit(const MapNothingMapped &E);
void emit(const MapPointerAttached &E);
void emit(const MapLambdaCapture &E);
void emit(const MapUpdate &E);

/// Emits `E` when some listener is subscribed; `E` is built only then.
/// `emitIfObserved([&] { return MapUpdate{...}; })`.
template <typename MakeEventT> void emitIfObserved(MakeEventT Make) {
  if (observed())
    emit(Make());
}

/// The return address of the outermost offload API call on this thread
/// while it runs (null outside one): the `Code` of the events it causes.
const void *apiCode();

/// Marks an offload API call on this thread for its lifetime; nested calls
/// (an API function calling another) keep the outermost one's address.
class ApiCall {
public:
  explicit ApiCall(const void *Code);
  ~ApiCall();
  ApiCall(const ApiCall &) = delete;
  ApiCall &operator=(const ApiCall &) = delete;

private:
  bool Outermost;
};

/// Emits a construct's Begin on construction and its End on destruction.
class TargetRegionScope {
public:
  /// `Begin`: the construct (its Point and Code are set here).
  explicit TargetRegionScope(const TargetRegion &Begin);
  ~TargetRegionScope();
  TargetRegionScope(const TargetRegionScope &) = delete;
  TargetRegionScope &operator=(const TargetRegionScope &) = delete;

private:
  TargetRegion Event;
  bool Observed;
};

/// Emits a data operation's Begin on construction and its End on
/// destruction (with the destination set meanwhile, for an allocation).
class DataOpScope {
public:
  DataOpScope(DataOpKind Kind, const void *Src, int32_t SrcDevice, const void *Dst, int32_t DstDevice,
              uint64_t Bytes, std::string_view Name = {});
  ~DataOpScope();
  DataOpScope(const DataOpScope &) = delete;
  DataOpScope &operator=(const DataOpScope &) = delete;

  /// The destination the End reports (an allocation's new block).
  void setDestination(const void *Dst) { Event.Dst = Dst; }

private:
  DataOp Event;
  bool Observed;
};

/// Emits a kernel submission's Begin on construction and its End on
/// destruction.
class SubmitScope {
public:
  /// `Begin`: the submission (its Point is set here).
  explicit SubmitScope(const Submit &Begin);
  ~SubmitScope();
  SubmitScope(const SubmitScope &) = delete;
  SubmitScope &operator=(const SubmitScope &) = delete;

  /// The End says the kernel completed.
  void succeeded() { Event.Succeeded = true; }

private:
  Submit Event;
  bool Observed;
};

} // namespace ompsim::events

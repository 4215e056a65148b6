// ompsim runtime: the one stream of offload events, in OMPT's vocabulary.
//
// The code that decides (launch, data transfer, allocation, device and image
// lifecycle, the constructs) says what happened once, as a typed event; the
// listeners (the OMPT dispatcher for tools, and each observer of ours) turn it
// into what they need. A new observer is a new Listener, never an edit of the
// code that decides.
#pragma once

#include <cstdint>

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
};

/// A kernel is submitted to `Device` (begins) or has completed (ends).
/// `RequestedTeams` is the teams the construct asked for (0: unspecified).
struct Submit {
  Endpoint Point;
  int32_t Device;
  uint32_t RequestedTeams;
};

/// A device became usable. `Type` names its plugin.
struct DeviceInitialize {
  int32_t Device;
  const char *Type;
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
};

/// Adds `L` to the stream; it stays for the life of the process.
///
/// Precondition: called during the runtime's start-up, before any event is
/// emitted on another thread (listeners are read without a lock).
void subscribe(Listener &L);

/// True when some listener is subscribed: emitters skip building events
/// when not.
bool observed();

void emit(const TargetRegion &E);
void emit(const DataOp &E);
void emit(const Submit &E);
void emit(const DeviceInitialize &E);
void emit(const DeviceFinalize &E);
void emit(const DeviceLoad &E);

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
  TargetRegionScope(TargetKind Kind, int32_t Device);
  ~TargetRegionScope();
  TargetRegionScope(const TargetRegionScope &) = delete;
  TargetRegionScope &operator=(const TargetRegionScope &) = delete;

private:
  TargetKind Kind;
  int32_t Device;
};

/// Emits a data operation's Begin on construction and its End on
/// destruction (with the destination set meanwhile, for an allocation).
class DataOpScope {
public:
  DataOpScope(DataOpKind Kind, const void *Src, int32_t SrcDevice, const void *Dst, int32_t DstDevice,
              uint64_t Bytes);
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
  SubmitScope(int32_t Device, uint32_t RequestedTeams);
  ~SubmitScope();
  SubmitScope(const SubmitScope &) = delete;
  SubmitScope &operator=(const SubmitScope &) = delete;

private:
  Submit Event;
  bool Observed;
};

} // namespace ompsim::events

// ompsim runtime: what the data address of a device fault is, and how to fix
// the program that made the device touch it.
#pragma once

#include "MapClauseProcessor.h"
#include "MappingTable.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <string>

namespace ompsim::host {

/// A device fault on a data address, as the plugin reports it
/// (__tgt_rtl_last_fault).
struct DataFaultSite {
  uint64_t Addr = 0;
  bool Write = false;
  int32_t Device = 0;       ///< the device that faulted
  int64_t OwnerDevice = -1; ///< the device whose memory holds `Addr`, or -1
  std::string Context;      ///< "kernel __omp_offloading_..."
  std::string Instruction;  ///< "dev:sym+0x1c (0x...)"
  /// The shared library whose code faulted ("libm.so.6") when device code
  /// called one, and its function ("sincos", or "" unnamed); else empty.
  std::string Library;
  std::string LibraryFunction;
  /// What the device says the address is, and the fix, when it knows (the
  /// device heap or a team-shared guard page the checker places); else empty.
  std::string DeviceWhat, DeviceNote;
};

/// Classifies a faulting data address: host stack (and whose frame), host
/// heap, host global, the host copy of a block mapped on the device, a device
/// block whose mapping ended, memory past a device copy's end, another
/// device's memory, null or nothing known. It finds the pointer that carried
/// the address among the region's map items (a firstprivate pointer, or a
/// pointer inside a mapped struct that was not attached) and ends with a
/// `note:` that says what to change.
///
/// The caller holds the mapping table's lock.
class DataFaultAdvisor {
public:
  DataFaultAdvisor(MappingTable &Table, llvm::ArrayRef<MapArg> RegionArgs)
      : Table(Table), RegionArgs(RegionArgs) {}

  /// The one-line diagnosis: "device 0: kernel K read host heap memory at
  /// host:0x... (...) from dev:K+0x1c (0x...); note: ...".
  std::string describe(const DataFaultSite &Fault) const;

  /// `Line`, a line of the device runtime that names device memory ("the
  /// write of device memory at dev:0x..."), with the live mapping that
  /// holds that memory named after it: "(4 bytes into the device copy of
  /// 'count' (8 bytes))". Unchanged when none does.
  std::string nameDeviceMemory(std::string Line) const;

private:
  /// A map item of the region whose value or host bytes hold a pointer into [Begin, End).
  struct Holder {
    std::string What; ///< "'p' (firstprivate or is_device_ptr)", "the pointer at byte 8 of 's'"
    std::string Name; ///< the item's name, "" when unnamed
    /// Passed by value; mapped as a zero-length section; inside an item the
    /// region maps; inside a firstprivate item.
    enum class Kind { Firstprivate, ZeroLength, Member, PrivateMember } Kind = Kind::Member;
  };
  std::optional<Holder> findHolder(uint64_t Begin, uint64_t End) const;
  /// `Because` gets the sentence naming the pointer that carried the address.
  std::string describeHost(const DataFaultSite &Fault, std::string &Because, std::string &Note) const;
  std::string describeDevice(const DataFaultSite &Fault, std::string &Note) const;
  /// The live mapping whose device copy holds `Addr`, or null.
  const MapEntry *deviceCopyHolding(uint64_t Addr) const;
  /// "12 bytes into the device copy of 'a[0:64]' (256 bytes)".
  static std::string intoDeviceCopy(const MapEntry &E, uint64_t Addr);

  MappingTable &Table;
  llvm::ArrayRef<MapArg> RegionArgs;
};

} // namespace ompsim::host

// ompsim runtime: the device-memory operations the mapping logic needs.
#pragma once

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace ompsim::host {

/// Memory of one device as seen by the host: opaque device addresses that
/// the host never dereferences.
///
/// Device implements it over a plugin; unit tests implement it over a fake.
class DeviceMemory {
public:
  virtual ~DeviceMemory() = default;
  /// Allocates `Size` bytes (size 0 allocates a minimal block).
  virtual llvm::Expected<uint64_t> allocate(uint64_t Size, const void *HostHint) = 0;
  /// Frees a block from allocate().
  virtual llvm::Error release(uint64_t Tgt) = 0;
  /// Copies host -> device. `Name` is the mapped item the copy is for (the
  /// `Name=` of stock's info line; "" when it has none).
  virtual llvm::Error submit(uint64_t Tgt, const void *Hst, uint64_t Size, llvm::StringRef Name = {}) = 0;
  /// Copies device -> host; `Name` as for submit().
  virtual llvm::Error retrieve(void *Hst, uint64_t Tgt, uint64_t Size, llvm::StringRef Name = {}) = 0;
  /// Names a device address for traces ("add1+0x0"), or "".
  virtual std::string symbolize(uint64_t Tgt) { return {}; }
  /// Device number for traces and messages.
  virtual int32_t deviceNumber() const { return 0; }
  /// Whether submit() and retrieve() use the `Name` they are given (stock's
  /// copy lines name the data): a caller whose name costs a search asks
  /// first. False by default.
  virtual bool namesCopies() const { return false; }
};

} // namespace ompsim::host

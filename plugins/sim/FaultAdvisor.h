// ompsim sim plugin: the "how to fix it" part of a device fault's diagnosis.
#pragma once

#include "ompsim/offload_abi.h"
#include "ompsim/simulator/DeviceController.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ompsim::sim {

/// Says what to change when device code called or accessed a host address.
///
/// It knows what the plugin was told: the function-pointer table of
/// __tgt_rtl_set_function_ptr_map, whose host addresses are the `declare
/// target indirect` functions and the slots of vtables with an offload entry
/// (0x20). The host symbolizer names the function, vtable or object, and the
/// program's debug info, where present, where a function is defined.
class FaultAdvisor {
public:
  /// Remembers the host addresses of a published function-pointer table.
  void setFunctionPointerTable(llvm::ArrayRef<__omp_offloading_fptr_map_ty> Table);

  /// A note to append to the fault's one-line diagnosis ("note: ..."), or ""
  /// when nothing useful is known about the address.
  std::string advise(const HostFault &Fault) const;

  /// "file:line" of the function at host address `Addr` from the debug info
  /// of the object defining it, or "" without debug info.
  static std::string definedAt(uint64_t Addr);

private:
  bool inTable(uint64_t Begin, uint64_t End) const;
  std::string adviseCall(const HostFault &Fault) const;
  std::string adviseVtable(const HostFault &Fault, const std::string &ClassName, uint64_t Begin,
                           uint64_t End) const;

  std::vector<uint64_t> HostPtrs; ///< sorted host addresses of the table
};

} // namespace ompsim::sim

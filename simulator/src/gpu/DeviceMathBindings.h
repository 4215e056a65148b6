//===- DeviceMathBindings.h - GPU device math on the simulated device ------===//
//
// A GPU image calls its GPU's device math library, which Debian's LLVM does
// not ship and ompsim's images are linked without: libdevice's `__nv_*`
// (nvptx64) and the ROCm device libraries' `__ocml_*` (amdgcn), as clang-22's
// wrapper headers (__clang_cuda_math.h, __clang_hip_math.h) call them. The
// simulated GPU calls, in place of each, a function the executor defines
// with the same signature (pointers of any address space being the host's)
// and meaning: libm's namesake where it has both, else libompsim-device's
// (runtime/device/math/). A device-library function this table lacks stays
// unbound and the image is refused at load naming it.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_SIMULATOR_GPU_DEVICEMATHBINDINGS_H
#define OMPSIM_SIMULATOR_GPU_DEVICEMATHBINDINGS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace ompsim::sim::gpu {

/// One device-library function and what the simulated GPU calls in its place.
struct DeviceMathBinding {
  /// The device library's name (`__nv_sincosf`, `__ocml_sincos_f32`), or one
  /// of CUDA's math functions libm lacks called by its own name
  /// (`normcdfinvf`).
  llvm::StringRef Device;
  /// The executor's function of the same signature and meaning: libm's or
  /// libc's (`sincosf`), or libompsim-device's (`__ompsim_ocml_sincos_f32`).
  llvm::StringRef Host;
};

/// Every binding, each device name once, in a fixed order.
llvm::ArrayRef<DeviceMathBinding> deviceMathBindings();

/// The function the simulated GPU calls for device-library function
/// `Device`, or empty when it binds none.
llvm::StringRef hostMathFunction(llvm::StringRef Device);

} // namespace ompsim::sim::gpu

#endif // OMPSIM_SIMULATOR_GPU_DEVICEMATHBINDINGS_H

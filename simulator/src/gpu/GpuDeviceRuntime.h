//===- GpuDeviceRuntime.h - ompsim's GPU device runtime in GPU images -----===//
//
// A GPU's offload link puts the OpenMP device runtime into the device image
// (clang-22 links libompdevice.a at device LTO). `ompsim cc` builds GPU
// images with -nogpulib, so their __kmpc_* calls are left open; the executor
// closes them as a GPU's link would, with ompsim's own GPU device runtime
// (runtime/gpu-device), built as x86-64 bitcode over the simulated GPU's
// hardware (lib/ompsim-vgpu/ompdevice.bc beside libompsim-device.so).
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_SIMULATOR_GPU_GPUDEVICERUNTIME_H
#define OMPSIM_SIMULATOR_GPU_GPUDEVICERUNTIME_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <string>

namespace llvm {
class Module;
} // namespace llvm

namespace ompsim::sim::gpu {

/// The runtime's bitcode: ompsim-vgpu/ompdevice.bc in `LibDir` (where
/// libompsim-device.so is). An error names the file and why it cannot be
/// read.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> loadGpuDeviceRuntime(llvm::StringRef LibDir);

/// Links the runtime's functions `M` (a retargeted GPU image) calls into it,
/// internal to it, as a GPU's device link does. What the executor's own
/// device runtime answers for every image (the indirect-call lookup over
/// the table sim publishes, the ompx API, the devices) stays the executor's.
/// An error names the image and the problem.
llvm::Error linkGpuDeviceRuntime(llvm::Module &M, llvm::MemoryBufferRef Runtime, llvm::StringRef ImageName);

} // namespace ompsim::sim::gpu

#endif // OMPSIM_SIMULATOR_GPU_GPUDEVICERUNTIME_H

//===- GpuImageRetarget.h - GPU device images on the simulated device -----===//
//
// clang-22 and flang-22 give a program built for a GPU (--offload-arch=sm_90,
// gfx90a with -fopenmp-target-jit) an LLVM IR image for nvptx64 or amdgcn:
// the device module after its LTO link, which calls ompsim's GPU device
// runtime (the __kmpc_* ABI). The simulated device runs it on the host's
// CPU: retargetGpuModule() rewrites the module for x86-64 before the JIT
// compiles it as any other bitcode image.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_SIMULATOR_GPU_GPUIMAGERETARGET_H
#define OMPSIM_SIMULATOR_GPU_GPUIMAGERETARGET_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace llvm {
class DataLayout;
class Module;
class Value;
} // namespace llvm

namespace ompsim::sim::gpu {

/// The GPU a device module was compiled for.
enum class GpuArch { None, Nvptx, Amdgcn };

/// The GPU a target triple names (None for any other target).
GpuArch gpuArchOf(llvm::StringRef Triple);

/// The architecture's name in messages: "nvptx64", "amdgcn".
llvm::StringRef archName(GpuArch Arch);

/// Who uses `V`, for messages: "function 'f'" for the first function that
/// does (through constant expressions too), else "the image".
std::string usedBy(const llvm::Value &V);

/// The static shared memory one block may have: 48 KiB on NVIDIA GPUs,
/// 64 KiB of LDS on AMD GPUs.
uint64_t sharedMemoryLimit(GpuArch Arch);

/// What a retargeted module needs from the device at run time.
struct RetargetedImage {
  GpuArch Arch = GpuArch::None;
  /// Bytes of team-shared memory (addrspace(3) globals: globalization
  /// buffers, `omp_pteam_mem_alloc` variables, amdgcn's LDS structs) each
  /// team gets, reached through __ompsim_gpu_team_shared.
  uint64_t TeamSharedBytes = 0;
};

/// The device runtime's entry a retargeted module reaches its team's shared
/// memory through: `ptr __ompsim_gpu_team_shared(i64 bytes)` returns the
/// calling team's block of at least `bytes` bytes, 16-byte aligned, zeroed
/// when the team first asks.
inline constexpr const char *TeamSharedEntry = "__ompsim_gpu_team_shared";

/// Rewrites `M`, a device module for nvptx64 or amdgcn, into one the host
/// JIT compiles for `HostTriple` with `HostLayout`:
///  - the triple and data layout, and the GPU's target attributes, kernel
///    calling conventions and metadata (`!absolute_symbol`, nvvm
///    annotations) dropped;
///  - every addrspace(3) global (team-shared memory, one copy per team on a
///    GPU) laid out in one block per team: its uses become offsets from the
///    team's block (TeamSharedEntry);
///  - the GPU's printf (nvptx's `vprintf` with its packed argument buffer)
///    bound to the device runtime's printf, the GPU's math library
///    (libdevice's `__nv_*`, the ROCm device libraries' `__ocml_*`) to the
///    functions of the same signature and meaning DeviceMathBindings.h
///    lists (libm's, or libompsim-device's where libm's differ), and the
///    OpenMP routines whose answer differs on a device
///    (omp_get_device_num, omp_is_initial_device) to the device runtime's.
/// With `LinkedRuntime` (OMPSIM_GPU_FIBERS: ompsim's GPU device runtime is
/// linked in next, GpuDeviceRuntime.h) the runtime's entry points stay for
/// it to define; else those whose libomp answer is not a GPU's (the kernel
/// prologue, barriers, static loops) go to the executor's GPU-ABI forms.
/// With `GuardTeamShared` (the checker, on the virtual GPU) each team-shared
/// global ends at a guard page instead (TeamSharedGuards.h).
/// An error names the image, the object and what cannot be run (a GPU
/// intrinsic, an initialized team-shared global, a kernel with more
/// team-shared memory than a block has, TeamSharedReach.h); `M` is then
/// unusable.
llvm::Expected<RetargetedImage> retargetGpuModule(llvm::Module &M, llvm::StringRef HostTriple,
                                                  const llvm::DataLayout &HostLayout,
                                                  llvm::StringRef ImageName, bool LinkedRuntime,
                                                  bool GuardTeamShared = false);

} // namespace ompsim::sim::gpu

#endif // OMPSIM_SIMULATOR_GPU_GPUIMAGERETARGET_H

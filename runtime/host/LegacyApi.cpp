// The pre-__tgt_target_kernel launch entry points (__tgt_target,
// __tgt_target_teams and their _nowait/_mapper forms) and the CUDA-style
// kernel-language launch entry points, mapped onto __tgt_target_kernel.
#include "ApiHelpers.h"

#include "ompsim/offload_abi.h"

#include "llvm/Frontend/OpenMP/OMPConstants.h"

#include <fmt/format.h>

#include <cstdint>
#include <vector>

extern "C" int __tgt_target_kernel(ompsim_ident *Loc, int64_t DeviceNum, int32_t Teams, int32_t Threads,
                                   void *RegionId, __tgt_kernel_arguments *Args);

namespace {

/// Launches `RegionId` with legacy (version 1) arguments.
///
/// Version 1 arguments predate the kernel's implicit first parameter: stock
/// libomptarget passes the TARGET_PARAM entries as they are, so the first of
/// them lands in that parameter. ompsim's plugins always pass the implicit
/// parameter themselves, so the first TARGET_PARAM entry is still mapped but
/// not passed, which gives the kernel the same parameters as on stock.
int legacyLaunch(ompsim_ident *Loc, int64_t DeviceNum, void *RegionId, int32_t N, void **Bases, void **Begins,
                 int64_t *Sizes, int64_t *Types, void **Names, void **Mappers, int32_t Teams,
                 int32_t Threads) {
  constexpr auto TargetParam =
      static_cast<int64_t>(llvm::omp::OpenMPOffloadMappingFlags::OMP_MAP_TARGET_PARAM);
  std::vector<int64_t> Adjusted(Types, Types + (N > 0 ? N : 0));
  for (int64_t &Type : Adjusted)
    if (Type & TargetParam) {
      Type &= ~TargetParam;
      break;
    }
  __tgt_kernel_arguments Args{};
  Args.Version = 3;
  Args.NumArgs = static_cast<uint32_t>(N > 0 ? N : 0);
  Args.ArgBasePtrs = Bases;
  Args.ArgPtrs = Begins;
  Args.ArgSizes = Sizes;
  Args.ArgTypes = Adjusted.data();
  Args.ArgNames = Names;
  Args.ArgMappers = Mappers;
  Args.NumTeams[0] = Teams > 0 ? static_cast<uint32_t>(Teams) : 0;
  Args.ThreadLimit[0] = Threads > 0 ? static_cast<uint32_t>(Threads) : 0;
  return __tgt_target_kernel(Loc, DeviceNum, Teams, Threads, RegionId, &Args);
}

} // namespace

extern "C" {

// ---- legacy target regions -------------------------------------------------
// The nowait forms run to completion before returning, as ompsim's kernels
// always do; their dependence lists were already honoured by the task that
// encloses the call.

int __tgt_target_mapper(ompsim_ident *Loc, int64_t DeviceNum, void *RegionId, int32_t N, void **Bases,
                        void **Begins, int64_t *Sizes, int64_t *Types, void **Names, void **Mappers) {
  OMPSIM_API_CALL;
  return legacyLaunch(Loc, DeviceNum, RegionId, N, Bases, Begins, Sizes, Types, Names, Mappers, -1, -1);
}

int __tgt_target(int64_t DeviceNum, void *RegionId, int32_t N, void **Bases, void **Begins, int64_t *Sizes,
                 int64_t *Types) {
  OMPSIM_API_CALL;
  return legacyLaunch(nullptr, DeviceNum, RegionId, N, Bases, Begins, Sizes, Types, nullptr, nullptr, -1, -1);
}

int __tgt_target_nowait(int64_t DeviceNum, void *RegionId, int32_t N, void **Bases, void **Begins,
                        int64_t *Sizes, int64_t *Types, int32_t, void *, int32_t, void *) {
  OMPSIM_API_CALL;
  return legacyLaunch(nullptr, DeviceNum, RegionId, N, Bases, Begins, Sizes, Types, nullptr, nullptr, -1, -1);
}

int __tgt_target_nowait_mapper(ompsim_ident *Loc, int64_t DeviceNum, void *RegionId, int32_t N, void **Bases,
                               void **Begins, int64_t *Sizes, int64_t *Types, void **Names, void **Mappers,
                               int32_t, void *, int32_t, void *) {
  OMPSIM_API_CALL;
  return legacyLaunch(Loc, DeviceNum, RegionId, N, Bases, Begins, Sizes, Types, Names, Mappers, -1, -1);
}

int __tgt_target_teams_mapper(ompsim_ident *Loc, int64_t DeviceNum, void *RegionId, int32_t N, void **Bases,
                              void **Begins, int64_t *Sizes, int64_t *Types, void **Names, void **Mappers,
                              int32_t Teams, int32_t Threads) {
  OMPSIM_API_CALL;
  return legacyLaunch(Loc, DeviceNum, RegionId, N, Bases, Begins, Sizes, Types, Names, Mappers, Teams,
                      Threads);
}

int __tgt_target_teams(int64_t DeviceNum, void *RegionId, int32_t N, void **Bases, void **Begins,
                       int64_t *Sizes, int64_t *Types, int32_t Teams, int32_t Threads) {
  OMPSIM_API_CALL;
  return legacyLaunch(nullptr, DeviceNum, RegionId, N, Bases, Begins, Sizes, Types, nullptr, nullptr, Teams,
                      Threads);
}

int __tgt_target_teams_nowait(int64_t DeviceNum, void *RegionId, int32_t N, void **Bases, void **Begins,
                              int64_t *Sizes, int64_t *Types, int32_t Teams, int32_t Threads, int32_t, void *,
                              int32_t, void *) {
  OMPSIM_API_CALL;
  return legacyLaunch(nullptr, DeviceNum, RegionId, N, Bases, Begins, Sizes, Types, nullptr, nullptr, Teams,
                      Threads);
}

int __tgt_target_teams_nowait_mapper(ompsim_ident *Loc, int64_t DeviceNum, void *RegionId, int32_t N,
                                     void **Bases, void **Begins, int64_t *Sizes, int64_t *Types,
                                     void **Names, void **Mappers, int32_t Teams, int32_t Threads, int32_t,
                                     void *, int32_t, void *) {
  OMPSIM_API_CALL;
  return legacyLaunch(Loc, DeviceNum, RegionId, N, Bases, Begins, Sizes, Types, Names, Mappers, Teams,
                      Threads);
}

// ---- kernel-language (CUDA/HIP through OpenMP) launches ----------------------

/// CUDA's dim3.
struct OmpsimDim3 {
  unsigned X, Y, Z;
};

namespace {
/// The launch configuration a `<<<...>>>` call pushes before the launch.
struct CallConfiguration {
  OmpsimDim3 Grid{0, 0, 0}, Block{0, 0, 0};
  size_t SharedMemory = 0;
  void *Stream = nullptr;
};
thread_local CallConfiguration CurrentConfiguration;
} // namespace

unsigned __llvmPushCallConfiguration(OmpsimDim3 Grid, OmpsimDim3 Block, size_t SharedMemory, void *Stream) {
  CurrentConfiguration = CallConfiguration{Grid, Block, SharedMemory, Stream};
  return 0;
}

unsigned __llvmPopCallConfiguration(OmpsimDim3 *Grid, OmpsimDim3 *Block, size_t *SharedMemory, void *Stream) {
  *Grid = CurrentConfiguration.Grid;
  *Block = CurrentConfiguration.Block;
  *SharedMemory = CurrentConfiguration.SharedMemory;
  *static_cast<void **>(Stream) = CurrentConfiguration.Stream;
  return 0;
}

/// A kernel-language launch passes its arguments as one packed buffer
/// (KernelArgs flag IsCUDA), which neither ompsim plugin can unpack: refused
/// with one line rather than run with wrong arguments.
unsigned llvmLaunchKernel(const void *Func, OmpsimDim3, OmpsimDim3, void *, size_t, void *) {
  ompsim::trace::error(
      fmt::format("llvmLaunchKernel: kernel {} is a CUDA/HIP-style launch; ompsim devices run only OpenMP "
                  "target regions",
                  ompsim::trace::hostAddress(reinterpret_cast<uint64_t>(Func))));
  return OMPSIM_OFFLOAD_FAIL;
}

} // extern "C"

// The pre-__tgt_target_kernel launch entry points (__tgt_target,
// __tgt_target_teams and their _nowait/_mapper forms) and the CUDA-style
// kernel-language launch entry points, mapped onto __tgt_target_kernel.
#include "ApiHelpers.h"

#include "ompsim/offload_abi.h"

#include "llvm/Frontend/OpenMP/OMPConstants.h"

#include <fmt/format.h>

#include <cstdint>
#include <vector>

extern "C" int __tgt_target_kernel(ompsim_ident *loc, int64_t device, int32_t teams, int32_t threads,
                                   void *regionId, __tgt_kernel_arguments *args);

namespace {

/// Launches `regionId` with legacy (version 1) arguments.
///
/// Version 1 arguments predate the kernel's implicit first parameter: stock
/// libomptarget passes the TARGET_PARAM entries as they are, so the first of
/// them lands in that parameter. ompsim's plugins always pass the implicit
/// parameter themselves, so the first TARGET_PARAM entry is still mapped but
/// not passed, which gives the kernel the same parameters as on stock.
int legacyLaunch(ompsim_ident *loc, int64_t device, void *regionId, int32_t n, void **bases, void **begins,
                 int64_t *sizes, int64_t *types, void **names, void **mappers, int32_t teams,
                 int32_t threads) {
  constexpr auto TargetParam =
      static_cast<int64_t>(llvm::omp::OpenMPOffloadMappingFlags::OMP_MAP_TARGET_PARAM);
  std::vector<int64_t> adjusted(types, types + (n > 0 ? n : 0));
  for (int64_t &type : adjusted)
    if (type & TargetParam) {
      type &= ~TargetParam;
      break;
    }
  __tgt_kernel_arguments args{};
  args.Version = 3;
  args.NumArgs = static_cast<uint32_t>(n > 0 ? n : 0);
  args.ArgBasePtrs = bases;
  args.ArgPtrs = begins;
  args.ArgSizes = sizes;
  args.ArgTypes = adjusted.data();
  args.ArgNames = names;
  args.ArgMappers = mappers;
  args.NumTeams[0] = teams > 0 ? static_cast<uint32_t>(teams) : 0;
  args.ThreadLimit[0] = threads > 0 ? static_cast<uint32_t>(threads) : 0;
  return __tgt_target_kernel(loc, device, teams, threads, regionId, &args);
}

} // namespace

extern "C" {

// ---- legacy target regions -------------------------------------------------
// The nowait forms run to completion before returning, as ompsim's kernels
// always do; their dependence lists were already honoured by the task that
// encloses the call.

int __tgt_target_mapper(ompsim_ident *loc, int64_t device, void *regionId, int32_t n, void **bases,
                        void **begins, int64_t *sizes, int64_t *types, void **names, void **mappers) {
  return legacyLaunch(loc, device, regionId, n, bases, begins, sizes, types, names, mappers, -1, -1);
}

int __tgt_target(int64_t device, void *regionId, int32_t n, void **bases, void **begins, int64_t *sizes,
                 int64_t *types) {
  return legacyLaunch(nullptr, device, regionId, n, bases, begins, sizes, types, nullptr, nullptr, -1, -1);
}

int __tgt_target_nowait(int64_t device, void *regionId, int32_t n, void **bases, void **begins,
                        int64_t *sizes, int64_t *types, int32_t, void *, int32_t, void *) {
  return legacyLaunch(nullptr, device, regionId, n, bases, begins, sizes, types, nullptr, nullptr, -1, -1);
}

int __tgt_target_nowait_mapper(ompsim_ident *loc, int64_t device, void *regionId, int32_t n, void **bases,
                               void **begins, int64_t *sizes, int64_t *types, void **names, void **mappers,
                               int32_t, void *, int32_t, void *) {
  return legacyLaunch(loc, device, regionId, n, bases, begins, sizes, types, names, mappers, -1, -1);
}

int __tgt_target_teams_mapper(ompsim_ident *loc, int64_t device, void *regionId, int32_t n, void **bases,
                              void **begins, int64_t *sizes, int64_t *types, void **names, void **mappers,
                              int32_t teams, int32_t threads) {
  return legacyLaunch(loc, device, regionId, n, bases, begins, sizes, types, names, mappers, teams, threads);
}

int __tgt_target_teams(int64_t device, void *regionId, int32_t n, void **bases, void **begins, int64_t *sizes,
                       int64_t *types, int32_t teams, int32_t threads) {
  return legacyLaunch(nullptr, device, regionId, n, bases, begins, sizes, types, nullptr, nullptr, teams,
                      threads);
}

int __tgt_target_teams_nowait(int64_t device, void *regionId, int32_t n, void **bases, void **begins,
                              int64_t *sizes, int64_t *types, int32_t teams, int32_t threads, int32_t, void *,
                              int32_t, void *) {
  return legacyLaunch(nullptr, device, regionId, n, bases, begins, sizes, types, nullptr, nullptr, teams,
                      threads);
}

int __tgt_target_teams_nowait_mapper(ompsim_ident *loc, int64_t device, void *regionId, int32_t n,
                                     void **bases, void **begins, int64_t *sizes, int64_t *types,
                                     void **names, void **mappers, int32_t teams, int32_t threads, int32_t,
                                     void *, int32_t, void *) {
  return legacyLaunch(loc, device, regionId, n, bases, begins, sizes, types, names, mappers, teams, threads);
}

// ---- kernel-language (CUDA/HIP through OpenMP) launches ----------------------

/// CUDA's dim3.
struct OmpsimDim3 {
  unsigned x, y, z;
};

namespace {
/// The launch configuration a `<<<...>>>` call pushes before the launch.
struct CallConfiguration {
  OmpsimDim3 grid{0, 0, 0}, block{0, 0, 0};
  size_t sharedMemory = 0;
  void *stream = nullptr;
};
thread_local CallConfiguration currentConfiguration;
} // namespace

unsigned __llvmPushCallConfiguration(OmpsimDim3 grid, OmpsimDim3 block, size_t sharedMemory, void *stream) {
  currentConfiguration = CallConfiguration{grid, block, sharedMemory, stream};
  return 0;
}

unsigned __llvmPopCallConfiguration(OmpsimDim3 *grid, OmpsimDim3 *block, size_t *sharedMemory, void *stream) {
  *grid = currentConfiguration.grid;
  *block = currentConfiguration.block;
  *sharedMemory = currentConfiguration.sharedMemory;
  *static_cast<void **>(stream) = currentConfiguration.stream;
  return 0;
}

/// A kernel-language launch passes its arguments as one packed buffer
/// (KernelArgs flag IsCUDA), which neither ompsim plugin can unpack: refused
/// with one line rather than run with wrong arguments.
unsigned llvmLaunchKernel(const void *func, OmpsimDim3, OmpsimDim3, void *, size_t, void *) {
  ompsim::trace::error(
      fmt::format("llvmLaunchKernel: kernel {} is a CUDA/HIP-style launch; ompsim devices run only OpenMP "
                  "target regions",
                  ompsim::trace::hostAddress(reinterpret_cast<uint64_t>(func))));
  return OMPSIM_OFFLOAD_FAIL;
}

} // extern "C"

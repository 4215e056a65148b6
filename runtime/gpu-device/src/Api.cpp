//===- Api.cpp - the OpenMP and ompx API on the device --------------------===//
//
// What omp.h's functions answer in device code, as a GPU answers them: the
// thread's place in its parallel team and its team's in the league, the
// device's number, and the ompx_ kernel-language queries (thread and block
// ids, dimensions, lanes, warp shuffles and votes).
//
//===----------------------------------------------------------------------===//

#include "State.h"

using namespace ompsim::gpu;

#define OMPSIM_GPU_API extern "C" __attribute__((used, retain))

OMPSIM_GPU_API int omp_get_thread_num() { return int(threadNum()); }
OMPSIM_GPU_API int omp_get_num_threads() { return int(numThreads()); }
OMPSIM_GPU_API int omp_get_max_threads() {
  uint32_t Limit = maxTeamThreads();
  return teamLevel() || !Limit ? 1 : int(Limit);
}
OMPSIM_GPU_API int omp_get_thread_limit() {
  uint32_t Limit = maxTeamThreads();
  return Limit ? int(Limit) : 1;
}
OMPSIM_GPU_API int omp_get_team_num() { return int(hw::blockId(0)); }
OMPSIM_GPU_API int omp_get_num_teams() { return int(hw::gridDim(0)); }
/// nteams-var of the device: the most blocks a grid has (stock's plugins
/// cap a launch's blocks at 65536), so no teams region exceeds it.
OMPSIM_GPU_API int omp_get_max_teams() { return 65536; }
OMPSIM_GPU_API int omp_get_level() { return int(level()); }
OMPSIM_GPU_API int omp_get_active_level() { return numThreads() > 1 ? 1 : 0; }
OMPSIM_GPU_API int omp_in_parallel() { return numThreads() > 1; }
OMPSIM_GPU_API int omp_get_nested() { return 0; }
OMPSIM_GPU_API int omp_get_dynamic() { return 0; }
OMPSIM_GPU_API void omp_set_dynamic(int) {}
OMPSIM_GPU_API void omp_set_num_threads(int) {}
OMPSIM_GPU_API int omp_get_max_active_levels() { return 1; }
OMPSIM_GPU_API int omp_get_ancestor_thread_num(int Level) {
  return Level == 0 ? 0 : (Level == int(level()) ? int(threadNum()) : -1);
}
OMPSIM_GPU_API int omp_get_team_size(int Level) {
  return Level == 0 ? 1 : (Level == int(level()) ? int(numThreads()) : -1);
}
OMPSIM_GPU_API int omp_get_num_procs() { return int(hw::blockDim(0)); }
OMPSIM_GPU_API int omp_in_final() { return 1; }
OMPSIM_GPU_API int omp_get_cancellation() { return 0; }
OMPSIM_GPU_API int omp_is_initial_device() { return 0; }
OMPSIM_GPU_API int omp_get_initial_device() { return -1; }
OMPSIM_GPU_API int omp_get_device_num() { return int(deviceEnvironment().DeviceNum); }
OMPSIM_GPU_API int omp_get_num_devices() { return int(deviceEnvironment().NumDevices); }
OMPSIM_GPU_API double omp_get_wtime() { return double(hw::nanoseconds()) * 1e-9; }
OMPSIM_GPU_API double omp_get_wtick() { return 1e-9; }

OMPSIM_GPU_API int ompx_thread_id(int Dim) { return int(hw::threadId(Dim)); }
OMPSIM_GPU_API int ompx_block_id(int Dim) { return int(hw::blockId(Dim)); }
OMPSIM_GPU_API int ompx_block_dim(int Dim) { return int(hw::blockDim(Dim)); }
OMPSIM_GPU_API int ompx_grid_dim(int Dim) { return int(hw::gridDim(Dim)); }
OMPSIM_GPU_API int ompx_lane_id() { return int(hw::laneId()); }
OMPSIM_GPU_API int ompx_warp_size() { return int(hw::warpSize()); }
OMPSIM_GPU_API uint64_t ompx_ballot_sync(uint64_t Mask, int Predicate) {
  return hw::ballot(Mask, Predicate != 0);
}

OMPSIM_GPU_API int ompx_shfl_down_sync_i(uint64_t Mask, int Value, unsigned Delta, int Width) {
  return hw::shuffleDown(Mask, Value, Delta, uint32_t(Width));
}
OMPSIM_GPU_API float ompx_shfl_down_sync_f(uint64_t Mask, float Value, unsigned Delta, int Width) {
  return __builtin_bit_cast(
      float, hw::shuffleDown(Mask, __builtin_bit_cast(int32_t, Value), Delta, uint32_t(Width)));
}
OMPSIM_GPU_API long ompx_shfl_down_sync_l(uint64_t Mask, long Value, unsigned Delta, int Width) {
  uint32_t Low = uint32_t(uint64_t(Value)), High = uint32_t(uint64_t(Value) >> 32);
  Low = uint32_t(hw::shuffleDown(Mask, int32_t(Low), Delta, uint32_t(Width)));
  High = uint32_t(hw::shuffleDown(Mask, int32_t(High), Delta, uint32_t(Width)));
  return long((uint64_t(High) << 32) | Low);
}
OMPSIM_GPU_API double ompx_shfl_down_sync_d(uint64_t Mask, double Value, unsigned Delta, int Width) {
  return __builtin_bit_cast(double,
                            ompx_shfl_down_sync_l(Mask, __builtin_bit_cast(long, Value), Delta, Width));
}

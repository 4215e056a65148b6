// ompsim sim plugin: the launch geometry of a kernel, for the launch line stock's
// plugins print under LIBOMPTARGET_INFO's plugin-kernel bit (ompsim/StockPluginInfo.h).
#pragma once

#include "ompsim/LaunchOptions.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace ompsim::sim {

/// The head of a kernel's `<kernel>_kernel_environment` (llvm::omp's
/// ConfigurationEnvironmentTy, LLVM 22): flang-22 emits one for every kernel;
/// clang-22's x86_64 kernels have none.
struct KernelConfiguration {
  uint8_t UseGenericStateMachine = 0;
  uint8_t MayUseNestedParallelism = 0;
  uint8_t ExecMode = 0;
  int32_t MinThreads = 0;
  int32_t MaxThreads = 0;
  int32_t MinTeams = 0;
  int32_t MaxTeams = 0;
};

/// What a launch does not say and the device decides: the user's libomp
/// settings (0 when unset) and the processors the device's teams run on.
struct LaunchDefaults {
  uint32_t NumTeams = 0;         ///< OMP_NUM_TEAMS
  uint32_t TeamsThreadLimit = 0; ///< OMP_TEAMS_THREAD_LIMIT
  uint32_t NumThreads = 0;       ///< OMP_NUM_THREADS: caps a team's threads when set
  uint32_t Processors = 1;       ///< CPUs this process may run on
  uint32_t ThreadBudget = 256;   ///< threads the device runs at once (OMPSIM_DEVICE_THREADS)
  /// LIBOMPTARGET_SHARED_MEMORY_SIZE: dynamic shared memory every block of a
  /// GPU image's kernel gets, besides its ompx_dyn_cgroup_mem.
  uint32_t SharedMemorySize = 0;
  /// LIBOMPTARGET_MIN_THREADS_FOR_LOW_TRIP_COUNT (stock's default 32) and
  /// LIBOMPTARGET_REUSE_BLOCKS_FOR_HIGH_TRIP_COUNT (default true): how stock's
  /// GPU plugins size a grid from a loop's trip count (gpuGrid()).
  uint32_t MinThreadsForLowTripCount = 32;
  bool ReuseBlocksForHighTripCount = true;

  /// From this process's environment, affinity and ompsim's configuration
  /// (the executor inherits the environment and is given the budget).
  static LaunchDefaults fromEnvironment();
};

/// Blocks (teams) and threads per block a launch runs with, in x, y and z
/// (y and z are 1 except in bare mode).
struct LaunchShape {
  uint32_t Blocks[3] = {1, 1, 1};
  uint32_t Threads[3] = {1, 1, 1};
};

/// The teams and threads of a launch as the simulated device runs it: the
/// launch's num_teams and thread_limit where given; else, for a kernel with a
/// kernel environment (flang's), its MaxTeams and MaxThreads (as
/// libompsim-device's __kmpc_target_init takes them); else libomp's defaults
/// (OMP_NUM_TEAMS, for a kernel without an environment, or 1 team;
/// OMP_TEAMS_THREAD_LIMIT or the processors shared among the teams, at least 1).
/// A team's threads are capped by the thread budget shared among the teams
/// (by OMP_NUM_THREADS instead when the user set it), at least 1. A kernel in
/// bare mode runs its grid and blocks exactly as asked, in three dimensions
/// (libompsim-device's __ompsim_bare_fork_teams). A GPU image's blocks run in
/// waves (Options.GpuWarpSize): each has the threads asked for.
LaunchShape launchShape(uint32_t NumTeams, uint32_t ThreadLimit,
                        const std::optional<KernelConfiguration> &Env, const LaunchDefaults &Defaults,
                        const LaunchOptions &Options = {});

/// A GPU image's grid when its launch names no teams and its kernel
/// environment names none either (MaxTeams 0: a teams construct without
/// num_teams), as stock's CUDA and AMDGPU plugins choose it
/// (GenericKernelTy::getNumBlocks, LLVM 22): an SPMD kernel gets a block per
/// `Threads` iterations of its loop, with fewer threads a block (a power of
/// two, at least LIBOMPTARGET_MIN_THREADS_FOR_LOW_TRIP_COUNT) when that
/// leaves fewer blocks than the device's default unless the thread_limit is
/// the user's; a generic kernel a block per iteration of its distribute
/// loop; without a trip count, the device's default blocks. The blocks are
/// at most the default (a long loop reuses blocks) unless
/// LIBOMPTARGET_REUSE_BLOCKS_FOR_HIGH_TRIP_COUNT is false, and at most the
/// grid's limit (and OMP_NUM_TEAMS). `WarpSize` names the GPU: 32, NVIDIA's
/// (3200 default blocks), or 64, AMD's (440: a gfx90a's 110 compute units,
/// 4 blocks each).
struct GpuGrid {
  uint32_t Blocks = 1;
  uint32_t Threads = 1;
};
GpuGrid gpuGrid(uint64_t TripCount, uint32_t Threads, bool ThreadsFromUser, uint8_t ExecMode,
                uint32_t WarpSize, const LaunchDefaults &Defaults);

/// True for a kernel whose environment says bare mode.
bool isBare(const std::optional<KernelConfiguration> &Env);

/// Stock's name of a kernel's execution mode ("Generic" for a kernel without a
/// kernel environment, as stock's host plugin says for clang's x86_64 kernels).
const char *executionModeName(const std::optional<KernelConfiguration> &Env);

} // namespace ompsim::sim

// ompsim sim plugin: launch geometry and stock's launch line (LaunchInfo.h).
#include "LaunchInfo.h"

#include "ompsim/Config.h"
#include "ompsim/StockPluginInfo.h"

#include "llvm/Support/MathExtras.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>

namespace ompsim::sim {

namespace {

/// A positive whole number from the environment, or 0 (libomp's reading of
/// these variables is its own; an unreadable one counts as unset here).
uint32_t positiveFromEnv(const char *Name) {
  const char *V = std::getenv(Name);
  if (!V || !*V)
    return 0;
  char *End = nullptr;
  long N = std::strtol(V, &End, 10);
  if (*End || N <= 0 || N > INT32_MAX)
    return 0;
  return uint32_t(N);
}

/// OpenMPIRBuilder's MaxThreads when the program names no thread_limit: a
/// GPU default, not a limit (libompsim-device's threadsOf skips it too).
constexpr int32_t kDefaultBlockSize = 256;

} // namespace

LaunchDefaults LaunchDefaults::fromEnvironment() {
  LaunchDefaults D;
  D.NumTeams = positiveFromEnv("OMP_NUM_TEAMS");
  D.TeamsThreadLimit = positiveFromEnv("OMP_TEAMS_THREAD_LIMIT");
  D.NumThreads = positiveFromEnv("OMP_NUM_THREADS");
  D.SharedMemorySize = positiveFromEnv("LIBOMPTARGET_SHARED_MEMORY_SIZE");
  if (uint32_t Min = positiveFromEnv("LIBOMPTARGET_MIN_THREADS_FOR_LOW_TRIP_COUNT"))
    D.MinThreadsForLowTripCount = Min;
  if (const char *V = std::getenv("LIBOMPTARGET_REUSE_BLOCKS_FOR_HIGH_TRIP_COUNT"))
    if (std::optional<bool> Reuse = ompsim::parseStockBool(V))
      D.ReuseBlocksForHighTripCount = *Reuse;
  D.ThreadBudget = ompsim::config().DeviceThreads;
  cpu_set_t Set;
  if (::sched_getaffinity(0, sizeof Set, &Set) == 0)
    D.Processors = uint32_t(std::max(CPU_COUNT(&Set), 1));
  return D;
}

GpuGrid gpuGrid(uint64_t TripCount, uint32_t Threads, bool ThreadsFromUser, uint8_t ExecMode,
                uint32_t WarpSize, const LaunchDefaults &Defaults) {
  // llvm::omp's grid values: NVPTXGridValues' GV_Default_Num_Teams, and the
  // AMDGPU plugin's compute units times its default teams per unit.
  const uint64_t DefaultBlocks = WarpSize == 64 ? 440 : 3200;
  const uint64_t BlockLimit = Defaults.NumTeams ? std::min<uint64_t>(Defaults.NumTeams, 1u << 16) : 1u << 16;
  GpuGrid G;
  G.Threads = std::max<uint32_t>(Threads, 1);
  uint64_t Blocks = DefaultBlocks;
  if (TripCount > 0) {
    if (ExecMode == llvm::omp::OMP_TGT_EXEC_MODE_SPMD ||
        ExecMode == llvm::omp::OMP_TGT_EXEC_MODE_SPMD_NO_LOOP) {
      uint32_t MinThreads = std::min(Defaults.MinThreadsForLowTripCount, G.Threads);
      if (TripCount >= DefaultBlocks * G.Threads || ThreadsFromUser) {
        // Enough iterations for the default blocks of full blocks.
      } else if (TripCount >= DefaultBlocks * MinThreads) {
        // Fewer threads a block, a power of two: the default blocks' share.
        uint64_t Share = (TripCount + DefaultBlocks - 1) / DefaultBlocks;
        G.Threads = uint32_t(std::min<uint64_t>(G.Threads, llvm::PowerOf2Ceil(Share)));
      } else {
        G.Threads = MinThreads;
      }
      Blocks = (TripCount - 1) / G.Threads + 1;
    } else {
      Blocks = TripCount; // a block per iteration of the distribute loop
    }
    if (Defaults.ReuseBlocksForHighTripCount)
      Blocks = std::min(Blocks, DefaultBlocks);
  }
  G.Blocks = uint32_t(std::max<uint64_t>(std::min(Blocks, BlockLimit), 1));
  return G;
}

bool isBare(const std::optional<KernelConfiguration> &Env) {
  return Env && Env->ExecMode == llvm::omp::OMP_TGT_EXEC_MODE_BARE;
}

LaunchShape launchShape(uint32_t NumTeams, uint32_t ThreadLimit,
                        const std::optional<KernelConfiguration> &Env, const LaunchDefaults &Defaults,
                        const LaunchOptions &Options) {
  LaunchShape S;
  if (isBare(Env)) {
    auto Extent = [](uint32_t V) { return V ? V : 1u; };
    S.Blocks[0] = Extent(NumTeams);
    S.Threads[0] = Extent(ThreadLimit);
    for (int Dim = 0; Dim < 2; ++Dim) {
      S.Blocks[Dim + 1] = Extent(Options.TeamsYZ[Dim]);
      S.Threads[Dim + 1] = Extent(Options.ThreadsYZ[Dim]);
    }
    return S;
  }
  int64_t Teams = NumTeams;
  if (!Teams && Env)
    Teams = std::max(Env->MaxTeams, 0);
  if (Env && Env->MaxTeams > 0)
    Teams = std::min<int64_t>(Teams, Env->MaxTeams);
  if (!Teams) // libompsim-device gives a kernel with an environment 1 team
    Teams = !Env && Defaults.NumTeams ? Defaults.NumTeams : 1;
  S.Blocks[0] = uint32_t(Teams);
  int64_t Threads = ThreadLimit;
  if (!Threads && Env && Env->MaxThreads > 0 && Env->MaxThreads != kDefaultBlockSize)
    Threads = Env->MaxThreads;
  if (!Threads)
    Threads = Defaults.TeamsThreadLimit ? Defaults.TeamsThreadLimit
                                        : std::max<uint32_t>(Defaults.Processors / S.Blocks[0], 1);
  uint32_t Cap =
      Defaults.NumThreads ? Defaults.NumThreads : std::max<uint32_t>(Defaults.ThreadBudget / S.Blocks[0], 1);
  if (Options.GpuWarpSize && Options.Bare)
    Cap = uint32_t(std::max<int64_t>(Threads, 1)); // blocks in waves: each has its threads
  S.Threads[0] = uint32_t(std::min<int64_t>(Threads, Cap));
  return S;
}

const char *executionModeName(const std::optional<KernelConfiguration> &Env) {
  return Env ? stock_plugin::executionModeName(Env->ExecMode) : "Generic";
}

} // namespace ompsim::sim

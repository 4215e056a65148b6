// ompsim sim plugin: kernel launches in the plugin C ABI: running a target
// region on the simulated device (with stock's launch line and profile
// section) and a kernel's execution mode, both from its kernel environment.
#include "SimPlugin.h"

#include "TranslateTrace.h"

#include "ompsim/Config.h"
#include "ompsim/ProfileWriter.h"
#include "ompsim/StockPluginInfo.h"
#include "ompsim/Trace.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fmt/format.h>
#include <optional>
#include <string>
#include <string_view>

namespace ompsim::sim {
namespace {

/// The head of kernel `Kernel`'s `<name>_kernel_environment` in image
/// `Image`, or none when the image has no such global (clang's x86_64
/// kernels) or it cannot be read.
std::optional<KernelConfiguration> readKernelConfiguration(DeviceController &C, uint64_t Image,
                                                           const std::string &Kernel) {
  std::string EnvName = Kernel + "_kernel_environment";
  auto Addrs = C.lookupMany(Image, {llvm::StringRef(EnvName)});
  if (!Addrs) {
    llvm::consumeError(Addrs.takeError());
    return std::nullopt;
  }
  KernelConfiguration Config;
  if (Addrs->empty() || !(*Addrs)[0])
    return std::nullopt;
  if (auto Err = C.read(&Config, (*Addrs)[0], sizeof Config)) {
    llvm::consumeError(std::move(Err));
    return std::nullopt;
  }
  return Config;
}

/// Reads kernel `K`'s environment on its first use that needs it; every
/// other caller, on any thread, waits until it is read. A GPU image's kernel
/// without one (clang-22's ompx_bare kernels) gets a zeroed one, as from
/// stock's plugins: execution mode 0, bare.
void readEnvironmentOnce(DeviceController &C, KernelHandle &K) {
  std::call_once(K.EnvironmentOnce, [&] {
    K.Environment = readKernelConfiguration(C, K.Image, K.Name);
    if (!K.Environment && K.isGpu())
      K.Environment = KernelConfiguration{};
  });
}

/// The most shared memory a block of a GPU image's architecture may have:
/// sm_90's opt-in limit (ompsim cc builds nvptx64 images for sm_90), and an
/// amdgcn workgroup's LDS.
uint64_t blockSharedMemoryLimit(uint32_t WarpSize) { return WarpSize == 64 ? 64 * 1024 : 227 * 1024; }

} // namespace
} // namespace ompsim::sim

using namespace ompsim;
using namespace ompsim::sim;

OMPSIM_EXPORT int32_t __tgt_rtl_run_target_region(int32_t Id, void *Kernel, void **TgtArgs, int32_t NumArgs,
                                                  const ompsim_launch_config *Cfg) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return OMPSIM_OFFLOAD_FAIL;
  auto *K = static_cast<KernelHandle *>(Kernel);
  if (!K)
    return failWith(D, fmt::format("device {}: run_target_region without a kernel", Id));
  // Every launch comes through here: no heap allocation unless a kernel has
  // many arguments (the name is only copied into an error or a trace event).
  llvm::StringRef Name =
      (Cfg && Cfg->kernel_name) ? llvm::StringRef(Cfg->kernel_name) : llvm::StringRef(K->Name);
  llvm::SmallVector<uint64_t, 32> Args;
  Args.reserve(size_t(std::max<int32_t>(NumArgs, 0)));
  for (int32_t I = 0; I < NumArgs; ++I)
    Args.push_back(reinterpret_cast<uint64_t>(TgtArgs[I]));
  uint32_t Teams = Cfg ? Cfg->num_teams : 0;
  uint32_t Threads = Cfg && Cfg->thread_limit ? Cfg->thread_limit : D->DefaultThreadLimit;
  if (K->isGpu())
    readEnvironmentOnce(*C, *K);
  static const LaunchDefaults Defaults = LaunchDefaults::fromEnvironment();
  // A GPU kernel without a thread limit gets its block size, which the
  // compiler wrote into its environment (128 threads for nvptx64, 256 for
  // amdgcn, or the construct's thread_limit), within OMP_TEAMS_THREAD_LIMIT.
  if (K->isGpu() && !(Cfg && Cfg->thread_limit)) {
    if (K->Environment && K->Environment->MaxThreads > 0)
      Threads = uint32_t(K->Environment->MaxThreads);
    // OMP_TEAMS_THREAD_LIMIT (or omp_set_teams_thread_limit) caps it.
    if (uint32_t Cap = D->DefaultThreadLimit ? D->DefaultThreadLimit : Defaults.TeamsThreadLimit)
      Threads = std::min(Threads, Cap);
  }
  // A block has at most 1024 threads on either GPU; stock's CUDA and AMDGPU
  // plugins give a larger thread_limit that many.
  constexpr uint32_t kGpuMaxBlockThreads = 1024;
  if (K->isGpu())
    Threads = std::min(Threads, kGpuMaxBlockThreads);
  // On fibers, a GPU image's kernel runs the grid a GPU runs: the teams the launch
  // names, within the kernel's own (num_teams on a combined construct, 1 for
  // a target without teams, whose environment says -1); else the grid
  // stock's GPU plugins choose from the loop's trip count.
  const bool Fibers = K->isGpu() && config().GpuFibers;
  if (Fibers && !isBare(K->Environment)) {
    if (!Teams && K->Environment && K->Environment->MaxTeams < 0)
      Teams = 1;
    if (K->Environment && K->Environment->MaxTeams > 0)
      Teams =
          Teams ? std::min(Teams, uint32_t(K->Environment->MaxTeams)) : uint32_t(K->Environment->MaxTeams);
    if (!Teams) {
      GpuGrid Grid = gpuGrid(Cfg ? Cfg->tripcount : 0, Threads, Cfg && Cfg->thread_limit,
                             K->Environment ? K->Environment->ExecMode : 0, K->GpuWarpSize, Defaults);
      Teams = Grid.Blocks;
      Threads = Grid.Threads;
    }
  }
  // A generic kernel's thread_limit counts its parallel regions' threads:
  // stock's GPU plugins add the warp of the team's main thread.
  if (Fibers && Cfg && Cfg->thread_limit && K->Environment &&
      K->Environment->ExecMode == llvm::omp::OMP_TGT_EXEC_MODE_GENERIC)
    Threads = std::min(Threads + K->GpuWarpSize, kGpuMaxBlockThreads);
  // y and z: only a bare kernel's launch has them (the runtime refuses others).
  LaunchOptions Options;
  if (Cfg)
    for (int Dim = 0; Dim < 2; ++Dim) {
      Options.TeamsYZ[Dim] = Cfg->num_teams_yz[Dim];
      Options.ThreadsYZ[Dim] = Cfg->thread_limit_yz[Dim];
    }
  if (K->isGpu()) {
    Options.GpuWarpSize = K->GpuWarpSize;
    // A bare kernel, and every kernel of a GPU image on fibers: each thread
    // of each block calls it.
    Options.Bare = isBare(K->Environment) || Fibers;
    // A block's dynamic shared memory: the construct's ompx_dyn_cgroup_mem
    // and LIBOMPTARGET_SHARED_MEMORY_SIZE, within what the architecture has.
    uint64_t Dynamic = uint64_t(Cfg ? Cfg->dyn_cgroup_mem : 0) + Defaults.SharedMemorySize;
    if (uint64_t Limit = blockSharedMemoryLimit(K->GpuWarpSize); Dynamic > Limit)
      return failWith(
          D, fmt::format("device {}: kernel {} asks for {} bytes of dynamic shared memory a block; "
                         "a block of its GPU ({}) has at most {}",
                         Id, Name.str(), Dynamic, K->GpuWarpSize == 64 ? "amdgcn" : "nvptx64 sm_90", Limit));
    Options.DynamicSharedBytes = uint32_t(Dynamic);
  }
  OMPSIM_TRACE_EVENT(Cat::Launch, "launch")
      .num("device", Id)
      .str("kernel", Name)
      .dev("entry", K->Entry, C->symbolize(K->Entry))
      .num("args", NumArgs)
      .num("teams", Teams)
      .num("threads", Threads);
  // Device printf writes to the same stdout from the executor (which flushes
  // after every kernel); on a GPU it goes through the host's own stdio. Text
  // the host printed before the launch must come first, not at its exit.
  std::fflush(stdout);
  if (config().LibomptargetInfo & stock_plugin::kInfoPluginKernel) {
    readEnvironmentOnce(*C, *K);
    LaunchShape Shape = launchShape(Teams, Threads, K->Environment, Defaults, Options);
    std::string Line = stock_plugin::launchLine(Id, std::string_view(Name.data(), Name.size()), Shape.Blocks,
                                                Shape.Threads, executionModeName(K->Environment));
    std::fprintf(stderr, "%s\n", Line.c_str());
  }
  // Stock's GPU plugins time each launch as "Kernel '<name>'"; here it is the
  // executor's round trip.
  std::optional<profile::Section> Profiled;
  if (profile::enabled())
    Profiled.emplace(fmt::format("Kernel '{}'", Name.str()),
                     [&] { return fmt::format("Device={};NumTeams={};ThreadLimit={}", Id, Teams, Threads); });
  if (auto Err = C->launch(K->Entry, Args, Teams, Threads, Name, Options)) {
    int32_t Rc = failWith(D, std::move(Err));
    emitTranslateTrace(*D, Id, Name); // the lookups that led to a fault, if any
    return Rc;
  }
  emitTranslateTrace(*D, Id, Name);
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_kernel_exec_mode(int32_t Id, void *Kernel, uint8_t *Mode) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  auto *K = static_cast<KernelHandle *>(Kernel);
  if (!C || !K || !Mode)
    return 0;
  readEnvironmentOnce(*C, *K);
  if (!K->Environment)
    return 0;
  *Mode = K->Environment->ExecMode;
  return 1;
}

// The runtime's constructs: target regions (map, launch, unmap), target data
// enter/exit and target update, with the data-fault advice a failed kernel
// gets (see Runtime.h). Registration, devices and images are Runtime.cpp's.
#include "ApiHelpers.h"
#include "DataFaultAdvisor.h"
#include "Runtime.h"
#include "StockMessages.h"

#include "../check/MapChecker.h"
#include "../events/OffloadEvents.h"

#include "ompsim/Config.h"
#include "ompsim/Errors.h"
#include "ompsim/ProfileWriter.h"
#include "ompsim/Trace.h"
#include "ompsim/device_runtime.h"

#include "llvm/Frontend/OpenMP/OMPDeviceConstants.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <mutex>

namespace ompsim::host {
namespace {

/// Trip counts pushed by __kmpc_push_target_tripcount*, per thread and device.
thread_local std::map<int64_t, uint64_t> PendingTripcounts;

/// True when the plugin says `Kernel` runs in bare mode: an ompx_bare kernel
/// that ompsim's pass plugin handed to the device runtime, which runs every
/// thread of every block in three dimensions.
bool isBareKernel(Device &D, void *Kernel) {
  const PluginFunctions &Fn = D.plugin().fn();
  uint8_t Mode = 0;
  return Fn.kernel_exec_mode && Fn.kernel_exec_mode(D.localId(), Kernel, &Mode) == 1 &&
         Mode == llvm::omp::OMP_TGT_EXEC_MODE_BARE;
}

/// Refuses a launch with teams or threads in y or z (ompx_bare's
/// `num_teams(x, y, z)` / `thread_limit(x, y, z)`) unless the kernel runs in
/// bare mode. Other kernels reaching ompsim are clang-22's code for the x86_64
/// offload target, which hands libomp the x dimension only: run, every team
/// and thread would see y and z ids of 0 and the grid of a GPU would be
/// silently cut to its first row.
llvm::Error checkLaunchDimensions(Device &D, void *Kernel, const __tgt_kernel_arguments &Args,
                                  const std::string &KernelName) {
  auto Extent = [](uint32_t V) { return static_cast<int32_t>(V) > 0 ? V : 1u; };
  const uint32_t *Teams = Args.NumTeams;
  const uint32_t *Threads = Args.ThreadLimit;
  bool MultiDimensional =
      Extent(Teams[1]) != 1 || Extent(Teams[2]) != 1 || Extent(Threads[1]) != 1 || Extent(Threads[2]) != 1;
  uint64_t BlockThreads = uint64_t(Extent(Threads[0])) * Extent(Threads[1]) * Extent(Threads[2]);
  // A bare kernel runs every thread of its blocks, which no GPU makes larger
  // than 1024 threads (libompsim-device's bare launches neither).
  constexpr uint64_t MaxBareBlockThreads = OMPSIM_BARE_MAX_BLOCK_THREADS;
  if (!MultiDimensional && BlockThreads <= MaxBareBlockThreads)
    return llvm::Error::success();
  bool Bare = isBareKernel(D, Kernel);
  if (Bare && BlockThreads > MaxBareBlockThreads)
    return makeError(fmt::format(
        "kernel {}: an ompx_bare launch of [{},{},{}] blocks of [{},{},{}] threads: a "
        "block has at most {} threads ({} asked for), as on every GPU",
        KernelName.empty() ? "<unnamed>" : KernelName, Extent(Teams[0]), Extent(Teams[1]), Extent(Teams[2]),
        Extent(Threads[0]), Extent(Threads[1]), Extent(Threads[2]), MaxBareBlockThreads, BlockThreads));
  if (Bare || !MultiDimensional)
    return llvm::Error::success();
  return makeError(fmt::format(
      "kernel {}: a launch of [{},{},{}] teams of [{},{},{}] threads is not supported: clang-22's code for "
      "the x86_64 offload target runs teams and threads in x only, so y and z would be cut to 1; launch "
      "with one-dimensional num_teams and thread_limit, or build with ompsim cc --translate=pass, which "
      "runs an ompx_bare region on every thread of a three-dimensional grid",
      KernelName.empty() ? "<unnamed>" : KernelName, Extent(Teams[0]), Extent(Teams[1]), Extent(Teams[2]),
      Extent(Threads[0]), Extent(Threads[1]), Extent(Threads[2])));
}

} // namespace

void Runtime::pushTripcount(int64_t DeviceNum, uint64_t Count) {
  PendingTripcounts[resolveDeviceNumber(DeviceNum)] = Count;
}

llvm::Error Runtime::targetKernel(int64_t DeviceNum, int32_t Teams, int32_t Threads, void *RegionId,
                                  __tgt_kernel_arguments *Args, bool &LaunchFailure,
                                  const ompsim_ident *Loc) {
  LaunchFailure = true;
  if (!Args)
    return makeError("__tgt_target_kernel called without kernel arguments");
  if (Args->Version < 2)
    return makeError(
        fmt::format("kernel arguments version {} is not supported (need 2 or 3)", Args->Version));
  auto Dev = device(DeviceNum);
  if (!Dev)
    return Dev.takeError();
  if (!*Dev)
    return makeError(fmt::format("no offload device: device {} is the host (OMPSIM_PLUGINS={}){}",
                                 resolveDeviceNumber(DeviceNum), fmt::join(config().Plugins, ","),
                                 NoDeviceReasons));
  Device &D = **Dev;
  events::TargetRegionScope Region(events::TargetRegion{
      events::Endpoint::Begin, events::TargetKind::Target, D.deviceNumber(), nullptr, Loc, /*Nowait=*/false,
      Teams, Args->NumArgs, Args->ArgSizes, Args->ArgTypes, Args->ArgNames});
  const std::string *StableName = nullptr;
  void *Kernel = D.findKernel(RegionId, &StableName);
  std::string KernelName = StableName ? *StableName : std::string();
  if (!Kernel) {
    std::lock_guard<std::recursive_mutex> Guard(Lock);
    std::string Rejected = RejectedImages.empty()
                               ? std::string()
                               : fmt::format("; no plugin accepted {}", fmt::join(RejectedImages, ", "));
    return makeError(fmt::format("no device image loaded on device {} provides the target region "
                                 "{}{}",
                                 D.deviceNumber(), trace::hostAddress(reinterpret_cast<uint64_t>(RegionId)),
                                 Rejected));
  }

  if (auto Err = checkLaunchDimensions(D, Kernel, *Args, KernelName))
    return Err;

  std::vector<MapArg> MapArgs =
      makeMapArgs(static_cast<int32_t>(Args->NumArgs), Args->ArgBasePtrs, Args->ArgPtrs, Args->ArgSizes,
                  Args->ArgTypes, Args->ArgNames, Args->ArgMappers);
  ompsim_launch_config Config{};
  // teams/threads from the call win over the clause copies in KernelArgs;
  // negative or zero means "not specified".
  auto Clause = [](uint32_t V) { return static_cast<int32_t>(V) > 0 ? V : 0u; };
  Config.num_teams = Teams > 0 ? static_cast<uint32_t>(Teams) : Clause(Args->NumTeams[0]);
  Config.thread_limit = Threads > 0 ? static_cast<uint32_t>(Threads) : Clause(Args->ThreadLimit[0]);
  for (int Dim = 0; Dim < 2; ++Dim) {
    Config.num_teams_yz[Dim] = Clause(Args->NumTeams[Dim + 1]);
    Config.thread_limit_yz[Dim] = Clause(Args->ThreadLimit[Dim + 1]);
  }
  Config.tripcount = Args->Tripcount;
  Config.dyn_cgroup_mem = Args->DynCGroupMem;
  int64_t Resolved = resolveDeviceNumber(DeviceNum);
  if (auto It = PendingTripcounts.find(Resolved); It != PendingTripcounts.end()) {
    if (!Config.tripcount)
      Config.tripcount = It->second;
    PendingTripcounts.erase(It);
  }
  Config.kernel_name = KernelName.c_str();

  // The runtime's lock before the table's, never inside it: device() holds the
  // runtime's lock while a first use loads images, which takes the table's.
  bool UnifiedSharedMemory = unifiedSharedMemoryOn(D);
  std::unique_lock<std::recursive_mutex> TableLock(D.mappingTable().mutex());
  MapClauseProcessor Processor(D.mappingTable(), D);
  Processor.setUnifiedSharedMemory(UnifiedSharedMemory);
  Processor.setConstruct({"target region", Loc, StableName});
  Processor.setKernelLaunch(true);
  if (check::enabled())
    check::setRegionKernel(KernelName);
  LaunchFailure = false; // map errors are always fatal
  if (auto Err = Processor.enter(MapArgs, nullptr))
    return stock::addLine(stock::addLine(std::move(Err), stock::error(stock::DataBeginFailed)),
                          stock::error(stock::BeforeKernelFailed));
  std::vector<uint64_t> PrivateBlocks;
  auto KernelArgs = Processor.kernelArguments(MapArgs, PrivateBlocks);
  if (!KernelArgs)
    return KernelArgs.takeError();
  // The table is not held while the kernel runs (as with stock): other host
  // threads map, copy and launch meanwhile. What this construct mapped stays
  // mapped, since enter() counted a reference to each item that exit() drops.
  TableLock.unlock();
  KernelsRunning.fetch_add(1);
  // clang passes -1 for a target region without teams: one team.
  llvm::Error Launched =
      D.launchKernel(Kernel, *KernelArgs, Config, Teams < 0 ? 1u : static_cast<uint32_t>(Teams));
  KernelsRunning.fetch_sub(1);
  TableLock.lock();
  if (auto Err = std::move(Launched)) {
    LaunchFailure = true;
    const PluginFunctions &Fn = D.plugin().fn();
    ompsim_fault_info Fault{};
    bool DataFault = Fn.last_fault && Fn.last_fault(D.localId(), &Fault) == 1;
    // A guard page or a freed block the kernel touched (sim's placement for
    // the checker) names the map item it belongs to.
    if (DataFault && check::enabled())
      check::onKernelFault(Fault, D.mappingTable(), D.deviceNumber());
    Err = adviseDataFault(D, std::move(Err), MapArgs, KernelName);
    Err = D.addTrackedReport(std::move(Err), DataFault ? std::optional<uint64_t>(Fault.addr) : std::nullopt);
    // Device code that called exit() ends the host with its status; any
    // other failure of the kernel (a fault, a trap, a lost device) is
    // stock's failed target region, which aborts when offload is mandatory.
    if (trace::fatalExitStatus(-1) >= 0)
      return Err;
    return stock::makeError({stock::error(stock::KernelFailed)}, llvm::toString(std::move(Err)));
  }
  if (auto Err = Processor.exit(MapArgs))
    return stock::addLine(stock::addLine(std::move(Err), stock::error(stock::DataEndFailed)),
                          stock::error(stock::AfterKernelFailed));
  // After the map exit, as stock frees them (an OMPT tool sees that order).
  for (uint64_t Block : PrivateBlocks)
    if (auto Err = D.release(Block))
      return Err;
  TableLock.unlock();
  dumpTablesAfter(Loc);
  return llvm::Error::success();
}

void dumpMappingTables(std::FILE *Out, const std::string &Where, bool Reverse) {
  int N = Runtime::get().numDevices();
  std::fflush(stdout);
  auto Info = [&](int DeviceNum, const std::string &Text) {
    std::string Line = stock::infoLine(DeviceNum, Text) + "\n";
    std::fputs(Line.c_str(), Out);
  };
  for (int K = 0; K < N; ++K) {
    int I = Reverse ? N - 1 - K : K;
    // A device never used has an empty table: dumping it must not start it.
    Device *D = Runtime::get().existingDevice(I);
    if (!D)
      continue;
    MappingTable &Table = D->mappingTable();
    std::lock_guard<std::recursive_mutex> Lock(Table.mutex());
    if (Table.size() == 0) {
      Info(I, stock::tableEmpty());
      continue;
    }
    Info(I, stock::tableHeader(Where));
    Info(I, stock::tableColumns());
    Table.forEach([&](MapEntry &E) {
      Info(I,
           stock::tableRow(E.HstBegin, E.TgtBegin, E.size(), E.DynamicRef, E.HoldRef, E.MapName, E.InfoName));
    });
  }
  std::fflush(Out);
}

void Runtime::dumpTablesAfter(const ompsim_ident *Loc) {
  // Stock dumps them as it settles a construct that offloaded while
  // offloading is mandatory (handleTargetOutcome).
  if (stock::infoOn(stock::info::DumpTable) && policy() == OffloadPolicy::Mandatory)
    dumpMappingTables(stderr, stock::blockLocation(Loc));
}

llvm::Error Runtime::adviseDataFault(Device &D, llvm::Error Err, const std::vector<MapArg> &RegionArgs,
                                     const std::string &KernelName) {
  Plugin &P = D.plugin();
  ompsim_fault_info Info{};
  if (!P.fn().last_fault || P.fn().last_fault(D.localId(), &Info) != 1) {
    // A line of the device runtime (a race between teams) may name device
    // memory: name its mapping too.
    std::string Line = llvm::toString(std::move(Err));
    return makeError(DataFaultAdvisor(D.mappingTable(), RegionArgs).nameDeviceMemory(std::move(Line)));
  }
  DataFaultSite Site;
  Site.Addr = Info.addr;
  Site.Write = Info.access == OMPSIM_FAULT_WRITE;
  Site.Device = D.deviceNumber();
  Site.Context = Info.context ? Info.context : "a kernel";
  Site.Instruction = Info.instruction ? Info.instruction : "?";
  if (Info.library) {
    Site.Library = Info.library;
    Site.LibraryFunction = Info.library_function ? Info.library_function : "";
  }
  if (Info.device_what) {
    Site.DeviceWhat = Info.device_what;
    Site.DeviceNote = Info.device_note ? Info.device_note : "";
  }
  if (Info.owner_device >= 0)
    for (auto &Other : Devices)
      if (&Other->plugin() == &P && Other->localId() == Info.owner_device)
        Site.OwnerDevice = Other->deviceNumber();
  // With launches running at once, the kernel that faulted may be another
  // one: its region's items are not these, so none is named as the carrier.
  bool ThisKernel = Site.Context == "kernel " + KernelName;
  std::string Line = DataFaultAdvisor(D.mappingTable(), ThisKernel ? llvm::ArrayRef<MapArg>(RegionArgs)
                                                                   : llvm::ArrayRef<MapArg>())
                         .describe(Site);
  OMPSIM_TRACE_EVENT(Cat::Fault, "data-fault")
      .num("device", Site.Device)
      .str("context", Site.Context)
      .str("message", Line);
  llvm::consumeError(std::move(Err));
  return makeError(Line);
}

llvm::Error Runtime::targetData(DataOp Op, int64_t DeviceNum, std::vector<MapArg> Args, void **ArgsBase,
                                const ompsim_ident *Loc, bool Nowait) {
  auto Dev = device(DeviceNum);
  if (!Dev)
    return Dev.takeError();
  if (!*Dev) {
    if (policy() == OffloadPolicy::Mandatory && numDevices() == 0)
      return makeError(fmt::format("offload is mandatory but no device is available "
                                   "(OMPSIM_PLUGINS={}){}",
                                   fmt::join(config().Plugins, ","), NoDeviceReasons));
    return llvm::Error::success(); // the host: nothing to map
  }
  Device &D = **Dev;
  // The items as the program passed them, for the construct's listeners.
  std::vector<int64_t> Sizes, Types;
  std::vector<void *> Names;
  if (events::observed())
    for (const MapArg &A : Args) {
      Sizes.push_back(A.Size);
      Types.push_back(A.Type);
      Names.push_back(A.Name);
    }
  events::TargetRegionScope Construct(events::TargetRegion{events::Endpoint::Begin,
                                                           Op == DataOp::Begin ? events::TargetKind::EnterData
                                                           : Op == DataOp::End ? events::TargetKind::ExitData
                                                                               : events::TargetKind::Update,
                                                           D.deviceNumber(), nullptr, Loc, Nowait,
                                                           /*Teams=*/0, Sizes.size(), Sizes.data(),
                                                           Types.data(), Names.data()});
  bool UnifiedSharedMemory = unifiedSharedMemoryOn(D); // before the table's lock, as above
  {
    std::lock_guard<std::recursive_mutex> TableLock(D.mappingTable().mutex());
    MapClauseProcessor Processor(D.mappingTable(), D);
    Processor.setUnifiedSharedMemory(UnifiedSharedMemory);
    Processor.setConstruct({"data construct", Loc, nullptr});
    llvm::Error Err = Op == DataOp::Begin ? Processor.enter(Args, ArgsBase)
                      : Op == DataOp::End ? Processor.exit(Args)
                                          : Processor.update(Args);
    if (Err)
      return Err;
  }
  dumpTablesAfter(Loc);
  return llvm::Error::success();
}

} // namespace ompsim::host

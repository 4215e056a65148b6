// Runtime: registration, plugin/device numbering, and the target operations.
#include "Runtime.h"
#include "ApiHelpers.h"
#include "DataFaultAdvisor.h"
#include "StockMessages.h"

#include "../check/MapChecker.h"
#include "../events/OffloadEvents.h"
#include "../ompt/OmptDispatcher.h"

#include "ompsim/Config.h"
#include "ompsim/HostSymbolizer.h"
#include "ompsim/OpenMPRegistration.h"
#include "ompsim/ProfileWriter.h"
#include "ompsim/Trace.h"
#include "ompsim/device_runtime.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Frontend/OpenMP/OMPDeviceConstants.h"
#include "llvm/Support/MemoryBuffer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <omp.h>

#include <dlfcn.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace ompsim::host {
namespace {

llvm::Error makeError(const std::string &Message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", Message.c_str());
}

/// Trip counts pushed by __kmpc_push_target_tripcount*, per thread and device.
thread_local std::map<int64_t, uint64_t> PendingTripcounts;

/// True inside an ompsim-device executor, where a host library was loaded to
/// satisfy a device image's NEEDED entry: its offload registration belongs to
/// the host process, which already registered the library's device image.
bool insideSimulatedDevice() {
  static const bool Inside = ::dlsym(RTLD_DEFAULT, "__ompsim_executor_marker") != nullptr;
  return Inside;
}

/// The runtime's first registration in a process: the profile starts on this
/// thread (as stock's does on the thread that initializes it), and the stock
/// variables ompsim does not honour are named once.
void startUp() {
  static std::once_flag Once;
  std::call_once(Once, [] {
    profile::start();
    // A tool the program or OMP_TOOL_LIBRARIES names starts now, as with
    // stock (which connects to libomp when it initializes).
    ompt::connect([] { return static_cast<int>(Runtime::get().initialDevice()); });
    // Registered before clang's atexit(__tgt_unregister_lib), so it runs
    // after it: the leak report sees what the program left mapped.
    if (check::enabled())
      ::on_exit([](int Status, void *) { Runtime::get().finishChecks(Status); }, nullptr);
    const std::vector<std::string> &Ignored = config().IgnoredStockVariables;
    if (!Ignored.empty())
      std::fprintf(stderr,
                   "ompsim: ignoring %s: stock libomptarget variable%s ompsim does not honour "
                   "(see docs/environment.md)\n",
                   fmt::format("{}", fmt::join(Ignored, ", ")).c_str(), Ignored.size() == 1 ? "" : "s");
  });
}

/// Stock's lines naming a construct's map items (LIBOMPTARGET_INFO's
/// kernel-arguments bit), on entry to the construct.
void printRegionArguments(int DeviceNum, const char *Region, const ompsim_ident *Loc, size_t N,
                          const int64_t *Sizes, const int64_t *Types, void *const *Names) {
  for (const std::string &Line : stock::regionArguments(Region, Loc, N, Sizes, Types, Names))
    stock::printInfo(DeviceNum, Line);
}

std::string descriptorOwner(const void *Desc) {
  std::string Object = HostSymbolizer::get().objectOf(reinterpret_cast<uint64_t>(Desc));
  return Object.empty() ? fmt::format("descriptor {}", Desc) : Object;
}

} // namespace

namespace {

/// What a device image holds, for messages about images no plugin took:
/// "ELF for machine 183", "LLVM bitcode for aarch64-unknown-linux-gnu".
std::string describeImage(const __tgt_device_image *Image) {
  auto *Bytes = static_cast<const unsigned char *>(Image->ImageStart);
  size_t Size = static_cast<size_t>(static_cast<const char *>(Image->ImageEnd) -
                                    static_cast<const char *>(Image->ImageStart));
  if (Size >= 20 && std::memcmp(Bytes,
                                "\x7f"
                                "ELF",
                                4) == 0) {
    uint16_t Machine;
    std::memcpy(&Machine, Bytes + 18, sizeof(Machine));
    return fmt::format("ELF for machine {}{}", Machine, Machine == 62 ? " (x86-64)" : "");
  }
  if (Size >= 4 && std::memcmp(Bytes, "BC\xc0\xde", 4) == 0) {
    llvm::MemoryBufferRef Ref(llvm::StringRef(reinterpret_cast<const char *>(Bytes), Size), "image");
    auto Triple = llvm::getBitcodeTargetTriple(Ref);
    if (!Triple) {
      llvm::consumeError(Triple.takeError());
      return "unreadable LLVM bitcode";
    }
    return fmt::format("LLVM bitcode for {}", Triple->empty() ? "no target triple" : *Triple);
  }
  return fmt::format("{} bytes of unknown format", Size);
}

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

Runtime &Runtime::get() {
  // Never destroyed: __tgt_unregister_lib runs from atexit handlers, after
  // static destructors may have started.
  static Runtime *Instance = new Runtime();
  return *Instance;
}

void Runtime::fatal(const std::string &Message) {
  stock::claimProcessEnd();
  std::fflush(nullptr);
  trace::error(Message);
  trace::flush();
  profile::finish();
  // _Exit skips libomp's destructor, which would remove this file.
  removeOpenMPRegistration(::getpid());
  std::_Exit(trace::fatalExitStatus(1));
}

OffloadPolicy Runtime::policy() const {
  const std::string &P = config().OmpTargetOffload;
  if (P == "MANDATORY")
    return OffloadPolicy::Mandatory;
  if (P == "DISABLED")
    return OffloadPolicy::Disabled;
  return OffloadPolicy::Default;
}

llvm::Error Runtime::ensurePlugins() {
  std::lock_guard<std::recursive_mutex> Guard(Lock);
  if (PluginsLoaded)
    return PluginError.empty() ? llvm::Error::success() : makeError(PluginError);
  PluginsLoaded = true;
  if (policy() == OffloadPolicy::Disabled)
    return llvm::Error::success();
  std::string LibDir = ompsimLibDir();
  for (const std::string &Spec : config().Plugins) {
    auto Plugin = Plugin::create(Spec, pluginPath(Spec, LibDir));
    if (!Plugin) {
      PluginError = llvm::toString(Plugin.takeError());
      return makeError(PluginError);
    }
    if (!(*Plugin)->noDeviceReason().empty())
      NoDeviceReasons +=
          fmt::format("; plugin {} has no device: {}", (*Plugin)->name(), (*Plugin)->noDeviceReason());
    for (int32_t Local = 0; Local < (*Plugin)->numberOfDevices(); ++Local)
      Devices.push_back(std::make_unique<Device>(**Plugin, Local, static_cast<int32_t>(Devices.size())));
    Plugins.push_back(std::move(*Plugin));
  }
  DeviceCount.store(static_cast<int32_t>(Devices.size()), std::memory_order_release);
  return llvm::Error::success();
}

int32_t Runtime::numDevices() {
  if (auto Err = ensurePlugins())
    fatal(llvm::toString(std::move(Err)));
  std::lock_guard<std::recursive_mutex> Guard(Lock);
  return static_cast<int32_t>(Devices.size());
}

Device *Runtime::existingDevice(int32_t DeviceNum) {
  std::lock_guard<std::recursive_mutex> Guard(Lock);
  if (DeviceNum < 0 || static_cast<size_t>(DeviceNum) >= Devices.size())
    return nullptr;
  return Devices[DeviceNum].get();
}

bool Runtime::runsOnHost(int64_t DeviceNum) {
  if (policy() == OffloadPolicy::Disabled)
    return true;
  int32_t Count = numDevices();
  if (Count == 0)
    return policy() != OffloadPolicy::Mandatory;
  return resolveDeviceNumber(DeviceNum) == Count;
}

int64_t Runtime::resolveDeviceNumber(int64_t DeviceNum) {
  return DeviceNum == OMPSIM_DEVICE_DEFAULT ? omp_get_default_device() : DeviceNum;
}

llvm::Expected<Device *> Runtime::device(int64_t DeviceNum) {
  if (policy() == OffloadPolicy::Disabled)
    return nullptr;
  if (auto Err = ensurePlugins())
    return std::move(Err);
  int64_t N = resolveDeviceNumber(DeviceNum);
  std::lock_guard<std::recursive_mutex> Guard(Lock);
  auto Count = static_cast<int64_t>(Devices.size());
  if (N == Count)
    return nullptr; // the initial device: the host itself
  if (N < 0 || N > Count)
    return makeError(fmt::format("device number {} is invalid: {} device(s) available", N, Count));
  Device *D = Devices[N].get();
  if (auto Err = D->ensureInitialized())
    return std::move(Err);
  // Images load when the device is first used (their constructors run
  // then); a failure there is fatal in every entry point of stock.
  if (auto Err = ensureImagesOn(*D))
    stock::fatal(static_cast<int>(N), stock::imagesNotLoaded(N), llvm::toString(std::move(Err)));
  return D;
}

bool Runtime::unifiedSharedMemoryOn(Device &D) {
  std::lock_guard<std::recursive_mutex> Guard(Lock);
  // Only the host plugin's devices share the host's memory; sim refuses the
  // requirement when the image registers.
  return (Requires & OMPSIM_REQ_UNIFIED_SHARED_MEMORY) && D.plugin().name() == "host";
}

void Runtime::registerRequires(int64_t Flags) {
  std::lock_guard<std::recursive_mutex> Guard(Lock);
  // The first registration sets the flags; every later one must agree on
  // each clause stock checks (a fatal error there, as with stock).
  if (Requires == 0) {
    Requires = Flags;
  } else if (std::string Mismatch = stock::requiresMismatch(Requires, Flags); !Mismatch.empty()) {
    stock::fatal(2, Mismatch,
                 fmt::format("translation units of {} were compiled with different '#pragma omp requires' "
                             "clauses (flags {:#x}, then {:#x}); use the same ones in every file",
                             program_invocation_name ? program_invocation_name : "the program", Requires,
                             Flags));
  }
  OMPSIM_TRACE_EVENT(Cat::Image, "requires").hex("flags", static_cast<uint64_t>(Flags));
}

llvm::Error Runtime::loadOnDevices(RegisteredImage &Image) {
  for (auto &Plugin : Plugins) {
    if (!Plugin->fn().is_valid_binary(Image.Image))
      continue;
    Image.Plugin = Plugin.get();
    break;
  }
  if (!Image.Plugin) {
    // Normal for a binary built for several targets; kept so a launch that
    // finds no kernel can say which images were refused and why.
    RejectedImages.push_back(fmt::format("{} ({})", Image.Name, describeImage(Image.Image)));
    OMPSIM_TRACE_EVENT(Cat::Image, "unsupported").str("image", Image.Name);
    return llvm::Error::success(); // regions from it fall back (or fail when mandatory)
  }
  // A device loads its images when it is first used (as stock does: a
  // program that never offloads never runs device constructors), or now if
  // it is in use.
  for (auto &D : Devices) {
    if (&D->plugin() != Image.Plugin)
      continue;
    if (!D->isInitialized())
      continue;
    if (auto Err = D->loadImage(Image.Image, Image.Name, Image.Entries))
      return Err;
  }
  return llvm::Error::success();
}

llvm::Error Runtime::ensureImagesOn(Device &D) {
  bool Loaded = false;
  for (RegisteredLib &Lib : Libs)
    for (RegisteredImage &Image : Lib.Images) {
      if (Image.Plugin != &D.plugin() || D.hasImage(Image.Image))
        continue;
      if (auto Err = D.loadImage(Image.Image, Image.Name, Image.Entries))
        return Err;
      Loaded = true;
    }
  return Loaded ? D.publishFunctionPointerTable() : llvm::Error::success();
}

llvm::Error Runtime::publishAll() {
  for (auto &D : Devices)
    if (D->isInitialized())
      if (auto Err = D->publishFunctionPointerTable())
        return Err;
  return llvm::Error::success();
}

llvm::Error Runtime::registerLib(__tgt_bin_desc *Desc) {
  std::lock_guard<std::recursive_mutex> Guard(Lock);
  if (!Desc)
    return makeError("__tgt_register_lib called with a null descriptor");
  std::string Owner = descriptorOwner(Desc);
  if (insideSimulatedDevice()) {
    OMPSIM_TRACE_EVENT(Cat::Image, "register-ignored")
        .str("owner", Owner)
        .str("why", "loaded inside the simulated device as a dependency of a device image");
    return llvm::Error::success();
  }
  startUp();
  profile::Section Profiled("Runtime: register", [&] { return Owner; });
  if (Desc->NumDeviceImages < 0 || (Desc->NumDeviceImages > 0 && !Desc->DeviceImages))
    return makeError(fmt::format("malformed offload descriptor of {}: {} device images at {}", Owner,
                                 Desc->NumDeviceImages, static_cast<void *>(Desc->DeviceImages)));
  if (Desc->NumDeviceImages == 0)
    return makeError(fmt::format("malformed offload descriptor of {}: it holds no device images", Owner));
  if (auto Bad =
          firstUnreadable(Desc->DeviceImages, sizeof(__tgt_device_image) * size_t(Desc->NumDeviceImages)))
    return makeError(fmt::format("malformed offload descriptor of {}: its {} device images at {} are not "
                                 "readable host memory (nothing readable at {:#x})",
                                 Owner, Desc->NumDeviceImages, static_cast<void *>(Desc->DeviceImages),
                                 *Bad));
  // Registration and unregistration come in pairs (one constructor, one
  // destructor per binary); a second registration means corrupt state.
  for (const RegisteredLib &Lib : Libs)
    if (Lib.Desc == Desc)
      return makeError(fmt::format("{}{} is registered twice",
                                   Owner.starts_with("descriptor ") ? "offload " : "offload descriptor of ",
                                   Owner));
  OMPSIM_TRACE_EVENT(Cat::Image, "register").str("owner", Owner).num("images", Desc->NumDeviceImages);
  RegisteredLib Lib{Desc, {}};
  for (int32_t I = 0; I < Desc->NumDeviceImages; ++I) {
    const __tgt_device_image &Img = Desc->DeviceImages[I];
    std::string Name = fmt::format("device image {} of {}", I, Owner);
    // No bytes at all: a descriptor that carries only its entries (LLVM's
    // offloading/requires.c registers its `requires` flags so). Stock takes
    // the flags and no plugin takes the image; so does ompsim.
    if (!Img.ImageStart && !Img.ImageEnd) {
      // Only the requires flag and data word are read (stock checks nothing
      // else of such entries; the test's have version 0).
      const auto *Begin = static_cast<const __tgt_offload_entry *>(Img.EntriesBegin ? Img.EntriesBegin
                                                                                    : Desc->HostEntriesBegin);
      const auto *End =
          static_cast<const __tgt_offload_entry *>(Img.EntriesBegin ? Img.EntriesEnd : Desc->HostEntriesEnd);
      size_t Bytes = Begin && End > Begin ? static_cast<size_t>(reinterpret_cast<const char *>(End) -
                                                                reinterpret_cast<const char *>(Begin))
                                          : 0;
      if (Bytes % sizeof(__tgt_offload_entry) != 0 || firstUnreadable(Begin, Bytes))
        return makeError(fmt::format("malformed {}: it has no image bytes and its entries [{}, {}) are not "
                                     "readable whole entries",
                                     Name, static_cast<const void *>(Begin), static_cast<const void *>(End)));
      for (const auto *E = Begin; Bytes && E < End; ++E)
        if (E->Flags & OMPSIM_ENTRY_REQUIRES)
          registerRequires(static_cast<int64_t>(E->Data));
      RejectedImages.push_back(fmt::format("{} (no image bytes)", Name));
      continue;
    }
    if (!Img.ImageStart || !Img.ImageEnd || Img.ImageEnd <= Img.ImageStart)
      return makeError(fmt::format("malformed {}: image bytes [{}, {}) are empty or inverted", Name,
                                   Img.ImageStart, Img.ImageEnd));
    // Every pointer and size taken from the binary is checked against this
    // process's own mappings before anything (a plugin) reads through it.
    size_t ImageBytes = static_cast<size_t>(static_cast<const char *>(Img.ImageEnd) -
                                            static_cast<const char *>(Img.ImageStart));
    if (ImageBytes > kMaxDeviceImageBytes)
      return makeError(
          fmt::format("malformed {}: image bytes [{}, {}) ({} bytes) are more than a device image "
                      "may hold ({} GiB)",
                      Name, Img.ImageStart, Img.ImageEnd, ImageBytes, kMaxDeviceImageBytes >> 30));
    if (auto Bad = firstUnreadable(Img.ImageStart, ImageBytes))
      return makeError(fmt::format("malformed {}: image bytes [{}, {}) ({} bytes) are not readable host "
                                   "memory (nothing readable at {:#x})",
                                   Name, Img.ImageStart, Img.ImageEnd, ImageBytes, *Bad));
    // clang-22 points every image at the descriptor's host entries; older
    // wrappers may leave the image's own range empty.
    const void *Begin = Img.EntriesBegin, *End = Img.EntriesEnd;
    if (!Begin && !End) {
      Begin = Desc->HostEntriesBegin;
      End = Desc->HostEntriesEnd;
    }
    auto Entries = parseEntryTable(Begin, End, Name);
    if (!Entries)
      return Entries.takeError();
    for (const OffloadEntry &E : *Entries)
      if (E.Kind == EntryKind::Requires)
        registerRequires(static_cast<int64_t>(E.Data));
    Lib.Images.push_back({&Img, Name, std::move(*Entries), nullptr});
  }
  if (auto Err = ensurePlugins())
    return Err;
  for (RegisteredImage &Image : Lib.Images)
    if (auto Err = loadOnDevices(Image))
      return Err;
  Libs.push_back(std::move(Lib));
  return publishAll();
}

llvm::Error Runtime::unregisterLib(__tgt_bin_desc *Desc) {
  if (insideSimulatedDevice())
    return llvm::Error::success();
  if (KernelsRunning.load() > 0) {
    // Device code called exit() (in-process plugins run kernels on the host's
    // threads): the launching thread is still inside the kernel and waits
    // for the thread now running the exit handlers. Unloading
    // would wait forever; the process is ending, so leave the images be.
    OMPSIM_TRACE_EVENT(Cat::Image, "unregister-skipped")
        .str("owner", descriptorOwner(Desc))
        .str("why", "a kernel is still running (exit called from device code)");
    return llvm::Error::success();
  }
  std::lock_guard<std::recursive_mutex> Guard(Lock);
  auto It = std::find_if(Libs.begin(), Libs.end(), [&](const RegisteredLib &L) { return L.Desc == Desc; });
  if (It == Libs.end())
    return makeError(fmt::format("__tgt_unregister_lib: offload descriptor {} was never registered",
                                 static_cast<void *>(Desc)));
  OMPSIM_TRACE_EVENT(Cat::Image, "unregister").str("owner", descriptorOwner(Desc));
  // Stock's devices go with its last descriptor, each printing its table
  // (last device first) before its images are unloaded.
  if (Libs.size() == 1 && stock::infoOn(stock::info::DumpTable))
    dumpMappingTables(stderr, stock::ExitBlock, /*Reverse=*/true);
  for (RegisteredImage &Image : It->Images)
    for (auto &D : Devices)
      if (auto Err = D->unloadImage(Image.Image))
        return Err;
  // Stock's devices end with its last descriptor.
  if (Libs.size() == 1)
    for (auto &D : Devices)
      if (D->isInitialized())
        events::emit(events::DeviceFinalize{D->deviceNumber()});
  Libs.erase(It);
  return publishAll();
}

void Runtime::finishChecks(int Status) {
  std::vector<Device *> All;
  {
    std::lock_guard<std::recursive_mutex> Guard(Lock);
    for (auto &D : Devices)
      All.push_back(D.get());
  }
  for (Device *D : All) {
    std::lock_guard<std::recursive_mutex> TableLock(D->mappingTable().mutex());
    D->mappingTable().forEach([&](MapEntry &E) {
      if (!E.isInfinite() && E.totalRef() != 0)
        check::onLeftAtExit(E, D->deviceNumber());
    });
  }
  if (!check::failsStrict(Status))
    return;
  std::fflush(nullptr);
  trace::flush();
  profile::finish();
  removeOpenMPRegistration(::getpid());
  std::_Exit(1);
}

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
  events::TargetRegionScope Region(events::TargetKind::Target, D.deviceNumber());
  if (stock::infoOn(stock::info::KernelArgs))
    printRegionArguments(D.deviceNumber(), stock::RegionKernel, Loc, Args->NumArgs, Args->ArgSizes,
                         Args->ArgTypes, Args->ArgNames);
  profile::Section Profiled("Runtime: target exe", [&] {
    return fmt::format("NumTeams={};NumArgs={}", Teams > 0 ? Teams : 0, Args->NumArgs);
  });
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
  llvm::Error Launched = D.launch(Kernel, *KernelArgs, Config, Teams < 0 ? 1u : static_cast<uint32_t>(Teams));
  KernelsRunning.fetch_sub(1);
  TableLock.lock();
  if (auto Err = std::move(Launched)) {
    LaunchFailure = true;
    if (check::enabled()) {
      // A guard page or a freed block the kernel touched (sim's placement
      // for the checker) names the map item it belongs to.
      const PluginFunctions &Fn = D.plugin().fn();
      ompsim_fault_info Fault{};
      if (Fn.last_fault && Fn.last_fault(D.localId(), &Fault) == 1)
        check::onKernelFault(Fault, D.mappingTable(), D.deviceNumber());
    }
    Err = adviseDataFault(D, std::move(Err), MapArgs, KernelName);
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
  if (!P.fn().last_fault || P.fn().last_fault(D.localId(), &Info) != 1)
    return Err;
  DataFaultSite Site;
  Site.Addr = Info.addr;
  Site.Write = Info.access == OMPSIM_FAULT_WRITE;
  Site.Device = D.deviceNumber();
  Site.Context = Info.context ? Info.context : "a kernel";
  Site.Instruction = Info.instruction ? Info.instruction : "?";
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
  events::TargetRegionScope Construct(Op == DataOp::Begin ? events::TargetKind::EnterData
                                      : Op == DataOp::End ? events::TargetKind::ExitData
                                                          : events::TargetKind::Update,
                                      D.deviceNumber());
  if (stock::infoOn(stock::info::KernelArgs)) {
    const char *Region =
        Op == DataOp::Begin ? (Nowait ? stock::RegionDataBeginNowait : stock::RegionDataBegin)
        : Op == DataOp::End ? (Nowait ? stock::RegionDataEndNowait : stock::RegionDataEnd)
                            : (Nowait ? stock::RegionDataUpdateNowait : stock::RegionDataUpdate);
    std::vector<int64_t> Sizes, Types;
    std::vector<void *> Names;
    for (const MapArg &A : Args) {
      Sizes.push_back(A.Size);
      Types.push_back(A.Type);
      Names.push_back(A.Name);
    }
    printRegionArguments(D.deviceNumber(), Region, Loc, Args.size(), Sizes.data(), Types.data(),
                         Names.data());
  }
  profile::Section Profiled("Runtime: Data Copy", [&] { return fmt::format("NumArgs={}", Args.size()); });
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

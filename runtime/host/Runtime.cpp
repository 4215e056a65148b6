// Runtime: registration, plugin/device numbering, and the target operations.
#include "Runtime.h"
#include "ApiHelpers.h"
#include "DataFaultAdvisor.h"
#include "InfoLevel.h"
#include "StockMessages.h"

#include "../check/MapChecker.h"
#include "../events/OffloadEvents.h"
#include "../listeners/Listeners.h"
#include "../ompt/OmptDispatcher.h"

#include "ompsim/Config.h"
#include "ompsim/Errors.h"
#include "ompsim/HostSymbolizer.h"
#include "ompsim/OpenMPRegistration.h"
#include "ompsim/ProfileWriter.h"
#include "ompsim/Trace.h"
#include "ompsim/device_runtime.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Frontend/OpenMP/OMPDeviceConstants.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/TargetParser/Triple.h"

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
    // Our observers, in the order their lines interleave on stderr.
    if (infoLevel() != 0)
      listeners::subscribeInfoPrinter();
    if (trace::enabled(trace::Cat::Map) || trace::enabled(trace::Cat::Alloc) ||
        trace::enabled(trace::Cat::Transfer) || trace::enabled(trace::Cat::Launch) ||
        trace::enabled(trace::Cat::Image))
      listeners::subscribeTraceWriter();
    if (profile::enabled())
      listeners::subscribeProfileSections();
    if (check::enabled())
      listeners::subscribeMapChecker();
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
    // The simulated device declines the other GPU's code under OMPSIM_SIM_GPU: say so.
    llvm::Triple T(*Triple);
    std::string Why;
    if ((T.isNVPTX() || T.isAMDGCN()) && config().declinesGpu(T.getArchName()))
      Why = fmt::format("; the simulated device is an {} GPU (OMPSIM_SIM_GPU={})", config().SimGpu,
                        config().SimGpu);
    return fmt::format("LLVM bitcode for {}{}", Triple->empty() ? "no target triple" : *Triple, Why);
  }
  return fmt::format("{} bytes of unknown format", Size);
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

llvm::Error Runtime::loadOnDevices(RegisteredImage &Image, llvm::ArrayRef<RegisteredImage> Earlier) {
  for (auto &Plugin : Plugins) {
    if (!Plugin->fn().is_valid_binary(Image.Image))
      continue;
    Image.Plugin = Plugin.get();
    break;
  }
  // One image of a binary per device, as stock's registration has it: of a
  // binary built for several architectures that one plugin's devices all run
  // (sm_80 and sm_90, or nvptx64 and amdgcn on the simulated device), the
  // first such image is loaded and the others are not.
  auto Same = llvm::find_if(
      Earlier, [&](const RegisteredImage &E) { return Image.Plugin && E.Plugin == Image.Plugin; });
  if (Same != Earlier.end()) {
    OMPSIM_TRACE_EVENT(Cat::Image, "duplicate")
        .str("image", Image.Name)
        .str("loaded", Same->Name)
        .str("why", "one image of a binary per device, the first its plugin accepts");
    Image.Plugin = nullptr;
    return llvm::Error::success();
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
  for (size_t I = 0; I < Lib.Images.size(); ++I)
    if (auto Err = loadOnDevices(Lib.Images[I], llvm::ArrayRef(Lib.Images).take_front(I)))
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

} // namespace ompsim::host

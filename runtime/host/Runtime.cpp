// Runtime: registration, plugin/device numbering, and the target operations.
#include "Runtime.h"

#include "ompsim/Config.h"
#include "ompsim/HostSymbolizer.h"
#include "ompsim/OpenMPRegistration.h"
#include "ompsim/Trace.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Support/MemoryBuffer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <omp.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

namespace ompsim::host {
namespace {

llvm::Error makeError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

/// Trip counts pushed by __kmpc_push_target_tripcount*, per thread and device.
thread_local std::map<int64_t, uint64_t> pendingTripcounts;

/// True inside an ompsim-device executor, where a host library was loaded to
/// satisfy a device image's NEEDED entry: its offload registration belongs to
/// the host process, which already registered the library's device image.
bool insideSimulatedDevice() {
  static const bool inside = ::dlsym(RTLD_DEFAULT, "__ompsim_executor_marker") != nullptr;
  return inside;
}

std::string descriptorOwner(const void *desc) {
  std::string object = HostSymbolizer::get().objectOf(reinterpret_cast<uint64_t>(desc));
  return object.empty() ? fmt::format("descriptor {}", desc) : object;
}

} // namespace

namespace {

/// What a device image holds, for messages about images no plugin took:
/// "ELF for machine 183", "LLVM bitcode for aarch64-unknown-linux-gnu".
std::string describeImage(const __tgt_device_image *image) {
  auto *bytes = static_cast<const unsigned char *>(image->ImageStart);
  size_t size = static_cast<size_t>(static_cast<const char *>(image->ImageEnd) -
                                    static_cast<const char *>(image->ImageStart));
  if (size >= 20 && std::memcmp(bytes,
                                "\x7f"
                                "ELF",
                                4) == 0) {
    uint16_t machine;
    std::memcpy(&machine, bytes + 18, sizeof(machine));
    return fmt::format("ELF for machine {}{}", machine, machine == 62 ? " (x86-64)" : "");
  }
  if (size >= 4 && std::memcmp(bytes, "BC\xc0\xde", 4) == 0) {
    llvm::MemoryBufferRef ref(llvm::StringRef(reinterpret_cast<const char *>(bytes), size), "image");
    auto triple = llvm::getBitcodeTargetTriple(ref);
    if (!triple) {
      llvm::consumeError(triple.takeError());
      return "unreadable LLVM bitcode";
    }
    return fmt::format("LLVM bitcode for {}", triple->empty() ? "no target triple" : *triple);
  }
  return fmt::format("{} bytes of unknown format", size);
}

} // namespace

Runtime &Runtime::get() {
  // Never destroyed: __tgt_unregister_lib runs from atexit handlers, after
  // static destructors may have started.
  static Runtime *runtime = new Runtime();
  return *runtime;
}

void Runtime::fatal(const std::string &message) {
  std::fflush(nullptr);
  trace::error(message);
  trace::flush();
  // _Exit skips libomp's destructor, which would remove this file.
  removeOpenMPRegistration(::getpid());
  std::_Exit(trace::fatalExitStatus(1));
}

OffloadPolicy Runtime::policy() const {
  const std::string &p = config().OmpTargetOffload;
  if (p == "MANDATORY")
    return OffloadPolicy::Mandatory;
  if (p == "DISABLED")
    return OffloadPolicy::Disabled;
  return OffloadPolicy::Default;
}

llvm::Error Runtime::ensurePlugins() {
  std::lock_guard<std::recursive_mutex> guard(lock_);
  if (pluginsLoaded_)
    return pluginError_.empty() ? llvm::Error::success() : makeError(pluginError_);
  pluginsLoaded_ = true;
  if (policy() == OffloadPolicy::Disabled)
    return llvm::Error::success();
  std::string libDir = ompsimLibDir();
  for (const std::string &spec : config().Plugins) {
    auto plugin = Plugin::Create(spec, pluginPath(spec, libDir));
    if (!plugin) {
      pluginError_ = llvm::toString(plugin.takeError());
      return makeError(pluginError_);
    }
    if (!(*plugin)->noDeviceReason().empty())
      noDeviceReasons_ +=
          fmt::format("; plugin {} has no device: {}", (*plugin)->name(), (*plugin)->noDeviceReason());
    for (int32_t local = 0; local < (*plugin)->numberOfDevices(); ++local)
      devices_.push_back(std::make_unique<Device>(**plugin, local, static_cast<int32_t>(devices_.size())));
    plugins_.push_back(std::move(*plugin));
  }
  return llvm::Error::success();
}

int32_t Runtime::numDevices() {
  if (auto err = ensurePlugins())
    fatal(llvm::toString(std::move(err)));
  std::lock_guard<std::recursive_mutex> guard(lock_);
  return static_cast<int32_t>(devices_.size());
}

bool Runtime::runsOnHost(int64_t deviceNum) {
  if (policy() == OffloadPolicy::Disabled)
    return true;
  int32_t count = numDevices();
  if (count == 0)
    return policy() != OffloadPolicy::Mandatory;
  return resolveDeviceNumber(deviceNum) == count;
}

int64_t Runtime::resolveDeviceNumber(int64_t deviceNum) {
  return deviceNum == OMPSIM_DEVICE_DEFAULT ? omp_get_default_device() : deviceNum;
}

llvm::Expected<Device *> Runtime::device(int64_t deviceNum) {
  if (policy() == OffloadPolicy::Disabled)
    return nullptr;
  if (auto err = ensurePlugins())
    return std::move(err);
  int64_t n = resolveDeviceNumber(deviceNum);
  std::lock_guard<std::recursive_mutex> guard(lock_);
  auto count = static_cast<int64_t>(devices_.size());
  if (n == count)
    return nullptr; // the initial device: the host itself
  if (n < 0 || n > count)
    return makeError(fmt::format("device number {} is invalid: {} device(s) available", n, count));
  Device *d = devices_[n].get();
  if (auto err = d->ensureInitialized())
    return std::move(err);
  if (auto err = ensureImagesOn(*d))
    return std::move(err);
  return d;
}

void Runtime::registerRequires(int64_t flags) {
  std::lock_guard<std::recursive_mutex> guard(lock_);
  requires_ |= flags;
  OMPSIM_TRACE_EVENT(Cat::Image, "requires").hex("flags", static_cast<uint64_t>(flags));
}

llvm::Error Runtime::loadOnDevices(RegisteredImage &image) {
  for (auto &plugin : plugins_) {
    if (!plugin->fn().is_valid_binary(image.image))
      continue;
    image.plugin = plugin.get();
    break;
  }
  if (!image.plugin) {
    // Normal for a binary built for several targets; kept so a launch that
    // finds no kernel can say which images were refused and why.
    rejectedImages_.push_back(fmt::format("{} ({})", image.name, describeImage(image.image)));
    OMPSIM_TRACE_EVENT(Cat::Image, "unsupported").str("image", image.name);
    return llvm::Error::success(); // regions from it fall back (or fail when mandatory)
  }
  // The default device loads at once (registration errors show at start);
  // another device loads when it is first used, or now if it is in use.
  int64_t defaultDevice = resolveDeviceNumber(OMPSIM_DEVICE_DEFAULT);
  for (auto &d : devices_) {
    if (&d->plugin() != image.plugin)
      continue;
    if (d->deviceNumber() != defaultDevice && !d->isInitialized())
      continue;
    if (auto err = d->loadImage(image.image, image.name, image.entries))
      return err;
  }
  return llvm::Error::success();
}

llvm::Error Runtime::ensureImagesOn(Device &d) {
  bool loaded = false;
  for (RegisteredLib &lib : libs_)
    for (RegisteredImage &image : lib.images) {
      if (image.plugin != &d.plugin() || d.hasImage(image.image))
        continue;
      if (auto err = d.loadImage(image.image, image.name, image.entries))
        return err;
      loaded = true;
    }
  return loaded ? d.publishFunctionPointerTable() : llvm::Error::success();
}

llvm::Error Runtime::publishAll() {
  for (auto &d : devices_)
    if (d->isInitialized())
      if (auto err = d->publishFunctionPointerTable())
        return err;
  return llvm::Error::success();
}

llvm::Error Runtime::registerLib(__tgt_bin_desc *desc) {
  std::lock_guard<std::recursive_mutex> guard(lock_);
  if (!desc)
    return makeError("__tgt_register_lib called with a null descriptor");
  std::string owner = descriptorOwner(desc);
  if (insideSimulatedDevice()) {
    OMPSIM_TRACE_EVENT(Cat::Image, "register-ignored")
        .str("owner", owner)
        .str("why", "loaded inside the simulated device as a dependency of a device image");
    return llvm::Error::success();
  }
  if (desc->NumDeviceImages < 0 || (desc->NumDeviceImages > 0 && !desc->DeviceImages))
    return makeError(fmt::format("malformed offload descriptor of {}: {} device images at {}", owner,
                                 desc->NumDeviceImages, static_cast<void *>(desc->DeviceImages)));
  if (desc->NumDeviceImages == 0)
    return makeError(fmt::format("malformed offload descriptor of {}: it holds no device images", owner));
  if (auto bad =
          firstUnreadable(desc->DeviceImages, sizeof(__tgt_device_image) * size_t(desc->NumDeviceImages)))
    return makeError(fmt::format("malformed offload descriptor of {}: its {} device images at {} are not "
                                 "readable host memory (nothing readable at {:#x})",
                                 owner, desc->NumDeviceImages, static_cast<void *>(desc->DeviceImages),
                                 *bad));
  // Registration and unregistration come in pairs (one constructor, one
  // destructor per binary); a second registration means corrupt state.
  for (const RegisteredLib &lib : libs_)
    if (lib.desc == desc)
      return makeError(fmt::format("{}{} is registered twice",
                                   owner.starts_with("descriptor ") ? "offload " : "offload descriptor of ",
                                   owner));
  OMPSIM_TRACE_EVENT(Cat::Image, "register").str("owner", owner).num("images", desc->NumDeviceImages);
  RegisteredLib lib{desc, {}};
  for (int32_t i = 0; i < desc->NumDeviceImages; ++i) {
    const __tgt_device_image &img = desc->DeviceImages[i];
    std::string name = fmt::format("device image {} of {}", i, owner);
    if (!img.ImageStart || !img.ImageEnd || img.ImageEnd <= img.ImageStart)
      return makeError(fmt::format("malformed {}: image bytes [{}, {}) are empty or inverted", name,
                                   img.ImageStart, img.ImageEnd));
    // Every pointer and size taken from the binary is checked against this
    // process's own mappings before anything (a plugin) reads through it.
    size_t imageBytes = static_cast<size_t>(static_cast<const char *>(img.ImageEnd) -
                                            static_cast<const char *>(img.ImageStart));
    if (imageBytes > kMaxDeviceImageBytes)
      return makeError(
          fmt::format("malformed {}: image bytes [{}, {}) ({} bytes) are more than a device image "
                      "may hold ({} GiB)",
                      name, img.ImageStart, img.ImageEnd, imageBytes, kMaxDeviceImageBytes >> 30));
    if (auto bad = firstUnreadable(img.ImageStart, imageBytes))
      return makeError(fmt::format("malformed {}: image bytes [{}, {}) ({} bytes) are not readable host "
                                   "memory (nothing readable at {:#x})",
                                   name, img.ImageStart, img.ImageEnd, imageBytes, *bad));
    // clang-22 points every image at the descriptor's host entries; older
    // wrappers may leave the image's own range empty.
    const void *begin = img.EntriesBegin, *end = img.EntriesEnd;
    if (!begin && !end) {
      begin = desc->HostEntriesBegin;
      end = desc->HostEntriesEnd;
    }
    auto entries = parseEntryTable(begin, end, name);
    if (!entries)
      return entries.takeError();
    for (const OffloadEntry &e : *entries)
      if (e.kind == EntryKind::Requires)
        registerRequires(static_cast<int64_t>(e.data));
    lib.images.push_back({&img, name, std::move(*entries), nullptr});
  }
  if (auto err = ensurePlugins())
    return err;
  for (RegisteredImage &image : lib.images)
    if (auto err = loadOnDevices(image))
      return err;
  libs_.push_back(std::move(lib));
  return publishAll();
}

llvm::Error Runtime::unregisterLib(__tgt_bin_desc *desc) {
  if (insideSimulatedDevice())
    return llvm::Error::success();
  if (kernelsRunning_.load() > 0) {
    // Device code called exit() (in-process plugins run kernels on the host's
    // threads): the launching thread still holds the device's mapping table
    // and waits for the thread now running the exit handlers. Unloading
    // would wait forever; the process is ending, so leave the images be.
    OMPSIM_TRACE_EVENT(Cat::Image, "unregister-skipped")
        .str("owner", descriptorOwner(desc))
        .str("why", "a kernel is still running (exit called from device code)");
    return llvm::Error::success();
  }
  std::lock_guard<std::recursive_mutex> guard(lock_);
  auto it = std::find_if(libs_.begin(), libs_.end(), [&](const RegisteredLib &l) { return l.desc == desc; });
  if (it == libs_.end())
    return makeError(fmt::format("__tgt_unregister_lib: offload descriptor {} was never registered",
                                 static_cast<void *>(desc)));
  OMPSIM_TRACE_EVENT(Cat::Image, "unregister").str("owner", descriptorOwner(desc));
  for (RegisteredImage &image : it->images)
    for (auto &d : devices_)
      if (auto err = d->unloadImage(image.image))
        return err;
  libs_.erase(it);
  return publishAll();
}

void Runtime::pushTripcount(int64_t deviceNum, uint64_t count) {
  pendingTripcounts[resolveDeviceNumber(deviceNum)] = count;
}

llvm::Error Runtime::targetKernel(int64_t deviceNum, int32_t teams, int32_t threads, void *regionId,
                                  __tgt_kernel_arguments *args, bool &launchFailure) {
  launchFailure = true;
  if (!args)
    return makeError("__tgt_target_kernel called without kernel arguments");
  if (args->Version < 2)
    return makeError(
        fmt::format("kernel arguments version {} is not supported (need 2 or 3)", args->Version));
  auto dev = device(deviceNum);
  if (!dev)
    return dev.takeError();
  if (!*dev)
    return makeError(fmt::format("no offload device: device {} is the host (OMPSIM_PLUGINS={}){}",
                                 resolveDeviceNumber(deviceNum), fmt::join(config().Plugins, ","),
                                 noDeviceReasons_));
  Device &d = **dev;
  std::string kernelName;
  void *kernel = d.findKernel(regionId, &kernelName);
  if (!kernel) {
    std::lock_guard<std::recursive_mutex> guard(lock_);
    std::string rejected = rejectedImages_.empty()
                               ? std::string()
                               : fmt::format("; no plugin accepted {}", fmt::join(rejectedImages_, ", "));
    return makeError(fmt::format("no device image loaded on device {} provides the target region "
                                 "{}{}",
                                 d.deviceNumber(), trace::hostAddress(reinterpret_cast<uint64_t>(regionId)),
                                 rejected));
  }

  std::vector<MapArg> mapArgs =
      makeMapArgs(static_cast<int32_t>(args->NumArgs), args->ArgBasePtrs, args->ArgPtrs, args->ArgSizes,
                  args->ArgTypes, args->ArgNames, args->ArgMappers);
  ompsim_launch_config config{};
  // teams/threads from the call win over the clause copies in KernelArgs;
  // negative or zero means "not specified".
  auto clause = [](uint32_t v) { return static_cast<int32_t>(v) > 0 ? v : 0u; };
  config.num_teams = teams > 0 ? static_cast<uint32_t>(teams) : clause(args->NumTeams[0]);
  config.thread_limit = threads > 0 ? static_cast<uint32_t>(threads) : clause(args->ThreadLimit[0]);
  config.tripcount = args->Tripcount;
  int64_t resolved = resolveDeviceNumber(deviceNum);
  if (auto it = pendingTripcounts.find(resolved); it != pendingTripcounts.end()) {
    if (!config.tripcount)
      config.tripcount = it->second;
    pendingTripcounts.erase(it);
  }
  config.kernel_name = kernelName.c_str();

  std::lock_guard<std::recursive_mutex> tableLock(d.mappingTable().mutex());
  MapClauseProcessor processor(d.mappingTable(), d);
  launchFailure = false; // map errors are always fatal
  if (auto err = processor.enter(mapArgs, nullptr))
    return err;
  std::vector<uint64_t> privateBlocks;
  auto kernelArgs = processor.kernelArguments(mapArgs, privateBlocks);
  if (!kernelArgs)
    return kernelArgs.takeError();
  kernelsRunning_.fetch_add(1);
  llvm::Error launched = d.launch(kernel, *kernelArgs, config);
  kernelsRunning_.fetch_sub(1);
  if (auto err = std::move(launched)) {
    launchFailure = true;
    return err;
  }
  for (uint64_t block : privateBlocks)
    if (auto err = d.release(block))
      return err;
  return processor.exit(mapArgs);
}

llvm::Error Runtime::targetData(DataOp op, int64_t deviceNum, std::vector<MapArg> args, void **argsBase) {
  auto dev = device(deviceNum);
  if (!dev)
    return dev.takeError();
  if (!*dev) {
    if (policy() == OffloadPolicy::Mandatory && numDevices() == 0)
      return makeError(fmt::format("offload is mandatory but no device is available "
                                   "(OMPSIM_PLUGINS={}){}",
                                   fmt::join(config().Plugins, ","), noDeviceReasons_));
    return llvm::Error::success(); // the host: nothing to map
  }
  Device &d = **dev;
  std::lock_guard<std::recursive_mutex> tableLock(d.mappingTable().mutex());
  MapClauseProcessor processor(d.mappingTable(), d);
  switch (op) {
  case DataOp::Begin:
    return processor.enter(args, argsBase);
  case DataOp::End:
    return processor.exit(args);
  case DataOp::Update:
    return processor.update(args);
  }
  return llvm::Error::success();
}

} // namespace ompsim::host

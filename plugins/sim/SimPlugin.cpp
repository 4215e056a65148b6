// libompsim-plugin-sim.so: the plugin C ABI (ompsim/plugin_api.h) on the simulated device.
//
// The ABI functions are thin: they find the device, call the controller, and
// turn an llvm::Error into OMPSIM_OFFLOAD_FAIL plus the device's last-error line.
#include "ompsim/plugin_api.h"

#include "FaultAdvisor.h"

#include "ompsim/Config.h"
#include "ompsim/HostSymbolizer.h"
#include "ompsim/Trace.h"
#include "ompsim/simulator/DeviceController.h"

#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/TargetParser/Triple.h"

#include <dlfcn.h>
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#define OMPSIM_EXPORT extern "C" __attribute__((visibility("default")))

/// A loaded image, as the runtime sees it.
struct ompsim_binary {
  int32_t device;
  uint64_t image;
  std::string name;
};

namespace ompsim::sim {
namespace {

using llvm::Error;

/// The library names a NEEDED entry can use for the host object that embeds
/// `imageBytes`: its file name and its DT_SONAME. A shared library's device
/// image is linked into later images under these names.
std::vector<std::string> hostLibraryNames(const void *imageBytes) {
  Dl_info info{};
  if (!::dladdr(imageBytes, &info) || !info.dli_fname || !*info.dli_fname)
    return {};
  std::vector<std::string> names{llvm::sys::path::filename(info.dli_fname).str()};
  auto file = llvm::MemoryBuffer::getFile(info.dli_fname, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return names;
  auto elf = llvm::object::ELF64LEFile::create((*file)->getBuffer());
  if (!elf)
    return consumeError(elf.takeError()), names;
  auto dynamic = elf->dynamicEntries();
  if (!dynamic)
    return consumeError(dynamic.takeError()), names;
  uint64_t strtab = 0, soname = UINT64_MAX;
  for (const auto &entry : *dynamic) {
    if (entry.d_tag == DT_STRTAB)
      strtab = entry.getPtr();
    else if (entry.d_tag == DT_SONAME)
      soname = entry.getVal();
  }
  if (soname == UINT64_MAX || !strtab)
    return names;
  auto strings = elf->toMappedAddr(strtab);
  if (!strings)
    return consumeError(strings.takeError()), names;
  const char *end = (*file)->getBufferEnd();
  const char *s = reinterpret_cast<const char *>(*strings) + soname;
  if (s < end) {
    std::string name(s, strnlen(s, size_t(end - s)));
    if (!name.empty() && name != names.front())
      names.push_back(std::move(name));
  }
  return names;
}

/// A kernel handle handed to the runtime by get_function.
struct KernelHandle {
  uint64_t entry;
  std::string name;
};

/// One device: its controller (once initialized), handles and last error.
struct SimDevice {
  std::unique_ptr<DeviceController> controller;
  std::deque<std::unique_ptr<ompsim_binary>> binaries;
  std::deque<std::unique_ptr<KernelHandle>> kernels;
  std::string lastError;
  /// Adds how to fix it to a diagnosis of a fault on a host address.
  FaultAdvisor advisor;
  /// A live data_alloc block: what a diagnosis says about a device pointer
  /// that reaches the host side of a copy.
  struct Allocation {
    uint64_t size = 0;
    uint64_t hostPtr = 0; ///< the host data it was allocated for (0: omp_target_alloc and the like)
    int32_t kind = 0;
  };
  std::map<uint64_t, Allocation> allocations; ///< by device address; under SimPlugin::allocMu
  uint32_t defaultThreadLimit = 0;
  uint64_t imagesLoaded = 0;
  /// Translate calls per function over the whole run, from the recorded calls
  /// (keyed by the symbolized result); exact unless calls were dropped.
  struct FunctionCalls {
    uint64_t calls = 0, misses = 0;
  };
  std::map<std::string, FunctionCalls> translateCalls;
  uint64_t translateHits = 0, translateMisses = 0, translateDropped = 0;
};

/// Emits the per-device translate summary of the whole run (at exit or deinit).
void emitTranslateExitSummary(SimDevice &d, int32_t id) {
  if (!trace::enabled(trace::Cat::Translate) || d.translateHits + d.translateMisses == 0)
    return;
  for (const auto &[fn, c] : d.translateCalls)
    OMPSIM_TRACE_EVENT(Cat::Translate, "exit-function")
        .num("device", id)
        .str("function", fn)
        .num("calls", int64_t(c.calls))
        .num("misses", int64_t(c.misses));
  OMPSIM_TRACE_EVENT(Cat::Translate, "exit-summary")
      .num("device", id)
      .num("hits", int64_t(d.translateHits))
      .num("misses", int64_t(d.translateMisses))
      .num("dropped", int64_t(d.translateDropped))
      .str("note", d.translateDropped ? "per-function counts cover recorded calls only; raise "
                                        "OMPSIM_TRACE_TRANSLATE_CAP"
                                      : "per-function counts are exact");
}

/// The plugin's devices; never destroyed (executors are stopped at exit by stopAll).
class SimPlugin {
public:
  static SimPlugin &get() {
    static SimPlugin *p = new SimPlugin();
    return *p;
  }

  std::mutex mu;
  std::vector<SimDevice> devices;
  std::string lastError; ///< plugin-wide (device -1)
  std::mutex allocMu;    ///< guards every SimDevice::allocations

  /// The device, or nullptr with the plugin-wide error set.
  SimDevice *device(int32_t id) {
    if (id < 0 || size_t(id) >= devices.size()) {
      lastError = fmt::format("sim plugin: no device {} (have {})", id, devices.size());
      return nullptr;
    }
    return &devices[id];
  }

  /// Stops every executor; runs at exit so none outlives the host.
  static void stopAll() {
    SimPlugin &p = get();
    std::lock_guard<std::mutex> lock(p.mu);
    for (size_t i = 0; i < p.devices.size(); ++i) {
      emitTranslateExitSummary(p.devices[i], int32_t(i));
      p.devices[i].controller.reset();
    }
  }

  std::string libDir() {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void *>(&SimPlugin::get), &info) && info.dli_fname) {
      std::string path = info.dli_fname;
      auto slash = path.rfind('/');
      return slash == std::string::npos ? "." : path.substr(0, slash);
    }
    return ".";
  }

private:
  SimPlugin() { devices.resize(size_t(std::max(config().NumDevices, 1))); }
};

int32_t failWith(SimDevice *d, Error err) {
  std::string msg = llvm::toString(std::move(err));
  if (d)
    d->lastError = msg;
  else
    SimPlugin::get().lastError = msg;
  return OMPSIM_OFFLOAD_FAIL;
}

int32_t failWith(SimDevice *d, std::string msg) {
  return failWith(d, llvm::createStringError(llvm::inconvertibleErrorCode(), msg));
}

/// Controller of an initialized device, or nullptr with the error recorded.
DeviceController *controllerOf(int32_t id, SimDevice *&d) {
  d = SimPlugin::get().device(id);
  if (!d)
    return nullptr;
  if (!d->controller) {
    d->lastError = fmt::format("device {}: not initialized", id);
    return nullptr;
  }
  return d->controller.get();
}

void declineImage(const __tgt_device_image *image, const std::string &why) {
  OMPSIM_TRACE_EVENT(Cat::Image, "decline")
      .str("plugin", "sim")
      .num("bytes", image ? int64_t((char *)image->ImageEnd - (char *)image->ImageStart) : 0)
      .str("reason", why);
}

void emitTranslateTrace(SimDevice &d, int32_t id, llvm::StringRef kernel) {
  if (!trace::enabled(trace::Cat::Translate))
    return;
  uint64_t cap = config().TraceTranslateCap;
  auto log = d.controller->takeTranslateLog(cap, cap);
  if (!log) {
    OMPSIM_TRACE_EVENT(Cat::Translate, "unavailable")
        .num("device", id)
        .str("reason", llvm::toString(log.takeError()));
    return;
  }
  HostSymbolizer &hs = HostSymbolizer::get();
  for (const TranslateLog::Record &r : log->records) {
    trace::Event ev(trace::Cat::Translate, "translate");
    ev.num("device", id).str("kernel", kernel);
    // A pointer already translated (e.g. by the mapping table) reaches the
    // lookup as a device address: name it on the device side.
    std::string resultSym = d.controller->symbolize(r.result);
    auto named = [&](const char *key, uint64_t a, const std::string &devSym) {
      if (a == 0 || !hs.objectOf(a).empty())
        ev.host(key, a);
      else
        ev.dev(key, a, devSym);
    };
    named("host_ptr", r.hostPtr, d.controller->symbolize(r.hostPtr));
    named("result", r.result, resultSym);
    ev.str("outcome", r.hit ? "hit" : "miss");
    std::string fn = resultSym.empty() ? (r.hit ? fmt::format("dev:{:#x}", r.result)
                                                : trace::hostAddress(r.hostPtr, !trace::normalized()))
                                       : resultSym.substr(0, resultSym.rfind('+'));
    SimDevice::FunctionCalls &c = d.translateCalls[fn];
    ++c.calls;
    c.misses += r.hit ? 0 : 1;
  }
  d.translateHits += log->hits;
  d.translateMisses += log->misses;
  d.translateDropped += log->dropped;
  OMPSIM_TRACE_EVENT(Cat::Translate, "summary")
      .num("device", id)
      .str("kernel", kernel)
      .num("hits", int64_t(log->hits))
      .num("misses", int64_t(log->misses))
      .num("dropped", int64_t(log->dropped));
}

/// Who made a device allocation, in words.
std::string allocatedBy(const SimDevice::Allocation &a) {
  if (a.hostPtr) {
    auto sym = HostSymbolizer::get().lookup(a.hostPtr);
    std::string named = !sym               ? ""
                        : sym->Offset == 0 ? fmt::format(" ('{}')", sym->Name)
                                           : fmt::format(" ('{}+0x{:x}')", sym->Name, sym->Offset);
    return fmt::format("mapping host 0x{:x}{}", a.hostPtr, named);
  }
  switch (a.kind) {
  case OMPSIM_ALLOC_DEVICE:
    return "omp_target_alloc_device";
  default:
    return "omp_target_alloc";
  }
}

/// When [addr, addr+size) overlaps the memory of a simulated device, says
/// which device and which allocation (or image symbol) it belongs to; else "".
std::string describeDeviceMemory(uint64_t addr, uint64_t size) {
  SimPlugin &p = SimPlugin::get();
  auto mappedHere = [&] {
    // A host mapping may lie in a device's address range; it is host memory then.
    uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    return ::msync(reinterpret_cast<void *>(addr & ~(page - 1)), 1, MS_ASYNC) == 0;
  };
  for (size_t id = 0; id < p.devices.size(); ++id) {
    SimDevice &d = p.devices[id];
    DeviceController *c;
    {
      // Another host thread may be bringing this device up (p.mu held).
      std::lock_guard<std::mutex> lock(p.mu);
      c = d.controller.get();
    }
    if (!c)
      continue;
    uint64_t base = c->arenaBase(), end = base + c->arenaSize();
    if (addr >= end || addr + std::max<uint64_t>(size, 1) <= base || mappedHere())
      continue;
    {
      std::lock_guard<std::mutex> lock(p.allocMu);
      auto it = d.allocations.upper_bound(addr);
      if (it != d.allocations.begin()) {
        --it;
        if (addr < it->first + std::max<uint64_t>(it->second.size, 1))
          return fmt::format("device {}'s allocation 0x{:x} ({} bytes, made by {})", id, it->first,
                             it->second.size, allocatedBy(it->second));
      }
    }
    std::string sym = c->symbolize(addr);
    return sym.empty() ? fmt::format("device {}'s memory", id)
                       : fmt::format("device {}'s memory (dev:{})", id, sym);
  }
  return "";
}

/// One host<->device copy for data_submit/data_retrieve: `copy(controller,
/// device address, bytes)` does it; a negative size or a failed copy becomes
/// the device's last error, a done copy a transfer trace event.
template <typename Copy>
int32_t copyOnDevice(int32_t id, const char *event, const void *tgtPtr, const void *hstPtr, int64_t size,
                     Copy copy) {
  SimDevice *d;
  DeviceController *c = controllerOf(id, d);
  if (!c)
    return OMPSIM_OFFLOAD_FAIL;
  if (size < 0)
    return failWith(d, fmt::format("device {}: negative copy size {}", id, size));
  auto tgt = reinterpret_cast<uint64_t>(tgtPtr);
  // A device pointer passed as the host side (omp_target_memcpy with the host
  // as its device, a map of device memory) is not host memory here: say whose
  // it is rather than fault in the host process.
  std::string owner = describeDeviceMemory(reinterpret_cast<uint64_t>(hstPtr), uint64_t(size));
  if (!owner.empty()) {
    const char *direction = std::strcmp(event, "submit") == 0 ? "to the device from" : "from the device to";
    return failWith(d, fmt::format("device {}: copying {} bytes {} host address {}: that is not host "
                                   "memory but {}; pass device memory with its device number and map "
                                   "host data only",
                                   id, size, direction, hstPtr, owner));
  }
  if (Error err = copy(*c, tgt, uint64_t(size)))
    return failWith(d, std::move(err));
  OMPSIM_TRACE_EVENT(Cat::Transfer, event).num("device", id).dev("tgt", tgt, "").num("size", size);
  return OMPSIM_OFFLOAD_SUCCESS;
}

} // namespace
} // namespace ompsim::sim

using namespace ompsim;
using namespace ompsim::sim;

OMPSIM_EXPORT int32_t __tgt_rtl_plugin_api_version(void) { return OMPSIM_PLUGIN_API_VERSION; }

OMPSIM_EXPORT const char *__tgt_rtl_plugin_name(void) { return "sim"; }

OMPSIM_EXPORT int32_t __tgt_rtl_is_valid_binary(const __tgt_device_image *image) {
  if (!image || !image->ImageStart || image->ImageEnd <= image->ImageStart) {
    declineImage(image, "empty image");
    return 0;
  }
  const auto *p = static_cast<const unsigned char *>(image->ImageStart);
  size_t n =
      size_t(static_cast<const char *>(image->ImageEnd) - static_cast<const char *>(image->ImageStart));
  if (n >= sizeof(Elf64_Ehdr) && std::memcmp(p, ELFMAG, SELFMAG) == 0) {
    Elf64_Ehdr eh;
    std::memcpy(&eh, p, sizeof eh);
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
      declineImage(image, fmt::format("ELF image for machine {} (class {}), not x86-64", eh.e_machine,
                                      eh.e_ident[EI_CLASS]));
      return 0;
    }
    if (eh.e_type != ET_DYN) {
      declineImage(image, fmt::format("ELF image of type {}, not a shared object (ET_DYN)", eh.e_type));
      return 0;
    }
    OMPSIM_TRACE_EVENT(Cat::Image, "accept").str("plugin", "sim").str("kind", "elf").num("bytes", int64_t(n));
    return 1;
  }
  llvm::MemoryBufferRef ref(llvm::StringRef(reinterpret_cast<const char *>(p), n), "device-image");
  if (llvm::identify_magic(ref.getBuffer()) == llvm::file_magic::bitcode) {
    auto triple = llvm::getBitcodeTargetTriple(ref);
    if (!triple) {
      declineImage(image, "unreadable LLVM bitcode: " + llvm::toString(triple.takeError()));
      return 0;
    }
    if (llvm::Triple(*triple).getArch() != llvm::Triple::x86_64) {
      declineImage(image, "LLVM bitcode for " + *triple + ", not x86_64");
      return 0;
    }
    OMPSIM_TRACE_EVENT(Cat::Image, "accept")
        .str("plugin", "sim")
        .str("kind", "bitcode")
        .str("triple", *triple);
    return 1;
  }
  declineImage(image, "neither an ELF shared object nor LLVM bitcode");
  return 0;
}

OMPSIM_EXPORT int32_t __tgt_rtl_number_of_devices(void) {
  SimPlugin &p = SimPlugin::get();
  DeviceOptions o = DeviceOptions::fromConfig(0, p.libDir());
  if (::access(o.executorPath.c_str(), X_OK) != 0) {
    // The same words the controller uses, so the user sees why there is no device.
    p.lastError = "executor " + o.executorPath + " not found or not executable (set OMPSIM_EXECUTOR)";
    OMPSIM_TRACE_EVENT(Cat::Image, "no-devices").str("plugin", "sim").str("reason", p.lastError);
    return 0;
  }
  return int32_t(p.devices.size());
}

OMPSIM_EXPORT int32_t __tgt_rtl_init_device(int32_t id) {
  SimPlugin &p = SimPlugin::get();
  std::lock_guard<std::mutex> lock(p.mu);
  SimDevice *d = p.device(id);
  if (!d)
    return OMPSIM_OFFLOAD_FAIL;
  if (d->controller)
    return OMPSIM_OFFLOAD_SUCCESS;
  static std::once_flag atExit;
  std::call_once(atExit, [] { std::atexit(&SimPlugin::stopAll); });
  auto c = DeviceController::Create(DeviceOptions::fromConfig(id, p.libDir()));
  if (!c)
    return failWith(d, c.takeError());
  d->controller = std::move(*c);
  // Devices are never moved (the vector is sized once), so `d` outlives the controller.
  d->controller->setFaultAdvisor([d](const HostFault &f) { return d->advisor.advise(f); });
  if (trace::enabled(trace::Cat::Translate))
    llvm::consumeError(d->controller->takeTranslateLog(config().TraceTranslateCap, 0).takeError());
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_deinit_device(int32_t id) {
  SimPlugin &p = SimPlugin::get();
  std::lock_guard<std::mutex> lock(p.mu);
  SimDevice *d = p.device(id);
  if (!d)
    return OMPSIM_OFFLOAD_FAIL;
  emitTranslateExitSummary(*d, id);
  d->translateCalls.clear();
  d->translateHits = d->translateMisses = d->translateDropped = 0;
  d->controller.reset();
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_init_requires(int64_t flags) {
  // Device memory lives in the executor process: a host pointer is never a
  // device pointer, so memory cannot be shared without explicit maps.
  if (flags & OMPSIM_REQ_UNIFIED_SHARED_MEMORY)
    return failWith(nullptr, "the simulated device cannot honour 'requires "
                             "unified_shared_memory': its memory lives in a separate process");
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_load_binary(int32_t id, const __tgt_device_image *image,
                                            ompsim_binary_handle *binary) {
  SimDevice *d;
  DeviceController *c = controllerOf(id, d);
  if (!c)
    return OMPSIM_OFFLOAD_FAIL;
  if (!image || !binary)
    return failWith(d, fmt::format("device {}: load_binary without an image", id));
  llvm::ArrayRef<char> bytes(static_cast<const char *>(image->ImageStart),
                             static_cast<const char *>(image->ImageEnd));
  std::string name = fmt::format("#{}", ++d->imagesLoaded);
  // The bytes are the registered binary's own, mapped until it unregisters
  // (which unloads the image first): the controller need not copy them.
  auto img = c->loadImage(bytes, name, hostLibraryNames(image->ImageStart), /*bytesOutliveImage=*/true);
  if (!img)
    return failWith(d, img.takeError());
  d->binaries.push_back(std::make_unique<ompsim_binary>(ompsim_binary{id, *img, name}));
  *binary = d->binaries.back().get();
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_unload_binary(int32_t id, ompsim_binary_handle binary) {
  SimDevice *d;
  DeviceController *c = controllerOf(id, d);
  if (!c)
    return OMPSIM_OFFLOAD_FAIL;
  if (!binary)
    return failWith(d, fmt::format("device {}: unload_binary without a binary", id));
  if (auto err = c->unloadImage(binary->image))
    return failWith(d, std::move(err));
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_get_global(int32_t id, ompsim_binary_handle binary, uint64_t size,
                                           const char *name, void **tgt_ptr) {
  SimDevice *d;
  DeviceController *c = controllerOf(id, d);
  if (!c)
    return OMPSIM_OFFLOAD_FAIL;
  if (!binary || !name || !tgt_ptr)
    return failWith(d, fmt::format("device {}: get_global with a null argument", id));
  auto addr = c->lookup(binary->image, name);
  if (!addr)
    return failWith(d, addr.takeError());
  *tgt_ptr = reinterpret_cast<void *>(*addr);
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_get_globals(int32_t id, ompsim_binary_handle binary, uint64_t n,
                                            const char *const *names, const uint64_t *sizes,
                                            void **tgt_ptrs) {
  SimDevice *d;
  DeviceController *c = controllerOf(id, d);
  if (!c)
    return OMPSIM_OFFLOAD_FAIL;
  if (!binary || (n && (!names || !tgt_ptrs)))
    return failWith(d, fmt::format("device {}: get_globals with a null argument", id));
  (void)sizes;                         // the executor knows each symbol's extent
  std::vector<llvm::StringRef> wanted; // the caller's names, not copies
  wanted.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    if (!names[i])
      return failWith(d, fmt::format("device {}: get_globals: name {} is null", id, i));
    wanted.emplace_back(names[i]);
  }
  auto addrs = c->lookupMany(binary->image, wanted);
  if (!addrs)
    return failWith(d, addrs.takeError());
  for (uint64_t i = 0; i < n; ++i)
    tgt_ptrs[i] = reinterpret_cast<void *>((*addrs)[i]);
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_get_function(int32_t id, ompsim_binary_handle binary, const char *name,
                                             void **kernel) {
  SimDevice *d;
  DeviceController *c = controllerOf(id, d);
  if (!c)
    return OMPSIM_OFFLOAD_FAIL;
  if (!binary || !name || !kernel)
    return failWith(d, fmt::format("device {}: get_function with a null argument", id));
  auto addr = c->lookup(binary->image, name);
  if (!addr)
    return failWith(d, addr.takeError());
  d->kernels.push_back(std::make_unique<KernelHandle>(KernelHandle{*addr, name}));
  *kernel = d->kernels.back().get();
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT void *__tgt_rtl_data_alloc(int32_t id, int64_t size, void *host_ptr, int32_t kind) {
  SimDevice *d;
  DeviceController *c = controllerOf(id, d);
  if (!c)
    return nullptr;
  if (size < 0) { // a size_t of 2^63 or more, passed as int64_t
    d->lastError =
        fmt::format("device {}: cannot allocate {} bytes: larger than any address space", id, uint64_t(size));
    return nullptr;
  }
  if (kind == OMPSIM_ALLOC_HOST || kind == OMPSIM_ALLOC_SHARED) {
    d->lastError = fmt::format("device {}: host and shared allocations are not supported on the "
                               "simulated device (it has its own address space)",
                               id);
    return nullptr;
  }
  uint64_t addr = c->allocate(uint64_t(size));
  if (!addr)
    d->lastError = fmt::format("device {}: out of device memory allocating {} bytes "
                               "(OMPSIM_DEVICE_MEMORY)",
                               id, size);
  else {
    std::lock_guard<std::mutex> lock(SimPlugin::get().allocMu);
    d->allocations[addr] = {uint64_t(size), reinterpret_cast<uint64_t>(host_ptr), kind};
  }
  return reinterpret_cast<void *>(addr);
}

OMPSIM_EXPORT int32_t __tgt_rtl_data_delete(int32_t id, void *tgt_ptr, int32_t kind) {
  SimDevice *d;
  DeviceController *c = controllerOf(id, d);
  if (!c)
    return OMPSIM_OFFLOAD_FAIL;
  if (!tgt_ptr)
    return OMPSIM_OFFLOAD_SUCCESS;
  if (auto err = c->release(reinterpret_cast<uint64_t>(tgt_ptr)))
    return failWith(d, std::move(err));
  std::lock_guard<std::mutex> lock(SimPlugin::get().allocMu);
  d->allocations.erase(reinterpret_cast<uint64_t>(tgt_ptr));
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_data_submit(int32_t id, void *tgt_ptr, const void *hst_ptr, int64_t size) {
  return copyOnDevice(
      id, "submit", tgt_ptr, hst_ptr, size,
      [&](DeviceController &c, uint64_t tgt, uint64_t n) { return c.write(tgt, hst_ptr, n); });
}

OMPSIM_EXPORT int32_t __tgt_rtl_data_retrieve(int32_t id, void *hst_ptr, const void *tgt_ptr, int64_t size) {
  return copyOnDevice(id, "retrieve", tgt_ptr, hst_ptr, size,
                      [&](DeviceController &c, uint64_t tgt, uint64_t n) { return c.read(hst_ptr, tgt, n); });
}

OMPSIM_EXPORT int32_t __tgt_rtl_data_exchange(int32_t src_id, void *src_ptr, int32_t dst_id, void *dst_ptr,
                                              int64_t size) {
  SimDevice *sd, *dd;
  DeviceController *src = controllerOf(src_id, sd);
  DeviceController *dst = controllerOf(dst_id, dd);
  if (!src || !dst)
    return OMPSIM_OFFLOAD_FAIL;
  std::vector<char> buf(size_t(std::max<int64_t>(size, 0)));
  if (auto err = src->read(buf.data(), reinterpret_cast<uint64_t>(src_ptr), buf.size()))
    return failWith(sd, std::move(err));
  if (auto err = dst->write(reinterpret_cast<uint64_t>(dst_ptr), buf.data(), buf.size()))
    return failWith(dd, std::move(err));
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_run_target_region(int32_t id, void *kernel, void **tgt_args, int32_t num_args,
                                                  const ompsim_launch_config *cfg) {
  SimDevice *d;
  DeviceController *c = controllerOf(id, d);
  if (!c)
    return OMPSIM_OFFLOAD_FAIL;
  auto *k = static_cast<KernelHandle *>(kernel);
  if (!k)
    return failWith(d, fmt::format("device {}: run_target_region without a kernel", id));
  // Every launch comes through here: no heap allocation unless a kernel has
  // many arguments (the name is only copied into an error or a trace event).
  llvm::StringRef name =
      (cfg && cfg->kernel_name) ? llvm::StringRef(cfg->kernel_name) : llvm::StringRef(k->name);
  llvm::SmallVector<uint64_t, 32> args;
  args.reserve(size_t(std::max<int32_t>(num_args, 0)));
  for (int32_t i = 0; i < num_args; ++i)
    args.push_back(reinterpret_cast<uint64_t>(tgt_args[i]));
  uint32_t teams = cfg ? cfg->num_teams : 0;
  uint32_t threads = cfg && cfg->thread_limit ? cfg->thread_limit : d->defaultThreadLimit;
  OMPSIM_TRACE_EVENT(Cat::Launch, "launch")
      .num("device", id)
      .str("kernel", name)
      .dev("entry", k->entry, c->symbolize(k->entry))
      .num("args", num_args)
      .num("teams", teams)
      .num("threads", threads);
  if (auto err = c->launch(k->entry, args, teams, threads, name)) {
    int32_t rc = failWith(d, std::move(err));
    emitTranslateTrace(*d, id, name); // the lookups that led to a fault, if any
    return rc;
  }
  emitTranslateTrace(*d, id, name);
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT const char *__tgt_rtl_last_error(int32_t id) {
  SimPlugin &p = SimPlugin::get();
  if (id < 0 || size_t(id) >= p.devices.size())
    return p.lastError.c_str();
  return p.devices[id].lastError.c_str();
}

OMPSIM_EXPORT int32_t __tgt_rtl_set_function_ptr_map(int32_t id, uint64_t n,
                                                     const __omp_offloading_fptr_map_ty *table) {
  SimDevice *d;
  DeviceController *c = controllerOf(id, d);
  if (!c)
    return OMPSIM_OFFLOAD_FAIL;
  if (n && !table)
    return failWith(d, fmt::format("device {}: set_function_ptr_map with a null table", id));
  if (auto err = c->setFunctionPointerTable(llvm::ArrayRef(table, n)))
    return failWith(d, std::move(err));
  d->advisor.setFunctionPointerTable(llvm::ArrayRef(table, n));
  OMPSIM_TRACE_EVENT(Cat::Table, "publish").num("device", id).num("n", int64_t(n)).str("plugin", "sim");
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_symbolize(int32_t id, uint64_t tgt_addr, char *buf, uint64_t len) {
  SimDevice *d;
  DeviceController *c = controllerOf(id, d);
  if (!c || !buf || !len)
    return 0;
  std::string s = c->symbolize(tgt_addr);
  if (s.empty())
    return 0;
  s = "dev:" + s;
  size_t n = std::min<size_t>(s.size(), size_t(len - 1));
  std::memcpy(buf, s.data(), n);
  buf[n] = 0;
  return 1;
}

OMPSIM_EXPORT int32_t __tgt_rtl_set_thread_limit(int32_t id, int32_t limit) {
  SimDevice *d = SimPlugin::get().device(id);
  if (!d)
    return OMPSIM_OFFLOAD_FAIL;
  d->defaultThreadLimit = limit > 0 ? uint32_t(limit) : 0;
  return OMPSIM_OFFLOAD_SUCCESS;
}

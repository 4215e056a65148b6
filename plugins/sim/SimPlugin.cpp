// libompsim-plugin-sim.so: the plugin C ABI (ompsim/plugin_api.h) on the simulated device.
//
// The ABI functions are thin: they find the device, call the controller, and
// turn an llvm::Error into OMPSIM_OFFLOAD_FAIL plus the device's last-error line.
#include "ompsim/plugin_api.h"

#include "FaultAdvisor.h"
#include "LaunchInfo.h"

#include "ompsim/Config.h"
#include "ompsim/HostSymbolizer.h"
#include "ompsim/ProfileWriter.h"
#include "ompsim/StockPluginInfo.h"
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

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#define OMPSIM_EXPORT extern "C" __attribute__((visibility("default")))

/// A loaded image, as the runtime sees it.
struct ompsim_binary {
  int32_t Device;
  uint64_t Image;
  std::string Name;
};

namespace ompsim::sim {
namespace {

using llvm::Error;

/// The error of the call that failed last on this thread (__tgt_rtl_last_error):
/// per thread, as launches on several host threads may fail at once.
thread_local std::string TLastError;

/// The library names a NEEDED entry can use for the host object that embeds
/// `ImageBytes`: its file name, the path it was loaded by and its DT_SONAME. A shared library's device
/// image is linked into later images under these names.
std::vector<std::string> hostLibraryNames(const void *ImageBytes) {
  Dl_info Info{};
  if (!::dladdr(ImageBytes, &Info) || !Info.dli_fname || !*Info.dli_fname)
    return {};
  std::vector<std::string> Names{llvm::sys::path::filename(Info.dli_fname).str()};
  // A program linked against the library by path (`cc main.c ./libx.so`)
  // NEEDs that path, which the loader keeps as the library's name.
  if (Names.front() != Info.dli_fname)
    Names.emplace_back(Info.dli_fname);
  auto File = llvm::MemoryBuffer::getFile(Info.dli_fname, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!File)
    return Names;
  auto Elf = llvm::object::ELF64LEFile::create((*File)->getBuffer());
  if (!Elf)
    return consumeError(Elf.takeError()), Names;
  auto Dynamic = Elf->dynamicEntries();
  if (!Dynamic)
    return consumeError(Dynamic.takeError()), Names;
  uint64_t Strtab = 0, Soname = UINT64_MAX;
  for (const auto &Entry : *Dynamic) {
    if (Entry.d_tag == DT_STRTAB)
      Strtab = Entry.getPtr();
    else if (Entry.d_tag == DT_SONAME)
      Soname = Entry.getVal();
  }
  if (Soname == UINT64_MAX || !Strtab)
    return Names;
  auto Strings = Elf->toMappedAddr(Strtab);
  if (!Strings)
    return consumeError(Strings.takeError()), Names;
  const char *End = (*File)->getBufferEnd();
  const char *S = reinterpret_cast<const char *>(*Strings) + Soname;
  if (S < End) {
    std::string Name(S, strnlen(S, size_t(End - S)));
    if (!Name.empty() && Name != Names.front())
      Names.push_back(std::move(Name));
  }
  return Names;
}

/// A kernel handle handed to the runtime by get_function.
struct KernelHandle {
  uint64_t Entry;
  std::string Name;
  uint64_t Image; ///< the controller's id of the image that defines it
  /// The kernel's `<name>_kernel_environment`, when the image has one; read
  /// on the first launch that prints the launch line (no cost otherwise).
  std::optional<KernelConfiguration> Environment;
  bool EnvironmentRead = false;
};

static_assert(sizeof(KernelConfiguration) == 20 && offsetof(KernelConfiguration, MaxTeams) == 16,
              "KernelConfiguration must match llvm::omp's ConfigurationEnvironmentTy");

/// One device: its controller (once initialized), handles and last error.
struct SimDevice {
  std::unique_ptr<DeviceController> Controller;
  /// An executor started by spawnEarly() and not yet waited for; under SimPlugin::mu.
  std::unique_ptr<DeviceController> Spawned;
  bool SpawnTried = false; ///< spawnEarly() ran for this device (it starts one at most)
  std::deque<std::unique_ptr<ompsim_binary>> Binaries;
  std::deque<std::unique_ptr<KernelHandle>> Kernels;
  /// Adds how to fix it to a diagnosis of a fault on a host address.
  FaultAdvisor Advisor;
  /// A live data_alloc block: what a diagnosis says about a device pointer
  /// that reaches the host side of a copy.
  struct Allocation {
    uint64_t Size = 0;
    uint64_t HostPtr = 0; ///< the host data it was allocated for (0: omp_target_alloc and the like)
    int32_t Kind = 0;
  };
  std::map<uint64_t, Allocation> Allocations; ///< by device address; under SimPlugin::allocMu
  uint32_t DefaultThreadLimit = 0;
  uint64_t ImagesLoaded = 0;
  /// Translate calls per function over the whole run, from the recorded calls
  /// (keyed by the symbolized result); exact unless calls were dropped.
  struct FunctionCalls {
    uint64_t Calls = 0, Misses = 0;
  };
  std::map<std::string, FunctionCalls> TranslateCalls;
  uint64_t TranslateHits = 0, TranslateMisses = 0, TranslateDropped = 0;
};

/// Emits the per-device translate summary of the whole run (at exit or deinit).
void emitTranslateExitSummary(SimDevice &D, int32_t Id) {
  if (!trace::enabled(trace::Cat::Translate) || D.TranslateHits + D.TranslateMisses == 0)
    return;
  for (const auto &[fn, c] : D.TranslateCalls)
    OMPSIM_TRACE_EVENT(Cat::Translate, "exit-function")
        .num("device", Id)
        .str("function", fn)
        .num("calls", int64_t(c.Calls))
        .num("misses", int64_t(c.Misses));
  OMPSIM_TRACE_EVENT(Cat::Translate, "exit-summary")
      .num("device", Id)
      .num("hits", int64_t(D.TranslateHits))
      .num("misses", int64_t(D.TranslateMisses))
      .num("dropped", int64_t(D.TranslateDropped))
      .str("note", D.TranslateDropped ? "per-function counts cover recorded calls only; raise "
                                        "OMPSIM_TRACE_TRANSLATE_CAP"
                                      : "per-function counts are exact");
}

/// The plugin's devices; never destroyed (executors are stopped at exit by stopAll).
class SimPlugin {
public:
  static SimPlugin &get() {
    static SimPlugin *P = new SimPlugin();
    return *P;
  }

  std::mutex Mu;
  std::vector<SimDevice> Devices;
  std::string LastError; ///< plugin-wide, set at start-up (device -1)
  std::mutex AllocMu;    ///< guards every SimDevice::allocations

  /// The device, or nullptr with the plugin-wide error set.
  SimDevice *device(int32_t Id) {
    if (Id < 0 || size_t(Id) >= Devices.size()) {
      TLastError = fmt::format("sim plugin: no device {} (have {})", Id, Devices.size());
      return nullptr;
    }
    return &Devices[Id];
  }

  /// Stops every executor; runs at exit so none outlives the host.
  static void stopAll() {
    SimPlugin &P = get();
    std::lock_guard<std::mutex> Lock(P.Mu);
    for (size_t I = 0; I < P.Devices.size(); ++I) {
      emitTranslateExitSummary(P.Devices[I], int32_t(I));
      P.Devices[I].Controller.reset();
      P.Devices[I].Spawned.reset();
    }
  }

  /// Starts device `id`'s executor without waiting for it, once; init_device
  /// waits for it. A failure here is left for init_device to report.
  void spawnEarly(int32_t Id) {
    std::lock_guard<std::mutex> Lock(Mu);
    if (Id < 0 || size_t(Id) >= Devices.size())
      return;
    SimDevice &D = Devices[Id];
    if (D.Controller || D.Spawned || D.SpawnTried)
      return;
    D.SpawnTried = true;
    registerStopAtExit();
    auto C = DeviceController::spawn(DeviceOptions::fromConfig(Id, libDir()));
    if (!C) {
      llvm::consumeError(C.takeError()); // init_device starts it again and reports why it fails
      return;
    }
    D.Spawned = std::move(*C);
  }

  /// Makes sure stopAll runs at exit, before any executor starts.
  static void registerStopAtExit() {
    static std::once_flag AtExit;
    std::call_once(AtExit, [] { std::atexit(&SimPlugin::stopAll); });
  }

  std::string libDir() {
    Dl_info Info{};
    if (::dladdr(reinterpret_cast<void *>(&SimPlugin::get), &Info) && Info.dli_fname) {
      std::string Path = Info.dli_fname;
      auto Slash = Path.rfind('/');
      return Slash == std::string::npos ? "." : Path.substr(0, Slash);
    }
    return ".";
  }

private:
  SimPlugin() { Devices.resize(size_t(std::max(config().NumDevices, 1))); }
};

int32_t failWith(SimDevice *D, Error Err) {
  (void)D; // the error is the calling thread's, whichever device failed
  TLastError = llvm::toString(std::move(Err));
  return OMPSIM_OFFLOAD_FAIL;
}

int32_t failWith(SimDevice *D, std::string Msg) {
  return failWith(D, llvm::createStringError(llvm::inconvertibleErrorCode(), Msg));
}

/// Controller of an initialized device, or nullptr with the error recorded.
DeviceController *controllerOf(int32_t Id, SimDevice *&D) {
  D = SimPlugin::get().device(Id);
  if (!D)
    return nullptr;
  if (!D->Controller) {
    TLastError = fmt::format("device {}: not initialized", Id);
    return nullptr;
  }
  return D->Controller.get();
}

void declineImage(const __tgt_device_image *Image, const std::string &Why) {
  OMPSIM_TRACE_EVENT(Cat::Image, "decline")
      .str("plugin", "sim")
      .num("bytes", Image ? int64_t((char *)Image->ImageEnd - (char *)Image->ImageStart) : 0)
      .str("reason", Why);
}

void emitTranslateTrace(SimDevice &D, int32_t Id, llvm::StringRef Kernel) {
  if (!trace::enabled(trace::Cat::Translate))
    return;
  uint64_t Cap = config().TraceTranslateCap;
  auto Log = D.Controller->takeTranslateLog(Cap, Cap);
  if (!Log) {
    OMPSIM_TRACE_EVENT(Cat::Translate, "unavailable")
        .num("device", Id)
        .str("reason", llvm::toString(Log.takeError()));
    return;
  }
  HostSymbolizer &Hs = HostSymbolizer::get();
  for (const TranslateLog::Record &R : Log->Records) {
    trace::Event Ev(trace::Cat::Translate, "translate");
    Ev.num("device", Id).str("kernel", Kernel);
    // A pointer already translated (e.g. by the mapping table) reaches the
    // lookup as a device address: name it on the device side.
    std::string ResultSym = D.Controller->symbolize(R.Result);
    auto Named = [&](const char *Key, uint64_t A, const std::string &DevSym) {
      if (A == 0 || !Hs.objectOf(A).empty())
        Ev.host(Key, A);
      else
        Ev.dev(Key, A, DevSym);
    };
    Named("host_ptr", R.HostPtr, D.Controller->symbolize(R.HostPtr));
    Named("result", R.Result, ResultSym);
    Ev.str("outcome", R.Hit ? "hit" : "miss");
    std::string Fn = ResultSym.empty() ? (R.Hit ? fmt::format("dev:{:#x}", R.Result)
                                                : trace::hostAddress(R.HostPtr, !trace::normalized()))
                                       : ResultSym.substr(0, ResultSym.rfind('+'));
    SimDevice::FunctionCalls &C = D.TranslateCalls[Fn];
    ++C.Calls;
    C.Misses += R.Hit ? 0 : 1;
  }
  D.TranslateHits += Log->Hits;
  D.TranslateMisses += Log->Misses;
  D.TranslateDropped += Log->Dropped;
  OMPSIM_TRACE_EVENT(Cat::Translate, "summary")
      .num("device", Id)
      .str("kernel", Kernel)
      .num("hits", int64_t(Log->Hits))
      .num("misses", int64_t(Log->Misses))
      .num("dropped", int64_t(Log->Dropped));
}

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

/// Reads kernel `K`'s environment on its first use that needs it.
void readEnvironmentOnce(DeviceController &C, KernelHandle &K) {
  if (K.EnvironmentRead)
    return;
  K.EnvironmentRead = true;
  K.Environment = readKernelConfiguration(C, K.Image, K.Name);
}

/// Who made a device allocation, in words.
std::string allocatedBy(const SimDevice::Allocation &A) {
  if (A.HostPtr) {
    auto Sym = HostSymbolizer::get().lookup(A.HostPtr);
    std::string Named = !Sym               ? ""
                        : Sym->Offset == 0 ? fmt::format(" ('{}')", Sym->Name)
                                           : fmt::format(" ('{}+0x{:x}')", Sym->Name, Sym->Offset);
    return fmt::format("mapping host 0x{:x}{}", A.HostPtr, Named);
  }
  switch (A.Kind) {
  case OMPSIM_ALLOC_DEVICE:
    return "omp_target_alloc_device";
  case OMPSIM_ALLOC_HOST:
    return "llvm_omp_target_alloc_host";
  case OMPSIM_ALLOC_SHARED:
    return "llvm_omp_target_alloc_shared";
  default:
    return "omp_target_alloc";
  }
}

/// When [addr, addr+size) overlaps the memory of a simulated device, says
/// which device and which allocation (or image symbol) it belongs to; else "".
std::string describeDeviceMemory(uint64_t Addr, uint64_t Size) {
  SimPlugin &P = SimPlugin::get();
  auto MappedHere = [&] {
    // A host mapping may lie in a device's address range; it is host memory then.
    uint64_t Page = uint64_t(::sysconf(_SC_PAGESIZE));
    return ::msync(reinterpret_cast<void *>(Addr & ~(Page - 1)), 1, MS_ASYNC) == 0;
  };
  for (size_t Id = 0; Id < P.Devices.size(); ++Id) {
    SimDevice &D = P.Devices[Id];
    DeviceController *C;
    {
      // Another host thread may be bringing this device up (p.mu held).
      std::lock_guard<std::mutex> Lock(P.Mu);
      C = D.Controller.get();
    }
    if (!C)
      continue;
    uint64_t Base = C->arenaBase(), End = Base + C->arenaSize();
    if (Addr >= End || Addr + std::max<uint64_t>(Size, 1) <= Base || MappedHere())
      continue;
    {
      std::lock_guard<std::mutex> Lock(P.AllocMu);
      auto It = D.Allocations.upper_bound(Addr);
      if (It != D.Allocations.begin()) {
        --It;
        if (Addr < It->first + std::max<uint64_t>(It->second.Size, 1))
          return fmt::format("device {}'s allocation 0x{:x} ({} bytes, made by {})", Id, It->first,
                             It->second.Size, allocatedBy(It->second));
      }
    }
    std::string Sym = C->symbolize(Addr);
    return Sym.empty() ? fmt::format("device {}'s memory", Id)
                       : fmt::format("device {}'s memory (dev:{})", Id, Sym);
  }
  return "";
}

/// One host<->device copy for data_submit/data_retrieve: `copy(controller,
/// device address, bytes)` does it; a negative size or a failed copy becomes
/// the device's last error, a done copy a transfer trace event.
template <typename CopyT>
int32_t copyOnDevice(int32_t Id, const char *Event, const void *TgtPtr, const void *HstPtr, int64_t Size,
                     CopyT Copy) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return OMPSIM_OFFLOAD_FAIL;
  if (Size < 0)
    return failWith(D, fmt::format("device {}: negative copy size {}", Id, Size));
  auto Tgt = reinterpret_cast<uint64_t>(TgtPtr);
  // A device pointer passed as the host side (omp_target_memcpy with the host
  // as its device, a map of device memory) is not host memory here: say whose
  // it is rather than fault in the host process.
  std::string Owner = describeDeviceMemory(reinterpret_cast<uint64_t>(HstPtr), uint64_t(Size));
  if (!Owner.empty()) {
    const char *Direction = std::strcmp(Event, "submit") == 0 ? "to the device from" : "from the device to";
    return failWith(D, fmt::format("device {}: copying {} bytes {} host address {}: that is not host "
                                   "memory but {}; pass device memory with its device number and map "
                                   "host data only",
                                   Id, Size, Direction, HstPtr, Owner));
  }
  if (Error Err = Copy(*C, Tgt, uint64_t(Size)))
    return failWith(D, std::move(Err));
  OMPSIM_TRACE_EVENT(Cat::Transfer, Event).num("device", Id).dev("tgt", Tgt, "").num("size", Size);
  return OMPSIM_OFFLOAD_SUCCESS;
}

} // namespace
} // namespace ompsim::sim

using namespace ompsim;
using namespace ompsim::sim;

OMPSIM_EXPORT int32_t __tgt_rtl_plugin_api_version(void) { return OMPSIM_PLUGIN_API_VERSION; }

OMPSIM_EXPORT const char *__tgt_rtl_plugin_name(void) { return "sim"; }

namespace {

/// True when the simulated device can load `image`; the reason is traced when not.
bool acceptsImage(const __tgt_device_image *Image) {
  if (!Image || !Image->ImageStart || Image->ImageEnd <= Image->ImageStart) {
    declineImage(Image, "empty image");
    return false;
  }
  const auto *P = static_cast<const unsigned char *>(Image->ImageStart);
  size_t N =
      size_t(static_cast<const char *>(Image->ImageEnd) - static_cast<const char *>(Image->ImageStart));
  if (N >= sizeof(Elf64_Ehdr) && std::memcmp(P, ELFMAG, SELFMAG) == 0) {
    Elf64_Ehdr Eh;
    std::memcpy(&Eh, P, sizeof Eh);
    if (Eh.e_ident[EI_CLASS] != ELFCLASS64 || Eh.e_machine != EM_X86_64) {
      declineImage(Image, fmt::format("ELF image for machine {} (class {}), not x86-64", Eh.e_machine,
                                      Eh.e_ident[EI_CLASS]));
      return false;
    }
    if (Eh.e_type != ET_DYN) {
      declineImage(Image, fmt::format("ELF image of type {}, not a shared object (ET_DYN)", Eh.e_type));
      return false;
    }
    OMPSIM_TRACE_EVENT(Cat::Image, "accept").str("plugin", "sim").str("kind", "elf").num("bytes", int64_t(N));
    return true;
  }
  llvm::MemoryBufferRef Ref(llvm::StringRef(reinterpret_cast<const char *>(P), N), "device-image");
  if (llvm::identify_magic(Ref.getBuffer()) == llvm::file_magic::bitcode) {
    auto Triple = llvm::getBitcodeTargetTriple(Ref);
    if (!Triple) {
      declineImage(Image, "unreadable LLVM bitcode: " + llvm::toString(Triple.takeError()));
      return false;
    }
    if (llvm::Triple(*Triple).getArch() != llvm::Triple::x86_64) {
      declineImage(Image, "LLVM bitcode for " + *Triple + ", not x86_64");
      return false;
    }
    OMPSIM_TRACE_EVENT(Cat::Image, "accept")
        .str("plugin", "sim")
        .str("kind", "bitcode")
        .str("triple", *Triple);
    return true;
  }
  declineImage(Image, "neither an ELF shared object nor LLVM bitcode");
  return false;
}

} // namespace

OMPSIM_EXPORT int32_t __tgt_rtl_is_valid_binary(const __tgt_device_image *Image) {
  if (!acceptsImage(Image))
    return 0;
  // The runtime initializes a device right after it accepted an image; the
  // executor starts now so that its start overlaps the host's work until then.
  SimPlugin::get().spawnEarly(0);
  return 1;
}

OMPSIM_EXPORT int32_t __tgt_rtl_number_of_devices(void) {
  SimPlugin &P = SimPlugin::get();
  DeviceOptions O = DeviceOptions::fromConfig(0, P.libDir());
  if (::access(O.ExecutorPath.c_str(), X_OK) != 0) {
    // The same words the controller uses, so the user sees why there is no device.
    P.LastError = "executor " + O.ExecutorPath + " not found or not executable (set OMPSIM_EXECUTOR)";
    OMPSIM_TRACE_EVENT(Cat::Image, "no-devices").str("plugin", "sim").str("reason", P.LastError);
    return 0;
  }
  return int32_t(P.Devices.size());
}

OMPSIM_EXPORT int32_t __tgt_rtl_init_device(int32_t Id) {
  SimPlugin &P = SimPlugin::get();
  std::lock_guard<std::mutex> Lock(P.Mu);
  SimDevice *D = P.device(Id);
  if (!D)
    return OMPSIM_OFFLOAD_FAIL;
  if (D->Controller)
    return OMPSIM_OFFLOAD_SUCCESS;
  SimPlugin::registerStopAtExit();
  profile::Section Profiled("Executor start", [&] { return fmt::format("Device={}", Id); });
  auto C = D->Spawned ? DeviceController::finishStart(std::move(D->Spawned))
                      : DeviceController::create(DeviceOptions::fromConfig(Id, P.libDir()));
  if (!C)
    return failWith(D, C.takeError());
  D->Controller = std::move(*C);
  // Devices are never moved (the vector is sized once), so `D` outlives the controller.
  D->Controller->setFaultAdvisor([D](const HostFault &F) { return D->Advisor.advise(F); });
  if (trace::enabled(trace::Cat::Translate))
    llvm::consumeError(D->Controller->takeTranslateLog(config().TraceTranslateCap, 0).takeError());
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_deinit_device(int32_t Id) {
  SimPlugin &P = SimPlugin::get();
  std::lock_guard<std::mutex> Lock(P.Mu);
  SimDevice *D = P.device(Id);
  if (!D)
    return OMPSIM_OFFLOAD_FAIL;
  emitTranslateExitSummary(*D, Id);
  D->Spawned.reset();
  D->TranslateCalls.clear();
  D->TranslateHits = D->TranslateMisses = D->TranslateDropped = 0;
  D->Controller.reset();
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_init_requires(int64_t Flags) {
  // Device memory lives in the executor process: a host pointer is never a
  // device pointer, so memory cannot be shared without explicit maps.
  if (Flags & OMPSIM_REQ_UNIFIED_SHARED_MEMORY)
    return failWith(nullptr, "the simulated device cannot honour 'requires "
                             "unified_shared_memory': its memory lives in a separate process");
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_load_binary(int32_t Id, const __tgt_device_image *Image,
                                            ompsim_binary_handle *Binary) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return OMPSIM_OFFLOAD_FAIL;
  if (!Image || !Binary)
    return failWith(D, fmt::format("device {}: load_binary without an image", Id));
  llvm::ArrayRef<char> Bytes(static_cast<const char *>(Image->ImageStart),
                             static_cast<const char *>(Image->ImageEnd));
  std::string Name = fmt::format("#{}", ++D->ImagesLoaded);
  // The bytes are the registered binary's own, mapped until it unregisters
  // (which unloads the image first): the controller need not copy them.
  profile::Section Profiled("Executor load image",
                            [&] { return fmt::format("Device={};Image={}", Id, Name); });
  auto Img = C->loadImage(Bytes, Name, hostLibraryNames(Image->ImageStart), /*bytesOutliveImage=*/true);
  if (!Img)
    return failWith(D, Img.takeError());
  D->Binaries.push_back(std::make_unique<ompsim_binary>(ompsim_binary{Id, *Img, Name}));
  *Binary = D->Binaries.back().get();
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_unload_binary(int32_t Id, ompsim_binary_handle Binary) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return OMPSIM_OFFLOAD_FAIL;
  if (!Binary)
    return failWith(D, fmt::format("device {}: unload_binary without a binary", Id));
  if (auto Err = C->unloadImage(Binary->Image))
    return failWith(D, std::move(Err));
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_get_global(int32_t Id, ompsim_binary_handle Binary, uint64_t Size,
                                           const char *Name, void **TgtPtr) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return OMPSIM_OFFLOAD_FAIL;
  if (!Binary || !Name || !TgtPtr)
    return failWith(D, fmt::format("device {}: get_global with a null argument", Id));
  auto Addr = C->lookup(Binary->Image, Name);
  if (!Addr)
    return failWith(D, Addr.takeError());
  *TgtPtr = reinterpret_cast<void *>(*Addr);
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_get_globals(int32_t Id, ompsim_binary_handle Binary, uint64_t N,
                                            const char *const *Names, const uint64_t *Sizes, void **TgtPtrs) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return OMPSIM_OFFLOAD_FAIL;
  if (!Binary || (N && (!Names || !TgtPtrs)))
    return failWith(D, fmt::format("device {}: get_globals with a null argument", Id));
  (void)Sizes;                         // the executor knows each symbol's extent
  std::vector<llvm::StringRef> Wanted; // the caller's names, not copies
  Wanted.reserve(N);
  for (uint64_t I = 0; I < N; ++I) {
    if (!Names[I])
      return failWith(D, fmt::format("device {}: get_globals: name {} is null", Id, I));
    Wanted.emplace_back(Names[I]);
  }
  auto Addrs = C->lookupMany(Binary->Image, Wanted);
  if (!Addrs)
    return failWith(D, Addrs.takeError());
  for (uint64_t I = 0; I < N; ++I)
    TgtPtrs[I] = reinterpret_cast<void *>((*Addrs)[I]);
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_get_function(int32_t Id, ompsim_binary_handle Binary, const char *Name,
                                             void **Kernel) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return OMPSIM_OFFLOAD_FAIL;
  if (!Binary || !Name || !Kernel)
    return failWith(D, fmt::format("device {}: get_function with a null argument", Id));
  auto Addr = C->lookup(Binary->Image, Name);
  if (!Addr)
    return failWith(D, Addr.takeError());
  D->Kernels.push_back(std::make_unique<KernelHandle>(KernelHandle{*Addr, Name, Binary->Image, {}, false}));
  *Kernel = D->Kernels.back().get();
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT void *__tgt_rtl_data_alloc(int32_t Id, int64_t Size, void *HostPtr, int32_t Kind) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return nullptr;
  if (Size < 0) { // a size_t of 2^63 or more, passed as int64_t
    TLastError =
        fmt::format("device {}: cannot allocate {} bytes: larger than any address space", Id, uint64_t(Size));
    return nullptr;
  }
  uint64_t Addr = 0;
  if (Kind == OMPSIM_ALLOC_HOST || Kind == OMPSIM_ALLOC_SHARED) {
    // Pinned host and managed memory: both sides use it at one address, as
    // on a discrete GPU; the rest of device memory stays the device's own.
    auto Visible = C->allocateHostVisible(uint64_t(Size));
    if (!Visible) {
      TLastError = llvm::toString(Visible.takeError());
      return nullptr;
    }
    Addr = *Visible;
  } else {
    Addr = C->allocate(uint64_t(Size));
  }
  if (!Addr)
    TLastError = fmt::format("device {}: out of device memory allocating {} bytes "
                             "(OMPSIM_DEVICE_MEMORY)",
                             Id, Size);
  else {
    std::lock_guard<std::mutex> Lock(SimPlugin::get().AllocMu);
    D->Allocations[Addr] = {uint64_t(Size), reinterpret_cast<uint64_t>(HostPtr), Kind};
  }
  return reinterpret_cast<void *>(Addr);
}

OMPSIM_EXPORT int32_t __tgt_rtl_data_delete(int32_t Id, void *TgtPtr, int32_t Kind) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return OMPSIM_OFFLOAD_FAIL;
  if (!TgtPtr)
    return OMPSIM_OFFLOAD_SUCCESS;
  if (auto Err = C->release(reinterpret_cast<uint64_t>(TgtPtr)))
    return failWith(D, std::move(Err));
  std::lock_guard<std::mutex> Lock(SimPlugin::get().AllocMu);
  D->Allocations.erase(reinterpret_cast<uint64_t>(TgtPtr));
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_data_submit(int32_t Id, void *TgtPtr, const void *HstPtr, int64_t Size) {
  return copyOnDevice(Id, "submit", TgtPtr, HstPtr, Size,
                      [&](DeviceController &C, uint64_t Tgt, uint64_t N) { return C.write(Tgt, HstPtr, N); });
}

OMPSIM_EXPORT int32_t __tgt_rtl_data_retrieve(int32_t Id, void *HstPtr, const void *TgtPtr, int64_t Size) {
  return copyOnDevice(Id, "retrieve", TgtPtr, HstPtr, Size,
                      [&](DeviceController &C, uint64_t Tgt, uint64_t N) { return C.read(HstPtr, Tgt, N); });
}

OMPSIM_EXPORT int32_t __tgt_rtl_data_exchange(int32_t SrcId, void *SrcPtr, int32_t DstId, void *DstPtr,
                                              int64_t Size) {
  SimDevice *Sd, *Dd;
  DeviceController *Src = controllerOf(SrcId, Sd);
  DeviceController *Dst = controllerOf(DstId, Dd);
  if (!Src || !Dst)
    return OMPSIM_OFFLOAD_FAIL;
  std::vector<char> Buf(size_t(std::max<int64_t>(Size, 0)));
  if (auto Err = Src->read(Buf.data(), reinterpret_cast<uint64_t>(SrcPtr), Buf.size()))
    return failWith(Sd, std::move(Err));
  if (auto Err = Dst->write(reinterpret_cast<uint64_t>(DstPtr), Buf.data(), Buf.size()))
    return failWith(Dd, std::move(Err));
  return OMPSIM_OFFLOAD_SUCCESS;
}

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
  // y and z: only a bare kernel's launch has them (the runtime refuses others).
  LaunchExtentsYZ YZ;
  if (Cfg)
    for (int Dim = 0; Dim < 2; ++Dim) {
      YZ.Teams[Dim] = Cfg->num_teams_yz[Dim];
      YZ.Threads[Dim] = Cfg->thread_limit_yz[Dim];
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
    static const LaunchDefaults Defaults = LaunchDefaults::fromEnvironment();
    LaunchShape Shape = launchShape(Teams, Threads, K->Environment, Defaults, YZ);
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
  if (auto Err = C->launch(K->Entry, Args, Teams, Threads, Name, YZ)) {
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

OMPSIM_EXPORT const char *__tgt_rtl_last_error(int32_t Id) {
  // The error of the call that failed last on this thread: two host threads
  // whose launches fail at once each read their own.
  if (!TLastError.empty() || Id >= 0)
    return TLastError.c_str();
  return SimPlugin::get().LastError.c_str();
}

OMPSIM_EXPORT int32_t __tgt_rtl_last_fault(int32_t Id, ompsim_fault_info *Info) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C || !Info)
    return 0;
  std::optional<DataFault> F = C->lastDataFault();
  if (!F)
    return 0;
  // Kept per calling thread: the strings must outlive the call.
  static thread_local DataFault Kept;
  Kept = *F;
  Info->addr = Kept.Addr;
  Info->access = Kept.Write ? OMPSIM_FAULT_WRITE : OMPSIM_FAULT_READ;
  Info->owner_device = -1;
  SimPlugin &P = SimPlugin::get();
  std::lock_guard<std::mutex> Lock(P.Mu);
  for (size_t I = 0; I < P.Devices.size(); ++I)
    if (DeviceController *Owner = P.Devices[I].Controller.get();
        Owner && Kept.Addr >= Owner->arenaBase() && Kept.Addr - Owner->arenaBase() < Owner->arenaSize())
      Info->owner_device = int32_t(I);
  Info->context = Kept.Context.c_str();
  Info->instruction = Kept.Instruction.c_str();
  Info->guard = Kept.GuardKind == DataFault::Guard::PastEnd ? OMPSIM_GUARD_PAST_END
                : Kept.GuardKind == DataFault::Guard::Freed ? OMPSIM_GUARD_FREED
                                                            : OMPSIM_GUARD_NONE;
  Info->guard_block = Kept.GuardBlock;
  Info->guard_offset = Kept.GuardOffset;
  return 1;
}

OMPSIM_EXPORT int32_t __tgt_rtl_set_function_ptr_map(int32_t Id, uint64_t N,
                                                     const __omp_offloading_fptr_map_ty *Table) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return OMPSIM_OFFLOAD_FAIL;
  if (N && !Table)
    return failWith(D, fmt::format("device {}: set_function_ptr_map with a null table", Id));
  if (auto Err = C->setFunctionPointerTable(llvm::ArrayRef(Table, N)))
    return failWith(D, std::move(Err));
  D->Advisor.setFunctionPointerTable(llvm::ArrayRef(Table, N));
  OMPSIM_TRACE_EVENT(Cat::Table, "publish").num("device", Id).num("n", int64_t(N)).str("plugin", "sim");
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_symbolize(int32_t Id, uint64_t TgtAddr, char *Buf, uint64_t Len) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C || !Buf || !Len)
    return 0;
  std::string S = C->symbolize(TgtAddr);
  if (S.empty())
    return 0;
  S = "dev:" + S;
  size_t N = std::min<size_t>(S.size(), size_t(Len - 1));
  std::memcpy(Buf, S.data(), N);
  Buf[N] = 0;
  return 1;
}

OMPSIM_EXPORT int32_t __tgt_rtl_set_thread_limit(int32_t Id, int32_t Limit) {
  SimDevice *D = SimPlugin::get().device(Id);
  if (!D)
    return OMPSIM_OFFLOAD_FAIL;
  D->DefaultThreadLimit = Limit > 0 ? uint32_t(Limit) : 0;
  return OMPSIM_OFFLOAD_SUCCESS;
}

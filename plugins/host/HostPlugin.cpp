// The host plugin's device: dlopen'ed images, malloc'ed memory, libffi launches.
#include "HostPlugin.h"

#include "ompsim/Config.h"
#include "ompsim/StockPluginInfo.h"
#include "ompsim/Trace.h"
#include "ompsim/device_runtime.h"

#include "ElfImageLoader.h"

#include <fmt/format.h>

#include <dlfcn.h>
#include <ffi.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <shared_mutex>
#include <vector>

namespace ompsim::hostplugin {
namespace {

size_t imageSize(const __tgt_device_image *Image) {
  return static_cast<size_t>(static_cast<const char *>(Image->ImageEnd) -
                             static_cast<const char *>(Image->ImageStart));
}

/// Where ompsim's libraries are: OMPSIM_LIB_DIR, else this plugin's directory.
std::string libraryDirectory() {
  if (!config().LibDir.empty())
    return config().LibDir;
  Dl_info Info{};
  if (dladdr(reinterpret_cast<void *>(&libraryDirectory), &Info) && Info.dli_fname)
    return std::filesystem::absolute(Info.dli_fname).parent_path().string();
  return ".";
}

/// The device runtime (loaded once, globally) translates through one table.
/// Kernels of the device whose table is active run together under the shared
/// lock; switching to another device's table takes it exclusively.
std::shared_mutex ActiveTableMutex;
const HostDevice *ActiveTableOwner = nullptr;

} // namespace

bool isLoadableImage(const __tgt_device_image *Image, std::string &Why) {
  if (!Image || !Image->ImageStart || Image->ImageEnd <= Image->ImageStart) {
    Why = "empty image";
    return false;
  }
  if (elf_version(EV_CURRENT) == EV_NONE) {
    Why = "libelf unavailable";
    return false;
  }
  Elf *Elf = elf_memory(static_cast<char *>(Image->ImageStart), imageSize(Image));
  if (!Elf || elf_kind(Elf) != ELF_K_ELF) {
    if (Elf)
      elf_end(Elf);
    Why = "not an ELF object (bitcode images need the sim plugin)";
    return false;
  }
  GElf_Ehdr Header;
  bool Ok = gelf_getehdr(Elf, &Header) && gelf_getclass(Elf) == ELFCLASS64;
  elf_end(Elf);
  if (!Ok) {
    Why = "not a 64-bit ELF object";
    return false;
  }
  if (Header.e_machine != EM_X86_64) {
    Why = fmt::format("ELF machine {} is not x86-64", Header.e_machine);
    return false;
  }
  if (Header.e_type != ET_DYN) {
    Why = fmt::format("ELF type {} is not a shared object", Header.e_type);
    return false;
  }
  return true;
}

Status HostDevice::init() {
  std::lock_guard<std::mutex> Lock(Mutex);
  if (Initialized)
    return {};
  Initialized = true;
  if (config().KernelTimeoutSet)
    // Kernels run on the host's own threads here: nothing can stop one from
    // outside without taking the process down, so the bound is sim's alone.
    std::fprintf(stderr,
                 "ompsim: OMPSIM_KERNEL_TIMEOUT=%g applies to the sim backend only; the host plugin runs "
                 "kernels in-process without a time limit\n",
                 config().KernelTimeout);
  DeviceRuntimePath = libraryDirectory() + "/libompsim-device.so";
  DeviceRuntime = dlopen(DeviceRuntimePath.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!DeviceRuntime) {
    // Not fatal: images built without ompsim's translation never need it.
    const char *Err = dlerror();
    DeviceRuntimeError = Err ? Err : "unknown error";
  }
  OMPSIM_TRACE_EVENT(Cat::Image, "host_device_init")
      .str("device_runtime", DeviceRuntimePath)
      .num("device_runtime_loaded", DeviceRuntime != nullptr);
  return {};
}

Status HostDevice::load(const __tgt_device_image *Image, HostBinary *&Out) {
  std::lock_guard<std::mutex> Lock(Mutex);
  std::string Label = fmt::format("device image at {} ({} bytes)", Image->ImageStart, imageSize(Image));
  // The dynamic linker trusts what it maps, in this very process: a corrupt
  // image must not reach it. The sim loader's checks (one validator, the same
  // messages) run over the bytes first, without running any of them.
  if (llvm::Error Err = sim::ElfImageLoader::validate(
          llvm::ArrayRef<char>(static_cast<const char *>(Image->ImageStart), imageSize(Image)),
          fmt::format("at {} ({} bytes)", Image->ImageStart, imageSize(Image))))
    return "cannot load device " + llvm::toString(std::move(Err));
  // dlopen needs a file: an anonymous memory file keeps nothing on disk.
  std::string MemName = fmt::format("ompsim-image-{}", ImageCounter++);
  int Fd = memfd_create(MemName.c_str(), MFD_CLOEXEC);
  if (Fd < 0)
    return fmt::format("cannot load {}: memfd_create failed: {}", Label, std::strerror(errno));
  const char *Bytes = static_cast<const char *>(Image->ImageStart);
  size_t Left = imageSize(Image);
  while (Left) {
    ssize_t N = write(Fd, Bytes, Left);
    if (N <= 0) {
      close(Fd);
      return fmt::format("cannot load {}: writing the image failed: {}", Label, std::strerror(errno));
    }
    Bytes += N;
    Left -= static_cast<size_t>(N);
  }
  std::string Path = fmt::format("/proc/self/fd/{}", Fd);
  void *Handle = dlopen(Path.c_str(), RTLD_NOW | RTLD_LOCAL);
  // The descriptor stays open for the life of the process: ld.so knows the
  // image by this path, and a reused descriptor number would make a later
  // dlopen return this image instead of loading the new one.
  if (!Handle) {
    close(Fd);
    std::string Err = dlerror();
    if (!DeviceRuntime && Err.find("__kmpc_target_translate_fptr") != std::string::npos)
      return fmt::format("cannot load {}: it calls __kmpc_target_translate_fptr but the device "
                         "runtime {} could not be loaded ({})",
                         Label, DeviceRuntimePath, DeviceRuntimeError);
    return fmt::format("cannot load {}: {}", Label, Err);
  }
  auto Binary = std::make_unique<HostBinary>();
  Binary->Handle = Handle;
  Binary->Label = Label;
  Out = Binary.get();
  Binaries.emplace(Out, std::move(Binary));
  OMPSIM_TRACE_EVENT(Cat::Image, "host_load").str("image", Label);
  return {};
}

Status HostDevice::unload(HostBinary *Binary) {
  std::lock_guard<std::mutex> Lock(Mutex);
  auto It = Binaries.find(Binary);
  if (It == Binaries.end())
    return "unload of an unknown binary handle";
  // The image stays mapped: host code may still hold pointers into it (its
  // functions were called through the translated table) until exit.
  Binaries.erase(It);
  return {};
}

Status HostDevice::lookup(HostBinary *Binary, const char *Name, void *&Address) {
  std::lock_guard<std::mutex> Lock(Mutex);
  if (!Binaries.count(Binary))
    return fmt::format("symbol '{}' looked up in an unknown binary handle", Name);
  dlerror();
  Address = dlsym(Binary->Handle, Name);
  if (!Address)
    return fmt::format("symbol '{}' not found in {}", Name, Binary->Label);
  return {};
}

Status HostDevice::lookupMany(HostBinary *Binary, uint64_t N, const char *const *Names, void **Addresses) {
  std::lock_guard<std::mutex> Lock(Mutex);
  if (!Binaries.count(Binary))
    return fmt::format("{} symbols looked up in an unknown binary handle", N);
  for (uint64_t I = 0; I < N; ++I)
    Addresses[I] = Names[I] ? dlsym(Binary->Handle, Names[I]) : nullptr;
  return {};
}

Status HostDevice::run(void *Kernel, void **Args, int32_t NumArgs, const ompsim_launch_config *Config) {
  // Stock's host plugin runs every kernel as one block of one thread in
  // generic mode (the kernel forks libomp's teams itself; a flang kernel's
  // environment is not read) and says so under LIBOMPTARGET_INFO=16.
  if (config().LibomptargetInfo & stock_plugin::kInfoPluginKernel) {
    const char *Name = Config && Config->kernel_name ? Config->kernel_name : "?";
    std::string Line = stock_plugin::launchLine(Id, Name, 1, 1, "Generic");
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", Line.c_str());
  }
  // Host-offload kernels are void kernel(void *dyn_ptr, void *a0, ..., void *aN).
  size_t N = static_cast<size_t>(NumArgs) + 1;
  std::vector<ffi_type *> Types(N, &ffi_type_pointer);
  std::vector<void *> Values(N);
  std::vector<void *> Storage(N);
  Storage[0] = nullptr; // no dynamic shared memory on the host
  for (size_t I = 1; I < N; ++I)
    Storage[I] = Args[I - 1];
  for (size_t I = 0; I < N; ++I)
    Values[I] = &Storage[I];
  ffi_cif Cif;
  if (ffi_prep_cif(&Cif, FFI_DEFAULT_ABI, static_cast<unsigned>(N), &ffi_type_void, Types.data()) != FFI_OK)
    return fmt::format("cannot prepare a call of kernel '{}' with {} arguments",
                       Config && Config->kernel_name ? Config->kernel_name : "?", NumArgs);
  // The device runtime runs a GPU-ABI kernel once per team, on several
  // threads at once: ffi_call only reads the description and the slots.
  struct KernelCall {
    ffi_cif *Cif;
    void *Fn;
    void **Values;
  } Call{&Cif, Kernel, Values.data()};
  auto Invoke = [](void *Ctx) {
    auto *C = static_cast<KernelCall *>(Ctx);
    ffi_call(C->Cif, FFI_FN(C->Fn), nullptr, C->Values);
  };
  using RunKernelFn = decltype(&__ompsim_device_run_kernel);
  auto RunKernel = DeviceRuntime
                       ? reinterpret_cast<RunKernelFn>(dlsym(DeviceRuntime, "__ompsim_device_run_kernel"))
                       : nullptr;
  ompsim_kernel_launch Launch{
      Id,
      Config ? Config->num_teams : 0,
      Config ? Config->thread_limit : 0,
      1,
      Invoke,
      &Call,
      {Config ? Config->num_teams_yz[0] : 0, Config ? Config->num_teams_yz[1] : 0},
      {Config ? Config->thread_limit_yz[0] : 0, Config ? Config->thread_limit_yz[1] : 0},
      0,  // the host plugin loads x86_64 images only: no GPU kernel,
      0,  // no bare one,
      0}; // and no dynamic shared memory
  auto Launched = [&] {
    if (RunKernel)
      RunKernel(&Launch);
    else
      Invoke(&Call);
  };
  if (!HasTable.load(std::memory_order_acquire)) {
    Launched();
    return {};
  }
  // Several devices each have their own image copies and table: the kernel
  // must translate through this device's.
  while (true) {
    {
      std::shared_lock<std::shared_mutex> Reading(ActiveTableMutex);
      if (ActiveTableOwner == this) {
        Launched();
        return {};
      }
    }
    std::unique_lock<std::shared_mutex> Writing(ActiveTableMutex);
    if (ActiveTableOwner != this)
      if (Status Err = activateTable(); !Err.empty())
        return Err;
  }
}

Status HostDevice::activateTable() {
  using SetTable = decltype(&__ompsim_device_set_fptr_table);
  auto Set = reinterpret_cast<SetTable>(dlsym(DeviceRuntime, "__ompsim_device_set_fptr_table"));
  if (!Set)
    return fmt::format("device runtime {} lacks __ompsim_device_set_fptr_table", DeviceRuntimePath);
  if (Set(Table.data(), Table.size()) != 0)
    return fmt::format("the device runtime rejected the function-pointer table ({} pairs): not "
                       "sorted or has duplicates",
                       Table.size());
  ActiveTableOwner = this;
  return {};
}

Status HostDevice::publishTable(uint64_t N, const __omp_offloading_fptr_map_ty *Pairs) {
  std::lock_guard<std::mutex> Lock(Mutex);
  if (!DeviceRuntime) {
    // No image can look the table up without the device runtime, so there is
    // nobody to publish to; say so in the trace.
    OMPSIM_TRACE_EVENT(Cat::Table, "host_publish_skipped")
        .num("n", static_cast<int64_t>(N))
        .str("reason", DeviceRuntimeError);
    return {};
  }
  std::unique_lock<std::shared_mutex> Writing(ActiveTableMutex);
  std::vector<__omp_offloading_fptr_map_ty> Previous = std::move(Table);
  Table.assign(Pairs, Pairs + N);
  if (Status Err = activateTable(); !Err.empty()) {
    Table = std::move(Previous);
    return Err;
  }
  HasTable.store(true, std::memory_order_release);
  return {};
}

std::string HostDevice::symbolize(uint64_t Addr) {
  Dl_info Info{};
  if (!dladdr(reinterpret_cast<void *>(Addr), &Info) || !Info.dli_sname)
    return {};
  return fmt::format("dev:{}+{:#x}", Info.dli_sname, Addr - reinterpret_cast<uint64_t>(Info.dli_saddr));
}

} // namespace ompsim::hostplugin

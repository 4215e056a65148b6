// The host plugin's device: dlopen'ed images, malloc'ed memory, libffi launches.
#include "HostPlugin.h"

#include "ompsim/Config.h"
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

size_t imageSize(const __tgt_device_image *image) {
  return static_cast<size_t>(static_cast<const char *>(image->ImageEnd) -
                             static_cast<const char *>(image->ImageStart));
}

/// Where ompsim's libraries are: OMPSIM_LIB_DIR, else this plugin's directory.
std::string libraryDirectory() {
  if (!config().libDir.empty())
    return config().libDir;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&libraryDirectory), &info) && info.dli_fname)
    return std::filesystem::absolute(info.dli_fname).parent_path().string();
  return ".";
}

/// The device runtime (loaded once, globally) translates through one table.
/// Kernels of the device whose table is active run together under the shared
/// lock; switching to another device's table takes it exclusively.
std::shared_mutex activeTableMutex;
const HostDevice *activeTableOwner = nullptr;

} // namespace

bool isLoadableImage(const __tgt_device_image *image, std::string &why) {
  if (!image || !image->ImageStart || image->ImageEnd <= image->ImageStart) {
    why = "empty image";
    return false;
  }
  if (elf_version(EV_CURRENT) == EV_NONE) {
    why = "libelf unavailable";
    return false;
  }
  Elf *elf = elf_memory(static_cast<char *>(image->ImageStart), imageSize(image));
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    if (elf)
      elf_end(elf);
    why = "not an ELF object (bitcode images need the sim plugin)";
    return false;
  }
  GElf_Ehdr header;
  bool ok = gelf_getehdr(elf, &header) && gelf_getclass(elf) == ELFCLASS64;
  elf_end(elf);
  if (!ok) {
    why = "not a 64-bit ELF object";
    return false;
  }
  if (header.e_machine != EM_X86_64) {
    why = fmt::format("ELF machine {} is not x86-64", header.e_machine);
    return false;
  }
  if (header.e_type != ET_DYN) {
    why = fmt::format("ELF type {} is not a shared object", header.e_type);
    return false;
  }
  return true;
}

Status HostDevice::init() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (initialized_)
    return {};
  initialized_ = true;
  if (config().kernelTimeoutSet)
    // Kernels run on the host's own threads here: nothing can stop one from
    // outside without taking the process down, so the bound is sim's alone.
    std::fprintf(stderr,
                 "ompsim: OMPSIM_KERNEL_TIMEOUT=%g applies to the sim backend only; the host plugin runs "
                 "kernels in-process without a time limit\n",
                 config().kernelTimeout);
  deviceRuntimePath_ = libraryDirectory() + "/libompsim-device.so";
  deviceRuntime_ = dlopen(deviceRuntimePath_.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!deviceRuntime_) {
    // Not fatal: images built without ompsim's translation never need it.
    const char *err = dlerror();
    deviceRuntimeError_ = err ? err : "unknown error";
  }
  OMPSIM_TRACE_EVENT(Cat::Image, "host_device_init")
      .str("device_runtime", deviceRuntimePath_)
      .num("device_runtime_loaded", deviceRuntime_ != nullptr);
  return {};
}

Status HostDevice::load(const __tgt_device_image *image, HostBinary *&out) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string label = fmt::format("device image at {} ({} bytes)", image->ImageStart, imageSize(image));
  // The dynamic linker trusts what it maps, in this very process: a corrupt
  // image must not reach it. The sim loader's checks (one validator, the same
  // messages) run over the bytes first, without running any of them.
  if (llvm::Error err = sim::ElfImageLoader::validate(
          llvm::ArrayRef<char>(static_cast<const char *>(image->ImageStart), imageSize(image)),
          fmt::format("at {} ({} bytes)", image->ImageStart, imageSize(image))))
    return "cannot load device " + llvm::toString(std::move(err));
  // dlopen needs a file: an anonymous memory file keeps nothing on disk.
  std::string memName = fmt::format("ompsim-image-{}", imageCounter_++);
  int fd = memfd_create(memName.c_str(), MFD_CLOEXEC);
  if (fd < 0)
    return fmt::format("cannot load {}: memfd_create failed: {}", label, std::strerror(errno));
  const char *bytes = static_cast<const char *>(image->ImageStart);
  size_t left = imageSize(image);
  while (left) {
    ssize_t n = write(fd, bytes, left);
    if (n <= 0) {
      close(fd);
      return fmt::format("cannot load {}: writing the image failed: {}", label, std::strerror(errno));
    }
    bytes += n;
    left -= static_cast<size_t>(n);
  }
  std::string path = fmt::format("/proc/self/fd/{}", fd);
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  // The descriptor stays open for the life of the process: ld.so knows the
  // image by this path, and a reused descriptor number would make a later
  // dlopen return this image instead of loading the new one.
  if (!handle) {
    close(fd);
    std::string err = dlerror();
    if (!deviceRuntime_ && err.find("__kmpc_target_translate_fptr") != std::string::npos)
      return fmt::format("cannot load {}: it calls __kmpc_target_translate_fptr but the device "
                         "runtime {} could not be loaded ({})",
                         label, deviceRuntimePath_, deviceRuntimeError_);
    return fmt::format("cannot load {}: {}", label, err);
  }
  auto binary = std::make_unique<HostBinary>();
  binary->handle = handle;
  binary->label = label;
  out = binary.get();
  binaries_.emplace(out, std::move(binary));
  OMPSIM_TRACE_EVENT(Cat::Image, "host_load").str("image", label);
  return {};
}

Status HostDevice::unload(HostBinary *binary) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = binaries_.find(binary);
  if (it == binaries_.end())
    return "unload of an unknown binary handle";
  // The image stays mapped: host code may still hold pointers into it (its
  // functions were called through the translated table) until exit.
  binaries_.erase(it);
  return {};
}

Status HostDevice::lookup(HostBinary *binary, const char *name, void *&address) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!binaries_.count(binary))
    return fmt::format("symbol '{}' looked up in an unknown binary handle", name);
  dlerror();
  address = dlsym(binary->handle, name);
  if (!address)
    return fmt::format("symbol '{}' not found in {}", name, binary->label);
  return {};
}

Status HostDevice::lookupMany(HostBinary *binary, uint64_t n, const char *const *names, void **addresses) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!binaries_.count(binary))
    return fmt::format("{} symbols looked up in an unknown binary handle", n);
  for (uint64_t i = 0; i < n; ++i)
    addresses[i] = names[i] ? dlsym(binary->handle, names[i]) : nullptr;
  return {};
}

Status HostDevice::run(void *kernel, void **args, int32_t numArgs, const ompsim_launch_config *config) {
  // Host-offload kernels are void kernel(void *dyn_ptr, void *a0, ..., void *aN).
  size_t n = static_cast<size_t>(numArgs) + 1;
  std::vector<ffi_type *> types(n, &ffi_type_pointer);
  std::vector<void *> values(n);
  std::vector<void *> storage(n);
  storage[0] = nullptr; // no dynamic shared memory on the host
  for (size_t i = 1; i < n; ++i)
    storage[i] = args[i - 1];
  for (size_t i = 0; i < n; ++i)
    values[i] = &storage[i];
  ffi_cif cif;
  if (ffi_prep_cif(&cif, FFI_DEFAULT_ABI, static_cast<unsigned>(n), &ffi_type_void, types.data()) != FFI_OK)
    return fmt::format("cannot prepare a call of kernel '{}' with {} arguments",
                       config && config->kernel_name ? config->kernel_name : "?", numArgs);
  if (!hasTable_.load(std::memory_order_acquire)) {
    ffi_call(&cif, FFI_FN(kernel), nullptr, values.data());
    return {};
  }
  // Several devices each have their own image copies and table: the kernel
  // must translate through this device's.
  while (true) {
    {
      std::shared_lock<std::shared_mutex> reading(activeTableMutex);
      if (activeTableOwner == this) {
        ffi_call(&cif, FFI_FN(kernel), nullptr, values.data());
        return {};
      }
    }
    std::unique_lock<std::shared_mutex> writing(activeTableMutex);
    if (activeTableOwner != this)
      if (Status err = activateTable(); !err.empty())
        return err;
  }
}

Status HostDevice::activateTable() {
  using SetTable = decltype(&__ompsim_device_set_fptr_table);
  auto set = reinterpret_cast<SetTable>(dlsym(deviceRuntime_, "__ompsim_device_set_fptr_table"));
  if (!set)
    return fmt::format("device runtime {} lacks __ompsim_device_set_fptr_table", deviceRuntimePath_);
  if (set(table_.data(), table_.size()) != 0)
    return fmt::format("the device runtime rejected the function-pointer table ({} pairs): not "
                       "sorted or has duplicates",
                       table_.size());
  activeTableOwner = this;
  return {};
}

Status HostDevice::publishTable(uint64_t n, const __omp_offloading_fptr_map_ty *table) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!deviceRuntime_) {
    // No image can look the table up without the device runtime, so there is
    // nobody to publish to; say so in the trace.
    OMPSIM_TRACE_EVENT(Cat::Table, "host_publish_skipped")
        .num("n", static_cast<int64_t>(n))
        .str("reason", deviceRuntimeError_);
    return {};
  }
  std::unique_lock<std::shared_mutex> writing(activeTableMutex);
  std::vector<__omp_offloading_fptr_map_ty> previous = std::move(table_);
  table_.assign(table, table + n);
  if (Status err = activateTable(); !err.empty()) {
    table_ = std::move(previous);
    return err;
  }
  hasTable_.store(true, std::memory_order_release);
  return {};
}

std::string HostDevice::symbolize(uint64_t addr) {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void *>(addr), &info) || !info.dli_sname)
    return {};
  return fmt::format("dev:{}+{:#x}", info.dli_sname, addr - reinterpret_cast<uint64_t>(info.dli_saddr));
}

} // namespace ompsim::hostplugin

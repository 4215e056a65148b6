// The plugin C ABI over HostDevice: the only place a Status becomes a return
// code (and the device's last error).
#include "HostPlugin.h"

#include "ompsim/Config.h"
#include "ompsim/Trace.h"
#include "ompsim/plugin_api.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

using namespace ompsim::hostplugin;

namespace {

/// Devices of stock libomptarget's host plugin: OMPSIM_NUM_DEVICES sets another count.
constexpr int32_t StockHostDevices = 4;

int32_t deviceCount() {
  static const int32_t N = ompsim::config().NumDevices > 0 ? ompsim::config().NumDevices : StockHostDevices;
  return N;
}

HostDevice &theDevice(int32_t Id) {
  // Never destroyed: kernels and atexit handlers may run during teardown.
  // Each device loads its own copy of an image, so its globals are its own.
  static std::vector<HostDevice *> *Devices = [] {
    auto *V = new std::vector<HostDevice *>();
    for (int32_t I = 0; I < deviceCount(); ++I)
      V->push_back(new HostDevice(I));
    return V;
  }();
  return *(*Devices)[static_cast<size_t>(Id)];
}

std::mutex ErrorMutex;
thread_local std::string LastErrorCopy;
/// [0]: plugin-wide (-1), [1 + id]: device id.
std::vector<std::string> &lastError() {
  static auto *Errors = new std::vector<std::string>(static_cast<size_t>(deviceCount()) + 1);
  return *Errors;
}

bool validDevice(int32_t Id) { return Id >= 0 && Id < deviceCount(); }

size_t errorSlot(int32_t Device) { return validDevice(Device) ? static_cast<size_t>(Device) + 1 : 0; }

int32_t fail(int32_t Device, std::string Message) {
  std::lock_guard<std::mutex> Lock(ErrorMutex);
  lastError()[errorSlot(Device)] = std::move(Message);
  return OMPSIM_OFFLOAD_FAIL;
}

int32_t check(int32_t Device, const Status &Status) {
  return Status.empty() ? OMPSIM_OFFLOAD_SUCCESS : fail(Device, Status);
}

int32_t badDevice(int32_t Device) {
  return fail(-1, "host plugin: device " + std::to_string(Device) + " does not exist (it has " +
                      std::to_string(deviceCount()) + ")");
}

/// The live allocations of every device (start -> bytes; all of them are host memory). Device memory is host
/// memory here, so a bad pointer handed to free() or memcpy would corrupt or
/// crash the host: every device pointer is checked against this first.
class Allocations {
public:
  void add(void *P, size_t Bytes) {
    std::lock_guard<std::mutex> Lock(Mu);
    Live[reinterpret_cast<uintptr_t>(P)] = Bytes;
  }
  /// Removes the allocation starting at `P` and keeps it for the next
  /// request of its size when it is small (`Kept`); else says why `P`
  /// cannot be freed.
  Status remove(void *P, bool &Kept) {
    std::lock_guard<std::mutex> Lock(Mu);
    auto A = reinterpret_cast<uintptr_t>(P);
    Kept = false;
    if (auto It = Live.find(A); It != Live.end()) {
      std::vector<void *> &Free = Freed[It->second];
      if (It->second <= kMaxKeptBytes && Free.size() < kMaxKeptPerSize) {
        Free.push_back(P);
        Kept = true;
      }
      Live.erase(It);
      return {};
    }
    if (auto C = containing(A))
      return hex(A) + " is inside the device allocation at " + hex(C->first) + " (" +
             std::to_string(C->second) + " bytes), not its start";
    return hex(A) + " is not a live device allocation (never allocated, or already freed)";
  }
  /// The block of `Bytes` freed last, taken back; null when there is none.
  /// Stock's host plugin gets its memory from malloc, whose per-thread cache
  /// hands a freed small block to the next request of its size; programs
  /// written against stock observe that (LLVM's mapping/low_alignment.c reads
  /// a block's earlier contents), so this device does the same, whatever
  /// else the process allocates in between.
  void *takeFreed(size_t Bytes) {
    std::lock_guard<std::mutex> Lock(Mu);
    auto It = Freed.find(Bytes);
    if (It == Freed.end() || It->second.empty())
      return nullptr;
    void *P = It->second.back();
    It->second.pop_back();
    return P;
  }
  /// The allocation holding address `a`, if any: {start, bytes}.
  std::optional<std::pair<uintptr_t, size_t>> find(uintptr_t A) {
    std::lock_guard<std::mutex> Lock(Mu);
    return containing(A);
  }

private:
  std::optional<std::pair<uintptr_t, size_t>> containing(uintptr_t A) const {
    auto It = Live.upper_bound(A);
    if (It == Live.begin())
      return std::nullopt;
    --It;
    if (A - It->first < std::max<size_t>(It->second, 1))
      return *It;
    return std::nullopt;
  }
  static std::string hex(uintptr_t A) {
    char Buf[32];
    std::snprintf(Buf, sizeof Buf, "%#lx", static_cast<unsigned long>(A));
    return Buf;
  }
  /// malloc's per-thread cache limits (glibc: 7 blocks a size, up to 1032 bytes).
  static constexpr size_t kMaxKeptBytes = 1032, kMaxKeptPerSize = 7;
  std::mutex Mu;
  std::map<uintptr_t, size_t> Live;
  std::map<size_t, std::vector<void *>> Freed; ///< bytes -> blocks, last freed at the back
};

Allocations &allocations() {
  static Allocations *A = new Allocations(); // never destroyed, like the device
  return *A;
}

/// The readable segments of every loaded image: reading a device global of an
/// image (the runtime reads one per indirect function at registration) is a
/// plain copy there instead of a checked system call. Images stay mapped
/// until exit, so segments are never removed.
class ImageSegments {
public:
  /// Records the readable PT_LOAD segments of the object dlopen gave `Handle`.
  void add(void *Handle) {
    struct link_map *Map = nullptr;
    if (!Handle || dlinfo(Handle, RTLD_DI_LINKMAP, &Map) != 0 || !Map)
      return;
    std::vector<std::pair<uintptr_t, uintptr_t>> Found;
    struct Search {
      const struct link_map *Map;
      std::vector<std::pair<uintptr_t, uintptr_t>> *Found;
    } Query{Map, &Found};
    dl_iterate_phdr(
        [](dl_phdr_info *Info, size_t, void *P) -> int {
          auto *S = static_cast<Search *>(P);
          if (Info->dlpi_addr != S->Map->l_addr || !Info->dlpi_name || !S->Map->l_name ||
              std::strcmp(Info->dlpi_name, S->Map->l_name) != 0)
            return 0;
          for (int I = 0; I < Info->dlpi_phnum; ++I) {
            const ElfW(Phdr) &Ph = Info->dlpi_phdr[I];
            if (Ph.p_type == PT_LOAD && (Ph.p_flags & PF_R) && Ph.p_memsz)
              S->Found->emplace_back(Info->dlpi_addr + Ph.p_vaddr, Info->dlpi_addr + Ph.p_vaddr + Ph.p_memsz);
          }
          return 1;
        },
        &Query);
    std::lock_guard<std::mutex> Lock(Mu);
    Ranges.insert(Ranges.end(), Found.begin(), Found.end());
    std::sort(Ranges.begin(), Ranges.end());
  }
  /// Whether [a, a + size) lies inside one readable segment.
  bool readable(uintptr_t A, size_t Size) {
    std::lock_guard<std::mutex> Lock(Mu);
    auto It = std::upper_bound(Ranges.begin(), Ranges.end(), std::make_pair(A, UINTPTR_MAX));
    if (It == Ranges.begin())
      return false;
    --It;
    return A >= It->first && A < It->second && Size <= It->second - A;
  }

private:
  std::mutex Mu;
  std::vector<std::pair<uintptr_t, uintptr_t>> Ranges; // [begin, end), sorted
};

ImageSegments &imageSegments() {
  static ImageSegments *S = new ImageSegments(); // never destroyed, like the device
  return *S;
}

/// Copies `Size` bytes between the host and device address `Tgt` (`toDevice`
/// says which way) without trusting `Tgt`: inside a live allocation the range
/// must fit in it; elsewhere (a device global of a loaded image, memory the
/// user associated) the copy goes through process_vm_readv/writev, which fail
/// instead of faulting on memory this process cannot reach.
Status checkedCopy(void *Hst, uintptr_t Tgt, size_t Size, bool ToDevice) {
  const char *What = ToDevice ? "copy to" : "copy from";
  auto Describe = [&] {
    char Buf[96];
    std::snprintf(Buf, sizeof Buf, "host plugin: %s device address %#lx of %zu bytes", What,
                  static_cast<unsigned long>(Tgt), Size);
    return std::string(Buf);
  };
  if (Tgt + Size < Tgt)
    return Describe() + ": the range wraps around the address space";
  if (auto A = allocations().find(Tgt)) {
    if (Size > A->second - (Tgt - A->first)) {
      char Buf[128];
      std::snprintf(Buf, sizeof Buf, ": it runs past the end of the device allocation at %#lx (%zu bytes)",
                    static_cast<unsigned long>(A->first), A->second);
      return Describe() + Buf;
    }
    if (ToDevice)
      std::memmove(reinterpret_cast<void *>(Tgt), Hst, Size);
    else
      std::memmove(Hst, reinterpret_cast<void *>(Tgt), Size);
    return {};
  }
  if (!ToDevice && imageSegments().readable(Tgt, Size)) {
    std::memmove(Hst, reinterpret_cast<void *>(Tgt), Size);
    return {};
  }
  static const pid_t Self = getpid();
  size_t Done = 0;
  while (Done < Size) {
    struct iovec Local = {static_cast<char *>(Hst) + Done, Size - Done};
    struct iovec Remote = {reinterpret_cast<void *>(Tgt + Done), Size - Done};
    ssize_t N = ToDevice ? process_vm_writev(Self, &Local, 1, &Remote, 1, 0)
                         : process_vm_readv(Self, &Local, 1, &Remote, 1, 0);
    if (N < 0 && errno == EPERM && Done == 0) {
      // Cannot check here (seccomp): copy as the host plugin always did.
      if (ToDevice)
        std::memmove(reinterpret_cast<void *>(Tgt), Hst, Size);
      else
        std::memmove(Hst, reinterpret_cast<void *>(Tgt), Size);
      return {};
    }
    if (N <= 0) {
      char Buf[96];
      std::snprintf(Buf, sizeof Buf, ": it is not device memory (nothing %s at %#lx)",
                    ToDevice ? "writable" : "readable", static_cast<unsigned long>(Tgt + Done));
      return Describe() + Buf;
    }
    Done += static_cast<size_t>(N);
  }
  return {};
}

} // namespace

extern "C" {

int32_t __tgt_rtl_plugin_api_version(void) { return OMPSIM_PLUGIN_API_VERSION; }

const char *__tgt_rtl_plugin_name(void) { return "host"; }

int32_t __tgt_rtl_is_valid_binary(const __tgt_device_image *Image) {
  std::string Why;
  if (isLoadableImage(Image, Why))
    return 1;
  OMPSIM_TRACE_EVENT(Cat::Image, "host_reject").str("reason", Why);
  return 0;
}

int32_t __tgt_rtl_number_of_devices(void) { return deviceCount(); }

int32_t __tgt_rtl_init_device(int32_t Device) {
  if (!validDevice(Device))
    return badDevice(Device);
  return check(Device, theDevice(Device).init());
}

int32_t __tgt_rtl_load_binary(int32_t Device, const __tgt_device_image *Image, ompsim_binary_handle *Binary) {
  if (!validDevice(Device))
    return badDevice(Device);
  HostBinary *Loaded = nullptr;
  if (int32_t Rc = check(Device, theDevice(Device).load(Image, Loaded)))
    return Rc;
  imageSegments().add(Loaded->Handle);
  *Binary = reinterpret_cast<ompsim_binary_handle>(Loaded);
  return OMPSIM_OFFLOAD_SUCCESS;
}

int32_t __tgt_rtl_get_global(int32_t Device, ompsim_binary_handle Binary, uint64_t Size, const char *Name,
                             void **TgtPtr) {
  if (!validDevice(Device))
    return badDevice(Device);
  return check(Device, theDevice(Device).lookup(reinterpret_cast<HostBinary *>(Binary), Name, *TgtPtr));
}

int32_t __tgt_rtl_get_globals(int32_t Device, ompsim_binary_handle Binary, uint64_t N,
                              const char *const *Names, const uint64_t *, void **TgtPtrs) {
  if (!validDevice(Device))
    return badDevice(Device);
  if (N && (!Names || !TgtPtrs))
    return check(Device, Status("host plugin: get_globals with a null argument"));
  return check(Device,
               theDevice(Device).lookupMany(reinterpret_cast<HostBinary *>(Binary), N, Names, TgtPtrs));
}

int32_t __tgt_rtl_get_function(int32_t Device, ompsim_binary_handle Binary, const char *Name, void **Kernel) {
  if (!validDevice(Device))
    return badDevice(Device);
  return check(Device, theDevice(Device).lookup(reinterpret_cast<HostBinary *>(Binary), Name, *Kernel));
}

void *__tgt_rtl_data_alloc(int32_t Device, int64_t Size, void *, int32_t) {
  if (!validDevice(Device)) {
    badDevice(Device);
    return nullptr;
  }
  // The runtime passes size_t sizes as int64_t: a negative one is a size of
  // 2^63 bytes or more, which no allocation satisfies.
  if (Size < 0 || static_cast<uint64_t>(Size) > UINT64_MAX - 63) {
    fail(Device, "host plugin: cannot allocate " + std::to_string(static_cast<uint64_t>(Size)) +
                     " bytes: larger than any address space");
    return nullptr;
  }
  // malloc, as stock's host plugin: its 16-byte alignment suits every type
  // (16-byte atomics included), and a block freed and asked for again comes
  // back the same way, which programs written against stock observe (LLVM's
  // mapping/low_alignment.c reads a block's earlier contents).
  size_t Bytes = static_cast<size_t>(Size > 0 ? Size : 1);
  void *P = allocations().takeFreed(Bytes);
  if (!P)
    P = std::malloc(Bytes);
  if (!P) {
    fail(Device, "host plugin: cannot allocate " + std::to_string(Size) + " bytes");
    return nullptr;
  }
  allocations().add(P, Bytes);
  return P;
}

int32_t __tgt_rtl_data_delete(int32_t Device, void *TgtPtr, int32_t) {
  if (!validDevice(Device))
    return badDevice(Device);
  if (!TgtPtr)
    return OMPSIM_OFFLOAD_SUCCESS;
  bool Kept;
  if (Status Why = allocations().remove(TgtPtr, Kept); !Why.empty())
    return fail(Device, "host plugin: cannot free " + Why);
  if (!Kept)
    std::free(TgtPtr);
  return OMPSIM_OFFLOAD_SUCCESS;
}

int32_t __tgt_rtl_data_submit(int32_t Device, void *TgtPtr, const void *HstPtr, int64_t Size) {
  if (!validDevice(Device))
    return badDevice(Device);
  if (Size <= 0)
    return OMPSIM_OFFLOAD_SUCCESS;
  return check(Device, checkedCopy(const_cast<void *>(HstPtr), reinterpret_cast<uintptr_t>(TgtPtr),
                                   static_cast<size_t>(Size), /*toDevice=*/true));
}

int32_t __tgt_rtl_data_retrieve(int32_t Device, void *HstPtr, const void *TgtPtr, int64_t Size) {
  if (!validDevice(Device))
    return badDevice(Device);
  if (Size <= 0)
    return OMPSIM_OFFLOAD_SUCCESS;
  return check(Device, checkedCopy(HstPtr, reinterpret_cast<uintptr_t>(TgtPtr), static_cast<size_t>(Size),
                                   /*toDevice=*/false));
}

int32_t __tgt_rtl_run_target_region(int32_t Device, void *Kernel, void **TgtArgs, int32_t NumArgs,
                                    const ompsim_launch_config *Config) {
  if (!validDevice(Device))
    return badDevice(Device);
  return check(Device, theDevice(Device).run(Kernel, TgtArgs, NumArgs, Config));
}

int32_t __tgt_rtl_kernel_exec_mode(int32_t Device, void *Kernel, uint8_t *Mode) {
  if (!validDevice(Device) || !Kernel || !Mode)
    return 0;
  // A kernel handle is the kernel's address in its dlopen'ed image; its
  // environment is the image's `<name>_kernel_environment`, whose
  // configuration's third byte is the execution mode.
  Dl_info Info;
  if (!dladdr(Kernel, &Info) || !Info.dli_sname || !Info.dli_fname || Info.dli_saddr != Kernel)
    return 0;
  void *Image = dlopen(Info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (!Image)
    return 0;
  std::string EnvName = std::string(Info.dli_sname) + "_kernel_environment";
  const auto *Env = static_cast<const uint8_t *>(dlsym(Image, EnvName.c_str()));
  dlclose(Image);
  if (!Env)
    return 0;
  *Mode = Env[2];
  return 1;
}

const char *__tgt_rtl_last_error(int32_t Device) {
  std::lock_guard<std::mutex> Lock(ErrorMutex);
  LastErrorCopy = lastError()[errorSlot(Device)];
  return LastErrorCopy.c_str();
}

int32_t __tgt_rtl_set_function_ptr_map(int32_t Device, uint64_t N,
                                       const __omp_offloading_fptr_map_ty *Table) {
  if (!validDevice(Device))
    return badDevice(Device);
  return check(Device, theDevice(Device).publishTable(N, Table));
}

int32_t __tgt_rtl_unload_binary(int32_t Device, ompsim_binary_handle Binary) {
  if (!validDevice(Device))
    return badDevice(Device);
  return check(Device, theDevice(Device).unload(reinterpret_cast<HostBinary *>(Binary)));
}

int32_t __tgt_rtl_deinit_device(int32_t Device) {
  return validDevice(Device) ? OMPSIM_OFFLOAD_SUCCESS : badDevice(Device);
}

int32_t __tgt_rtl_symbolize(int32_t Device, uint64_t TgtAddr, char *Buf, uint64_t Len) {
  if (!validDevice(Device) || !Buf || Len == 0)
    return 0;
  std::string S = theDevice(Device).symbolize(TgtAddr);
  if (S.empty())
    return 0;
  std::strncpy(Buf, S.c_str(), Len - 1);
  Buf[Len - 1] = '\0';
  return 1;
}

} // extern "C"

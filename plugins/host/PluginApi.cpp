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
  static const int32_t n = ompsim::config().numDevices > 0 ? ompsim::config().numDevices : StockHostDevices;
  return n;
}

HostDevice &theDevice(int32_t id) {
  // Never destroyed: kernels and atexit handlers may run during teardown.
  // Each device loads its own copy of an image, so its globals are its own.
  static std::vector<HostDevice *> *devices = [] {
    auto *v = new std::vector<HostDevice *>();
    for (int32_t i = 0; i < deviceCount(); ++i)
      v->push_back(new HostDevice());
    return v;
  }();
  return *(*devices)[static_cast<size_t>(id)];
}

std::mutex errorMutex;
thread_local std::string lastErrorCopy;
/// [0]: plugin-wide (-1), [1 + id]: device id.
std::vector<std::string> &lastError() {
  static auto *errors = new std::vector<std::string>(static_cast<size_t>(deviceCount()) + 1);
  return *errors;
}

bool validDevice(int32_t id) { return id >= 0 && id < deviceCount(); }

size_t errorSlot(int32_t device) { return validDevice(device) ? static_cast<size_t>(device) + 1 : 0; }

int32_t fail(int32_t device, std::string message) {
  std::lock_guard<std::mutex> lock(errorMutex);
  lastError()[errorSlot(device)] = std::move(message);
  return OMPSIM_OFFLOAD_FAIL;
}

int32_t check(int32_t device, const Status &status) {
  return status.empty() ? OMPSIM_OFFLOAD_SUCCESS : fail(device, status);
}

int32_t badDevice(int32_t device) {
  return fail(-1, "host plugin: device " + std::to_string(device) + " does not exist (it has " +
                      std::to_string(deviceCount()) + ")");
}

/// The live allocations of every device (start -> bytes; all of them are host memory). Device memory is host
/// memory here, so a bad pointer handed to free() or memcpy would corrupt or
/// crash the host: every device pointer is checked against this first.
class Allocations {
public:
  void add(void *p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    live_[reinterpret_cast<uintptr_t>(p)] = bytes;
  }
  /// Removes the allocation starting at `p`; else says why `p` cannot be freed.
  Status remove(void *p) {
    std::lock_guard<std::mutex> lock(mu_);
    auto a = reinterpret_cast<uintptr_t>(p);
    if (live_.erase(a))
      return {};
    if (auto c = containing(a))
      return hex(a) + " is inside the device allocation at " + hex(c->first) + " (" +
             std::to_string(c->second) + " bytes), not its start";
    return hex(a) + " is not a live device allocation (never allocated, or already freed)";
  }
  /// The allocation holding address `a`, if any: {start, bytes}.
  std::optional<std::pair<uintptr_t, size_t>> find(uintptr_t a) {
    std::lock_guard<std::mutex> lock(mu_);
    return containing(a);
  }

private:
  std::optional<std::pair<uintptr_t, size_t>> containing(uintptr_t a) const {
    auto it = live_.upper_bound(a);
    if (it == live_.begin())
      return std::nullopt;
    --it;
    if (a - it->first < std::max<size_t>(it->second, 1))
      return *it;
    return std::nullopt;
  }
  static std::string hex(uintptr_t a) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%#lx", static_cast<unsigned long>(a));
    return buf;
  }
  std::mutex mu_;
  std::map<uintptr_t, size_t> live_;
};

Allocations &allocations() {
  static Allocations *a = new Allocations(); // never destroyed, like the device
  return *a;
}

/// The readable segments of every loaded image: reading a device global of an
/// image (the runtime reads one per indirect function at registration) is a
/// plain copy there instead of a checked system call. Images stay mapped
/// until exit, so segments are never removed.
class ImageSegments {
public:
  /// Records the readable PT_LOAD segments of the object dlopen gave `handle`.
  void add(void *handle) {
    struct link_map *map = nullptr;
    if (!handle || dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map)
      return;
    std::vector<std::pair<uintptr_t, uintptr_t>> found;
    struct Search {
      const struct link_map *map;
      std::vector<std::pair<uintptr_t, uintptr_t>> *found;
    } search{map, &found};
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *p) -> int {
          auto *s = static_cast<Search *>(p);
          if (info->dlpi_addr != s->map->l_addr || !info->dlpi_name || !s->map->l_name ||
              std::strcmp(info->dlpi_name, s->map->l_name) != 0)
            return 0;
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr) &ph = info->dlpi_phdr[i];
            if (ph.p_type == PT_LOAD && (ph.p_flags & PF_R) && ph.p_memsz)
              s->found->emplace_back(info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
          }
          return 1;
        },
        &search);
    std::lock_guard<std::mutex> lock(mu_);
    ranges_.insert(ranges_.end(), found.begin(), found.end());
    std::sort(ranges_.begin(), ranges_.end());
  }
  /// Whether [a, a + size) lies inside one readable segment.
  bool readable(uintptr_t a, size_t size) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), std::make_pair(a, UINTPTR_MAX));
    if (it == ranges_.begin())
      return false;
    --it;
    return a >= it->first && a < it->second && size <= it->second - a;
  }

private:
  std::mutex mu_;
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges_; // [begin, end), sorted
};

ImageSegments &imageSegments() {
  static ImageSegments *s = new ImageSegments(); // never destroyed, like the device
  return *s;
}

/// Copies `size` bytes between the host and device address `tgt` (`toDevice`
/// says which way) without trusting `tgt`: inside a live allocation the range
/// must fit in it; elsewhere (a device global of a loaded image, memory the
/// user associated) the copy goes through process_vm_readv/writev, which fail
/// instead of faulting on memory this process cannot reach.
Status checkedCopy(void *hst, uintptr_t tgt, size_t size, bool toDevice) {
  const char *what = toDevice ? "copy to" : "copy from";
  auto describe = [&] {
    char buf[96];
    std::snprintf(buf, sizeof buf, "host plugin: %s device address %#lx of %zu bytes", what,
                  static_cast<unsigned long>(tgt), size);
    return std::string(buf);
  };
  if (tgt + size < tgt)
    return describe() + ": the range wraps around the address space";
  if (auto a = allocations().find(tgt)) {
    if (size > a->second - (tgt - a->first)) {
      char buf[128];
      std::snprintf(buf, sizeof buf, ": it runs past the end of the device allocation at %#lx (%zu bytes)",
                    static_cast<unsigned long>(a->first), a->second);
      return describe() + buf;
    }
    if (toDevice)
      std::memmove(reinterpret_cast<void *>(tgt), hst, size);
    else
      std::memmove(hst, reinterpret_cast<void *>(tgt), size);
    return {};
  }
  if (!toDevice && imageSegments().readable(tgt, size)) {
    std::memmove(hst, reinterpret_cast<void *>(tgt), size);
    return {};
  }
  static const pid_t self = getpid();
  size_t done = 0;
  while (done < size) {
    struct iovec local = {static_cast<char *>(hst) + done, size - done};
    struct iovec remote = {reinterpret_cast<void *>(tgt + done), size - done};
    ssize_t n = toDevice ? process_vm_writev(self, &local, 1, &remote, 1, 0)
                         : process_vm_readv(self, &local, 1, &remote, 1, 0);
    if (n < 0 && errno == EPERM && done == 0) {
      // Cannot check here (seccomp): copy as the host plugin always did.
      if (toDevice)
        std::memmove(reinterpret_cast<void *>(tgt), hst, size);
      else
        std::memmove(hst, reinterpret_cast<void *>(tgt), size);
      return {};
    }
    if (n <= 0) {
      char buf[96];
      std::snprintf(buf, sizeof buf, ": it is not device memory (nothing %s at %#lx)",
                    toDevice ? "writable" : "readable", static_cast<unsigned long>(tgt + done));
      return describe() + buf;
    }
    done += static_cast<size_t>(n);
  }
  return {};
}

} // namespace

extern "C" {

int32_t __tgt_rtl_plugin_api_version(void) { return OMPSIM_PLUGIN_API_VERSION; }

const char *__tgt_rtl_plugin_name(void) { return "host"; }

int32_t __tgt_rtl_is_valid_binary(const __tgt_device_image *image) {
  std::string why;
  if (isLoadableImage(image, why))
    return 1;
  OMPSIM_TRACE_EVENT(Cat::Image, "host_reject").str("reason", why);
  return 0;
}

int32_t __tgt_rtl_number_of_devices(void) { return deviceCount(); }

int32_t __tgt_rtl_init_device(int32_t device) {
  if (!validDevice(device))
    return badDevice(device);
  return check(device, theDevice(device).init());
}

int32_t __tgt_rtl_load_binary(int32_t device, const __tgt_device_image *image, ompsim_binary_handle *binary) {
  if (!validDevice(device))
    return badDevice(device);
  HostBinary *loaded = nullptr;
  if (int32_t rc = check(device, theDevice(device).load(image, loaded)))
    return rc;
  imageSegments().add(loaded->handle);
  *binary = reinterpret_cast<ompsim_binary_handle>(loaded);
  return OMPSIM_OFFLOAD_SUCCESS;
}

int32_t __tgt_rtl_get_global(int32_t device, ompsim_binary_handle binary, uint64_t size, const char *name,
                             void **tgt_ptr) {
  if (!validDevice(device))
    return badDevice(device);
  return check(device, theDevice(device).lookup(reinterpret_cast<HostBinary *>(binary), name, *tgt_ptr));
}

int32_t __tgt_rtl_get_globals(int32_t device, ompsim_binary_handle binary, uint64_t n,
                              const char *const *names, const uint64_t *, void **tgt_ptrs) {
  if (!validDevice(device))
    return badDevice(device);
  if (n && (!names || !tgt_ptrs))
    return check(device, Status("host plugin: get_globals with a null argument"));
  return check(device,
               theDevice(device).lookupMany(reinterpret_cast<HostBinary *>(binary), n, names, tgt_ptrs));
}

int32_t __tgt_rtl_get_function(int32_t device, ompsim_binary_handle binary, const char *name, void **kernel) {
  if (!validDevice(device))
    return badDevice(device);
  return check(device, theDevice(device).lookup(reinterpret_cast<HostBinary *>(binary), name, *kernel));
}

void *__tgt_rtl_data_alloc(int32_t device, int64_t size, void *, int32_t) {
  if (!validDevice(device)) {
    badDevice(device);
    return nullptr;
  }
  // The runtime passes size_t sizes as int64_t: a negative one is a size of
  // 2^63 bytes or more, which no allocation satisfies.
  if (size < 0 || static_cast<uint64_t>(size) > UINT64_MAX - 63) {
    fail(device, "host plugin: cannot allocate " + std::to_string(static_cast<uint64_t>(size)) +
                     " bytes: larger than any address space");
    return nullptr;
  }
  // Cache-line alignment: device data may hold any type, atomics included.
  size_t bytes = static_cast<size_t>(size > 0 ? size : 1);
  void *p = std::aligned_alloc(64, (bytes + 63) & ~size_t(63));
  if (!p) {
    fail(device, "host plugin: cannot allocate " + std::to_string(size) + " bytes");
    return nullptr;
  }
  allocations().add(p, bytes);
  return p;
}

int32_t __tgt_rtl_data_delete(int32_t device, void *tgt_ptr, int32_t) {
  if (!validDevice(device))
    return badDevice(device);
  if (!tgt_ptr)
    return OMPSIM_OFFLOAD_SUCCESS;
  if (Status why = allocations().remove(tgt_ptr); !why.empty())
    return fail(device, "host plugin: cannot free " + why);
  std::free(tgt_ptr);
  return OMPSIM_OFFLOAD_SUCCESS;
}

int32_t __tgt_rtl_data_submit(int32_t device, void *tgt_ptr, const void *hst_ptr, int64_t size) {
  if (!validDevice(device))
    return badDevice(device);
  if (size <= 0)
    return OMPSIM_OFFLOAD_SUCCESS;
  return check(device, checkedCopy(const_cast<void *>(hst_ptr), reinterpret_cast<uintptr_t>(tgt_ptr),
                                   static_cast<size_t>(size), /*toDevice=*/true));
}

int32_t __tgt_rtl_data_retrieve(int32_t device, void *hst_ptr, const void *tgt_ptr, int64_t size) {
  if (!validDevice(device))
    return badDevice(device);
  if (size <= 0)
    return OMPSIM_OFFLOAD_SUCCESS;
  return check(device, checkedCopy(hst_ptr, reinterpret_cast<uintptr_t>(tgt_ptr), static_cast<size_t>(size),
                                   /*toDevice=*/false));
}

int32_t __tgt_rtl_run_target_region(int32_t device, void *kernel, void **tgt_args, int32_t num_args,
                                    const ompsim_launch_config *config) {
  if (!validDevice(device))
    return badDevice(device);
  return check(device, theDevice(device).run(kernel, tgt_args, num_args, config));
}

const char *__tgt_rtl_last_error(int32_t device) {
  std::lock_guard<std::mutex> lock(errorMutex);
  lastErrorCopy = lastError()[errorSlot(device)];
  return lastErrorCopy.c_str();
}

int32_t __tgt_rtl_set_function_ptr_map(int32_t device, uint64_t n,
                                       const __omp_offloading_fptr_map_ty *table) {
  if (!validDevice(device))
    return badDevice(device);
  return check(device, theDevice(device).publishTable(n, table));
}

int32_t __tgt_rtl_unload_binary(int32_t device, ompsim_binary_handle binary) {
  if (!validDevice(device))
    return badDevice(device);
  return check(device, theDevice(device).unload(reinterpret_cast<HostBinary *>(binary)));
}

int32_t __tgt_rtl_deinit_device(int32_t device) {
  return validDevice(device) ? OMPSIM_OFFLOAD_SUCCESS : badDevice(device);
}

int32_t __tgt_rtl_symbolize(int32_t device, uint64_t tgt_addr, char *buf, uint64_t len) {
  if (!validDevice(device) || !buf || len == 0)
    return 0;
  std::string s = theDevice(device).symbolize(tgt_addr);
  if (s.empty())
    return 0;
  std::strncpy(buf, s.c_str(), len - 1);
  buf[len - 1] = '\0';
  return 1;
}

} // extern "C"

// The plugin C ABI over HostDevice: the only place a Status becomes a return
// code (and the device's last error).
#include "HostPlugin.h"

#include "ompsim/plugin_api.h"
#include "ompsim/trace.hpp"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

using namespace ompsim::hostplugin;

namespace {

HostDevice &theDevice() {
  // Never destroyed: kernels and atexit handlers may run during teardown.
  static HostDevice *device = new HostDevice();
  return *device;
}

std::mutex errorMutex;
thread_local std::string lastErrorCopy;
std::string lastError[2]; // [0]: plugin-wide (-1), [1]: device 0

bool validDevice(int32_t id) { return id == 0; }

int32_t fail(int32_t device, std::string message) {
  std::lock_guard<std::mutex> lock(errorMutex);
  lastError[device == 0 ? 1 : 0] = std::move(message);
  return OMPSIM_OFFLOAD_FAIL;
}

int32_t check(int32_t device, const Status &status) {
  return status.empty() ? OMPSIM_OFFLOAD_SUCCESS : fail(device, status);
}

int32_t badDevice(int32_t device) {
  return fail(-1, "host plugin: device " + std::to_string(device) + " does not exist (it has 1)");
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

int32_t __tgt_rtl_number_of_devices(void) { return 1; }

int32_t __tgt_rtl_init_device(int32_t device) {
  if (!validDevice(device))
    return badDevice(device);
  return check(device, theDevice().init());
}

int32_t __tgt_rtl_load_binary(int32_t device, const __tgt_device_image *image,
                              ompsim_binary_handle *binary) {
  if (!validDevice(device))
    return badDevice(device);
  HostBinary *loaded = nullptr;
  if (int32_t rc = check(device, theDevice().load(image, loaded)))
    return rc;
  *binary = reinterpret_cast<ompsim_binary_handle>(loaded);
  return OMPSIM_OFFLOAD_SUCCESS;
}

int32_t __tgt_rtl_get_global(int32_t device, ompsim_binary_handle binary, uint64_t size,
                             const char *name, void **tgt_ptr) {
  if (!validDevice(device))
    return badDevice(device);
  return check(device, theDevice().lookup(reinterpret_cast<HostBinary *>(binary), name, *tgt_ptr));
}

int32_t __tgt_rtl_get_globals(int32_t device, ompsim_binary_handle binary, uint64_t n,
                              const char *const *names, const uint64_t *, void **tgt_ptrs) {
  if (!validDevice(device))
    return badDevice(device);
  if (n && (!names || !tgt_ptrs))
    return check(device, Status("host plugin: get_globals with a null argument"));
  return check(device, theDevice().lookupMany(reinterpret_cast<HostBinary *>(binary), n, names, tgt_ptrs));
}

int32_t __tgt_rtl_get_function(int32_t device, ompsim_binary_handle binary, const char *name,
                               void **kernel) {
  if (!validDevice(device))
    return badDevice(device);
  return check(device, theDevice().lookup(reinterpret_cast<HostBinary *>(binary), name, *kernel));
}

void *__tgt_rtl_data_alloc(int32_t device, int64_t size, void *, int32_t) {
  if (!validDevice(device)) {
    badDevice(device);
    return nullptr;
  }
  // Cache-line alignment: device data may hold any type, atomics included.
  size_t bytes = static_cast<size_t>(size > 0 ? size : 1);
  void *p = std::aligned_alloc(64, (bytes + 63) & ~size_t(63));
  if (!p)
    fail(device, "host plugin: cannot allocate " + std::to_string(size) + " bytes");
  return p;
}

int32_t __tgt_rtl_data_delete(int32_t device, void *tgt_ptr, int32_t) {
  if (!validDevice(device))
    return badDevice(device);
  std::free(tgt_ptr);
  return OMPSIM_OFFLOAD_SUCCESS;
}

int32_t __tgt_rtl_data_submit(int32_t device, void *tgt_ptr, const void *hst_ptr, int64_t size) {
  if (!validDevice(device))
    return badDevice(device);
  if (size > 0)
    std::memmove(tgt_ptr, hst_ptr, static_cast<size_t>(size));
  return OMPSIM_OFFLOAD_SUCCESS;
}

int32_t __tgt_rtl_data_retrieve(int32_t device, void *hst_ptr, const void *tgt_ptr, int64_t size) {
  if (!validDevice(device))
    return badDevice(device);
  if (size > 0)
    std::memmove(hst_ptr, tgt_ptr, static_cast<size_t>(size));
  return OMPSIM_OFFLOAD_SUCCESS;
}

int32_t __tgt_rtl_run_target_region(int32_t device, void *kernel, void **tgt_args, int32_t num_args,
                                    const ompsim_launch_config *config) {
  if (!validDevice(device))
    return badDevice(device);
  return check(device, theDevice().run(kernel, tgt_args, num_args, config));
}

const char *__tgt_rtl_last_error(int32_t device) {
  std::lock_guard<std::mutex> lock(errorMutex);
  lastErrorCopy = lastError[device == 0 ? 1 : 0];
  return lastErrorCopy.c_str();
}

int32_t __tgt_rtl_set_function_ptr_map(int32_t device, uint64_t n,
                                       const __omp_offloading_fptr_map_ty *table) {
  if (!validDevice(device))
    return badDevice(device);
  return check(device, theDevice().publishTable(n, table));
}

int32_t __tgt_rtl_unload_binary(int32_t device, ompsim_binary_handle binary) {
  if (!validDevice(device))
    return badDevice(device);
  return check(device, theDevice().unload(reinterpret_cast<HostBinary *>(binary)));
}

int32_t __tgt_rtl_deinit_device(int32_t device) {
  return validDevice(device) ? OMPSIM_OFFLOAD_SUCCESS : badDevice(device);
}

int32_t __tgt_rtl_symbolize(int32_t device, uint64_t tgt_addr, char *buf, uint64_t len) {
  if (!validDevice(device) || !buf || len == 0)
    return 0;
  std::string s = theDevice().symbolize(tgt_addr);
  if (s.empty())
    return 0;
  std::strncpy(buf, s.c_str(), len - 1);
  buf[len - 1] = '\0';
  return 1;
}

} // extern "C"

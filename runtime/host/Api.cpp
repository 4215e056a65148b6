// The libomptarget ABI (clang-22) and the omp_* device API: thin wrappers
// over Runtime. This is the only place an llvm::Error becomes a return code
// or a fatal "ompsim: ..." line.
#include "RectCopy.h"
#include "Runtime.h"

#include "ompsim/Trace.h"
#include "ompsim/offload_abi.h"

#include <fmt/format.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace ompsim::host;

namespace {

constexpr int OFFLOAD_SUCCESS = OMPSIM_OFFLOAD_SUCCESS;
constexpr int OFFLOAD_FAIL = OMPSIM_OFFLOAD_FAIL;

[[noreturn]] void fatal(llvm::Error err) { Runtime::fatal(llvm::toString(std::move(err))); }

void dataCall(DataOp op, int64_t device, int32_t n, void **bases, void **begins, int64_t *sizes,
              int64_t *types, void **names, void **mappers) {
  auto args = makeMapArgs(n, bases, begins, sizes, reinterpret_cast<const int64_t *>(types), names, mappers);
  // Map errors (a missing present item, an extended section, a device copy
  // failure) are fatal whatever OMP_TARGET_OFFLOAD says, as upstream does.
  if (auto err = Runtime::get().targetData(op, device, std::move(args), bases))
    fatal(std::move(err));
}

/// Device for an omp_* call: null for the host; `ok` false for an invalid one.
Device *apiDevice(int device, bool &ok) {
  ok = true;
  auto d = Runtime::get().device(device);
  if (!d) {
    ompsim::trace::error(llvm::toString(d.takeError()));
    ok = false;
    return nullptr;
  }
  return *d;
}

} // namespace

extern "C" {

// ---- registration ----------------------------------------------------------

void __tgt_register_lib(__tgt_bin_desc *desc) {
  if (auto err = Runtime::get().registerLib(desc))
    fatal(std::move(err));
}

void __tgt_unregister_lib(__tgt_bin_desc *desc) {
  if (auto err = Runtime::get().unregisterLib(desc))
    fatal(std::move(err));
}

void __tgt_register_requires(int64_t flags) { Runtime::get().registerRequires(flags); }

void __tgt_init_all_rtls() {
  if (auto err = Runtime::get().ensurePlugins())
    fatal(std::move(err));
}

// ---- kernels ---------------------------------------------------------------

int __tgt_target_kernel(ompsim_ident *loc, int64_t device, int32_t teams, int32_t threads, void *regionId,
                        __tgt_kernel_arguments *args) {
  Runtime &rt = Runtime::get();
  // The host device (omp_get_initial_device()): clang's code runs the host
  // version of the region, as with stock libomptarget.
  if (rt.runsOnHost(device))
    return OFFLOAD_FAIL;
  bool launchFailure = false;
  if (auto err = rt.targetKernel(device, teams, threads, regionId, args, launchFailure)) {
    if (!launchFailure || rt.policy() == OffloadPolicy::Mandatory)
      fatal(std::move(err));
    // Not mandatory: clang's code runs the host version of the region.
    OMPSIM_TRACE_EVENT(Cat::Launch, "fallback").str("reason", llvm::toString(std::move(err)));
    return OFFLOAD_FAIL;
  }
  return OFFLOAD_SUCCESS;
}

int __tgt_target_kernel_nowait(ompsim_ident *loc, int64_t device, int32_t teams, int32_t threads,
                               void *regionId, __tgt_kernel_arguments *args, int32_t, void *, int32_t,
                               void *) {
  // Kernels run to completion; a nowait region is complete when this returns.
  return __tgt_target_kernel(loc, device, teams, threads, regionId, args);
}

void __kmpc_push_target_tripcount_mapper(ompsim_ident *, int64_t device, uint64_t count) {
  Runtime::get().pushTripcount(device, count);
}

void __kmpc_push_target_tripcount(int64_t device, uint64_t count) {
  Runtime::get().pushTripcount(device, count);
}

// ---- target data -----------------------------------------------------------

void __tgt_target_data_begin_mapper(ompsim_ident *, int64_t device, int32_t n, void **bases, void **begins,
                                    int64_t *sizes, int64_t *types, void **names, void **mappers) {
  dataCall(DataOp::Begin, device, n, bases, begins, sizes, types, names, mappers);
}
void __tgt_target_data_begin_nowait_mapper(ompsim_ident *loc, int64_t device, int32_t n, void **bases,
                                           void **begins, int64_t *sizes, int64_t *types, void **names,
                                           void **mappers, int32_t, void *, int32_t, void *) {
  dataCall(DataOp::Begin, device, n, bases, begins, sizes, types, names, mappers);
}
void __tgt_target_data_begin(int64_t device, int32_t n, void **bases, void **begins, int64_t *sizes,
                             int64_t *types) {
  dataCall(DataOp::Begin, device, n, bases, begins, sizes, types, nullptr, nullptr);
}
void __tgt_target_data_begin_nowait(int64_t device, int32_t n, void **bases, void **begins, int64_t *sizes,
                                    int64_t *types, int32_t, void *, int32_t, void *) {
  dataCall(DataOp::Begin, device, n, bases, begins, sizes, types, nullptr, nullptr);
}

void __tgt_target_data_end_mapper(ompsim_ident *, int64_t device, int32_t n, void **bases, void **begins,
                                  int64_t *sizes, int64_t *types, void **names, void **mappers) {
  dataCall(DataOp::End, device, n, bases, begins, sizes, types, names, mappers);
}
void __tgt_target_data_end_nowait_mapper(ompsim_ident *, int64_t device, int32_t n, void **bases,
                                         void **begins, int64_t *sizes, int64_t *types, void **names,
                                         void **mappers, int32_t, void *, int32_t, void *) {
  dataCall(DataOp::End, device, n, bases, begins, sizes, types, names, mappers);
}
void __tgt_target_data_end(int64_t device, int32_t n, void **bases, void **begins, int64_t *sizes,
                           int64_t *types) {
  dataCall(DataOp::End, device, n, bases, begins, sizes, types, nullptr, nullptr);
}
void __tgt_target_data_end_nowait(int64_t device, int32_t n, void **bases, void **begins, int64_t *sizes,
                                  int64_t *types, int32_t, void *, int32_t, void *) {
  dataCall(DataOp::End, device, n, bases, begins, sizes, types, nullptr, nullptr);
}

void __tgt_target_data_update_mapper(ompsim_ident *, int64_t device, int32_t n, void **bases, void **begins,
                                     int64_t *sizes, int64_t *types, void **names, void **mappers) {
  dataCall(DataOp::Update, device, n, bases, begins, sizes, types, names, mappers);
}
void __tgt_target_data_update_nowait_mapper(ompsim_ident *, int64_t device, int32_t n, void **bases,
                                            void **begins, int64_t *sizes, int64_t *types, void **names,
                                            void **mappers, int32_t, void *, int32_t, void *) {
  dataCall(DataOp::Update, device, n, bases, begins, sizes, types, names, mappers);
}
void __tgt_target_data_update(int64_t device, int32_t n, void **bases, void **begins, int64_t *sizes,
                              int64_t *types) {
  dataCall(DataOp::Update, device, n, bases, begins, sizes, types, nullptr, nullptr);
}
void __tgt_target_data_update_nowait(int64_t device, int32_t n, void **bases, void **begins, int64_t *sizes,
                                     int64_t *types, int32_t, void *, int32_t, void *) {
  dataCall(DataOp::Update, device, n, bases, begins, sizes, types, nullptr, nullptr);
}

// ---- declare mapper --------------------------------------------------------

int64_t __tgt_mapper_num_components(void *handle) {
  return static_cast<int64_t>(static_cast<MapperComponents *>(handle)->components.size());
}

void __tgt_push_mapper_component(void *handle, void *base, void *begin, int64_t size, int64_t type,
                                 void *name) {
  static_cast<MapperComponents *>(handle)->components.push_back(
      MapArg{base, begin, size, type, name, nullptr});
}

// ---- omp_* device API ------------------------------------------------------

int omp_get_num_devices(void) { return Runtime::get().numDevices(); }

// libomp's own omp_get_num_devices (which programs bind to, through its symbol
// version) asks for this first; RTLD_NEXT from libomp cannot see a preloaded runtime.
int __tgt_get_num_devices(void) { return Runtime::get().numDevices(); }

int omp_get_initial_device(void) { return Runtime::get().numDevices(); }

int omp_get_device_num(void) { return Runtime::get().numDevices(); } // called on the host

void *omp_target_alloc(size_t size, int device) {
  bool ok;
  Device *d = apiDevice(device, ok);
  if (!ok)
    return nullptr;
  if (!d)
    return std::malloc(size);
  auto p = d->allocate(size, nullptr);
  if (!p) {
    ompsim::trace::error(llvm::toString(p.takeError()));
    return nullptr;
  }
  return reinterpret_cast<void *>(*p);
}

void omp_target_free(void *ptr, int device) {
  if (!ptr)
    return;
  bool ok;
  Device *d = apiDevice(device, ok);
  if (!ok)
    return;
  if (!d)
    return std::free(ptr);
  if (auto err = d->release(reinterpret_cast<uint64_t>(ptr)))
    ompsim::trace::error(llvm::toString(std::move(err)));
}

int omp_target_is_present(const void *ptr, int device) {
  bool ok;
  Device *d = apiDevice(device, ok);
  if (!ok)
    return 0;
  if (!d)
    return 1;
  std::lock_guard<std::recursive_mutex> lock(d->mappingTable().mutex());
  return d->mappingTable().lookup(reinterpret_cast<uintptr_t>(ptr), 0).entry != nullptr;
}

int omp_target_is_accessible(const void *ptr, size_t size, int device) {
  bool ok;
  Device *d = apiDevice(device, ok);
  // Device memory is separate from host memory (no unified shared memory).
  return ok && !d ? 1 : 0;
}

void *omp_get_mapped_ptr(const void *ptr, int device) {
  if (!ptr)
    return nullptr;
  bool ok;
  Device *d = apiDevice(device, ok);
  if (!ok)
    return nullptr;
  if (!d)
    return const_cast<void *>(ptr);
  std::lock_guard<std::recursive_mutex> lock(d->mappingTable().mutex());
  MapLookup found = d->mappingTable().lookup(reinterpret_cast<uintptr_t>(ptr), 0);
  if (!found.entry)
    return nullptr;
  return reinterpret_cast<void *>(found.entry->translate(reinterpret_cast<uintptr_t>(ptr)));
}

int omp_target_memcpy(void *dst, const void *src, size_t length, size_t dstOffset, size_t srcOffset,
                      int dstDevice, int srcDevice) {
  bool okDst, okSrc;
  Device *dd = apiDevice(dstDevice, okDst);
  Device *sd = apiDevice(srcDevice, okSrc);
  if (!okDst || !okSrc || (length && (!dst || !src)))
    return OFFLOAD_FAIL;
  char *to = static_cast<char *>(dst) + dstOffset;
  const char *from = static_cast<const char *>(src) + srcOffset;
  llvm::Error err = llvm::Error::success();
  if (!dd && !sd) {
    std::memmove(to, from, length);
  } else if (dd && !sd) {
    err = dd->submit(reinterpret_cast<uint64_t>(to), from, length);
  } else if (!dd && sd) {
    err = sd->retrieve(to, reinterpret_cast<uint64_t>(from), length);
  } else {
    // Device to device through a host buffer: works across plugins too.
    std::vector<char> buffer(length);
    err = sd->retrieve(buffer.data(), reinterpret_cast<uint64_t>(from), length);
    if (!err)
      err = dd->submit(reinterpret_cast<uint64_t>(to), buffer.data(), length);
  }
  if (err) {
    ompsim::trace::error(llvm::toString(std::move(err)));
    return OFFLOAD_FAIL;
  }
  return OFFLOAD_SUCCESS;
}

int omp_target_memcpy_rect(void *dst, const void *src, size_t elementSize, int numDims, const size_t *volume,
                           const size_t *dstOffsets, const size_t *srcOffsets, const size_t *dstDimensions,
                           const size_t *srcDimensions, int dstDevice, int srcDevice) {
  if (!dst && !src)
    return INT_MAX; // the number of dimensions supported
  if (!dst || !src || numDims < 1 || !volume || !dstOffsets || !srcOffsets || !dstDimensions ||
      !srcDimensions)
    return OFFLOAD_FAIL;
  // One transfer per contiguous run: whole rows merge into one.
  for (const CopyRun &run :
       rectCopyRuns(elementSize, numDims, volume, dstOffsets, srcOffsets, dstDimensions, srcDimensions)) {
    int rc = omp_target_memcpy(dst, src, run.size, run.dst, run.src, dstDevice, srcDevice);
    if (rc != OFFLOAD_SUCCESS)
      return rc;
  }
  return OFFLOAD_SUCCESS;
}

void *omp_target_memset(void *ptr, int value, size_t count, int device) {
  bool ok;
  Device *d = apiDevice(device, ok);
  if (!ok || !ptr)
    return ptr;
  if (!d)
    return std::memset(ptr, value, count);
  std::vector<unsigned char> pattern(count, static_cast<unsigned char>(value));
  if (auto err = d->submit(reinterpret_cast<uint64_t>(ptr), pattern.data(), count))
    ompsim::trace::error(llvm::toString(std::move(err)));
  return ptr;
}

int omp_target_associate_ptr(const void *hostPtr, const void *devicePtr, size_t size, size_t deviceOffset,
                             int device) {
  bool ok;
  Device *d = apiDevice(device, ok);
  if (!ok || !d || !hostPtr || !devicePtr)
    return OFFLOAD_FAIL;
  std::lock_guard<std::recursive_mutex> lock(d->mappingTable().mutex());
  auto host = reinterpret_cast<uintptr_t>(hostPtr);
  uint64_t tgt = reinterpret_cast<uint64_t>(devicePtr) + deviceOffset;
  MapLookup found = d->mappingTable().lookup(host, size);
  if (found.entry) {
    // Associating the same pair again is allowed; anything else is not.
    return found.contained && found.entry->translate(host) == tgt ? OFFLOAD_SUCCESS : OFFLOAD_FAIL;
  }
  MapEntry e;
  e.hstBegin = host;
  e.hstEnd = host + size;
  e.tgtBegin = tgt;
  e.dynamicRef = MapEntry::Infinite;
  e.associated = true;
  e.name = "omp_target_associate_ptr";
  d->mappingTable().insert(std::move(e));
  return OFFLOAD_SUCCESS;
}

int omp_target_disassociate_ptr(const void *hostPtr, int device) {
  bool ok;
  Device *d = apiDevice(device, ok);
  if (!ok || !d)
    return OFFLOAD_FAIL;
  std::lock_guard<std::recursive_mutex> lock(d->mappingTable().mutex());
  MapLookup found = d->mappingTable().lookup(reinterpret_cast<uintptr_t>(hostPtr), 0);
  if (!found.entry || !found.entry->associated ||
      found.entry->hstBegin != reinterpret_cast<uintptr_t>(hostPtr))
    return OFFLOAD_FAIL;
  d->mappingTable().erase(*found.entry);
  return OFFLOAD_SUCCESS;
}

} // extern "C"

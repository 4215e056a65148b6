// The asynchronous device memory routines (omp_target_memcpy_async,
// omp_target_memcpy_rect_async, omp_target_memset_async).
//
// As in stock libomptarget, each call becomes an OpenMP task (a hidden helper
// task where libomp has them) that depends on the caller's depend objects and
// runs the synchronous routine: the copy happens after every task those
// objects name, and `taskwait` (or a later task depending on the same
// objects) waits for it.
#include "ompsim/Trace.h"
#include "ompsim/offload_abi.h"

#include <omp.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

constexpr int OFFLOAD_SUCCESS = OMPSIM_OFFLOAD_SUCCESS;
constexpr int OFFLOAD_FAIL = OMPSIM_OFFLOAD_FAIL;

// libomp's task ABI (kmp.h), declared here because libomp installs no header
// for it. Only the leading fields are used.
using TaskRoutine = int32_t (*)(int32_t gtid, void *task);
struct KmpTask {
  void *shareds;
  TaskRoutine routine;
  int32_t partId;
  void *data1;
  void *data2;
};
/// kmp_depend_info_t: what an omp_depend_t points at.
struct KmpDependInfo {
  intptr_t baseAddr;
  size_t len;
  uint32_t flags;
};
static_assert(sizeof(KmpDependInfo) == 24, "kmp_depend_info_t is 24 bytes");
/// kmp_tasking_flags_t bit of a hidden helper task.
constexpr int32_t TaskHiddenHelper = 1 << 7;

} // namespace

extern "C" {
int32_t __kmpc_global_thread_num(void *loc);
KmpTask *__kmpc_omp_target_task_alloc(void *loc, int32_t gtid, int32_t flags, size_t sizeofTask,
                                      size_t sizeofShareds, TaskRoutine entry, int64_t device);
int32_t __kmpc_omp_task_with_deps(void *loc, int32_t gtid, KmpTask *task, int32_t ndeps, KmpDependInfo *deps,
                                  int32_t ndepsNoAlias, KmpDependInfo *noAliasDeps);
}

namespace {

/// The arguments of one asynchronous call, owned by its task.
struct AsyncCopy {
  enum Kind { Linear, Rect, Fill } kind = Linear;
  void *dst = nullptr;
  const void *src = nullptr;
  size_t length = 0; // bytes; the element size for Rect
  size_t dstOffset = 0, srcOffset = 0;
  int dstDevice = 0, srcDevice = 0;
  int value = 0; // Fill
  // Rect: the caller's arrays may be gone when the task runs, so keep copies.
  int numDims = 0;
  std::vector<size_t> volume, dstOffsets, srcOffsets, dstDims, srcDims;
};

int32_t runAsyncCopy(int32_t, void *taskPtr) {
  auto *task = static_cast<KmpTask *>(taskPtr);
  auto *c = static_cast<AsyncCopy *>(task->shareds);
  int rc = OFFLOAD_SUCCESS;
  switch (c->kind) {
  case AsyncCopy::Linear:
    rc = omp_target_memcpy(c->dst, c->src, c->length, c->dstOffset, c->srcOffset, c->dstDevice, c->srcDevice);
    break;
  case AsyncCopy::Rect:
    rc = omp_target_memcpy_rect(c->dst, c->src, c->length, c->numDims, c->volume.data(), c->dstOffsets.data(),
                                c->srcOffsets.data(), c->dstDims.data(), c->srcDims.data(), c->dstDevice,
                                c->srcDevice);
    break;
  case AsyncCopy::Fill:
    omp_target_memset(c->dst, c->value, c->length, c->dstDevice);
    break;
  }
  delete c;
  return rc;
}

/// Starts `copy` as a task after the dependences in `deps`; takes ownership.
int startTask(AsyncCopy *copy, int depCount, omp_depend_t *deps) {
  if (depCount < 0 || (depCount > 0 && !deps)) {
    ompsim::trace::error("asynchronous device copy: invalid depend object list");
    delete copy;
    return OFFLOAD_FAIL;
  }
  int32_t gtid = __kmpc_global_thread_num(nullptr);
  KmpTask *task =
      __kmpc_omp_target_task_alloc(nullptr, gtid, TaskHiddenHelper, sizeof(KmpTask), 0, runAsyncCopy, -1);
  if (!task) {
    ompsim::trace::error("asynchronous device copy: cannot create its task");
    delete copy;
    return OFFLOAD_FAIL;
  }
  task->shareds = copy;
  // Each omp_depend_t points at the dependence the depobj construct built.
  std::vector<KmpDependInfo> list;
  list.reserve(depCount);
  for (int i = 0; i < depCount; ++i)
    list.push_back(*reinterpret_cast<KmpDependInfo *>(deps[i]));
  __kmpc_omp_task_with_deps(nullptr, gtid, task, depCount, list.data(), 0, nullptr);
  return OFFLOAD_SUCCESS;
}

} // namespace

extern "C" {

int omp_target_memcpy_async(void *dst, const void *src, size_t length, size_t dstOffset, size_t srcOffset,
                            int dstDevice, int srcDevice, int depCount, omp_depend_t *deps) {
  if (!dst || !src)
    return OFFLOAD_FAIL;
  auto *copy = new AsyncCopy;
  copy->dst = dst;
  copy->src = src;
  copy->length = length;
  copy->dstOffset = dstOffset;
  copy->srcOffset = srcOffset;
  copy->dstDevice = dstDevice;
  copy->srcDevice = srcDevice;
  return startTask(copy, depCount, deps);
}

int omp_target_memcpy_rect_async(void *dst, const void *src, size_t elementSize, int numDims,
                                 const size_t *volume, const size_t *dstOffsets, const size_t *srcOffsets,
                                 const size_t *dstDimensions, const size_t *srcDimensions, int dstDevice,
                                 int srcDevice, int depCount, omp_depend_t *deps) {
  if (!dst && !src)
    return INT_MAX; // the number of dimensions supported, as the synchronous form
  if (!dst || !src || numDims < 1 || !volume || !dstOffsets || !srcOffsets || !dstDimensions ||
      !srcDimensions)
    return OFFLOAD_FAIL;
  auto *copy = new AsyncCopy;
  copy->kind = AsyncCopy::Rect;
  copy->dst = dst;
  copy->src = src;
  copy->length = elementSize;
  copy->dstDevice = dstDevice;
  copy->srcDevice = srcDevice;
  copy->numDims = numDims;
  copy->volume.assign(volume, volume + numDims);
  copy->dstOffsets.assign(dstOffsets, dstOffsets + numDims);
  copy->srcOffsets.assign(srcOffsets, srcOffsets + numDims);
  copy->dstDims.assign(dstDimensions, dstDimensions + numDims);
  copy->srcDims.assign(srcDimensions, srcDimensions + numDims);
  return startTask(copy, depCount, deps);
}

void *omp_target_memset_async(void *ptr, int value, size_t count, int device, int depCount,
                              omp_depend_t *deps) {
  // Nothing to fill: a no-op, as the synchronous form.
  if (!ptr || count == 0)
    return ptr;
  auto *copy = new AsyncCopy;
  copy->kind = AsyncCopy::Fill;
  copy->dst = ptr;
  copy->length = count;
  copy->dstDevice = device;
  copy->value = value;
  (void)startTask(copy, depCount, deps);
  return ptr;
}

} // extern "C"

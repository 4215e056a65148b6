// The asynchronous device memory routines (omp_target_memcpy_async,
// omp_target_memcpy_rect_async, omp_target_memset_async).
//
// As in stock libomptarget, each call becomes an OpenMP task (a hidden helper
// task where libomp has them) that depends on the caller's depend objects and
// runs the synchronous routine: the copy happens after every task those
// objects name, and `taskwait` (or a later task depending on the same
// objects) waits for it.
#include "ApiHelpers.h"

#include "ompsim/Trace.h"
#include "ompsim/offload_abi.h"

#include <omp.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

// libomp's task ABI (kmp.h), declared here because libomp installs no header
// for it. Only the leading fields are used.
using TaskRoutine = int32_t (*)(int32_t Gtid, void *Task);
struct KmpTask {
  void *Shareds;
  TaskRoutine Routine;
  int32_t PartId;
  void *Data1;
  void *Data2;
};
/// kmp_depend_info_t: what an omp_depend_t points at.
struct KmpDependInfo {
  intptr_t BaseAddr;
  size_t Len;
  uint32_t Flags;
};
static_assert(sizeof(KmpDependInfo) == 24, "kmp_depend_info_t is 24 bytes");
/// kmp_tasking_flags_t bit of a hidden helper task.
constexpr int32_t TaskHiddenHelper = 1 << 7;

} // namespace

extern "C" {
int32_t __kmpc_global_thread_num(void *Loc);
KmpTask *__kmpc_omp_target_task_alloc(void *Loc, int32_t Gtid, int32_t Flags, size_t SizeofTask,
                                      size_t SizeofShareds, TaskRoutine Entry, int64_t DeviceNum);
int32_t __kmpc_omp_task_with_deps(void *Loc, int32_t Gtid, KmpTask *Task, int32_t Ndeps, KmpDependInfo *Deps,
                                  int32_t NdepsNoAlias, KmpDependInfo *NoAliasDeps);
}

namespace {

/// The arguments of one asynchronous call, owned by its task.
struct AsyncCopy {
  enum Kind { Linear, Rect, Fill } Kind = Linear;
  void *Dst = nullptr;
  const void *Src = nullptr;
  size_t Length = 0; // bytes; the element size for Rect
  size_t DstOffset = 0, SrcOffset = 0;
  int DstDevice = 0, SrcDevice = 0;
  int Value = 0; // Fill
  // Rect: the caller's arrays may be gone when the task runs, so keep copies.
  int NumDims = 0;
  std::vector<size_t> Volume, DstOffsets, SrcOffsets, DstDims, SrcDims;
};

int32_t runAsyncCopy(int32_t, void *TaskPtr) {
  auto *Task = static_cast<KmpTask *>(TaskPtr);
  auto *C = static_cast<AsyncCopy *>(Task->Shareds);
  int Rc = OMPSIM_OFFLOAD_SUCCESS;
  switch (C->Kind) {
  case AsyncCopy::Linear:
    Rc = omp_target_memcpy(C->Dst, C->Src, C->Length, C->DstOffset, C->SrcOffset, C->DstDevice, C->SrcDevice);
    break;
  case AsyncCopy::Rect:
    Rc = omp_target_memcpy_rect(C->Dst, C->Src, C->Length, C->NumDims, C->Volume.data(), C->DstOffsets.data(),
                                C->SrcOffsets.data(), C->DstDims.data(), C->SrcDims.data(), C->DstDevice,
                                C->SrcDevice);
    break;
  case AsyncCopy::Fill:
    omp_target_memset(C->Dst, C->Value, C->Length, C->DstDevice);
    break;
  }
  delete C;
  return Rc;
}

/// Starts `copy` as a task after the dependences in `Deps`; takes ownership.
int startTask(AsyncCopy *Copy, int DepCount, omp_depend_t *Deps) {
  if (DepCount < 0 || (DepCount > 0 && !Deps)) {
    ompsim::trace::error("asynchronous device copy: invalid depend object list");
    delete Copy;
    return OMPSIM_OFFLOAD_FAIL;
  }
  int32_t Gtid = __kmpc_global_thread_num(nullptr);
  KmpTask *Task =
      __kmpc_omp_target_task_alloc(nullptr, Gtid, TaskHiddenHelper, sizeof(KmpTask), 0, runAsyncCopy, -1);
  if (!Task) {
    ompsim::trace::error("asynchronous device copy: cannot create its task");
    delete Copy;
    return OMPSIM_OFFLOAD_FAIL;
  }
  Task->Shareds = Copy;
  // Each omp_depend_t points at the dependence the depobj construct built.
  std::vector<KmpDependInfo> List;
  List.reserve(DepCount);
  for (int I = 0; I < DepCount; ++I)
    List.push_back(*reinterpret_cast<KmpDependInfo *>(Deps[I]));
  __kmpc_omp_task_with_deps(nullptr, Gtid, Task, DepCount, List.data(), 0, nullptr);
  return OMPSIM_OFFLOAD_SUCCESS;
}

} // namespace

extern "C" {

int omp_target_memcpy_async(void *Dst, const void *Src, size_t Length, size_t DstOffset, size_t SrcOffset,
                            int DstDevice, int SrcDevice, int DepCount, omp_depend_t *Deps) {
  OMPSIM_API_CALL;
  if (!Dst || !Src)
    return OMPSIM_OFFLOAD_FAIL;
  auto *Copy = new AsyncCopy;
  Copy->Dst = Dst;
  Copy->Src = Src;
  Copy->Length = Length;
  Copy->DstOffset = DstOffset;
  Copy->SrcOffset = SrcOffset;
  Copy->DstDevice = DstDevice;
  Copy->SrcDevice = SrcDevice;
  return startTask(Copy, DepCount, Deps);
}

int omp_target_memcpy_rect_async(void *Dst, const void *Src, size_t ElementSize, int NumDims,
                                 const size_t *Volume, const size_t *DstOffsets, const size_t *SrcOffsets,
                                 const size_t *DstDimensions, const size_t *SrcDimensions, int DstDevice,
                                 int SrcDevice, int DepCount, omp_depend_t *Deps) {
  OMPSIM_API_CALL;
  if (!Dst && !Src)
    return INT_MAX; // the number of dimensions supported, as the synchronous form
  if (!Dst || !Src || NumDims < 1 || !Volume || !DstOffsets || !SrcOffsets || !DstDimensions ||
      !SrcDimensions)
    return OMPSIM_OFFLOAD_FAIL;
  auto *Copy = new AsyncCopy;
  Copy->Kind = AsyncCopy::Rect;
  Copy->Dst = Dst;
  Copy->Src = Src;
  Copy->Length = ElementSize;
  Copy->DstDevice = DstDevice;
  Copy->SrcDevice = SrcDevice;
  Copy->NumDims = NumDims;
  Copy->Volume.assign(Volume, Volume + NumDims);
  Copy->DstOffsets.assign(DstOffsets, DstOffsets + NumDims);
  Copy->SrcOffsets.assign(SrcOffsets, SrcOffsets + NumDims);
  Copy->DstDims.assign(DstDimensions, DstDimensions + NumDims);
  Copy->SrcDims.assign(SrcDimensions, SrcDimensions + NumDims);
  return startTask(Copy, DepCount, Deps);
}

void *omp_target_memset_async(void *Ptr, int Value, size_t Count, int DeviceNum, int DepCount,
                              omp_depend_t *Deps) {
  OMPSIM_API_CALL;
  // Nothing to fill: a no-op, as the synchronous form.
  if (!Ptr || Count == 0)
    return Ptr;
  auto *Copy = new AsyncCopy;
  Copy->Kind = AsyncCopy::Fill;
  Copy->Dst = Ptr;
  Copy->Length = Count;
  Copy->DstDevice = DeviceNum;
  Copy->Value = Value;
  (void)startTask(Copy, DepCount, Deps);
  return Ptr;
}

} // extern "C"

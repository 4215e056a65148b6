//===- Tasks.cpp - explicit tasks as a GPU runs them ----------------------===//
//
// A task runs at once, on the thread that creates it, to its end (undeferred,
// as stock's GPU runtime runs tasks): its dependences are then met by program
// order, taskwait and taskgroup have nothing left to wait for, and a
// taskloop is one task over all its iterations.
//
//===----------------------------------------------------------------------===//

#include "State.h"

using namespace ompsim::gpu;

#define OMPSIM_GPU_API extern "C" __attribute__((used, retain))

namespace {

struct TaskDescriptor;
using TaskEntry = int32_t (*)(int32_t, TaskDescriptor *);

/// The head of libomp's kmp_task_t; the task's private copies follow it.
struct TaskDescriptor {
  void *Shareds;
  TaskEntry Routine;
  int32_t PartId;
};

void run(TaskDescriptor *Task, int32_t Gtid) {
  Task->Routine(Gtid, Task);
  heapFree(Task);
}

} // namespace

OMPSIM_GPU_API TaskDescriptor *__kmpc_omp_task_alloc(IdentTy *, int32_t, int32_t, uint64_t TaskBytes,
                                                     uint64_t SharedBytes, TaskEntry Routine) {
  uint64_t Padded = (TaskBytes + 15) & ~uint64_t(15);
  auto *Task = static_cast<TaskDescriptor *>(heapAlloc(Padded + SharedBytes));
  if (!Task)
    fail("the device heap is exhausted (a task)");
  Task->Shareds = SharedBytes ? reinterpret_cast<char *>(Task) + Padded : nullptr;
  Task->Routine = Routine;
  Task->PartId = 0;
  return Task;
}

OMPSIM_GPU_API int32_t __kmpc_omp_task(IdentTy *, int32_t Gtid, TaskDescriptor *Task) {
  run(Task, Gtid);
  return 0;
}

OMPSIM_GPU_API int32_t __kmpc_omp_task_with_deps(IdentTy *, int32_t Gtid, TaskDescriptor *Task, int32_t,
                                                 void *, int32_t, void *) {
  run(Task, Gtid);
  return 0;
}

OMPSIM_GPU_API void __kmpc_omp_task_begin_if0(IdentTy *, int32_t, TaskDescriptor *) {}
OMPSIM_GPU_API void __kmpc_omp_task_complete_if0(IdentTy *, int32_t, TaskDescriptor *Task) { heapFree(Task); }
OMPSIM_GPU_API void __kmpc_omp_wait_deps(IdentTy *, int32_t, int32_t, void *, int32_t, void *) {}
OMPSIM_GPU_API int32_t __kmpc_omp_taskwait(IdentTy *, int32_t) { return 0; }
OMPSIM_GPU_API int32_t __kmpc_omp_taskyield(IdentTy *, int32_t, int32_t) { return 0; }
OMPSIM_GPU_API void __kmpc_taskgroup(IdentTy *, int32_t) {}
OMPSIM_GPU_API void __kmpc_end_taskgroup(IdentTy *, int32_t) {}

OMPSIM_GPU_API void __kmpc_taskloop(IdentTy *, int32_t Gtid, TaskDescriptor *Task, int32_t, uint64_t *,
                                    uint64_t *, int64_t, int32_t, int32_t, uint64_t, void *) {
  run(Task, Gtid);
}

// Task reductions. A GPU runs each task at once on the thread that meets
// it, so a task's part of a reduction item is the item the encountering
// thread sees (its private copy under a reduction(task, ...) modifier, the
// original in a taskgroup): every lookup answers the item itself, and the
// enclosing reduction combines as usual.
OMPSIM_GPU_API void *__kmpc_taskred_init(int32_t, int32_t, void *Data) { return Data; }
OMPSIM_GPU_API void *__kmpc_task_reduction_init(int32_t, int32_t, void *Data) { return Data; }
OMPSIM_GPU_API void *__kmpc_taskred_modifier_init(IdentTy *, int32_t, int32_t, int32_t, void *Data) {
  return Data;
}
OMPSIM_GPU_API void *__kmpc_task_reduction_modifier_init(IdentTy *, int32_t, int32_t, int32_t, void *Data) {
  return Data;
}
OMPSIM_GPU_API void __kmpc_task_reduction_modifier_fini(IdentTy *, int32_t, int32_t) {}
OMPSIM_GPU_API void *__kmpc_task_reduction_get_th_data(int32_t, void *, void *Item) { return Item; }

/// A task's affinity clause: a hint a GPU's runtime has no places for.
OMPSIM_GPU_API int32_t __kmpc_omp_reg_task_with_affinity(IdentTy *, int32_t, void *, int32_t, void *) {
  return 0;
}

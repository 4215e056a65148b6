//===- CheckedHeapBinding.h - A GPU image's device heap under the checker -===//
//
// A GPU image's malloc and free are the GPU's device heap. On the simulated
// GPU they are the executor's libc heap, which puts blocks side by side and
// reuses freed ones: an overrun or a use after free reads another block. Under
// the checker (OMPSIM_CHECK) the program's calls go to the checked heap of
// libompsim-device instead (runtime/device/memcheck/), which names them.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_SIMULATOR_GPU_CHECKEDHEAPBINDING_H
#define OMPSIM_SIMULATOR_GPU_CHECKEDHEAPBINDING_H

namespace llvm {
class Module;
} // namespace llvm

namespace ompsim::sim::gpu {

/// Renames the declarations of malloc, free, calloc and realloc in `M`, the
/// program's module before the GPU device runtime is linked into it, to the
/// checked heap's (`__ompsim_heap_malloc`, ...), and makes each call of them
/// one of the entry that also takes the call's source line
/// (`__ompsim_heap_malloc_at`, ...; null without debug information). The
/// runtime's own allocations, linked in later, keep libc's.
void bindCheckedHeap(llvm::Module &M);

} // namespace ompsim::sim::gpu

#endif // OMPSIM_SIMULATOR_GPU_CHECKEDHEAPBINDING_H

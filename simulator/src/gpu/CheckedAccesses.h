//===- CheckedAccesses.h - A GPU image's memory accesses under the checker ===//
//
// A race between two threads of a block on team-shared memory, or a read of
// team-shared memory no thread of the block wrote, gives a wrong result on a
// GPU and nothing names it. Under the checker (OMPSIM_CHECK) on the virtual
// GPU each memory access of the program's code first tells the device
// runtime what it does and from which source line
// (__ompsim_check_access, runtime/device/memcheck/TeamSharedAccesses.h),
// which keeps each team-shared byte's history and names the first race or
// unwritten read.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_SIMULATOR_GPU_CHECKEDACCESSES_H
#define OMPSIM_SIMULATOR_GPU_CHECKEDACCESSES_H

namespace llvm {
class Module;
} // namespace llvm

namespace ompsim::sim::gpu {

/// The device runtime's entry each access calls first:
/// `void (const void *Addr, uint64_t Bytes, uint32_t Kind, const char *Site, uint64_t Value)`.
inline constexpr const char *CheckAccessEntry = "__ompsim_check_access";

/// Puts a call of CheckAccessEntry before each load, store, atomic and
/// memory intrinsic of `M`'s functions, `M` being the program's module after
/// retargetGpuModule() and before the GPU device runtime is linked into it
/// (the runtime's own accesses are not the program's). Accesses to the
/// stack and to constant globals need no call: they keep none. The site is the access's source line
/// ("race.c:31:14") where the module has debug information, else its function.
void instrumentAccesses(llvm::Module &M);

} // namespace ompsim::sim::gpu

#endif // OMPSIM_SIMULATOR_GPU_CHECKEDACCESSES_H

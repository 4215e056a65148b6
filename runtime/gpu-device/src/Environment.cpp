//===- Environment.cpp - the device environment, indirect calls, assert ---===//
//
// The plugin writes the device environment (device number, number of
// devices, the host-to-device function pointer table of `declare target
// indirect`) into the image when it loads it. __llvm_omp_indirect_call_lookup
// (inserted by `ompsim cc`'s pass at indirect call sites; clang-22 inserts
// none) translates a host function pointer through that table.
//
//===----------------------------------------------------------------------===//

#include "State.h"

using namespace ompsim::gpu;

#define OMPSIM_GPU_API extern "C" __attribute__((used, retain))

#if defined(OMPSIM_GPU_SIM)
// The simulated GPU serves the device environment's answers itself (the
// executor binds omp_get_device_num and the indirect-call lookup to the
// device runtime of its process, which knows the launch and the table), and
// a failed assert or error directive names the kernel's block and thread.
const DeviceEnvironmentTy &ompsim::gpu::deviceEnvironment() { return *__ompsim_vgpu_device_environment(); }

OMPSIM_GPU_API [[noreturn]] void __assert_fail(const char *Assertion, const char *File, uint32_t Line,
                                               const char *Function) {
  __ompsim_vgpu_assert_fail(Assertion, File, Line, Function);
}

OMPSIM_GPU_API void __kmpc_error(IdentTy *, int32_t Severity, const char *Message) {
  __ompsim_vgpu_error(Severity, Message);
}
#else
/// Constant memory, filled in by the plugin; zero if it writes nothing.
extern "C" [[gnu::weak, clang::loader_uninitialized]]
__attribute__((address_space(4))) DeviceEnvironmentTy __omp_rtl_device_environment;

const DeviceEnvironmentTy &ompsim::gpu::deviceEnvironment() {
  return *(const DeviceEnvironmentTy *)&__omp_rtl_device_environment;
}

OMPSIM_GPU_API void *__llvm_omp_indirect_call_lookup(void *HostPtr) {
  const DeviceEnvironmentTy &Env = deviceEnvironment();
  auto *Table = reinterpret_cast<const IndirectCallEntry *>(Env.IndirectCallTable);
  uint64_t Lower = 0, Upper = Table ? Env.IndirectCallTableSize : 0;
  while (Lower < Upper) {
    uint64_t Middle = Lower + (Upper - Lower) / 2;
    if (Table[Middle].HostPtr == HostPtr)
      return Table[Middle].DevicePtr;
    if (reinterpret_cast<uint64_t>(Table[Middle].HostPtr) < reinterpret_cast<uint64_t>(HostPtr))
      Lower = Middle + 1;
    else
      Upper = Middle;
  }
  // Not a host address of an indirect function: a device address already.
  return HostPtr;
}

#if defined(__NVPTX__)
extern "C" int vprintf(const char *Format, void *Arguments);
#endif

/// A failed assert: file, line, function, then the kernel's block and
/// thread; the kernel ends as a trap ends it.
OMPSIM_GPU_API [[noreturn]] void __assert_fail(const char *Assertion, const char *File, uint32_t Line,
                                               const char *Function) {
#if defined(__NVPTX__)
  struct {
    const char *File;
    uint32_t Line;
    const char *Function;
    const char *Assertion;
    uint32_t Block, Thread;
  } Arguments = {File, Line, Function, Assertion, hw::blockId(0), hw::threadIdInBlock()};
  vprintf("%s:%u: %s: Assertion `%s' failed (block %u, thread %u).\n", &Arguments);
#else
  (void)Assertion, (void)File, (void)Line, (void)Function;
#endif
  hw::trap();
}

/// OpenMP 5.1's `error` directive at execution time (severity 2: fatal).
OMPSIM_GPU_API void __kmpc_error(IdentTy *, int32_t Severity, const char *Message) {
#if defined(__NVPTX__)
  struct {
    const char *Message;
  } Arguments = {Message ? Message : "(no message)"};
  vprintf(Severity == 2 ? "OMP: Error: %s\n" : "OMP: Warning: %s\n", &Arguments);
#endif
  if (Severity == 2)
    hw::trap();
}
#endif

// ompsim simulator: the executor's custom services, shared by ompsim-device and its controller.
//
// Each service is an SPS wrapper function that the executor publishes as a
// bootstrap symbol under the name below; the controller looks the addresses up
// once at connect time and calls them through the SimpleRemoteEPC. Kernel
// launches and copies do not come here: they go through shared memory
// (LaunchMailbox.h), and the controller keeps the device heap's bookkeeping.
#pragma once

#include "llvm/ExecutionEngine/Orc/Shared/SimplePackedSerialization.h"
#include "llvm/ExecutionEngine/Orc/Shared/WrapperFunctionUtils.h"

#include <cstdint>

namespace ompsim::sim::protocol {

namespace sps = llvm::orc::shared;

/// A [begin, end) address range.
using SPSRange = sps::SPSTuple<uint64_t, uint64_t>;

/// Reserves more host ranges PROT_NONE (the executor's start-up set-up,
/// LaunchMailbox::StartSetup, reserved those known when it was spawned):
/// (host ranges) -> the ranges that collided with the executor's own mappings.
inline constexpr const char *ReserveName = "__ompsim_exec_reserve";
using ReserveSignature = sps::SPSSequence<SPSRange>(sps::SPSSequence<SPSRange>);

/// Loads an ELF shared object into the arena: (bytes, or none when the image
/// already lies in device memory at (address, size), name, library names the
/// image provides to later images' NEEDED entries) -> (handle, base, size).
inline constexpr const char *LoadElfName = "__ompsim_exec_load_elf";
using LoadElfSignature = sps::SPSExpected<sps::SPSTuple<uint64_t, uint64_t, uint64_t>>(
    sps::SPSSequence<char>, uint64_t, uint64_t, sps::SPSString, sps::SPSSequence<sps::SPSString>);

/// Finds a dynamic symbol of a loaded ELF image: (handle, name) -> address.
inline constexpr const char *LookupName = "__ompsim_exec_lookup";
using LookupSignature = sps::SPSExpected<uint64_t>(uint64_t, sps::SPSString);

/// Finds many dynamic symbols of a loaded ELF image in one request:
/// (handle, names) -> addresses, 0 for a name the image does not define.
inline constexpr const char *LookupManyName = "__ompsim_exec_lookup_many";
using LookupManySignature = sps::SPSExpected<sps::SPSSequence<uint64_t>>(uint64_t,
                                                                         sps::SPSSequence<sps::SPSString>);

/// Runs the fini functions of an image and returns its memory to the arena.
inline constexpr const char *UnloadName = "__ompsim_exec_unload";
using UnloadSignature = sps::SPSError(uint64_t);

/// Allocates code memory (for JIT-linked images): (size, alignment) -> address, 0 when exhausted.
inline constexpr const char *AllocCodeName = "__ompsim_exec_alloc_code";
using AllocCodeSignature = uint64_t(uint64_t, uint64_t);

/// Publishes the function-pointer table at (device address, count) to the device runtime.
inline constexpr const char *SetFptrTableName = "__ompsim_exec_set_fptr_table";
using SetFptrTableSignature = sps::SPSError(uint64_t, uint64_t);

/// Takes the translate log: (cap for the next period, max records) ->
/// [hits, misses, recorded, dropped, (host, result, hit)...].
inline constexpr const char *TranslateLogName = "__ompsim_exec_translate_log";
using TranslateLogSignature = sps::SPSExpected<sps::SPSSequence<uint64_t>>(uint64_t, uint64_t);

/// Calls `void fn(void)` in the executor (static constructors of JIT-linked code).
inline constexpr const char *CallVoidName = "__ompsim_exec_call_void";
using CallVoidSignature = sps::SPSError(uint64_t);

/// Changes the access to arena pages (the map checker's guard pages and
/// quarantine): [(begin, end, accessible)], page-aligned, inside the arena.
inline constexpr const char *ProtectName = "__ompsim_exec_protect";
using ProtectSignature = sps::SPSError(sps::SPSSequence<sps::SPSTuple<uint64_t, uint64_t, bool>>);

/// Plain functions, not SPS wrappers: the executor's lazy-call entry
/// `uint64_t (uint64_t context, uint64_t trampoline)`, which the JIT's
/// resolver block calls on the first call of a not yet compiled function of a
/// bitcode image and which returns the compiled function's address, and
/// `void (void)`, where such a call lands when the function cannot be compiled.
inline constexpr const char *LazyReenterName = "__ompsim_exec_lazy_reenter";
inline constexpr const char *LazyFailedName = "__ompsim_exec_lazy_failed";

/// What the executor writes to the fault fd before it exits on a fatal signal,
/// or when device code calls exit(): then `Signo` is 0 and `Code` the status.
struct FaultRecord {
  static constexpr uint32_t kMagic = 0x0F5A17EDu;
  uint32_t Magic;
  int32_t Signo;
  int32_t Code;
  int32_t Tid;
  uint64_t Addr;          ///< si_addr
  uint64_t Rip;           ///< instruction pointer at the fault
  uint64_t PageFaultCode; ///< x86 page-fault error code (bit 1: write)
  uint64_t Rsp;           ///< stack pointer at the fault
  /// The faulting thread's stack [stackLow, stackHigh) as pthread_getattr_np
  /// gave it when the thread first ran a request (0, 0 when unknown): a fault
  /// just below stackLow is a stack overflow.
  uint64_t StackLow, StackHigh;
  /// The launch slot whose device thread faulted; -1 on any other thread
  /// (libomp's workers, the service threads). With launches of several slots
  /// in flight, it names the kernel that faulted.
  int32_t Slot;
  /// Non-zero when no signal came and no exit() was called: the device
  /// runtime stopped the launch with the line in Message.
  uint32_t RuntimeStop;
  /// The file whose mapping holds Rip when that is a shared library (libm,
  /// libc, the device runtime), not device code: its path as
  /// /proc/self/maps gives it ("" otherwise), and Rip's offset in the file.
  uint64_t CodeFileOffset;
  char CodeObject[256];
  /// The device runtime's line (RuntimeStop), without "ompsim: "; for a
  /// signal, what the runtime says the fault address is (a block of the heap
  /// the checker places), "" when it knows nothing of it.
  char Message[1024];
  /// With such an address: the fix ("note: ...").
  char Advice[512];
  /// Under the checker, when the fault came in its look at an access of a
  /// GPU image's code: the access's source site ("" otherwise), and whether
  /// it writes the fault address. The kernel's access faulted, not the
  /// checker's code at Rip.
  char CheckedSite[256];
  int32_t CheckedWrite;
};
// One write of a pipe: the controller reads the record whole.
static_assert(sizeof(FaultRecord) <= 4096, "a fault record outgrows PIPE_BUF");

/// Follows a FaultRecord when the device runtime is loaded: the translate log
/// of the kernel that faulted, so a trace still shows the lookups (and the
/// miss) that led to the fault.
struct FaultTranslateLog {
  static constexpr uint32_t kMagic = 0x7A15106Du;
  static constexpr uint32_t kMaxRecords = 256;
  uint32_t Magic;
  uint32_t Count;
  uint64_t Hits, Misses, Dropped;
  struct Record {
    uint64_t Host, Result, Hit;
  } Records[kMaxRecords];
};

/// Exit status of an executor that reported a fault.
inline constexpr int kFaultExitStatus = 70;

} // namespace ompsim::sim::protocol

//===- CheckedHeap.h - the device heap under OMPSIM_CHECK --------*- C++ -*-===//
//
// Under the checker a GPU image's malloc, free, calloc and realloc are
// these (the JIT renames the program's calls, gpu/CheckedHeapBinding.cpp):
// every block ends at an inaccessible guard page, a freed block's pages stay
// inaccessible and are never handed out again, and a bad free ends the
// launch with one line. A fault in the heap's pages is named by
// describeHeapAddress(), which the executor's fault handler calls: the block,
// how far past its end or into its freed bytes, and which GPU thread
// allocated or freed it where (compute-sanitizer's memcheck on cudaMalloc'd
// device heap, without a GPU).
//
// A new block holds 0x7f bytes, as team-shared memory does: a GPU's heap
// holds whatever was there before, never zeros a program could count on.
// Each access of a GPU image's code is checked before it lands
// (checkHeapAccess): its bounds, and whether the bytes it reads were written.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_MEMCHECK_CHECKEDHEAP_H
#define OMPSIM_DEVICE_MEMCHECK_CHECKEDHEAP_H

#include <cstddef>
#include <cstdint>

namespace ompsim::device {

/// The byte a new device-heap block holds, and the bytes after its end up
/// to the next 16 (malloc's alignment), which free checks.
constexpr unsigned char UnwrittenHeapByte = 0x7f;

/// A block of `Size` bytes for the code at `Caller` (the call's return
/// address), whose source line is `Site` (the JIT's, with -g; null: none);
/// never null (a heap that cannot hold it ends the launch with one line).
void *checkedAllocate(uint64_t Size, uint64_t Caller, const char *Site = nullptr);

/// Frees `Ptr` for the code at `Caller` (`Site`): null is nothing; a pointer
/// no device malloc returned, one freed before, or a block whose bytes past
/// its end were written ends the launch with one line naming it.
void checkedFree(void *Ptr, uint64_t Caller, const char *Site = nullptr);

/// The size of the live block `Ptr` (for realloc), checked as free checks.
uint64_t checkedSize(void *Ptr, uint64_t Caller, const char *Site = nullptr);

/// Where checkHeapAccess() found an access.
enum class HeapAccess {
  Elsewhere, ///< not in the checked heap's reservation
  InBlock,   ///< inside a live block, checked
  Unowned,   ///< in pages no block holds: the access faults, and the fault handler names it
};

/// Checks the access of `Bytes` at `Addr` of `Kind` (ompsim/device_runtime.h)
/// from `Site` by the running GPU thread when it lies in the checked heap's
/// reservation. An access out of its block (before its start, past its end,
/// after its free) or a read of bytes no one wrote ends the launch with one
/// line naming the block and the site; a write marks its bytes written.
HeapAccess checkHeapAccess(const void *Addr, uint64_t Bytes, uint32_t Kind, const char *Site);

/// The checked heap's reservation, once device code allocated from it:
/// false before.
bool checkedHeapRegion(uint64_t &Base, uint64_t &Bytes);

/// "byte 4 of the 64-byte device-heap block at 0x... that device malloc
/// returned to block 0, thread 3 called at heap.c:45:12" for `Addr` in a
/// block's pages; false elsewhere.
bool heapByteText(uint64_t Addr, char *Out, size_t Size);

/// When `Addr` lies in the checked heap's pages: writes what it is to
/// `What` (a device-heap block, how far past its end or into its freed
/// bytes, who allocated and freed it, each call as "called from 0x...") and
/// the fix to `Note`, and returns true. Async-signal-safe: a fault handler
/// calls it.
bool describeHeapAddress(uint64_t Addr, char *What, size_t WhatSize, char *Note, size_t NoteSize);

} // namespace ompsim::device

#endif // OMPSIM_DEVICE_MEMCHECK_CHECKEDHEAP_H

//===- CheckedHeap.cpp - the device heap under OMPSIM_CHECK ---------------===//
//
// The heap is one reservation of address space. A block takes the pages its
// bytes need, rounded to malloc's 16, and ends where the next page begins;
// that page stays inaccessible (the guard). Each page knows its block, so
// a fault address and a pointer given to free find it in O(1). A freed
// block's pages are given back to the kernel and made inaccessible, and its
// record stays: a later access or free of it is named with both its
// allocation and its free.
//
// Under the checker each access of a GPU image's code reaches
// checkHeapAccess() first: an access out of its block (before its start,
// past its end, after its free) is named with its source line before it
// lands, and a shadow byte per heap byte says whether device code wrote it,
// so a read of bytes no one wrote is named too.
//
//===----------------------------------------------------------------------===//
#include "CheckedHeap.h"

#include "AccessKinds.h"

#include "../DeviceStop.h"
#include "../vgpu/Block.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

namespace ompsim::device {
namespace {

/// Address space for blocks and their guard pages: never reused, so 64 GiB
/// holds about eight million blocks of a page.
constexpr uint64_t RegionBytes = uint64_t(64) << 30;
constexpr uint32_t MaxBlocks = uint32_t(1) << 23;
constexpr uint64_t Alignment = 16;

/// A GPU thread of the virtual GPU and the device code that called.
struct Call {
  uint64_t Code = 0;
  const char *Site = nullptr; ///< the call's source line, when the JIT gave it
  uint32_t Block = 0, Thread = 0;
};

/// How a report names a heap call: "called at heap.c:45:12", or "called
/// from 0x..." (which the controller names by its code).
struct CallText {
  char Text[288];
  explicit CallText(const Call &C) {
    if (C.Site)
      std::snprintf(Text, sizeof Text, "called at %s", C.Site);
    else
      std::snprintf(Text, sizeof Text, "called from 0x%" PRIx64, C.Code);
  }
};

struct Record {
  uint64_t Addr = 0, Size = 0;
  uint64_t FirstPage = 0, Pages = 0; ///< its pages, the guard not counted
  bool Freed = false;
  Call Allocated, FreedBy;
};

struct Heap {
  uint64_t Base = 0, Page = 0, RegionPages = 0;
  uint64_t NextPage = 0;
  uint32_t Count = 0;
  /// Per page of the region: 1 + the index of the block it belongs to (its
  /// guard page too), 0 for none.
  uint32_t *Owner = nullptr;
  Record *Records = nullptr;
  /// Per byte of the region: 1 once device code (or calloc, or realloc's
  /// copy) wrote it.
  unsigned char *Written = nullptr;
  pthread_mutex_t Lock = PTHREAD_MUTEX_INITIALIZER;
};

Heap TheHeap;
pthread_once_t Once = PTHREAD_ONCE_INIT;

void *reserve(uint64_t Bytes, int Protection) {
  void *P = ::mmap(nullptr, Bytes, Protection, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return P == MAP_FAILED ? nullptr : P;
}

void setUp() {
  Heap &H = TheHeap;
  H.Page = uint64_t(::sysconf(_SC_PAGESIZE));
  H.RegionPages = RegionBytes / H.Page;
  void *Region = reserve(RegionBytes, PROT_NONE);
  H.Owner = static_cast<uint32_t *>(reserve(H.RegionPages * sizeof(uint32_t), PROT_READ | PROT_WRITE));
  H.Records = static_cast<Record *>(reserve(uint64_t(MaxBlocks) * sizeof(Record), PROT_READ | PROT_WRITE));
  H.Written = static_cast<unsigned char *>(reserve(RegionBytes, PROT_READ | PROT_WRITE));
  if (!Region || !H.Owner || !H.Records || !H.Written)
    stopDevice("device malloc under OMPSIM_CHECK: cannot reserve the checked heap's %" PRIu64
               " GiB of address space",
               RegionBytes >> 30);
  H.Base = reinterpret_cast<uint64_t>(Region);
}

Heap &heap() {
  pthread_once(&Once, setUp);
  return TheHeap;
}

Call callHere(uint64_t Code, const char *Site) {
  return {Code, Site, vgpu::linearBlock(), vgpu::linearThread()};
}

/// `Size` rounded up to malloc's alignment: the bytes a block takes.
uint64_t alignedSize(uint64_t Size) { return (Size + Alignment - 1) & ~(Alignment - 1); }

/// True when `Addr` lies in the heap's reservation (set up or not).
bool inRegion(const Heap &H, uint64_t Addr) {
  return H.Base && Addr >= H.Base && Addr - H.Base < RegionBytes;
}

/// The block whose pages hold `Addr`, or null. Reads without the lock: a
/// record is complete before its pages name it.
const Record *ownerOf(const Heap &H, uint64_t Addr) {
  if (!inRegion(H, Addr))
    return nullptr;
  uint32_t Index = __atomic_load_n(&H.Owner[(Addr - H.Base) / H.Page], __ATOMIC_ACQUIRE);
  return Index ? &H.Records[Index - 1] : nullptr;
}

/// "a 64-byte block that device malloc returned to block 0, thread 3 called
/// at heap.c:45:12" and, freed, " (freed by block 1, thread 0 called at ...)".
int blockText(char *Out, size_t Size, const Record &R) {
  int N = std::snprintf(Out, Size,
                        "the %" PRIu64 "-byte device-heap block at 0x%" PRIx64
                        " that device malloc returned to block %u, thread %u %s",
                        R.Size, R.Addr, R.Allocated.Block, R.Allocated.Thread, CallText(R.Allocated).Text);
  if (R.Freed && N >= 0 && size_t(N) < Size)
    N += std::snprintf(Out + N, Size - size_t(N), " (freed by block %u, thread %u %s)", R.FreedBy.Block,
                       R.FreedBy.Thread, CallText(R.FreedBy).Text);
  return N;
}

/// The live block `Ptr` starts, checked as free checks it.
Record &liveBlock(Heap &H, void *Ptr, const Call &By, const char *Op) {
  uint64_t Addr = reinterpret_cast<uint64_t>(Ptr);
  const Record *R = ownerOf(H, Addr);
  char Block[512];
  if (!R)
    stopDevice("block %u, thread %u: %s(0x%" PRIx64 ") %s"
               " of a pointer device malloc did not return (device memory the host mapped or "
               "allocated, a stack or a global is not the device heap's)",
               By.Block, By.Thread, Op, Addr, CallText(By).Text);
  blockText(Block, sizeof Block, *R);
  if (R->Freed && R->Addr == Addr)
    stopDevice("block %u, thread %u: %s(0x%" PRIx64 ") %s of a block freed before: %s", By.Block, By.Thread,
               Op, Addr, CallText(By).Text, Block);
  if (R->Addr != Addr)
    stopDevice("block %u, thread %u: %s(0x%" PRIx64 ") %s of a pointer %s%" PRIu64
               " bytes from the start of %s",
               By.Block, By.Thread, Op, Addr, CallText(By).Text, Addr < R->Addr ? "-" : "",
               Addr < R->Addr ? R->Addr - Addr : Addr - R->Addr, Block);
  return const_cast<Record &>(*R);
}

/// Stops when the bytes between the block's end and the next 16 were written.
void checkTail(const Record &R, const Call &By, const char *Op) {
  const auto *Bytes = reinterpret_cast<const unsigned char *>(R.Addr);
  for (uint64_t I = R.Size, End = alignedSize(R.Size); I < End; ++I)
    if (Bytes[I] != UnwrittenHeapByte) {
      char Block[512];
      blockText(Block, sizeof Block, R);
      stopDevice("block %u, thread %u: %s(0x%" PRIx64 ") %s"
                 " found a write past the end of %s (byte %" PRIu64 " of %" PRIu64
                 " changed): keep the index below the block's size, or allocate more",
                 By.Block, By.Thread, Op, R.Addr, CallText(By).Text, Block, I, R.Size);
    }
}

/// Marks `Bytes` at `Addr` written. Relaxed byte stores: GPU threads on
/// other device threads may mark a byte at once, each with the same 1.
void markWritten(Heap &H, uint64_t Addr, uint64_t Bytes) {
  unsigned char *Shadow = H.Written + (Addr - H.Base);
  for (uint64_t I = 0; I < Bytes; ++I)
    __atomic_store_n(&Shadow[I], 1, __ATOMIC_RELAXED);
}

/// The first of `Bytes` at `Addr` no one wrote, or `Bytes`.
uint64_t firstUnwritten(const Heap &H, uint64_t Addr, uint64_t Bytes) {
  const unsigned char *Shadow = H.Written + (Addr - H.Base);
  for (uint64_t I = 0; I < Bytes; ++I)
    if (!__atomic_load_n(&Shadow[I], __ATOMIC_RELAXED))
      return I;
  return Bytes;
}

/// "s" after a count other than one.
const char *plural(uint64_t N) { return N == 1 ? "" : "s"; }

/// The access of `Bytes` at `Addr` by the running GPU thread, out of block
/// `R` (before its start, past its end, or freed).
[[noreturn]] void reportOutOfBlock(const Record &R, uint64_t Addr, uint64_t Bytes, bool Write,
                                   const char *Site) {
  char Block[512];
  blockText(Block, sizeof Block, R);
  const uint64_t End = R.Addr + R.Size;
  const char *Access = accessText(false, Write);
  const unsigned B = vgpu::linearBlock(), T = vgpu::linearThread();
  if (R.Freed) {
    const uint64_t Off = Addr >= R.Addr ? Addr - R.Addr : R.Addr - Addr;
    stopDevice("block %u, thread %u: the %s of %" PRIu64 " byte%s at %s is %" PRIu64
               " byte%s %s the start of "
               "%s: device code uses a device-heap block after its free; free it after its last use",
               B, T, Access, Bytes, plural(Bytes), Site, Off, plural(Off), Addr >= R.Addr ? "from" : "before",
               Block);
  }
  if (Addr < R.Addr)
    stopDevice("block %u, thread %u: the %s of %" PRIu64 " byte%s at %s starts %" PRIu64 " byte%s before the "
               "start of %s: keep the index at 0 or above",
               B, T, Access, Bytes, plural(Bytes), Site, R.Addr - Addr, plural(R.Addr - Addr), Block);
  const uint64_t Past = Addr + Bytes - End;
  stopDevice("block %u, thread %u: the %s of %" PRIu64 " byte%s at %s ends %" PRIu64
             " byte%s past the end of "
             "%s: keep the index below the block's size, or allocate more",
             B, T, Access, Bytes, plural(Bytes), Site, Past, plural(Past), Block);
}

} // namespace

HeapAccess checkHeapAccess(const void *Ptr, uint64_t Bytes, uint32_t Kind, const char *Site) {
  Heap &H = TheHeap;
  const uint64_t Addr = reinterpret_cast<uint64_t>(Ptr);
  if (!inRegion(H, Addr))
    return HeapAccess::Elsewhere;
  const Record *R = ownerOf(H, Addr);
  // No block's page: the access faults, and the fault handler names it.
  if (!R)
    return HeapAccess::Unowned;
  const bool Write = Kind & OMPSIM_ACCESS_WRITE;
  if (R->Freed || Addr < R->Addr || Addr + Bytes > R->Addr + R->Size)
    reportOutOfBlock(*R, Addr, Bytes, Write, Site);
  // A copy's source may hold a struct's padding, which no one writes.
  if ((Kind & OMPSIM_ACCESS_READ) && !(Kind & OMPSIM_ACCESS_COPY)) {
    uint64_t First = firstUnwritten(H, Addr, Bytes);
    if (First < Bytes) {
      char Block[512];
      blockText(Block, sizeof Block, *R);
      stopDevice(
          "block %u, thread %u: the %s of %" PRIu64 " byte%s at %s reads byte %" PRIu64 " of %s, which no "
          "thread wrote: device malloc returns memory holding whatever was there before, on a GPU as "
          "here; write it first, or allocate it with calloc",
          vgpu::linearBlock(), vgpu::linearThread(), accessText((Kind & OMPSIM_ACCESS_ATOMIC) != 0, false),
          Bytes, plural(Bytes), Site, Addr + First - R->Addr, Block);
    }
  }
  if (Write)
    markWritten(H, Addr, Bytes);
  return HeapAccess::InBlock;
}

bool checkedHeapRegion(uint64_t &Base, uint64_t &Bytes) {
  Base = TheHeap.Base;
  Bytes = RegionBytes;
  return Base != 0;
}

bool heapByteText(uint64_t Addr, char *Out, size_t Size) {
  const Record *R = ownerOf(TheHeap, Addr);
  if (!R)
    return false;
  int N = std::snprintf(Out, Size, "byte %" PRIu64 " of ", Addr - R->Addr);
  if (N >= 0 && size_t(N) < Size)
    blockText(Out + N, Size - size_t(N), *R);
  return true;
}

void *checkedAllocate(uint64_t Size, uint64_t Caller, const char *Site) {
  Heap &H = heap();
  Call By = callHere(Caller, Site);
  if (Size > RegionBytes / 2)
    stopDevice("block %u, thread %u: device malloc(%" PRIu64 ") %s"
               " asks more than the checked heap holds",
               By.Block, By.Thread, Size, CallText(By).Text);
  uint64_t Rounded = alignedSize(Size);
  uint64_t Pages = Rounded ? (Rounded + H.Page - 1) / H.Page : 1;
  pthread_mutex_lock(&H.Lock);
  if (H.Count == MaxBlocks || H.NextPage + Pages + 1 > H.RegionPages) {
    pthread_mutex_unlock(&H.Lock);
    stopDevice("block %u, thread %u: device malloc(%" PRIu64 ") %s"
               ": under OMPSIM_CHECK the device heap never reuses an address, and its %" PRIu64
               " GiB for %u blocks are used up; check a smaller run",
               By.Block, By.Thread, Size, CallText(By).Text, RegionBytes >> 30, MaxBlocks);
  }
  uint32_t Index = H.Count++;
  uint64_t First = H.NextPage;
  H.NextPage += Pages + 1;
  pthread_mutex_unlock(&H.Lock);
  uint64_t Begin = H.Base + First * H.Page;
  if (::mprotect(reinterpret_cast<void *>(Begin), Pages * H.Page, PROT_READ | PROT_WRITE) != 0)
    stopDevice("block %u, thread %u: device malloc(%" PRIu64 ") %s"
               ": the checked heap cannot commit %" PRIu64 " pages (out of memory)",
               By.Block, By.Thread, Size, CallText(By).Text, Pages);
  Record &R = H.Records[Index];
  R = Record{};
  R.Addr = Begin + Pages * H.Page - Rounded;
  R.Size = Size;
  R.FirstPage = First;
  R.Pages = Pages;
  R.Allocated = By;
  std::memset(reinterpret_cast<void *>(R.Addr), UnwrittenHeapByte, Rounded);
  for (uint64_t P = First; P <= First + Pages; ++P)
    __atomic_store_n(&H.Owner[P], Index + 1, __ATOMIC_RELEASE);
  return reinterpret_cast<void *>(R.Addr);
}

void checkedFree(void *Ptr, uint64_t Caller, const char *Site) {
  if (!Ptr)
    return;
  Heap &H = heap();
  Call By = callHere(Caller, Site);
  pthread_mutex_lock(&H.Lock);
  Record &R = liveBlock(H, Ptr, By, "free");
  checkTail(R, By, "free");
  R.Freed = true;
  R.FreedBy = By;
  pthread_mutex_unlock(&H.Lock);
  // The pages go back to the kernel; their addresses stay the block's.
  void *Begin = reinterpret_cast<void *>(H.Base + R.FirstPage * H.Page);
  ::madvise(Begin, R.Pages * H.Page, MADV_DONTNEED);
  ::mprotect(Begin, R.Pages * H.Page, PROT_NONE);
  ::madvise(H.Written + R.FirstPage * H.Page, R.Pages * H.Page, MADV_DONTNEED);
}

uint64_t checkedSize(void *Ptr, uint64_t Caller, const char *Site) {
  Heap &H = heap();
  Call By = callHere(Caller, Site);
  pthread_mutex_lock(&H.Lock);
  uint64_t Size = liveBlock(H, Ptr, By, "realloc").Size;
  pthread_mutex_unlock(&H.Lock);
  return Size;
}

bool describeHeapAddress(uint64_t Addr, char *What, size_t WhatSize, char *Note, size_t NoteSize) {
  const Record *R = ownerOf(TheHeap, Addr);
  if (!R) {
    if (!inRegion(TheHeap, Addr))
      return false;
    std::snprintf(What, WhatSize, "device-heap address 0x%" PRIx64 " that no device malloc block holds",
                  Addr);
    std::snprintf(Note, NoteSize,
                  "note: the pointer was computed from a device malloc block out of its bounds");
    return true;
  }
  char Block[512];
  blockText(Block, sizeof Block, *R);
  uint64_t End = R->Addr + R->Size;
  if (Addr >= End) {
    std::snprintf(What, WhatSize,
                  "device-heap memory at 0x%" PRIx64 " (%" PRIu64 " bytes past the end of %s)", Addr,
                  Addr - End, Block);
    std::snprintf(Note, NoteSize,
                  "note: the kernel indexes past the end of a device malloc block: allocate more, or keep "
                  "the index below its size");
  } else if (R->Freed) {
    std::snprintf(
        What, WhatSize, "freed device-heap memory at 0x%" PRIx64 " (%" PRIu64 " bytes %s the start of %s)",
        Addr, Addr >= R->Addr ? Addr - R->Addr : R->Addr - Addr, Addr >= R->Addr ? "from" : "before", Block);
    std::snprintf(Note, NoteSize,
                  "note: device code uses a device-heap block after its free: free it after its last use");
  } else if (Addr >= R->Addr) {
    return false; // inside a live block: not the heap's doing
  } else {
    std::snprintf(What, WhatSize,
                  "device-heap memory at 0x%" PRIx64 " (%" PRIu64 " bytes before the start of %s)", Addr,
                  R->Addr - Addr, Block);
    std::snprintf(Note, NoteSize,
                  "note: the kernel indexes before the start of a device malloc block: keep the index at "
                  "0 or above");
  }
  return true;
}

} // namespace ompsim::device

using namespace ompsim::device;

// What a GPU image's malloc, free, calloc and realloc call under the checker:
// the JIT's call sites pass their source line (`Site`, null without one).
namespace {

void *heapCalloc(uint64_t Count, uint64_t Size, uint64_t Caller, const char *Site) {
  uint64_t Bytes = 0;
  if (__builtin_mul_overflow(Count, Size, &Bytes))
    return nullptr;
  void *Ptr = checkedAllocate(Bytes, Caller, Site);
  std::memset(Ptr, 0, Bytes);
  markWritten(heap(), reinterpret_cast<uint64_t>(Ptr), Bytes);
  return Ptr;
}

void *heapRealloc(void *Ptr, uint64_t Size, uint64_t Caller, const char *Site) {
  if (!Ptr)
    return checkedAllocate(Size, Caller, Site);
  uint64_t Old = checkedSize(Ptr, Caller, Site);
  void *New = checkedAllocate(Size, Caller, Site);
  const uint64_t Kept = Old < Size ? Old : Size;
  std::memcpy(New, Ptr, Kept);
  Heap &H = heap();
  std::memcpy(H.Written + (reinterpret_cast<uint64_t>(New) - H.Base),
              H.Written + (reinterpret_cast<uint64_t>(Ptr) - H.Base), Kept);
  checkedFree(Ptr, Caller, Site);
  return New;
}

uint64_t returnAddress(void *Address) { return reinterpret_cast<uint64_t>(Address); }

} // namespace

OMPSIM_DEVICE_API void *__ompsim_heap_malloc(uint64_t Size) {
  return checkedAllocate(Size, returnAddress(__builtin_return_address(0)));
}

OMPSIM_DEVICE_API void __ompsim_heap_free(void *Ptr) {
  checkedFree(Ptr, returnAddress(__builtin_return_address(0)));
}

OMPSIM_DEVICE_API void *__ompsim_heap_calloc(uint64_t Count, uint64_t Size) {
  return heapCalloc(Count, Size, returnAddress(__builtin_return_address(0)), nullptr);
}

OMPSIM_DEVICE_API void *__ompsim_heap_realloc(void *Ptr, uint64_t Size) {
  return heapRealloc(Ptr, Size, returnAddress(__builtin_return_address(0)), nullptr);
}

OMPSIM_DEVICE_API void *__ompsim_heap_malloc_at(uint64_t Size, const char *Site) {
  return checkedAllocate(Size, returnAddress(__builtin_return_address(0)), Site);
}

OMPSIM_DEVICE_API void __ompsim_heap_free_at(void *Ptr, const char *Site) {
  checkedFree(Ptr, returnAddress(__builtin_return_address(0)), Site);
}

OMPSIM_DEVICE_API void *__ompsim_heap_calloc_at(uint64_t Count, uint64_t Size, const char *Site) {
  return heapCalloc(Count, Size, returnAddress(__builtin_return_address(0)), Site);
}

OMPSIM_DEVICE_API void *__ompsim_heap_realloc_at(void *Ptr, uint64_t Size, const char *Site) {
  return heapRealloc(Ptr, Size, returnAddress(__builtin_return_address(0)), Site);
}

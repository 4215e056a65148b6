//===- TeamRaces.cpp - races between a kernel's teams on device memory ----===//
//
// One shadow page per page of device memory a launch touches (the
// executor's arena, and the checked device heap), made on first use by the
// launching device thread: for each byte the access that last
// wrote it and the first that read it, each an index of the launch's
// records (the block, with a bit for an atomic access; the site; the lock
// held). A later launch starts with none (a page's generation). The blocks
// run in order, so every access recorded is of a block before the running
// one, or of the running one itself.
//
//===----------------------------------------------------------------------===//
#include "TeamRaces.h"
#include "AccessKinds.h"
#include "CheckedHeap.h"
#include "HeldLocks.h"
#include "ShadowMemory.h"

#include "../DeviceStop.h"
#include "../vgpu/BlockRunner.h"

#include <sys/mman.h>

#include <atomic>
#include <cinttypes>
#include <cstring>

namespace ompsim::device {
namespace {

constexpr uint64_t Page = 4096;
/// An access's block number plus one, with this bit for an atomic access.
constexpr uint32_t AtomicBit = uint32_t(1) << 31;

/// One access as the shadow keeps it: its block (plus one) with the atomic
/// bit, its site, and the outermost lock its thread held (null: none).
struct AccessRecord {
  uint32_t Who;
  const char *Site;
  const void *Lock;
};

/// A byte's last writer and first reader: indices of the launch's records
/// (0: none). Eight bytes a byte: the sites and locks live once, in the
/// records.
struct TeamByte {
  uint32_t Writer, Reader;
};

struct ShadowPage {
  uint64_t Generation;
  TeamByte Bytes[Page];
};

/// The launch's access records, each kept once (a block makes one per site
/// and lock it reaches), found through an open-addressing table of their
/// indices that is never more than half full.
struct Records {
  AccessRecord *Table = nullptr; ///< [0]: none
  uint32_t *Slots = nullptr;     ///< 2 * Capacity indices, 0 where empty
  uint32_t Count = 0, Capacity = 0;
};

/// The memory watched between teams: the executor's arena (mapped data,
/// omp_target_alloc'ed memory, the images' globals) and the checked device
/// heap.
enum Area { Arena, Heap, Areas };

/// The launching device thread's shadow of the watched memory: one
/// directory entry per page of each area, and the launch's records.
struct LaunchShadow {
  ShadowPage **Pages[Areas] = {};
  uint64_t GridSerial = 0;
  uint64_t Generation = 0;
  Records Accesses;
};

std::atomic<uint64_t> WatchedBase{0}, WatchedBytes{0};
__attribute__((tls_model("initial-exec"))) thread_local LaunchShadow TShadow;

void *mapZeros(uint64_t Bytes) { return mapShadow(Bytes, "the shadow of races between teams"); }

uint64_t slotOf(uint32_t Who, const char *Site, const void *Lock) {
  uint64_t H = Who * 0x9e3779b97f4a7c15u ^ reinterpret_cast<uint64_t>(Site) * 0xc2b2ae3d27d4eb4fu ^
               reinterpret_cast<uint64_t>(Lock) * 0x165667b19e3779f9u;
  return H ^ (H >> 29);
}

void placeSlot(Records &Rs, uint32_t I) {
  const AccessRecord &A = Rs.Table[I];
  const uint64_t Mask = 2 * uint64_t(Rs.Capacity) - 1;
  uint64_t S = slotOf(A.Who, A.Site, A.Lock) & Mask;
  while (Rs.Slots[S])
    S = (S + 1) & Mask;
  Rs.Slots[S] = I;
}

void growRecords(Records &Rs, uint32_t Capacity) {
  auto *Table = static_cast<AccessRecord *>(mapZeros(uint64_t(Capacity) * sizeof(AccessRecord)));
  auto *Slots = static_cast<uint32_t *>(mapZeros(2 * uint64_t(Capacity) * sizeof(uint32_t)));
  if (Rs.Table) {
    std::memcpy(Table, Rs.Table, uint64_t(Rs.Count) * sizeof(AccessRecord));
    ::munmap(Rs.Table, uint64_t(Rs.Capacity) * sizeof(AccessRecord));
    ::munmap(Rs.Slots, 2 * uint64_t(Rs.Capacity) * sizeof(uint32_t));
  }
  Rs.Table = Table;
  Rs.Slots = Slots;
  Rs.Capacity = Capacity;
  for (uint32_t I = 1; I < Rs.Count; ++I)
    placeSlot(Rs, I);
}

/// A new launch: no records but "none".
void resetRecords(Records &Rs) {
  if (!Rs.Table)
    growRecords(Rs, 1u << 12);
  else
    std::memset(Rs.Slots, 0, 2 * uint64_t(Rs.Capacity) * sizeof(uint32_t));
  Rs.Count = 1;
}

/// The index of the record (`Who`, `Site`, `Lock`), made if new.
uint32_t intern(Records &Rs, uint32_t Who, const char *Site, const void *Lock) {
  const uint64_t Mask = 2 * uint64_t(Rs.Capacity) - 1;
  for (uint64_t S = slotOf(Who, Site, Lock) & Mask; Rs.Slots[S]; S = (S + 1) & Mask) {
    const AccessRecord &A = Rs.Table[Rs.Slots[S]];
    if (A.Who == Who && A.Site == Site && A.Lock == Lock)
      return Rs.Slots[S];
  }
  if (Rs.Count == Rs.Capacity) {
    if (Rs.Capacity >= (1u << 30))
      stopDevice("races between teams under OMPSIM_CHECK: more than 2^30 distinct accesses in one launch");
    growRecords(Rs, 2 * Rs.Capacity);
  }
  uint32_t I = Rs.Count++;
  Rs.Table[I] = {Who, Site, Lock};
  placeSlot(Rs, I);
  return I;
}

uint32_t blockOf(uint32_t Who) { return (Who & ~AtomicBit) - 1; }
bool atomic(uint32_t Who) { return (Who & AtomicBit) != 0; }

/// Whether `Before` and `Now` race: two blocks, not both atomic, not under
/// one lock.
bool races(const AccessRecord &Before, const AccessRecord &Now) {
  return Before.Who && blockOf(Before.Who) != blockOf(Now.Who) && !(atomic(Before.Who) && atomic(Now.Who)) &&
         !(Before.Lock && Before.Lock == Now.Lock);
}

/// How a line names the byte at `Addr` of `In`: "device memory at
/// dev:0x..." (the host adds the mapping), or the device-heap block's byte.
void byteText(Area In, uint64_t Addr, char *Out, size_t Size) {
  char Block[560];
  if (In == Arena)
    std::snprintf(Out, Size, "device memory at dev:0x%" PRIx64, Addr);
  else if (heapByteText(Addr, Block, sizeof Block))
    std::snprintf(Out, Size, "device-heap memory at 0x%" PRIx64 " (%s)", Addr, Block);
  else
    std::snprintf(Out, Size, "device-heap memory at 0x%" PRIx64, Addr);
}

[[noreturn]] void reportTeamRace(const vgpu::BlockRunner &R, Area In, uint64_t Addr,
                                 const AccessRecord &Before, bool BeforeWrote, const AccessRecord &Now,
                                 bool NowWrites) {
  const char *Fix = BeforeWrote && NowWrites
                        ? "make both atomic (#pragma omp atomic), or let one team write it"
                    : BeforeWrote ? "make both atomic, or read it in a later kernel"
                                  : "make both atomic, or write it in a later kernel";
  char Byte[640];
  byteText(In, Addr, Byte, sizeof Byte);
  stopDevice("block %u, thread %u: the %s of %s at %s races with block %u's %s at %s: a GPU runs a kernel's "
             "teams at once, and only atomics order them; %s",
             R.blockNum(), R.current(), accessText(atomic(Now.Who), NowWrites), Byte, Now.Site,
             blockOf(Before.Who), accessText(atomic(Before.Who), BeforeWrote), Before.Site, Fix);
}

/// The shadow of the byte at `Offset` of `In`, for this launch.
TeamByte &shadowOf(LaunchShadow &S, Area In, uint64_t Offset) {
  ShadowPage *&P = S.Pages[In][Offset / Page];
  if (!P)
    P = static_cast<ShadowPage *>(mapZeros(sizeof(ShadowPage)));
  if (P->Generation != S.Generation) {
    std::memset(P->Bytes, 0, sizeof P->Bytes);
    P->Generation = S.Generation;
  }
  return P->Bytes[Offset % Page];
}

} // namespace

void watchDeviceMemory(uint64_t Base, uint64_t Bytes) {
  WatchedBase.store(Base, std::memory_order_relaxed);
  WatchedBytes.store(Bytes, std::memory_order_relaxed);
}

void checkTeamRace(const vgpu::BlockRunner &R, const void *Addr, uint64_t Bytes, uint32_t Kind,
                   const char *Site, uint64_t Value) {
  Area In = Arena;
  uint64_t Base = WatchedBase.load(std::memory_order_relaxed);
  uint64_t Watched = WatchedBytes.load(std::memory_order_relaxed);
  if (reinterpret_cast<uint64_t>(Addr) - Base >= Watched) {
    In = Heap;
    if (!checkedHeapRegion(Base, Watched))
      return;
  }
  const uint64_t Offset = reinterpret_cast<uint64_t>(Addr) - Base;
  if (Offset >= Watched || R.blockNum() + 1 >= AtomicBit)
    return;
  if (Bytes > Watched - Offset)
    Bytes = Watched - Offset;
  // A store that changes nothing is seen by no other team.
  if (storeChangesNothing(Addr, Bytes, Kind, Value))
    return;
  LaunchShadow &S = TShadow;
  if (!S.Pages[In])
    S.Pages[In] = static_cast<ShadowPage **>(mapZeros((Watched + Page - 1) / Page * sizeof(ShadowPage *)));
  if (S.GridSerial != R.grid().Serial) {
    S.GridSerial = R.grid().Serial;
    ++S.Generation;
    resetRecords(S.Accesses);
  }
  Records &Rs = S.Accesses;
  const uint32_t Who = (R.blockNum() + 1) | ((Kind & OMPSIM_ACCESS_ATOMIC) ? AtomicBit : 0);
  const uint32_t NowIndex = intern(Rs, Who, Site, outermostLock(R.current()));
  const AccessRecord &Now = Rs.Table[NowIndex];
  for (uint64_t B = Offset; B < Offset + Bytes; ++B) {
    TeamByte &T = shadowOf(S, In, B);
    const AccessRecord &Writer = Rs.Table[T.Writer];
    if (Kind & (OMPSIM_ACCESS_READ | OMPSIM_ACCESS_COPY)) {
      if (races(Writer, Now))
        reportTeamRace(R, In, Base + B, Writer, true, Now, false);
      // The first reader is kept: every later writer is a later block.
      if (!T.Reader)
        T.Reader = NowIndex;
    }
    if (Kind & OMPSIM_ACCESS_WRITE) {
      if (races(Writer, Now))
        reportTeamRace(R, In, Base + B, Writer, true, Now, true);
      if (races(Rs.Table[T.Reader], Now))
        reportTeamRace(R, In, Base + B, Rs.Table[T.Reader], false, Now, true);
      T.Writer = NowIndex;
    }
  }
}

} // namespace ompsim::device

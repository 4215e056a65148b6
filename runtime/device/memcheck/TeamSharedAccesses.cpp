//===- TeamSharedAccesses.cpp - races and unwritten reads in team-shared memory ===//
//
// One history per byte of the block's team-shared memory, kept by the device
// thread that runs the block: its last write, its last read, and one more
// read by another thread that no barrier has ordered yet (so that a write
// after two threads' reads is checked against both). A history belongs to
// the block it was made in (a generation number): a new block starts with
// none, without clearing the table.
//
// Two accesses of one block are ordered when one thread made both, when a
// barrier of the block was released between them, or, for two lanes of one
// warp, when the warp synchronized between them (the virtual GPU counts
// each, vgpu/BlockRunner.h). Two accesses that are not ordered race when
// one of them writes, they are not both atomic, and their threads did not
// both hold one lock (HeldLocks.h).
//
//===----------------------------------------------------------------------===//
#include "TeamSharedAccesses.h"
#include "AccessKinds.h"
#include "HeldLocks.h"
#include "ShadowMemory.h"
#include "TeamSharedGuards.h"

#include "../DeviceStop.h"
#include "../vgpu/BlockRunner.h"

#include <sys/mman.h>

#include <cinttypes>
#include <cstdio>

namespace ompsim::device {
namespace {

/// One access to a byte: where the program made it, the lock the thread
/// held (its outermost), the block's barrier count and the thread's warp's
/// sync count then, and the thread.
struct Access {
  const char *Site; ///< null: none
  const void *Lock; ///< null: none
  uint32_t Epoch;
  uint32_t WarpEpoch;
  uint32_t Thread;
  bool Atomic;
};

/// What a block has done to one byte of its team-shared memory.
struct ByteHistory {
  uint64_t Generation; ///< the block's; anything else: nothing yet
  bool Written;
  Access Write, Read, OtherRead;
};

/// The calling device thread's histories, one per byte of its block's
/// team-shared memory (mapped on first use, never returned: the block
/// memory they shadow stays too).
struct Histories {
  ByteHistory *Bytes = nullptr;
  uint64_t Capacity = 0;
  uint64_t Generation = 0;
  uint64_t BlockSerial = 0; ///< the runner's block they are of (dynamic shared memory's)
};

/// Of the team-shared globals, and of the dynamic shared memory.
__attribute__((tls_model("initial-exec"))) thread_local Histories THistories, TDynamicHistories;

/// Makes room for `Bytes` histories.
void reserve(Histories &Hs, uint64_t Bytes) {
  if (Bytes <= Hs.Capacity)
    return;
  if (Hs.Bytes)
    ::munmap(Hs.Bytes, Hs.Capacity * sizeof(ByteHistory));
  // Zeros: generation 0, which no block has.
  Hs.Bytes = static_cast<ByteHistory *>(
      mapShadow(Bytes * sizeof(ByteHistory), "the histories of team-shared accesses"));
  Hs.Capacity = Bytes;
}

/// Team-shared memory an access lands in: the block's globals, or its
/// dynamic shared memory of `DynamicBytes`.
struct Region {
  Histories &Hs;
  uint64_t DynamicBytes = 0; ///< 0: the globals
};

/// Byte `B`'s history in the running block (none yet when it is another's).
ByteHistory &historyOf(Histories &Hs, uint64_t B) {
  ByteHistory &H = Hs.Bytes[B];
  if (H.Generation != Hs.Generation)
    H = ByteHistory{Hs.Generation, false, {}, {}, {}};
  return H;
}

bool ordered(const vgpu::BlockRunner &R, const Access &Before, const Access &Now) {
  return !Before.Site || Before.Thread == Now.Thread || Before.Epoch != Now.Epoch ||
         (R.sameWarp(Before.Thread, Now.Thread) && Before.WarpEpoch != Now.WarpEpoch);
}

bool races(const vgpu::BlockRunner &R, const Access &Before, const Access &Now) {
  return !ordered(R, Before, Now) && !(Before.Atomic && Now.Atomic) &&
         !(Before.Lock && Before.Lock == Now.Lock);
}

/// "element 6 of 'tile' (64 elements of 4 bytes)" or "'x' (8 bytes)": the
/// global byte `Offset` of the block belongs to; in dynamic shared memory,
/// the byte.
void byteText(const Region &In, char *Out, size_t Size, uint64_t Offset) {
  if (In.DynamicBytes) {
    std::snprintf(Out, Size, "byte %" PRIu64 " of the block's dynamic shared memory (%" PRIu64 " bytes)",
                  Offset, In.DynamicBytes);
    return;
  }
  const TeamSharedLayout &L = TTeamShared;
  const ompsim_team_shared_var *V = teamSharedVarAt(L, Offset);
  if (!V) {
    std::snprintf(Out, Size, "memory at offset %" PRIu64 " of the block's", Offset);
    return;
  }
  int N = 0;
  if (V->element_size && V->element_size < V->size)
    N = std::snprintf(Out, Size, "element %" PRIu64 " of ", (Offset - V->offset) / V->element_size);
  if (N >= 0 && size_t(N) < Size)
    teamSharedVarText(Out + N, Size - size_t(N), *V);
}

/// Ends the launch: `Now` (a write if `NowWrites`) races with `Before`.
[[noreturn]] void reportSharedRace(const vgpu::BlockRunner &R, const Region &In, uint64_t Offset,
                                   const Access &Before, bool BeforeWrote, const Access &Now,
                                   bool NowWrites) {
  char Byte[640];
  byteText(In, Byte, sizeof Byte, Offset);
  const bool Lanes = R.sameWarp(Before.Thread, Now.Thread);
  const char *Sync = Lanes ? "a warp sync (__kmpc_syncwarp) or a barrier" : "a barrier (#pragma omp barrier)";
  char Fix[256];
  if (BeforeWrote && NowWrites)
    std::snprintf(Fix, sizeof Fix, "make both atomic, or put %s between them", Sync);
  else
    std::snprintf(Fix, sizeof Fix, "put %s between the %s and the %s", Sync, BeforeWrote ? "write" : "read",
                  NowWrites ? "write" : "read");
  const char *Why = Lanes ? "they are lanes of one warp, which a GPU runs independently, with no warp sync "
                            "between them"
                          : "no barrier of the block is between them";
  stopDevice("block %u, thread %u: the %s of team-shared %s at %s races with thread %u's %s at %s: %s; %s",
             R.blockNum(), Now.Thread, accessText(Now.Atomic, NowWrites), Byte, Now.Site, Before.Thread,
             accessText(Before.Atomic, BeforeWrote), Before.Site, Why, Fix);
}

[[noreturn]] void reportUnwritten(const vgpu::BlockRunner &R, const Region &In, uint64_t Offset,
                                  const Access &Now) {
  char Byte[640];
  byteText(In, Byte, sizeof Byte, Offset);
  stopDevice(
      "block %u, thread %u: the %s of team-shared %s at %s finds memory no thread of the block wrote: "
      "a GPU's team-shared memory holds what its last block left there; write it first, with a barrier "
      "(or, between lanes of one warp, a warp sync) between the write and the read",
      R.blockNum(), Now.Thread, accessText(Now.Atomic, false), Byte, Now.Site);
}

void checkBytes(const vgpu::BlockRunner &R, const Region &In, uint64_t Offset, uint64_t Bytes, uint32_t Kind,
                const char *Site) {
  Histories &Hs = In.Hs;
  const uint32_t Thread = R.current();
  const Access Now{Site,
                   outermostLock(Thread),
                   R.barrierEpoch(),
                   R.warpEpoch(Thread),
                   Thread,
                   (Kind & OMPSIM_ACCESS_ATOMIC) != 0};
  for (uint64_t B = Offset; B < Offset + Bytes; ++B) {
    ByteHistory &H = historyOf(Hs, B);
    if (Kind & (OMPSIM_ACCESS_READ | OMPSIM_ACCESS_COPY)) {
      if (races(R, H.Write, Now))
        reportSharedRace(R, In, B, H.Write, true, Now, false);
      if (!(Kind & OMPSIM_ACCESS_COPY) && !H.Written)
        reportUnwritten(R, In, B, Now);
      if (H.Read.Site && !ordered(R, H.Read, Now))
        H.OtherRead = H.Read;
      H.Read = Now;
    }
    if (Kind & OMPSIM_ACCESS_WRITE) {
      if (races(R, H.Write, Now))
        reportSharedRace(R, In, B, H.Write, true, Now, true);
      if (races(R, H.Read, Now))
        reportSharedRace(R, In, B, H.Read, false, Now, true);
      if (races(R, H.OtherRead, Now))
        reportSharedRace(R, In, B, H.OtherRead, false, Now, true);
      H.Write = Now;
      H.Written = true;
    }
  }
}

/// A store of `Bytes` at `Offset` that leaves them as they were: they count
/// as written, and nothing else changes. Returns the kind left to check
/// (none).
uint32_t noteUnchanged(Histories &Hs, uint64_t Offset, uint64_t Bytes) {
  for (uint64_t B = Offset; B < Offset + Bytes; ++B)
    historyOf(Hs, B).Written = true;
  return 0;
}

} // namespace

void beginTeamSharedAccesses() {
  ++THistories.Generation;
  reserve(THistories, TTeamShared.Bytes);
}

bool checkTeamSharedAccess(const vgpu::BlockRunner &R, const void *Addr, uint64_t Bytes, uint32_t Kind,
                           const char *Site, uint64_t Value) {
  const TeamSharedLayout &L = TTeamShared;
  uint64_t Offset = reinterpret_cast<uint64_t>(Addr) - L.Base;
  if (Offset >= L.Bytes || THistories.Capacity < L.Bytes)
    return false;
  // Padding and guard pages are no global's: an access there is left to the
  // fault it makes (TeamSharedGuards.h).
  const ompsim_team_shared_var *V = teamSharedVarAt(L, Offset);
  if (!V)
    return true;
  uint64_t Left = V->offset + V->size - Offset;
  if (Bytes > Left)
    Bytes = Left;
  if (storeChangesNothing(Addr, Bytes, Kind, Value))
    Kind = noteUnchanged(THistories, Offset, Bytes);
  if (Kind)
    checkBytes(R, Region{THistories}, Offset, Bytes, Kind, Site);
  return true;
}

bool checkDynamicSharedAccess(const vgpu::BlockRunner &R, const void *Addr, uint64_t Bytes, uint32_t Kind,
                              const char *Site, uint64_t Value) {
  const uint64_t Size = R.dynamicSharedBytes();
  const uint64_t Offset = reinterpret_cast<uint64_t>(Addr) - R.dynamicSharedStart();
  // The memory and its padding run to the guard page, which faults.
  if (!Size || Offset >= R.dynamicSharedGuard() - R.dynamicSharedStart())
    return false;
  if (Offset + Bytes > Size)
    stopDevice("block %u, thread %u: the %s of %" PRIu64 " bytes at %s ends %" PRIu64
               " bytes past the end of the block's dynamic shared memory (%" PRIu64
               " bytes): keep the index below the size the launch asks for (ompx_dyn_cgroup_mem), or ask for "
               "more",
               R.blockNum(), R.current(), accessText(Kind & OMPSIM_ACCESS_ATOMIC, Kind & OMPSIM_ACCESS_WRITE),
               Bytes, Site, Offset + Bytes - Size, Size);
  Histories &Hs = TDynamicHistories;
  // A new block: none of its bytes was touched yet.
  if (Hs.BlockSerial != R.blockSerial()) {
    Hs.BlockSerial = R.blockSerial();
    ++Hs.Generation;
  }
  reserve(Hs, Size);
  if (storeChangesNothing(Addr, Bytes, Kind, Value))
    Kind = noteUnchanged(Hs, Offset, Bytes);
  if (Kind)
    checkBytes(R, Region{Hs, Size}, Offset, Bytes, Kind, Site);
  return true;
}

} // namespace ompsim::device

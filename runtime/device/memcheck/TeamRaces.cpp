//===- TeamRaces.cpp - races between a kernel's teams on device memory ----===//
//
// One shadow page per page of device memory a launch touches, made on first
// use by the launching device thread: for each byte the block that last
// wrote it and the first block that read it (each plus one, with a bit for
// an atomic access), and where. A later launch starts with none (a page's
// generation). The blocks run in order, so every access recorded is of a
// block before the running one, or of the running one itself.
//
//===----------------------------------------------------------------------===//
#include "TeamRaces.h"
#include "AccessKinds.h"
#include "HeldLocks.h"

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

struct TeamByte {
  uint32_t Writer, Reader; ///< 0: none
  const char *WriterSite, *ReaderSite;
  const void *WriterLock, *ReaderLock; ///< the outermost lock held, if any
};

struct ShadowPage {
  uint64_t Generation;
  TeamByte Bytes[Page];
};

/// The launching device thread's shadow of the watched memory: one
/// directory entry per page.
struct LaunchShadow {
  ShadowPage **Pages = nullptr;
  uint64_t GridSerial = 0;
  uint64_t Generation = 0;
};

std::atomic<uint64_t> WatchedBase{0}, WatchedBytes{0};
__attribute__((tls_model("initial-exec"))) thread_local LaunchShadow TShadow;

void *mapZeros(uint64_t Bytes) {
  void *P =
      ::mmap(nullptr, Bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (P == MAP_FAILED)
    stopDevice("races between teams under OMPSIM_CHECK: cannot map %" PRIu64 " bytes of shadow", Bytes);
  return P;
}

uint32_t blockOf(uint32_t Who) { return (Who & ~AtomicBit) - 1; }

/// Whether `Before` (a block and kind, made holding `BeforeLock`) and `Now`
/// race: two blocks, not both atomic, not under one lock.
bool races(uint32_t Before, const void *BeforeLock, uint32_t Now, const void *NowLock) {
  return Before && (Before & ~AtomicBit) != (Now & ~AtomicBit) &&
         !((Before & AtomicBit) && (Now & AtomicBit)) && !(BeforeLock && BeforeLock == NowLock);
}

[[noreturn]] void reportRace(const vgpu::BlockRunner &R, uint64_t Addr, uint32_t Before, bool BeforeWrote,
                             const char *BeforeSite, uint32_t Now, bool NowWrites, const char *Site) {
  const char *Fix = BeforeWrote && NowWrites
                        ? "make both atomic (#pragma omp atomic), or let one team write it"
                    : BeforeWrote ? "make both atomic, or read it in a later kernel"
                                  : "make both atomic, or write it in a later kernel";
  stopDevice("block %u, thread %u: the %s of device memory at dev:0x%" PRIx64
             " at %s races with block %u's %s at %s: a GPU runs a kernel's teams at once, and only atomics "
             "order them; %s",
             R.blockNum(), R.current(), accessText((Now & AtomicBit) != 0, NowWrites), Addr, Site,
             blockOf(Before), accessText((Before & AtomicBit) != 0, BeforeWrote), BeforeSite, Fix);
}

/// The shadow of the byte at `Offset` of the watched memory, for this launch.
TeamByte &shadowOf(LaunchShadow &S, uint64_t Offset) {
  ShadowPage *&P = S.Pages[Offset / Page];
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
  const uint64_t Base = WatchedBase.load(std::memory_order_relaxed);
  const uint64_t Watched = WatchedBytes.load(std::memory_order_relaxed);
  const uint64_t Offset = reinterpret_cast<uint64_t>(Addr) - Base;
  if (Offset >= Watched || R.blockNum() + 1 >= AtomicBit)
    return;
  if (Bytes > Watched - Offset)
    Bytes = Watched - Offset;
  // A store that changes nothing is seen by no other team.
  if (storeChangesNothing(Addr, Bytes, Kind, Value))
    return;
  LaunchShadow &S = TShadow;
  if (!S.Pages)
    S.Pages = static_cast<ShadowPage **>(mapZeros((Watched + Page - 1) / Page * sizeof(ShadowPage *)));
  if (S.GridSerial != R.grid().Serial) {
    S.GridSerial = R.grid().Serial;
    ++S.Generation;
  }
  const uint32_t Now = (R.blockNum() + 1) | ((Kind & OMPSIM_ACCESS_ATOMIC) ? AtomicBit : 0);
  const void *Lock = outermostLock(R.current());
  for (uint64_t B = Offset; B < Offset + Bytes; ++B) {
    TeamByte &T = shadowOf(S, B);
    if (Kind & (OMPSIM_ACCESS_READ | OMPSIM_ACCESS_COPY)) {
      if (races(T.Writer, T.WriterLock, Now, Lock))
        reportRace(R, Base + B, T.Writer, true, T.WriterSite, Now, false, Site);
      // The first reader is kept: every later writer is a later block.
      if (!T.Reader) {
        T.Reader = Now;
        T.ReaderSite = Site;
        T.ReaderLock = Lock;
      }
    }
    if (Kind & OMPSIM_ACCESS_WRITE) {
      if (races(T.Writer, T.WriterLock, Now, Lock))
        reportRace(R, Base + B, T.Writer, true, T.WriterSite, Now, true, Site);
      if (races(T.Reader, T.ReaderLock, Now, Lock))
        reportRace(R, Base + B, T.Reader, false, T.ReaderSite, Now, true, Site);
      T.Writer = Now;
      T.WriterSite = Site;
      T.WriterLock = Lock;
    }
  }
}

} // namespace ompsim::device

//===- FiberSlots.cpp - the stacks of a block runner's fibers ------------===//
#include "FiberSlots.h"

#include "ompsim/device_runtime.h"

#include <sys/mman.h>

#include <atomic>

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

/// The process's reservation of fiber slots (empty until the first block
/// runner asks): the GPU device runtime's hardware layer compares a frame
/// address with it.
OMPSIM_DEVICE_API ompsim::vgpu::FiberSlotRange __ompsim_vgpu_fiber_slots = {0, 0};

namespace ompsim::vgpu {
namespace {

/// Runners whose slots the reservation holds: more than the device threads
/// of any launch on this machine (one runner each), with room for launches
/// of several host threads at once. 64 pieces of 128 MiB of address space,
/// none of it memory until a fiber's page is touched.
constexpr uint32_t ReservedRunners = 64;
constexpr size_t PieceBytes = size_t(OMPSIM_BARE_MAX_BLOCK_THREADS) * FiberSlotBytes;

/// A piece of the reservation for one runner's slots, or null when all are
/// taken (or the reservation could not be made).
char *claimPiece() {
  static char *const Reservation = [] {
    // One slot more than the pieces, to align the first to a slot.
    size_t Bytes = ReservedRunners * PieceBytes + FiberSlotBytes;
    void *Mem = ::mmap(nullptr, Bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (Mem == MAP_FAILED)
      return static_cast<char *>(nullptr);
    uintptr_t Start = (reinterpret_cast<uintptr_t>(Mem) + FiberSlotBytes - 1) & ~(FiberSlotBytes - 1);
    __ompsim_vgpu_fiber_slots.Base = Start;
    __ompsim_vgpu_fiber_slots.Size = ReservedRunners * PieceBytes;
    return reinterpret_cast<char *>(Start);
  }();
  static std::atomic<uint32_t> Claimed{0};
  if (!Reservation)
    return nullptr;
  uint32_t Piece = Claimed.fetch_add(1, std::memory_order_relaxed);
  return Piece < ReservedRunners ? Reservation + size_t(Piece) * PieceBytes : nullptr;
}

} // namespace

bool FiberSlots::prepare(uint32_t From, uint32_t To) {
  if (To <= From)
    return true;
  char *Start = slot(From);
  size_t Bytes = size_t(To - From) * FiberSlotBytes;
  if (::mprotect(Start, Bytes, PROT_READ | PROT_WRITE) != 0)
    return false;
  for (uint32_t T = From; T < To; ++T)
    if (::mprotect(slot(T), PageBytes, PROT_NONE) != 0)
      return false;
  return true;
}

bool FiberSlots::reserve(uint32_t Count) {
  if (Count <= Capacity)
    return true;
  if (!Base)
    if (char *Piece = claimPiece()) {
      Base = Piece;
      InReservation = true;
    }
  if (InReservation) {
    if (Count > OMPSIM_BARE_MAX_BLOCK_THREADS || !prepare(Capacity, Count))
      return false;
    Capacity = Count;
    return true;
  }
  // Slots of the runner's own, aligned to a slot (a block never grows while
  // it runs: the old slots hold nothing to keep).
  size_t Bytes = size_t(Count) * FiberSlotBytes + FiberSlotBytes;
  void *Mem = ::mmap(nullptr, Bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (Mem == MAP_FAILED)
    return false;
  if (Mapping)
    ::munmap(Mapping, MappingBytes);
  Mapping = Mem;
  MappingBytes = Bytes;
  Base = reinterpret_cast<char *>((reinterpret_cast<uintptr_t>(Mem) + FiberSlotBytes - 1) &
                                  ~(FiberSlotBytes - 1));
  Capacity = 0;
  if (!prepare(0, Count))
    return false;
  Capacity = Count;
  return true;
}

} // namespace ompsim::vgpu

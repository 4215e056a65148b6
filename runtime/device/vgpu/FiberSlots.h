//===- FiberSlots.h - the stacks of a block runner's fibers -----*- C++ -*-===//
//
// A block's threads are fibers; each has a slot of FiberSlotBytes,
// aligned to its size: a guard page, the fiber's stack, and at the slot's
// end the thread's registers (LaneRegisters), in the page of the
// stack's top (a fiber that runs touches one page more than its frames'
// at most, and 1024 fibers' pages stay within the TLB). Code running on a fiber
// finds its registers from its own frame address, with no call and no
// thread-local lookup (the GPU device runtime's hardware layer reads its
// thread and block ids that way, VirtualGpu.h).
//
// The slots of the first block runners come from one reservation of the
// process, whose range __ompsim_vgpu_fiber_slots publishes; a runner beyond
// them gets slots of its own, whose fibers' registers are then read through
// __ompsim_vgpu_registers (a call).
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_VGPU_FIBERSLOTS_H
#define OMPSIM_DEVICE_VGPU_FIBERSLOTS_H

#include "VirtualGpu.h"

#include <cstddef>
#include <cstdint>

namespace ompsim::vgpu {

/// The slots of one block runner's fibers. Never freed (a runner lives as
/// long as its device thread); it only grows.
class FiberSlots {
public:
  /// A page: the guard's.
  static constexpr size_t PageBytes = 4096;

  /// Room for at least `Count` fibers; false when the memory cannot be had.
  bool reserve(uint32_t Count);

  /// Fiber `T`'s registers, near its slot's end.
  LaneRegisters &registers(uint32_t T) const { return *reinterpret_cast<LaneRegisters *>(stackTop(T)); }

  /// The lowest address of fiber `T`'s stack (which grows down to it).
  char *stackBottom(uint32_t T) const { return slot(T) + PageBytes; }
  /// The address fiber `T`'s stack starts from (its registers lie above).
  char *stackTop(uint32_t T) const {
    return reinterpret_cast<char *>(laneRegistersOf(reinterpret_cast<uintptr_t>(slot(T))));
  }
  /// Bytes of fiber `T`'s stack (its slot's but the guard page and up to
  /// FiberSlotColors cache lines above its registers).
  size_t stackBytes(uint32_t T) const { return size_t(stackTop(T) - stackBottom(T)); }

private:
  char *slot(uint32_t T) const { return Base + size_t(T) * FiberSlotBytes; }

  /// Makes slots [From, To) usable: stack and registers writable, the guard
  /// page below the stack not (an overflow faults there, and the executor
  /// reports the fault).
  bool prepare(uint32_t From, uint32_t To);

  char *Base = nullptr;
  uint32_t Capacity = 0;
  /// The slots are a piece of the process's reservation, which holds the
  /// most fibers a block has: they grow in place.
  bool InReservation = false;
  /// Otherwise the runner's own mapping, which holds them.
  void *Mapping = nullptr;
  size_t MappingBytes = 0;
};

} // namespace ompsim::vgpu

#endif // OMPSIM_DEVICE_VGPU_FIBERSLOTS_H

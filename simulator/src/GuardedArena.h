// ompsim simulator: device blocks placed for the map checker (OMPSIM_CHECK).
#pragma once

#include "RangeAllocator.h"

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ompsim::sim {

/// What a fault address means to the map checker's placement.
struct GuardHit {
  enum Kind { PastEnd, Freed } What = PastEnd;
  uint64_t Block = 0;  ///< the device block's address
  uint64_t Size = 0;   ///< its size in bytes
  uint64_t Offset = 0; ///< the address's offset from the block (PastEnd)
};

/// A change of access to device pages that the executor must make.
struct PageProtection {
  uint64_t Begin = 0, End = 0; ///< page-aligned [Begin, End)
  bool Accessible = false;     ///< read-write, or no access at all
};

/// Places each device block so that its end touches an inaccessible guard
/// page, and keeps freed blocks inaccessible in a quarantine for a while, so
/// a kernel that reads past a mapped section, or through a device pointer
/// whose mapping has ended, faults instead of reading another block.
///
/// Like RangeAllocator it only does address arithmetic: the protections it
/// decides are queued (takeProtections()) for the executor to apply before
/// device code runs. A block from quarantine goes back to the heap only
/// after its pages were made accessible again (releaseEvicted()).
class GuardedArena {
public:
  /// Blocks and the quarantine live in `Heap`; `PageSize` is the executor's.
  GuardedArena(RangeAllocator &Heap, uint64_t PageSize) : Heap(Heap), Page(PageSize) {}

  /// Returns a block of `Size` bytes aligned to `Align` whose end is as close
  /// to the following guard page as the alignment allows; 0 when the heap
  /// is full even with the quarantine given back.
  uint64_t allocate(uint64_t Size, uint64_t Align);

  /// Quarantines the block at `Addr`; false if no live block starts there.
  bool release(uint64_t Addr);

  /// True when `Addr` is a live block of this arena.
  bool owns(uint64_t Addr) const { return Live.count(Addr) != 0; }

  /// The protections decided since the last call, in order.
  std::vector<PageProtection> takeProtections();

  /// Gives back to the heap the blocks whose protections were applied.
  void releaseEvicted();

  /// True when the heap has no room left unless the quarantine is given back.
  bool wantsFlush() const { return FlushWanted; }

  /// The block whose guard page or quarantined pages hold `Addr`, if any.
  std::optional<GuardHit> classify(uint64_t Addr) const;

  /// Why `Addr` faulted, when it lies in a guard page or a quarantined block:
  /// "at offset N of the S-byte device block at 0x..., past its end ..." or "".
  std::string describe(uint64_t Addr) const;

private:
  struct Block {
    uint64_t Span = 0;   ///< start of the pages (the heap's block)
    uint64_t Pages = 0;  ///< bytes of the block's pages, guard page excluded
    uint64_t Size = 0;   ///< bytes asked for
    uint64_t Serial = 0; ///< allocation order, for messages
  };
  void evictOldest();

  RangeAllocator &Heap;
  uint64_t Page;
  uint64_t NextSerial = 1;
  bool FlushWanted = false;
  std::map<uint64_t, Block> Live; ///< block address -> block
  std::deque<std::pair<uint64_t, Block>> Quarantine;
  uint64_t QuarantineBytes = 0;
  std::vector<uint64_t> Evicted; ///< spans to give back once accessible again
  std::vector<PageProtection> Pending;
};

} // namespace ompsim::sim

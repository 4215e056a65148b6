// ompsim simulator: a deterministic first-fit allocator over one address range.
#pragma once

#include <cstdint>
#include <map>

namespace ompsim::sim {

/// Hands out blocks of [begin, end) first-fit with coalescing on free.
///
/// It touches no memory: it only does address arithmetic, so the same
/// sequence of calls gives the same addresses in every run.
class RangeAllocator {
public:
  /// An empty allocator; call reset() before use.
  RangeAllocator() = default;
  /// Manages [begin, end).
  RangeAllocator(uint64_t Begin, uint64_t End) { reset(Begin, End); }

  /// Forgets all blocks and manages [begin, end).
  void reset(uint64_t Begin, uint64_t End);

  /// Returns the address of a block of `Size` bytes aligned to `Align` (a
  /// power of two), or 0 when no free block fits.
  uint64_t allocate(uint64_t Size, uint64_t Align);

  /// Returns a block to the free list; false if `Addr` is not a live block.
  bool release(uint64_t Addr);

  /// Size of the live block at `Addr`, or 0.
  uint64_t blockSize(uint64_t Addr) const;

  /// Bytes currently handed out.
  uint64_t bytesInUse() const { return InUse; }

private:
  std::map<uint64_t, uint64_t> Free; ///< start -> size
  std::map<uint64_t, uint64_t> Live; ///< start -> size
  uint64_t InUse = 0;
};

} // namespace ompsim::sim

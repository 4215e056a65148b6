#include "RangeAllocator.h"

#include <cassert>

namespace ompsim::sim {

void RangeAllocator::reset(uint64_t begin, uint64_t end) {
  assert(begin <= end && "allocator range is inverted");
  free_.clear();
  live_.clear();
  inUse_ = 0;
  if (end > begin)
    free_[begin] = end - begin;
}

uint64_t RangeAllocator::allocate(uint64_t size, uint64_t align) {
  assert(align && (align & (align - 1)) == 0 && "alignment must be a power of two");
  // Zero-byte requests still get a distinct address, as malloc does.
  if (size == 0)
    size = 1;
  size = (size + 15) & ~uint64_t(15);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    uint64_t start = it->first, len = it->second;
    uint64_t aligned = (start + align - 1) & ~(align - 1);
    if (aligned < start || aligned - start > len || len - (aligned - start) < size)
      continue;
    free_.erase(it);
    if (aligned > start)
      free_[start] = aligned - start;
    uint64_t tail = start + len - (aligned + size);
    if (tail)
      free_[aligned + size] = tail;
    live_[aligned] = size;
    inUse_ += size;
    return aligned;
  }
  return 0;
}

bool RangeAllocator::release(uint64_t addr) {
  auto it = live_.find(addr);
  if (it == live_.end())
    return false;
  uint64_t start = addr, size = it->second;
  live_.erase(it);
  inUse_ -= size;
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == start + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      prev->second += size;
      return true;
    }
  }
  free_[start] = size;
  return true;
}

uint64_t RangeAllocator::blockSize(uint64_t addr) const {
  auto it = live_.find(addr);
  return it == live_.end() ? 0 : it->second;
}

} // namespace ompsim::sim

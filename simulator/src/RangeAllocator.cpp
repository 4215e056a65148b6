#include "RangeAllocator.h"

#include <cassert>

namespace ompsim::sim {

void RangeAllocator::reset(uint64_t Begin, uint64_t End) {
  assert(Begin <= End && "allocator range is inverted");
  Free.clear();
  Live.clear();
  InUse = 0;
  if (End > Begin)
    Free[Begin] = End - Begin;
}

uint64_t RangeAllocator::allocate(uint64_t Size, uint64_t Align) {
  assert(Align && (Align & (Align - 1)) == 0 && "alignment must be a power of two");
  // Zero-byte requests still get a distinct address, as malloc does.
  if (Size == 0)
    Size = 1;
  Size = (Size + 15) & ~uint64_t(15);
  for (auto It = Free.begin(); It != Free.end(); ++It) {
    uint64_t Start = It->first, Len = It->second;
    uint64_t Aligned = (Start + Align - 1) & ~(Align - 1);
    if (Aligned < Start || Aligned - Start > Len || Len - (Aligned - Start) < Size)
      continue;
    Free.erase(It);
    if (Aligned > Start)
      Free[Start] = Aligned - Start;
    uint64_t Tail = Start + Len - (Aligned + Size);
    if (Tail)
      Free[Aligned + Size] = Tail;
    Live[Aligned] = Size;
    InUse += Size;
    return Aligned;
  }
  return 0;
}

bool RangeAllocator::release(uint64_t Addr) {
  auto It = Live.find(Addr);
  if (It == Live.end())
    return false;
  uint64_t Start = Addr, Size = It->second;
  Live.erase(It);
  InUse -= Size;
  auto Next = Free.lower_bound(Start);
  if (Next != Free.end() && Next->first == Start + Size) {
    Size += Next->second;
    Next = Free.erase(Next);
  }
  if (Next != Free.begin()) {
    auto Prev = std::prev(Next);
    if (Prev->first + Prev->second == Start) {
      Prev->second += Size;
      return true;
    }
  }
  Free[Start] = Size;
  return true;
}

uint64_t RangeAllocator::blockSize(uint64_t Addr) const {
  auto It = Live.find(Addr);
  return It == Live.end() ? 0 : It->second;
}

} // namespace ompsim::sim

// Device blocks with guard pages and a quarantine of freed blocks, for the map checker.
#include "GuardedArena.h"

#include <fmt/format.h>

namespace ompsim::sim {
namespace {

/// The quarantine keeps at most this many freed blocks and bytes.
constexpr size_t kQuarantineBlocks = 256;
constexpr uint64_t kQuarantineBytes = 64ULL << 20;

uint64_t roundUp(uint64_t X, uint64_t To) { return (X + To - 1) & ~(To - 1); }

} // namespace

uint64_t GuardedArena::allocate(uint64_t Size, uint64_t Align) {
  uint64_t Rounded = roundUp(Size ? Size : 1, Align);
  uint64_t Pages = roundUp(Rounded, Page);
  uint64_t Span = Heap.allocate(Pages + Page, Page);
  if (!Span) {
    // Full: the quarantine must be given back first (after the executor
    // makes its pages accessible again).
    while (!Quarantine.empty())
      evictOldest();
    FlushWanted = !Evicted.empty();
    return 0;
  }
  uint64_t Addr = Span + Pages - Rounded;
  Live[Addr] = Block{Span, Pages, Size, NextSerial++};
  Pending.push_back({Span + Pages, Span + Pages + Page, false});
  return Addr;
}

bool GuardedArena::release(uint64_t Addr) {
  auto It = Live.find(Addr);
  if (It == Live.end())
    return false;
  Block B = It->second;
  Live.erase(It);
  Pending.push_back({B.Span, B.Span + B.Pages, false});
  Quarantine.emplace_back(Addr, B);
  QuarantineBytes += B.Pages + Page;
  // The block freed last always stays (even one larger than the byte bound),
  // so a use right after its mapping ends faults; a full heap flushes it.
  while (Quarantine.size() > kQuarantineBlocks ||
         (QuarantineBytes > kQuarantineBytes && Quarantine.size() > 1))
    evictOldest();
  return true;
}

void GuardedArena::evictOldest() {
  const Block &B = Quarantine.front().second;
  Pending.push_back({B.Span, B.Span + B.Pages + Page, true});
  Evicted.push_back(B.Span);
  QuarantineBytes -= B.Pages + Page;
  Quarantine.pop_front();
}

std::vector<PageProtection> GuardedArena::takeProtections() {
  std::vector<PageProtection> Out;
  Out.swap(Pending);
  return Out;
}

void GuardedArena::releaseEvicted() {
  for (uint64_t Span : Evicted)
    Heap.release(Span);
  Evicted.clear();
  FlushWanted = false;
}

std::optional<GuardHit> GuardedArena::classify(uint64_t Addr) const {
  for (const auto &[Start, B] : Live) {
    uint64_t End = B.Span + B.Pages;
    if (Addr >= End && Addr < End + Page)
      return GuardHit{GuardHit::PastEnd, Start, B.Size, Addr - Start};
  }
  for (const auto &[Start, B] : Quarantine)
    if (Addr >= B.Span && Addr < B.Span + B.Pages + Page)
      return GuardHit{GuardHit::Freed, Start, B.Size, Addr - Start};
  return std::nullopt;
}

std::string GuardedArena::describe(uint64_t Addr) const {
  std::optional<GuardHit> Hit = classify(Addr);
  if (!Hit)
    return {};
  if (Hit->What == GuardHit::PastEnd)
    return fmt::format("at offset {} of the {}-byte device block at {:#x}, past its end (in its guard "
                       "page: an access outside the mapped section)",
                       Hit->Offset, Hit->Size, Hit->Block);
  return fmt::format("in the {}-byte device block at {:#x}, freed earlier (its mapping had ended: a "
                     "use after unmap)",
                     Hit->Size, Hit->Block);
}

} // namespace ompsim::sim

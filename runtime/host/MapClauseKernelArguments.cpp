// A target region's kernel arguments after its map clauses are entered:
// literals, firstprivate copies (small ones packed in one block, as stock
// packs them), translated mapped items and re-pointed lambda captures (see
// MapClauseProcessor.h).
#include "MapClauseProcessor.h"
#include "MapFlags.h"
#include "MapItemText.h"
#include "ompsim/Errors.h"

#include <fmt/format.h>

#include <cstring>
#include <optional>
#include <vector>

namespace ompsim::host {
namespace {

using mapflag::has;
using mapflag::memberOf;
namespace flag = mapflag;

} // namespace

llvm::Expected<uint64_t> MapClauseProcessor::kernelArgument(const MapArg &Arg,
                                                            std::vector<uint64_t> &PrivateBlocks) {
  auto Base = reinterpret_cast<uintptr_t>(Arg.Base);
  auto Begin = reinterpret_cast<uintptr_t>(Arg.Begin);
  if (has(Arg.Type, flag::PtrAndObj) && !has(Arg.Type, flag::Literal | flag::Private))
    std::memcpy(&Base, Arg.Base, sizeof(Base)); // the pointee's base is the pointer's value
  if (has(Arg.Type, flag::Literal))
    return static_cast<uint64_t>(Base);
  if (has(Arg.Type, flag::Private)) {
    // firstprivate: a device copy private to this launch.
    auto Size = static_cast<uint64_t>(Arg.Size);
    auto Block = Memory.allocate(Size, Arg.Begin);
    if (!Block)
      return Block.takeError();
    PrivateBlocks.push_back(*Block);
    // Stock's copy line names the table entry its look-up of the item ends on.
    std::string Name;
    if (Memory.namesCopies())
      if (const MapEntry *Near = Table.stockNeighbour(Begin))
        Name = Near->InfoName;
    if (auto Err = Memory.submit(*Block, Arg.Begin, Size, Name))
      return std::move(Err);
    return *Block - (Begin - Base);
  }
  MapLookup Found = Table.lookup(Begin, static_cast<uint64_t>(Arg.Size));
  if (!Found.Entry)
    return static_cast<uint64_t>(Base); // unmapped zero-length section: keeps its host value
  lookedUp(Begin, Arg.Size, *Found.Entry);
  // A block the item only overlaps still gives its device address (stock).
  return Found.Entry->translate(Begin) - (Begin - Base);
}

llvm::Expected<std::vector<uint64_t>>
MapClauseProcessor::kernelArguments(const std::vector<MapArg> &Args, std::vector<uint64_t> &PrivateBlocks) {
  std::vector<uint64_t> Values;
  // The device base address of each TARGET_PARAM item, by item index.
  std::vector<std::optional<uint64_t>> ByItem(Args.size());
  // Small firstprivate items travel together, as with stock: one block, one
  // copy after the other items, each item at stock's offset in it.
  struct Packed {
    size_t Item, Value;
    uint64_t Offset;
  };
  std::vector<Packed> Pack;
  uint64_t PackSize = 0, PackAlignment = 0, LastSize = 0;
  // One pass in item order, as stock's (its look-ups print in this order): a
  // lambda's captures follow the lambda's own item.
  constexpr uint64_t LambdaCapture = flag::PtrAndObj | flag::Literal | flag::Implicit;
  for (size_t I = 0; I < Args.size(); ++I) {
    const MapArg &Arg = Args[I];
    bool Packable = has(Arg.Type, flag::TargetParam) && has(Arg.Type, flag::Private) &&
                    !has(Arg.Type, flag::Literal) && has(Arg.Type, flag::To) && Arg.Size <= 1024 &&
                    !(I + 1 < Args.size() && memberOf(Args[I + 1].Type) != 0);
    if (Packable) {
      // Stock's layout: an item starts at the alignment the previous one
      // leaves, padded up to its host address's alignment (at most 16).
      uint64_t Padding = 0, Alignment = 16;
      if (!Pack.empty()) {
        Alignment = PackAlignment;
        if (uint64_t Rest = LastSize % Alignment)
          Alignment = Rest;
        auto Host = reinterpret_cast<uintptr_t>(Arg.Begin);
        uint64_t Required = Host ? std::min<uint64_t>(16, Host & (~Host + 1)) : 16;
        if (Required > Alignment) {
          Padding = Required - Alignment;
          Alignment = Required;
        }
      }
      Pack.push_back({I, Values.size(), PackSize + Padding});
      PackSize += Padding + static_cast<uint64_t>(Arg.Size);
      PackAlignment = Alignment;
      LastSize = static_cast<uint64_t>(Arg.Size);
      Values.push_back(0); // set once the block exists
      continue;
    }
    if (has(Arg.Type, flag::TargetParam)) {
      auto Value = kernelArgument(Arg, PrivateBlocks);
      if (!Value)
        return Value.takeError();
      Values.push_back(*Value);
      ByItem[I] = *Value;
      continue;
    }
    if ((static_cast<uint64_t>(Arg.Type) & LambdaCapture) != LambdaCapture)
      continue;
    uint64_t Parent = memberOf(Arg.Type);
    if (Parent == 0 || Parent > Args.size() || !ByItem[Parent - 1])
      return makeError(fmt::format("lambda capture {} has no lambda kernel argument to live in "
                                   "(parent item {})",
                                   describeMapItem(Arg), Parent));
    // base: the capture field in the host lambda; begin: the captured variable.
    auto Field = reinterpret_cast<uintptr_t>(Arg.Base);
    auto LambdaBegin = reinterpret_cast<uintptr_t>(Args[Parent - 1].Begin);
    uint64_t TgtField = *ByItem[Parent - 1] + (Field - LambdaBegin);
    auto Captured = reinterpret_cast<uintptr_t>(Arg.Begin);
    MapLookup Found = Table.lookup(Captured, static_cast<uint64_t>(Arg.Size));
    if (!Found.Entry)
      continue; // not mapped: the lambda keeps the host address, as with stock
    lookedUp(Captured, Arg.Size, *Found.Entry);
    uint64_t TgtCaptured = Found.Entry->translate(Captured);
    if (auto Err = Memory.submit(TgtField, &TgtCaptured, sizeof(TgtCaptured), Found.Entry->InfoName))
      return std::move(Err);
    events::emitIfObserved(
        [&] { return events::MapLambdaCapture{Memory, Arg.Name, Captured, TgtField, TgtCaptured}; });
  }
  if (Pack.empty())
    return Values;
  llvm::SmallVector<char> Buffer(PackSize, 0);
  for (const Packed &P : Pack)
    std::memcpy(Buffer.data() + P.Offset, Args[P.Item].Begin, static_cast<size_t>(Args[P.Item].Size));
  auto Block = Memory.allocate(PackSize, Buffer.data());
  if (!Block)
    return Block.takeError();
  PrivateBlocks.push_back(*Block);
  // Stock's copy line names the table entry its look-up of the buffer ends on.
  std::string Name;
  if (Memory.namesCopies())
    if (const MapEntry *Near = Table.stockNeighbour(reinterpret_cast<uintptr_t>(Buffer.data())))
      Name = Near->InfoName;
  if (auto Err = Memory.submit(*Block, Buffer.data(), PackSize, Name))
    return std::move(Err);
  for (const Packed &P : Pack) {
    const MapArg &Arg = Args[P.Item];
    Values[P.Value] =
        *Block + P.Offset - (reinterpret_cast<uintptr_t>(Arg.Begin) - reinterpret_cast<uintptr_t>(Arg.Base));
  }
  return Values;
}

} // namespace ompsim::host

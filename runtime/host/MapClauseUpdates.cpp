// target update: contiguous items and strided (non-contiguous) sections, moved
// in as few contiguous runs as their layout allows (see MapClauseProcessor.h).
#include "MapClauseProcessor.h"
#include "MapFlags.h"
#include "MapItemText.h"
#include "StockMessages.h"
#include "ompsim/Errors.h"

#include <fmt/format.h>

#include <cstring>
#include <vector>

namespace ompsim::host {
namespace {

using mapflag::has;
namespace flag = mapflag;

} // namespace

llvm::Error MapClauseProcessor::update(const std::vector<MapArg> &Args) { return updateList(Args); }

llvm::Error MapClauseProcessor::updateList(const std::vector<MapArg> &Args) {
  if (auto Err = checkMapTypes(Args, "target update", /*allowNonContig=*/true))
    return Err;
  for (const MapArg &Arg : Args) {
    if (has(Arg.Type, flag::Literal) || has(Arg.Type, flag::Private))
      continue;
    if (Arg.Mapper && !has(Arg.Type, flag::NonContig)) {
      if (auto Err = updateList(runMapper(Arg)))
        return stock::addLine(std::move(Err), stock::mapperFailed("targetDataUpdate"));
      continue;
    }
    if (has(Arg.Type, flag::NonContig)) {
      if (auto Err = updateNonContiguous(Arg))
        return Err;
      continue;
    }
    if (auto Err =
            updateContiguous(Arg, reinterpret_cast<uintptr_t>(Arg.Begin), static_cast<uint64_t>(Arg.Size)))
      return Err;
  }
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::updateContiguous(const MapArg &Arg, uintptr_t Begin, uint64_t Size) {
  MapLookup Found = Table.lookup(Begin, Size);
  if (!Found.Entry || !Found.Contained) {
    // Unlike a map clause, a motion clause's `present` holds under unified
    // shared memory too (stock).
    if (has(Arg.Type, flag::Present)) {
      MapArg Piece = Arg;
      Piece.Begin = reinterpret_cast<void *>(Begin);
      Piece.Size = static_cast<int64_t>(Size);
      return missingPresent(Piece, "updated");
    }
    return llvm::Error::success(); // OpenMP 5.1: updating an absent item does nothing
  }
  lookedUp(Begin, static_cast<int64_t>(Size), *Found.Entry);
  events::emitIfObserved([&] {
    events::MapItem Moved = eventItem(Arg);
    Moved.Begin = Begin;
    Moved.Size = static_cast<int64_t>(Size);
    return events::MapUpdate{Memory, Moved, /*ToDevice=*/has(Arg.Type, flag::To)};
  });
  if (has(Arg.Type, flag::To))
    if (auto Err = copyToDevice(*Found.Entry, Begin, Size))
      return Err;
  if (has(Arg.Type, flag::From))
    if (auto Err = copyFromDevice(*Found.Entry, Begin, Size, Arg.Name))
      return Err;
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::updateNonContiguous(const MapArg &Arg) {
  // clang passes the descriptor array as the item's begin and the number of
  // dimensions as its size. Each dimension's offset is the section's lower
  // bound (in elements of that dimension) and its stride the byte distance
  // between the section's elements; clang ends the list with a
  // {0, 1, element size} dimension.
  if (Arg.Size <= 0 || Arg.Size > 64 || !Arg.Begin)
    return makeError(
        fmt::format("non-contiguous update of {} has {} dimensions", describeMapItem(Arg), Arg.Size));
  std::vector<NonContigDim> Dims(static_cast<size_t>(Arg.Size));
  std::memcpy(Dims.data(), Arg.Begin, Dims.size() * sizeof(NonContigDim));
  uint64_t ElementSize = Dims.back().Stride;
  if (Dims.size() > 1 && Dims.back().Offset == 0 && Dims.back().Count == 1)
    Dims.pop_back();
  for (const NonContigDim &D : Dims)
    if (D.Count == 0)
      return llvm::Error::success();
  // The lower bound of the innermost dimension counts elements; an outer
  // dimension's counts its own (unstrided) rows, whose size is its stride.
  auto Unit = [&](size_t D) { return D + 1 == Dims.size() ? ElementSize : Dims[D].Stride; };
  uintptr_t Start = reinterpret_cast<uintptr_t>(Arg.Base);
  for (size_t D = 0; D < Dims.size(); ++D)
    Start += Dims[D].Offset * Unit(D);

  // A strided section of structs with a declare mapper: the mapper names
  // what of each element moves.
  bool PerElement = Arg.Mapper != nullptr;
  MapArg Element = Arg;
  Element.Type = static_cast<int64_t>(static_cast<uint64_t>(Arg.Type) & ~flag::NonContig);
  Element.Size = static_cast<int64_t>(ElementSize);

  // Walk the elements in order and merge the ones that touch into runs, so
  // a section with contiguous rows moves in one transfer per row (or one).
  uintptr_t RunBegin = 0;
  uint64_t RunSize = 0;
  std::vector<uintptr_t> RunElements;
  auto Flush = [&]() -> llvm::Error {
    if (RunSize == 0)
      return llvm::Error::success();
    MapLookup Found = Table.lookup(RunBegin, RunSize);
    llvm::Error Err = llvm::Error::success();
    if (Found.Entry && Found.Contained) {
      Err = updateContiguous(Arg, RunBegin, RunSize);
    } else {
      // The run spans blocks (or misses them): each element on its own.
      for (uintptr_t E : RunElements)
        if ((Err = updateContiguous(Arg, E, ElementSize)))
          break;
    }
    RunSize = 0;
    RunElements.clear();
    return Err;
  };
  std::vector<uint64_t> Index(Dims.size(), 0);
  while (true) {
    uintptr_t Addr = Start;
    for (size_t D = 0; D < Dims.size(); ++D)
      Addr += Index[D] * Dims[D].Stride;
    if (RunSize != 0 && Addr == RunBegin + RunSize) {
      RunSize += ElementSize;
    } else {
      if (auto Err = Flush())
        return Err;
      RunBegin = Addr;
      RunSize = ElementSize;
    }
    RunElements.push_back(Addr);
    if (PerElement) {
      RunSize = 0;
      RunElements.clear();
      Element.Begin = reinterpret_cast<void *>(Addr);
      if (auto Err = updateList(runMapper(Element)))
        return Err;
    }
    size_t D = Dims.size();
    while (D-- > 0) {
      if (++Index[D] < Dims[D].Count)
        break;
      Index[D] = 0;
    }
    if (D == static_cast<size_t>(-1))
      break;
  }
  return Flush();
}

} // namespace ompsim::host

// Lookup and bookkeeping of the per-device mapping table.
#include "MappingTable.h"

#include <algorithm>
#include <cassert>
#include <functional>

namespace ompsim::host {
namespace {

bool beginsBefore(const MapEntry &A, const MapEntry &B) { return A.HstBegin < B.HstBegin; }

} // namespace

MapLookup MappingTable::lookup(uintptr_t Begin, uint64_t Size) {
  MapLookup Result;
  // Over both structures: the last entry starting at or before `begin` is the
  // only one that can contain it; the first one starting after it can still
  // overlap a range that extends into it.
  MapEntry *Prev = nullptr, *Next = nullptr;
  if (!Entries.empty()) {
    auto It = Entries.upper_bound(Begin);
    if (It != Entries.begin())
      Prev = &std::prev(It)->second;
    if (It != Entries.end())
      Next = &It->second;
  }
  for (PermanentBatch &Batch : Permanent) {
    std::vector<MapEntry> &V = Batch.Entries; // never empty
    MapEntry *P = nullptr, *N = nullptr;
    // Most batches lie wholly before or after `begin`: no search needed.
    if (V.back().HstBegin <= Begin) {
      P = &V.back();
    } else if (V.front().HstBegin > Begin) {
      N = &V.front();
    } else {
      auto It = std::upper_bound(V.begin(), V.end(), Begin,
                                 [](uintptr_t A, const MapEntry &E) { return A < E.HstBegin; });
      P = &*std::prev(It);
      N = &*It;
    }
    if (P && (!Prev || P->HstBegin > Prev->HstBegin))
      Prev = P;
    if (N && (!Next || N->HstBegin < Next->HstBegin))
      Next = N;
  }
  uintptr_t End = Begin + Size;
  if (Prev) {
    MapEntry &E = *Prev;
    if (Begin < E.HstEnd || (Size == 0 && E.HstBegin == E.HstEnd && Begin == E.HstBegin)) {
      Result.Entry = &E;
      Result.Contained = Size == 0 || End <= E.HstEnd;
      Result.Extends = !Result.Contained;
      return Result;
    }
  }
  if (!Next)
    return Result;
  if (Size == 0) {
    // Before the block but inside its item's extent (from its base).
    if (Begin >= Next->HstBase) {
      Result.Entry = Next;
      Result.Contained = true;
    }
  } else if (Next->HstBegin < End) {
    Result.Entry = Next;
    Result.Extends = true;
  }
  return Result;
}

MapEntry &MappingTable::insert(MapEntry Entry) {
  // Entries made without an item base (globals, associations) start at it.
  if (Entry.HstBase == 0 || Entry.HstBase > Entry.HstBegin)
    Entry.HstBase = Entry.HstBegin;
  assert(!lookup(Entry.HstBegin, Entry.size()).Entry && "inserting an overlapping map entry");
  auto [it, inserted] = Entries.emplace(Entry.HstBegin, std::move(Entry));
  assert(inserted && "two map entries at one host address");
  return it->second;
}

void MappingTable::insertPermanent(uint64_t Owner, std::vector<MapEntry> Entries) {
  if (Entries.empty())
    return;
  for (MapEntry &E : Entries)
    if (E.HstBase == 0 || E.HstBase > E.HstBegin)
      E.HstBase = E.HstBegin;
  // Entry tables mostly list entries in address order already.
  if (!std::is_sorted(Entries.begin(), Entries.end(), beginsBefore))
    std::sort(Entries.begin(), Entries.end(), beginsBefore);
#ifndef NDEBUG
  for (size_t I = 0; I < Entries.size(); ++I) {
    assert(!lookup(Entries[I].HstBegin, Entries[I].size()).Entry && "inserting an overlapping map entry");
    assert((I == 0 || (Entries[I - 1].HstBegin < Entries[I].HstBegin &&
                       Entries[I - 1].HstEnd <= Entries[I].HstBegin)) &&
           "overlapping entries in one permanent batch");
  }
#endif
  PermanentCount += Entries.size();
  Permanent.push_back({Owner, std::move(Entries)});
}

size_t MappingTable::erasePermanent(uint64_t Owner) {
  size_t Removed = 0;
  std::erase_if(Permanent, [&](const PermanentBatch &Batch) {
    if (Batch.Owner != Owner)
      return false;
    Removed += Batch.Entries.size();
    return true;
  });
  PermanentCount -= Removed;
  return Removed;
}

void MappingTable::erase(MapEntry &Entry) {
  auto It = Entries.find(Entry.HstBegin);
  if (It != Entries.end() && &It->second == &Entry) {
    Entries.erase(It);
    return;
  }
  std::less<const MapEntry *> Before;
  for (auto Batch = Permanent.begin(); Batch != Permanent.end(); ++Batch) {
    std::vector<MapEntry> &V = Batch->Entries;
    if (Before(&Entry, V.data()) || !Before(&Entry, V.data() + V.size()))
      continue;
    V.erase(V.begin() + (&Entry - V.data()));
    --PermanentCount;
    if (V.empty())
      Permanent.erase(Batch);
    return;
  }
  assert(false && "erasing an entry not in the table");
}

const MapEntry *MappingTable::stockNeighbour(uintptr_t Begin) {
  std::vector<MapEntry *> All = ordered();
  auto Upper = std::upper_bound(All.begin(), All.end(), Begin,
                                [](uintptr_t B, const MapEntry *E) { return B < E->HstBegin; });
  const MapEntry *Left = Upper != All.begin() ? *std::prev(Upper) : nullptr;
  if (Left && Begin < Left->HstEnd)
    return Left;
  return Upper != All.end() ? *Upper : Left;
}

std::vector<MapEntry *> MappingTable::ordered() {
  std::vector<MapEntry *> Out;
  Out.reserve(size());
  for (auto &[begin, e] : Entries)
    Out.push_back(&e);
  for (PermanentBatch &Batch : Permanent)
    for (MapEntry &E : Batch.Entries)
      Out.push_back(&E);
  if (!Permanent.empty())
    std::sort(Out.begin(), Out.end(),
              [](const MapEntry *A, const MapEntry *B) { return A->HstBegin < B->HstBegin; });
  return Out;
}

void MappingTable::recordEnded(MapEntry &Entry, const ConstructSite &EndedBy) {
  if (Ended.size() == kEndedHistory)
    Ended.pop_front();
  Ended.push_back({Entry.HstBegin, Entry.HstEnd, Entry.TgtBegin, std::move(Entry.Name), Entry.MappedBy,
                   EndedBy, Entry.OwnsDeviceMemory, std::move(Entry.Check)});
}

const EndedMapping *MappingTable::findEnded(uint64_t Tgt) const {
  for (auto It = Ended.rbegin(); It != Ended.rend(); ++It)
    if (Tgt >= It->TgtBegin && Tgt - It->TgtBegin < std::max<uint64_t>(It->size(), 1))
      return &*It;
  return nullptr;
}

} // namespace ompsim::host

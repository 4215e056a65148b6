// Lookup and bookkeeping of the per-device mapping table.
#include "MappingTable.h"

#include <algorithm>
#include <cassert>
#include <functional>

namespace ompsim::host {
namespace {

bool beginsBefore(const MapEntry &a, const MapEntry &b) { return a.hstBegin < b.hstBegin; }

} // namespace

MapLookup MappingTable::lookup(uintptr_t begin, uint64_t size) {
  MapLookup result;
  // Over both structures: the last entry starting at or before `begin` is the
  // only one that can contain it; the first one starting after it can still
  // overlap a range that extends into it.
  MapEntry *prev = nullptr, *next = nullptr;
  if (!entries_.empty()) {
    auto it = entries_.upper_bound(begin);
    if (it != entries_.begin())
      prev = &std::prev(it)->second;
    if (it != entries_.end())
      next = &it->second;
  }
  for (PermanentBatch &batch : permanent_) {
    std::vector<MapEntry> &v = batch.entries; // never empty
    MapEntry *p = nullptr, *n = nullptr;
    // Most batches lie wholly before or after `begin`: no search needed.
    if (v.back().hstBegin <= begin) {
      p = &v.back();
    } else if (v.front().hstBegin > begin) {
      n = &v.front();
    } else {
      auto it = std::upper_bound(v.begin(), v.end(), begin,
                                 [](uintptr_t a, const MapEntry &e) { return a < e.hstBegin; });
      p = &*std::prev(it);
      n = &*it;
    }
    if (p && (!prev || p->hstBegin > prev->hstBegin))
      prev = p;
    if (n && (!next || n->hstBegin < next->hstBegin))
      next = n;
  }
  uintptr_t end = begin + size;
  if (prev) {
    MapEntry &e = *prev;
    if (begin < e.hstEnd || (size == 0 && e.hstBegin == e.hstEnd && begin == e.hstBegin)) {
      result.entry = &e;
      result.contained = size == 0 || end <= e.hstEnd;
      result.extends = !result.contained;
      return result;
    }
  }
  if (!next)
    return result;
  if (size == 0) {
    // Before the block but inside its item's extent (from its base).
    if (begin >= next->hstBase) {
      result.entry = next;
      result.contained = true;
    }
  } else if (next->hstBegin < end) {
    result.entry = next;
    result.extends = true;
  }
  return result;
}

MapEntry &MappingTable::insert(MapEntry entry) {
  // Entries made without an item base (globals, associations) start at it.
  if (entry.hstBase == 0 || entry.hstBase > entry.hstBegin)
    entry.hstBase = entry.hstBegin;
  assert(!lookup(entry.hstBegin, entry.size()).entry && "inserting an overlapping map entry");
  auto [it, inserted] = entries_.emplace(entry.hstBegin, std::move(entry));
  assert(inserted && "two map entries at one host address");
  return it->second;
}

void MappingTable::insertPermanent(uint64_t owner, std::vector<MapEntry> entries) {
  if (entries.empty())
    return;
  for (MapEntry &e : entries)
    if (e.hstBase == 0 || e.hstBase > e.hstBegin)
      e.hstBase = e.hstBegin;
  // Entry tables mostly list entries in address order already.
  if (!std::is_sorted(entries.begin(), entries.end(), beginsBefore))
    std::sort(entries.begin(), entries.end(), beginsBefore);
#ifndef NDEBUG
  for (size_t i = 0; i < entries.size(); ++i) {
    assert(!lookup(entries[i].hstBegin, entries[i].size()).entry && "inserting an overlapping map entry");
    assert((i == 0 || (entries[i - 1].hstBegin < entries[i].hstBegin &&
                       entries[i - 1].hstEnd <= entries[i].hstBegin)) &&
           "overlapping entries in one permanent batch");
  }
#endif
  permanentCount_ += entries.size();
  permanent_.push_back({owner, std::move(entries)});
}

size_t MappingTable::erasePermanent(uint64_t owner) {
  size_t removed = 0;
  std::erase_if(permanent_, [&](const PermanentBatch &batch) {
    if (batch.owner != owner)
      return false;
    removed += batch.entries.size();
    return true;
  });
  permanentCount_ -= removed;
  return removed;
}

void MappingTable::erase(MapEntry &entry) {
  auto it = entries_.find(entry.hstBegin);
  if (it != entries_.end() && &it->second == &entry) {
    entries_.erase(it);
    return;
  }
  std::less<const MapEntry *> before;
  for (auto batch = permanent_.begin(); batch != permanent_.end(); ++batch) {
    std::vector<MapEntry> &v = batch->entries;
    if (before(&entry, v.data()) || !before(&entry, v.data() + v.size()))
      continue;
    v.erase(v.begin() + (&entry - v.data()));
    --permanentCount_;
    if (v.empty())
      permanent_.erase(batch);
    return;
  }
  assert(false && "erasing an entry not in the table");
}

std::vector<MapEntry *> MappingTable::ordered() {
  std::vector<MapEntry *> out;
  out.reserve(size());
  for (auto &[begin, e] : entries_)
    out.push_back(&e);
  for (PermanentBatch &batch : permanent_)
    for (MapEntry &e : batch.entries)
      out.push_back(&e);
  if (!permanent_.empty())
    std::sort(out.begin(), out.end(),
              [](const MapEntry *a, const MapEntry *b) { return a->hstBegin < b->hstBegin; });
  return out;
}

} // namespace ompsim::host

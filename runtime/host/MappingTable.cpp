// Lookup and bookkeeping of the per-device mapping table.
#include "MappingTable.h"

#include <cassert>

namespace ompsim::host {

MapLookup MappingTable::lookup(uintptr_t begin, uint64_t size) {
  MapLookup result;
  if (entries_.empty())
    return result;
  uintptr_t end = begin + size;
  // The last entry starting at or before `begin` is the only one that can
  // contain it; the next one can still overlap a range that extends into it.
  auto it = entries_.upper_bound(begin);
  if (it != entries_.begin()) {
    MapEntry &e = std::prev(it)->second;
    if (begin < e.hstEnd || (size == 0 && e.hstBegin == e.hstEnd && begin == e.hstBegin)) {
      result.entry = &e;
      result.contained = size == 0 || end <= e.hstEnd;
      result.extends = !result.contained;
      return result;
    }
  }
  if (it == entries_.end())
    return result;
  MapEntry &next = it->second;
  if (size == 0) {
    // Before the block but inside its item's extent (from its base).
    if (begin >= next.hstBase) {
      result.entry = &next;
      result.contained = true;
    }
  } else if (next.hstBegin < end) {
    result.entry = &next;
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

void MappingTable::erase(MapEntry &entry) {
  auto it = entries_.find(entry.hstBegin);
  assert(it != entries_.end() && &it->second == &entry && "erasing an entry not in the table");
  entries_.erase(it);
}

} // namespace ompsim::host

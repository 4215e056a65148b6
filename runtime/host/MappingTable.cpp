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
    auto prev = std::prev(it);
    MapEntry &e = prev->second;
    bool inside = size == 0 ? (begin >= e.hstBegin && (begin < e.hstEnd || (e.hstBegin == e.hstEnd && begin == e.hstBegin)))
                            : (begin >= e.hstBegin && begin < e.hstEnd);
    if (inside) {
      result.entry = &e;
      result.contained = end <= e.hstEnd || (size == 0);
      result.extends = !result.contained;
      return result;
    }
  }
  if (size > 0 && it != entries_.end() && it->second.hstBegin < end) {
    result.entry = &it->second;
    result.extends = true;
  }
  return result;
}

MapEntry &MappingTable::insert(MapEntry entry) {
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

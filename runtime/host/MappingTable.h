// ompsim runtime: the host->device mapping table of one device.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct ompsim_ident;
namespace ompsim::check {
struct BlockShadow;
} // namespace ompsim::check

namespace ompsim::host {

/// Where a construct is in the program: pointers, so that every construct
/// can afford one; DataFaultAdvisor formats it when a message needs it.
struct ConstructSite {
  const char *Kind = nullptr;          ///< "data construct", "target region"; null when unknown
  const ompsim_ident *Loc = nullptr;   ///< clang's ident_t of the construct (static), or null
  const std::string *Kernel = nullptr; ///< a target region's kernel name (lives with its image), or null
};

/// A pointer inside a mapped block whose device copy was rewritten to point at
/// device memory (pointer attachment). The host copy keeps `HostValue`.
struct ShadowPointer {
  uintptr_t HostValue = 0; ///< what the host pointer held when attached
  uint64_t TgtValue = 0;   ///< what its device copy holds
};

/// One mapped host range [hstBegin, hstEnd) and its device counterpart.
struct MapEntry {
  /// Reference count that never drops (globals, indirect functions, associated memory).
  static constexpr uint64_t Infinite = std::numeric_limits<uint64_t>::max();

  uintptr_t HstBegin = 0, HstEnd = 0;
  /// Base of the mapped item (an array's start for a section of it); a
  /// zero-length lookup in [hstBase, hstBegin) still finds this entry.
  uintptr_t HstBase = 0;
  uint64_t TgtBegin = 0;
  uint64_t DynamicRef = 0;       ///< OpenMP's dynamic reference count
  uint64_t HoldRef = 0;          ///< ompx_hold reference count
  bool OwnsDeviceMemory = false; ///< freed when both counts reach 0
  bool Associated = false;       ///< made by omp_target_associate_ptr
  std::string Name;              ///< the variable, for ompsim's traces and messages
  std::string InfoName;          ///< stock's `Name=` of copy lines (mapArgName)
  /// The map name of the item that created the entry (clang's static
  /// ";name;file;line;col;;", or null): the declaration a table dump names.
  const void *MapName = nullptr;
  /// The construct that created the entry, for messages.
  ConstructSite MappedBy;
  /// Attached pointers inside this block, keyed by host address of the pointer.
  std::map<uintptr_t, ShadowPointer> Shadows;
  /// What the map checker keeps for this block (null when it is off).
  std::shared_ptr<check::BlockShadow> Check;

  uint64_t size() const { return HstEnd - HstBegin; }
  bool isInfinite() const { return DynamicRef == Infinite; }
  /// Sum of both counts (Infinite stays Infinite).
  uint64_t totalRef() const { return isInfinite() ? Infinite : DynamicRef + HoldRef; }
  /// The device address of host address `Hst` inside this block.
  uint64_t translate(uintptr_t Hst) const { return TgtBegin + (Hst - HstBegin); }
};

/// A mapping that ended, kept so a fault at its old device address can say
/// whose device copy was there and which construct ended it.
struct EndedMapping {
  uintptr_t HstBegin = 0, HstEnd = 0;
  uint64_t TgtBegin = 0;
  std::string Name;
  ConstructSite MappedBy, EndedBy;
  bool Freed = false; ///< its device memory was freed with it
  /// The map checker's record of the block, when it watched it
  /// (check::onRemove() keeps only what a later report names).
  std::shared_ptr<check::BlockShadow> Check;

  uint64_t size() const { return HstEnd - HstBegin; }
};

/// Where a host range stands relative to the table.
struct MapLookup {
  MapEntry *Entry = nullptr; ///< the entry overlapping the range, if any
  bool Contained = false;    ///< the range lies inside `Entry`
  bool Extends = false;      ///< the range overlaps `Entry` but is not inside it
};

/// The mapping table of one device: non-overlapping host ranges, each with its
/// device address and reference counts.
///
/// Entries live in two structures that lookups see as one table. Entries made
/// by map clauses and omp_target_associate_ptr come and go one at a time and
/// sit in a node-based map. Permanent entries of an image (declare-target
/// globals, indirect functions and vtables) are added in one batch per image
/// and live until the image is unloaded: each batch is a flat array sorted by
/// host address, searched by binary search, which costs neither a node
/// allocation per entry nor the map's rebalancing at registration.
///
/// References to entries stay valid until the entry is erased (a batch's
/// array never grows after it is added).
///
/// Not internally locked: callers hold mutex() across a whole map clause list
/// so a construct's lookups and updates are atomic with respect to others.
class MappingTable {
public:
  /// Looks `[begin, begin+size)` up. A zero-size range is found inside an
  /// entry that contains `Begin`, or in the entry that follows `Begin` when
  /// `Begin` lies at or after that entry's base (as stock libomptarget does,
  /// so `p[0:0]` finds a mapped `p[2:5]`).
  MapLookup lookup(uintptr_t Begin, uint64_t Size);

  /// The entry stock's look-up of `Begin` ends on (its neighbour when
  /// nothing holds `Begin`): the last entry starting at or before `Begin` if
  /// `Begin` lies before its end, else the first entry after `Begin`, else
  /// that last entry; null for an empty table. Stock names a copy with no
  /// entry of its own (a firstprivate) after it. Walks the whole table.
  const MapEntry *stockNeighbour(uintptr_t Begin);

  /// Adds an entry; the range must not overlap an existing one (asserted).
  MapEntry &insert(MapEntry Entry);

  /// Adds the permanent entries of `Owner` (an image) in one batch. The
  /// entries must overlap neither each other nor an entry already in the
  /// table (asserted); they are found by lookup() like any other entry. An
  /// owner may add several batches.
  void insertPermanent(uint64_t Owner, std::vector<MapEntry> Entries);

  /// Removes every entry that insertPermanent() added for `Owner`, and
  /// returns how many it removed.
  size_t erasePermanent(uint64_t Owner);

  /// Removes `Entry` (which must be in this table). Erasing one entry of a
  /// permanent batch invalidates references to the later entries of that
  /// batch.
  void erase(MapEntry &Entry);

  /// Number of entries.
  size_t size() const { return Entries.size() + PermanentCount; }

  /// Remembers that `Entry`, about to be erased, ended (by construct
  /// `EndedBy`): its name and the checker's shadow move into the record. The
  /// oldest of more than kEndedHistory records is forgotten.
  void recordEnded(MapEntry &Entry, const ConstructSite &EndedBy);

  /// The most recent ended mapping whose device copy held device address
  /// `Tgt`, or null.
  const EndedMapping *findEnded(uint64_t Tgt) const;

  /// How many ended mappings findEnded() remembers.
  static constexpr size_t kEndedHistory = 256;

  /// The table's lock (held across a construct's whole clause list).
  std::recursive_mutex &mutex() { return Mutex; }

  /// Calls f(entry) for every entry in host-address order.
  template <typename CallbackT> void forEach(CallbackT &&F) {
    for (MapEntry *E : ordered())
      F(*E);
  }

private:
  /// One insertPermanent() batch, sorted by hstBegin.
  struct PermanentBatch {
    uint64_t Owner = 0;
    std::vector<MapEntry> Entries;
  };

  /// Every entry, in host-address order.
  std::vector<MapEntry *> ordered();

  std::map<uintptr_t, MapEntry> Entries; // keyed by hstBegin
  std::vector<PermanentBatch> Permanent;
  size_t PermanentCount = 0;
  std::deque<EndedMapping> Ended; ///< oldest first
  std::recursive_mutex Mutex;
};

} // namespace ompsim::host

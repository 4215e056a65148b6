// The device runtime's function-pointer translation.
//
// The plugin publishes a sorted {host_ptr, tgt_ptr} table between kernels;
// device code looks pointers up from any number of teams and threads. Each
// publish builds an immutable snapshot in Eytzinger (BFS) order, so a lookup
// walks the implicit tree from the root with cache-friendly, branch-light
// steps and at most ceil(log2(n+1)) iterations: it cannot loop, whatever the
// input. Snapshots are swapped in with an atomic pointer; old ones are kept
// until process exit because a lookup may still be reading one (publishes are
// rare: one per image registration).
#include "ompsim/device_runtime.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

namespace {

/// One immutable published table in Eytzinger order (1-based: slot 0 unused).
struct EytzingerTable {
  uint64_t Count = 0;
  uint64_t *HostKeys = nullptr; ///< Count + 1 entries, [0] unused
  uint64_t *TgtValues = nullptr;
  EytzingerTable *Older = nullptr; ///< previous snapshot, freed at exit

  /// Fills slots of the implicit tree rooted at `Node` from the sorted input
  /// by an in-order walk; returns the next sorted index to place.
  uint64_t fill(const __omp_offloading_fptr_map_ty *Sorted, uint64_t Next, uint64_t Node) {
    // Iterative in-order traversal: the tree depth is only log2(n), but avoid
    // recursion anyway so stack use is constant.
    uint64_t Cur = Node;
    uint64_t Stack[64];
    unsigned Depth = 0;
    while (Cur <= Count || Depth > 0) {
      while (Cur <= Count) {
        Stack[Depth++] = Cur;
        Cur = 2 * Cur;
      }
      Cur = Stack[--Depth];
      HostKeys[Cur] = Sorted[Next].host_ptr;
      TgtValues[Cur] = Sorted[Next].tgt_ptr;
      ++Next;
      Cur = 2 * Cur + 1;
    }
    return Next;
  }

  /// Finds `Key`; returns true and sets `Out` on a hit.
  bool find(uint64_t Key, uint64_t &Out) const {
    uint64_t Node = 1;
    // Each step doubles Node, so this runs at most 64 times for any Count.
    while (Node <= Count) {
      uint64_t Here = HostKeys[Node];
      if (Here == Key) {
        Out = TgtValues[Node];
        return true;
      }
      Node = 2 * Node + (Here < Key ? 1 : 0);
    }
    return false;
  }
};

std::atomic<EytzingerTable *> Published{nullptr};
std::mutex PublishMutex; ///< serialises publishers; lookups never take it
EytzingerTable *Retired = nullptr;

std::atomic<uint64_t> Hits{0};
std::atomic<uint64_t> Misses{0};
std::atomic<uint64_t> NextRecord{0};
std::atomic<uint64_t> RecordCap{64};
/// Record storage; grown only by set_translate_cap (between kernels).
ompsim_translate_record *Records = nullptr;
uint64_t RecordCapacity = 0;

bool ensureRecordStorage(uint64_t Cap);

/// Allocates the default record storage at load and frees every snapshot at
/// unload (no lookup can run any more then).
struct RuntimeLifetime {
  RuntimeLifetime() {
    if (!ensureRecordStorage(RecordCap.load(std::memory_order_relaxed)))
      RecordCap.store(0, std::memory_order_relaxed);
  }
  ~RuntimeLifetime() {
    std::lock_guard<std::mutex> Lock(PublishMutex);
    EytzingerTable *T = Published.exchange(nullptr);
    if (T) {
      T->Older = Retired;
      Retired = T;
    }
    while (Retired) {
      EytzingerTable *Next = Retired->Older;
      std::free(Retired->HostKeys);
      std::free(Retired->TgtValues);
      delete Retired;
      Retired = Next;
    }
    std::free(Records);
    Records = nullptr;
    RecordCapacity = 0;
  }
} Lifetime;

bool ensureRecordStorage(uint64_t Cap) {
  if (Cap <= RecordCapacity)
    return true;
  auto *Grown = static_cast<ompsim_translate_record *>(std::calloc(Cap, sizeof(ompsim_translate_record)));
  if (!Grown)
    return false;
  std::free(Records);
  Records = Grown;
  RecordCapacity = Cap;
  return true;
}

void record(uint64_t Host, uint64_t Result, bool Hit) {
  (Hit ? Hits : Misses).fetch_add(1, std::memory_order_relaxed);
  uint64_t Cap = RecordCap.load(std::memory_order_relaxed);
  // Every call takes a slot number, so calls beyond the cap count as dropped.
  uint64_t Slot = NextRecord.fetch_add(1, std::memory_order_relaxed);
  if (Slot >= Cap || Slot >= RecordCapacity)
    return;
  Records[Slot] = ompsim_translate_record{Host, Result, Hit ? 1u : 0u, 0u};
}

void *translate(void *HostPtr) {
  if (!HostPtr)
    return nullptr;
  uint64_t Key = reinterpret_cast<uintptr_t>(HostPtr);
  const EytzingerTable *Table = Published.load(std::memory_order_acquire);
  uint64_t Tgt = 0;
  if (Table && Table->find(Key, Tgt)) {
    record(Key, Tgt, true);
    return reinterpret_cast<void *>(static_cast<uintptr_t>(Tgt));
  }
  record(Key, Key, false);
  return HostPtr;
}

} // namespace

OMPSIM_DEVICE_API void *__kmpc_target_translate_fptr(void *host_ptr) { return translate(host_ptr); }

OMPSIM_DEVICE_API void *__llvm_omp_indirect_call_lookup(void *host_ptr) { return translate(host_ptr); }

OMPSIM_DEVICE_API int32_t __ompsim_device_set_fptr_table(const __omp_offloading_fptr_map_ty *table, uint64_t n) {
  if (n > 0 && !table)
    return -1;
  for (uint64_t I = 1; I < n; ++I)
    if (table[I - 1].host_ptr >= table[I].host_ptr)
      return -1;
  auto *Fresh = new (std::nothrow) EytzingerTable;
  if (!Fresh)
    return -1;
  Fresh->Count = n;
  Fresh->HostKeys = static_cast<uint64_t *>(std::malloc((n + 1) * sizeof(uint64_t)));
  Fresh->TgtValues = static_cast<uint64_t *>(std::malloc((n + 1) * sizeof(uint64_t)));
  if (!Fresh->HostKeys || !Fresh->TgtValues) {
    std::free(Fresh->HostKeys);
    std::free(Fresh->TgtValues);
    delete Fresh;
    return -1;
  }
  Fresh->HostKeys[0] = Fresh->TgtValues[0] = 0;
  if (n > 0) {
    uint64_t Placed = Fresh->fill(table, 0, 1);
    (void)Placed;
  }
  std::lock_guard<std::mutex> Lock(PublishMutex);
  EytzingerTable *Old = Published.exchange(Fresh, std::memory_order_acq_rel);
  if (Old) {
    Old->Older = Retired;
    Retired = Old;
  }
  return 0;
}

OMPSIM_DEVICE_API void __ompsim_device_set_translate_cap(uint64_t cap) {
  std::lock_guard<std::mutex> Lock(PublishMutex);
  if (!ensureRecordStorage(cap))
    cap = RecordCapacity; // out of memory: keep recording what fits
  RecordCap.store(cap, std::memory_order_relaxed);
}

OMPSIM_DEVICE_API ompsim_translate_stats __ompsim_device_take_translate_log(ompsim_translate_record *out,
                                                                           uint64_t max) {
  std::lock_guard<std::mutex> Lock(PublishMutex);
  ompsim_translate_stats Stats{};
  Stats.hits = Hits.exchange(0, std::memory_order_relaxed);
  Stats.misses = Misses.exchange(0, std::memory_order_relaxed);
  uint64_t Calls = NextRecord.exchange(0, std::memory_order_relaxed);
  uint64_t Cap = RecordCap.load(std::memory_order_relaxed);
  uint64_t Stored = Calls < Cap ? Calls : Cap;
  if (Stored > RecordCapacity)
    Stored = RecordCapacity;
  Stats.recorded = Stored;
  Stats.dropped = Calls - Stored;
  if (out && max > 0 && Stored > 0)
    std::memcpy(out, Records, (Stored < max ? Stored : max) * sizeof(ompsim_translate_record));
  return Stats;
}

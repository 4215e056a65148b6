// The device runtime's function-pointer translation.
//
// Layout. The plugin publishes a sorted {host_ptr, tgt_ptr} table between
// kernels; device code looks pointers up from any number of teams and threads.
// Each publish builds an immutable open-addressing hash table: a power-of-two
// number of 16-byte {host, device} slots, at most half of them used, aligned to
// a cache line, linear probing from a multiplicative (Fibonacci) hash of the
// host address. A hit reads the key and the value from the same slot, so a
// lookup usually touches exactly one cache line whatever the table size.
// Building it costs one pass over the pairs per publish, which happens once per
// image registration. The longest probe sequence any present key needs is
// recorded at build time; a lookup stops after that many slots or at the first
// empty one, so a pointer that is not in the table ends in a bounded number of
// steps whatever the input (upstream's search can spin on exactly that input).
//
// Publication. Snapshots are swapped in with one atomic pointer (release on
// publish, acquire on lookup). Old snapshots are kept until the library is
// unloaded: publishes are rare and a lookup that loaded the old pointer may, if
// a plugin broke the "no publish during a kernel" contract, still be reading it.
//
// Counting. Hits and misses are counted per thread in thread-local counters
// that only their thread writes (a plain load and store, no locked
// instruction, no shared cache line), so lookups on different threads never
// contend. Each thread's counters are registered once, on its first lookup, in
// a list the log reader walks under RuntimeMutex; the reader remembers how much
// it has already taken from each thread instead of resetting counters it does
// not own. When a thread exits, a pthread key destructor folds what the reader
// has not taken yet into shared totals and unlinks the thread. Recording (a
// cap > 0) is the only path with a shared read-modify-write: one claim of a
// record slot per recorded call, and none once the period's cap is reached.
#include "ompsim/device_runtime.h"

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

namespace {

/// One {host, device} pair of the hash table; host 0 marks an empty slot (0 is
/// never looked up: null translates to null before the table is consulted).
struct Slot {
  uint64_t Host;
  uint64_t Device;
};
static_assert(sizeof(Slot) == 16, "a slot is two words; four share a cache line");

constexpr uint64_t CacheLine = 64;
/// 2^64 divided by the golden ratio: consecutive or evenly spaced addresses
/// land far apart, which keeps linear-probing clusters short.
constexpr uint64_t FibonacciMultiplier = 0x9E3779B97F4A7C15ull;
/// Smallest table: one cache line of slots.
constexpr uint64_t MinCapacity = CacheLine / sizeof(Slot);

/// One immutable published table. The fields a lookup reads come first and
/// share one cache line.
struct alignas(CacheLine) FptrTable {
  const Slot *Slots = nullptr; ///< Mask + 1 slots, cache-line aligned
  uint64_t Mask = 0;           ///< capacity - 1
  uint64_t Shift = 0;          ///< 64 - log2(capacity): the hash's top bits index the table
  uint64_t MaxProbes = 0;      ///< longest probe sequence of any present key; 0 when empty
  Slot *Storage = nullptr;     ///< what to free; null for the built-in empty table
  FptrTable *Older = nullptr;  ///< previous snapshot, freed at unload

  uint64_t home(uint64_t Key) const { return (Key * FibonacciMultiplier) >> Shift; }

  /// Finds `Key` (non-zero); returns true and sets `Out` on a hit. Reads at
  /// most MaxProbes slots.
  bool find(uint64_t Key, uint64_t &Out) const {
    uint64_t Index = home(Key);
    for (uint64_t Probe = 0; Probe < MaxProbes; ++Probe) {
      const Slot &S = Slots[Index];
      if (S.Host == Key) {
        Out = S.Device;
        return true;
      }
      if (S.Host == 0)
        return false;
      Index = (Index + 1) & Mask;
    }
    return false;
  }
};

/// The table before the first publish and after publishing zero pairs.
alignas(CacheLine) const Slot EmptySlots[MinCapacity] = {};
FptrTable EmptyTable{EmptySlots, MinCapacity - 1, 64 - 2, 0, nullptr, nullptr};

/// Builds the hash table for `Sorted[0..N)` (sorted, no duplicates); null if
/// out of memory.
FptrTable *buildTable(const __omp_offloading_fptr_map_ty *Sorted, uint64_t N) {
  if (N > (UINT64_MAX / sizeof(Slot)) / 4)
    return nullptr;
  uint64_t Capacity = MinCapacity, Log2 = 2;
  while (Capacity < 2 * N) { // load factor <= 1/2
    Capacity *= 2;
    ++Log2;
  }
  auto *Storage = static_cast<Slot *>(std::aligned_alloc(CacheLine, Capacity * sizeof(Slot)));
  void *TableMemory = std::aligned_alloc(alignof(FptrTable), sizeof(FptrTable));
  if (!Storage || !TableMemory) {
    std::free(Storage);
    std::free(TableMemory);
    return nullptr;
  }
  std::memset(Storage, 0, Capacity * sizeof(Slot));
  auto *Table = new (TableMemory) FptrTable;
  Table->Slots = Storage;
  Table->Storage = Storage;
  Table->Mask = Capacity - 1;
  Table->Shift = 64 - Log2;
  uint64_t MaxProbes = 0;
  for (uint64_t I = 0; I < N; ++I) {
    uint64_t Key = Sorted[I].host_ptr;
    if (Key == 0) // never looked up; storing it would read as an empty slot
      continue;
    uint64_t Index = Table->home(Key), Probes = 1;
    // Terminates: at most half the slots are used, and keys are distinct.
    while (Storage[Index].Host != 0) {
      Index = (Index + 1) & Table->Mask;
      ++Probes;
    }
    Storage[Index] = Slot{Key, Sorted[I].tgt_ptr};
    if (Probes > MaxProbes)
      MaxProbes = Probes;
  }
  Table->MaxProbes = MaxProbes;
  return Table;
}

void freeTable(FptrTable *Table) {
  if (Table == &EmptyTable)
    return;
  std::free(Table->Storage);
  Table->~FptrTable();
  std::free(Table);
}

/// Serialises publishers, cap changes, log readers and the thread registry;
/// lookups never take it. A plain pthread mutex: std::mutex would pull in
/// libstdc++ for its error path.
pthread_mutex_t RuntimeMutex = PTHREAD_MUTEX_INITIALIZER;

/// Holds RuntimeMutex for a scope.
class RuntimeLock {
public:
  RuntimeLock() { pthread_mutex_lock(&RuntimeMutex); }
  ~RuntimeLock() { pthread_mutex_unlock(&RuntimeMutex); }
  RuntimeLock(const RuntimeLock &) = delete;
  RuntimeLock &operator=(const RuntimeLock &) = delete;
};

alignas(CacheLine) std::atomic<const FptrTable *> Published{&EmptyTable};
FptrTable *Retired = nullptr; ///< under RuntimeMutex

/// One thread's translate counts.
struct ThreadCounts {
  /// Written only by the owning thread (load + store, not an atomic
  /// increment); atomic so the log reader may read them at any time.
  std::atomic<uint64_t> Hits{0};
  std::atomic<uint64_t> Misses{0};
  /// What the log reader has already taken; under RuntimeMutex.
  uint64_t TakenHits = 0;
  uint64_t TakenMisses = 0;
  /// Links of the registry; under RuntimeMutex.
  ThreadCounts *Next = nullptr;
  ThreadCounts *Prev = nullptr;
  /// Whether this thread is in the registry; read and written only by the
  /// owning thread (and its exit destructor, which runs on it).
  bool Registered = false;
};

/// Constant-initialised and trivially destructible: no TLS guard or
/// wrapper call on the lookup path.
constinit thread_local ThreadCounts MyCounts;

ThreadCounts *Registry = nullptr; ///< registered threads; under RuntimeMutex
uint64_t ExitedHits = 0;          ///< untaken counts of exited threads; under RuntimeMutex
uint64_t ExitedMisses = 0;
/// Counts of threads that could not be registered (no pthread key): the slow
/// but exact fallback.
std::atomic<uint64_t> UnregisteredHits{0};
std::atomic<uint64_t> UnregisteredMisses{0};
pthread_key_t ExitKey;
bool HaveExitKey = false;

/// Recording state, on its own cache line: written by record-slot claims,
/// read by every lookup.
struct alignas(CacheLine) RecordState {
  std::atomic<uint64_t> Cap{64};  ///< records kept per period; 0 disables recording
  std::atomic<uint64_t> Next{0};  ///< slots claimed this period (may pass Cap by racing claims)
  ompsim_translate_record *Records = nullptr; ///< grown only by set_translate_cap (between kernels)
  uint64_t Capacity = 0;
} Recording;

/// Folds an exiting thread's untaken counts into the shared totals.
void onThreadExit(void *Arg) {
  auto *Counts = static_cast<ThreadCounts *>(Arg);
  RuntimeLock Lock;
  ExitedHits += Counts->Hits.load(std::memory_order_relaxed) - Counts->TakenHits;
  ExitedMisses += Counts->Misses.load(std::memory_order_relaxed) - Counts->TakenMisses;
  if (Counts->Prev)
    Counts->Prev->Next = Counts->Next;
  else
    Registry = Counts->Next;
  if (Counts->Next)
    Counts->Next->Prev = Counts->Prev;
  Counts->Next = Counts->Prev = nullptr;
  // A later lookup from another key's destructor registers the thread again
  // (the destructor then runs once more).
  Counts->Registered = false;
}

/// First lookup on this thread (or every lookup if threads cannot be
/// registered): registers the thread's counters and counts this call.
__attribute__((noinline)) void countUnregistered(bool Hit) {
  ThreadCounts &Mine = MyCounts;
  if (HaveExitKey && pthread_setspecific(ExitKey, &Mine) == 0) {
    RuntimeLock Lock;
    // Counts from before an earlier exit destructor were folded already.
    Mine.TakenHits = Mine.Hits.load(std::memory_order_relaxed);
    Mine.TakenMisses = Mine.Misses.load(std::memory_order_relaxed);
    Mine.Prev = nullptr;
    Mine.Next = Registry;
    if (Registry)
      Registry->Prev = &Mine;
    Registry = &Mine;
    Mine.Registered = true;
  }
  if (!Mine.Registered) {
    (Hit ? UnregisteredHits : UnregisteredMisses).fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::atomic<uint64_t> &Counter = Hit ? Mine.Hits : Mine.Misses;
  Counter.store(Counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

inline void count(bool Hit) {
  ThreadCounts &Mine = MyCounts;
  if (__builtin_expect(!Mine.Registered, 0))
    return countUnregistered(Hit);
  std::atomic<uint64_t> &Counter = Hit ? Mine.Hits : Mine.Misses;
  Counter.store(Counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

/// Records one call if this period still has room.
__attribute__((noinline)) void record(uint64_t Cap, uint64_t Host, uint64_t Result, bool Hit) {
  // Once the period is full, calls only read the claim counter.
  if (Recording.Next.load(std::memory_order_relaxed) >= Cap)
    return;
  // acq_rel: the log reader's exchange of Next then also sees this thread's
  // count of the call, so a period never has more records than counted calls.
  uint64_t Index = Recording.Next.fetch_add(1, std::memory_order_acq_rel);
  if (Index >= Cap || Index >= Recording.Capacity)
    return;
  Recording.Records[Index] = ompsim_translate_record{Host, Result, Hit ? 1u : 0u, 0u};
}

bool ensureRecordStorage(uint64_t Cap) {
  if (Cap <= Recording.Capacity)
    return true;
  auto *Grown = static_cast<ompsim_translate_record *>(std::calloc(Cap, sizeof(ompsim_translate_record)));
  if (!Grown)
    return false;
  std::free(Recording.Records);
  Recording.Records = Grown;
  Recording.Capacity = Cap;
  return true;
}

/// Sets up the default record storage and the thread-exit hook at load; frees
/// every snapshot at unload (no lookup can run any more then).
struct RuntimeLifetime {
  RuntimeLifetime() {
    if (!ensureRecordStorage(Recording.Cap.load(std::memory_order_relaxed)))
      Recording.Cap.store(0, std::memory_order_relaxed);
    HaveExitKey = pthread_key_create(&ExitKey, onThreadExit) == 0;
  }
  ~RuntimeLifetime() {
    RuntimeLock Lock;
    // Threads still registered must not call into an unloaded destructor.
    if (HaveExitKey)
      pthread_key_delete(ExitKey);
    HaveExitKey = false;
    FptrTable *Last = const_cast<FptrTable *>(Published.exchange(&EmptyTable));
    if (Last != &EmptyTable) {
      Last->Older = Retired;
      Retired = Last;
    }
    while (Retired) {
      FptrTable *Next = Retired->Older;
      freeTable(Retired);
      Retired = Next;
    }
    std::free(Recording.Records);
    Recording.Records = nullptr;
    Recording.Capacity = 0;
  }
} Lifetime;

void *translate(void *HostPtr) {
  if (!HostPtr)
    return nullptr;
  uint64_t Key = reinterpret_cast<uintptr_t>(HostPtr);
  uint64_t Result = Key;
  bool Hit = Published.load(std::memory_order_acquire)->find(Key, Result);
  count(Hit);
  uint64_t Cap = Recording.Cap.load(std::memory_order_relaxed);
  if (__builtin_expect(Cap != 0, 0))
    record(Cap, Key, Result, Hit);
  return reinterpret_cast<void *>(static_cast<uintptr_t>(Result));
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
  FptrTable *Fresh = n > 0 ? buildTable(table, n) : &EmptyTable;
  if (!Fresh)
    return -1;
  RuntimeLock Lock;
  // Release: a lookup that loads the new pointer sees the finished slots.
  auto *Old = const_cast<FptrTable *>(Published.exchange(Fresh, std::memory_order_acq_rel));
  if (Old != &EmptyTable) {
    Old->Older = Retired;
    Retired = Old;
  }
  return 0;
}

OMPSIM_DEVICE_API void __ompsim_device_set_translate_cap(uint64_t cap) {
  RuntimeLock Lock;
  if (!ensureRecordStorage(cap))
    cap = Recording.Capacity; // out of memory: keep recording what fits
  Recording.Cap.store(cap, std::memory_order_relaxed);
}

OMPSIM_DEVICE_API ompsim_translate_stats __ompsim_device_take_translate_log(ompsim_translate_record *out,
                                                                           uint64_t max) {
  RuntimeLock Lock;
  // Claims first (see record()): every record taken here has its call counted.
  uint64_t Claimed = Recording.Next.exchange(0, std::memory_order_acq_rel);
  uint64_t Hits = ExitedHits + UnregisteredHits.exchange(0, std::memory_order_relaxed);
  uint64_t Misses = ExitedMisses + UnregisteredMisses.exchange(0, std::memory_order_relaxed);
  ExitedHits = ExitedMisses = 0;
  for (ThreadCounts *T = Registry; T; T = T->Next) {
    uint64_t H = T->Hits.load(std::memory_order_relaxed);
    uint64_t M = T->Misses.load(std::memory_order_relaxed);
    Hits += H - T->TakenHits;
    Misses += M - T->TakenMisses;
    T->TakenHits = H;
    T->TakenMisses = M;
  }
  uint64_t Cap = Recording.Cap.load(std::memory_order_relaxed);
  uint64_t Stored = Claimed < Cap ? Claimed : Cap;
  if (Stored > Recording.Capacity)
    Stored = Recording.Capacity;
  uint64_t Calls = Hits + Misses;
  ompsim_translate_stats Stats{};
  Stats.hits = Hits;
  Stats.misses = Misses;
  Stats.recorded = Stored;
  // Every non-null call is a hit or a miss; the ones without a record were
  // dropped. (Only a reader racing running kernels, such as the fault handler,
  // can see a record whose count lands in the next period.)
  Stats.dropped = Calls > Stored ? Calls - Stored : 0;
  if (out && max > 0 && Stored > 0)
    std::memcpy(out, Recording.Records, (Stored < max ? Stored : max) * sizeof(ompsim_translate_record));
  return Stats;
}

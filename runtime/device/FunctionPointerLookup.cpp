// The device runtime's function-pointer translation.
//
// Layout. The plugin publishes a sorted {host_ptr, tgt_ptr} table between
// kernels; device code looks pointers up from any number of teams and threads.
// Each publish builds an immutable open-addressing hash table of buckets, one
// 64-byte cache line each, holding four host keys (low halves, then high
// halves) followed by their four device values. A multiplicative (Fibonacci)
// hash of the host address picks the home bucket; a lookup compares the four
// low halves at once (one SSE2 compare), confirms the candidate's high half
// and takes the value from the same line, so a hit reads one cache line
// whatever the table size. The table has at least four slots per entry for tables up to
// SmallTableEntries entries and two above (load factor <= 1/4, then <= 1/2),
// so home buckets are rarely full and both hits and misses almost always end
// at the home bucket with well-predicted branches. A full bucket spills into
// the next (linear probing by bucket); the longest probe sequence any present
// key needs is recorded at build time and bounds every lookup, so a pointer
// that is not in the table ends after a bounded number of buckets whatever the
// input (upstream's search can spin on exactly that input). Buckets fill their
// slots in order, so a bucket whose last key is 0 has never spilled, and a
// miss stops there. Building costs one pass over the pairs per publish, which
// happens once per image registration.
//
// Publication. A publish builds the whole snapshot first, then swaps it in
// with one atomic exchange (release) of one word (the buckets' address with
// the hash shift in its low bits), and a lookup loads that word with acquire, so a lookup sees either the old
// table or the complete new one, never a half-built one, even if it runs while the plugin publishes.
// RuntimeMutex serialises publishers (and the list of retired snapshots); lookups never take a lock. Old
// snapshots are never freed: publishes are rare (one per image registration, between kernels) and a lookup
// that loaded the old pointer may, if a plugin broke the "no publish during a kernel" contract, still be
// reading it.
//
// Counting. Hits and misses are counted per thread in thread-local counters
// that only their thread writes (a plain load and store, no locked
// instruction, no shared cache line), so lookups on different threads never
// contend. The lookup's only other shared read is one byte that says whether
// recording is on. Each thread's counters are registered once, on its first lookup, in
// a list the log reader walks under RuntimeMutex; the reader remembers how much
// it has already taken from each thread instead of resetting counters it does
// not own. When a thread exits, a pthread key destructor folds what the reader
// has not taken yet into shared totals and unlinks the thread. Recording (a
// cap > 0) is the only path with a shared read-modify-write: one claim of a
// record slot per recorded call, and none once the period's cap is reached.
#include "ompsim/device_runtime.h"

#include <emmintrin.h>
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

namespace {

constexpr uint64_t CacheLine = 64;
constexpr unsigned SlotsPerBucket = 4;
/// Tables up to this many entries get a load factor <= 1/4 (at most 4 MiB);
/// larger ones <= 1/2, to bound memory.
constexpr uint64_t SmallTableEntries = 64 * 1024;
/// 2^64 divided by the golden ratio: evenly spaced addresses (functions in a
/// .text section) land in far-apart buckets.
constexpr uint64_t FibonacciMultiplier = 0x9E3779B97F4A7C15ull;

/// One cache line of the table: the four keys split into their low and high
/// 32-bit halves, then the four values. One 16-byte compare of the low halves
/// finds the candidate slot (SSE2 has no 64-bit compare); its high half
/// confirms it. Key 0 marks an empty slot (0 is never looked up: null
/// translates to null before the table is consulted). Slots fill in order.
struct alignas(CacheLine) Bucket {
  uint32_t KeyLow[SlotsPerBucket];
  uint32_t KeyHigh[SlotsPerBucket];
  uint64_t Values[SlotsPerBucket];

  bool isFull() const { return (KeyLow[SlotsPerBucket - 1] | KeyHigh[SlotsPerBucket - 1]) != 0; }
  bool isEmpty(unsigned Slot) const { return (KeyLow[Slot] | KeyHigh[Slot]) == 0; }
  void set(unsigned Slot, uint64_t Key, uint64_t Value) {
    KeyLow[Slot] = uint32_t(Key);
    KeyHigh[Slot] = uint32_t(Key >> 32);
    Values[Slot] = Value;
  }
  /// Bit I set if KeyLow[I] equals `Key`'s low half.
  unsigned lowMatches(uint64_t Key) const {
    __m128i Wanted = _mm_set1_epi32(static_cast<int>(uint32_t(Key)));
    __m128i Low = _mm_load_si128(reinterpret_cast<const __m128i *>(KeyLow));
    return unsigned(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(Low, Wanted))));
  }
  /// The slot holding `Key`, or SlotsPerBucket if none does.
  unsigned slotOf(uint64_t Key) const {
    for (unsigned Matches = lowMatches(Key); Matches; Matches &= Matches - 1) {
      unsigned Slot = unsigned(__builtin_ctz(Matches));
      if (KeyHigh[Slot] == uint32_t(Key >> 32))
        return Slot;
    }
    return SlotsPerBucket;
  }
};
static_assert(sizeof(Bucket) == CacheLine, "a bucket is one cache line");

constexpr unsigned BucketBytesLog2 = 6;
static_assert(sizeof(Bucket) == 1u << BucketBytesLog2, "bucket offsets are shifted indices");

/// Byte offset of `Key`'s home bucket in a table whose offset shift is
/// `OffsetShift` (64 - log2(bucket count) - log2(sizeof(Bucket))): the top
/// bits of the product, the best-mixed ones, index the bucket.
inline uint64_t homeOffset(uint64_t Key, uint64_t OffsetShift) {
  return ((Key * FibonacciMultiplier) >> OffsetShift) & ~uint64_t(sizeof(Bucket) - 1);
}

inline const Bucket &bucketAt(const Bucket *Buckets, uint64_t Offset) {
  return *reinterpret_cast<const Bucket *>(reinterpret_cast<const char *>(Buckets) + Offset);
}

/// The header line of one immutable published table; its buckets (at least
/// 2, a power of two) follow it in the same allocation. The lookup itself
/// reads no header field: the published word (see PublishedTable) carries the
/// buckets' address and the offset shift. Only a lookup whose home bucket has
/// spilled reads the header.
struct alignas(CacheLine) FptrTable {
  uint64_t OffsetShift = 0;   ///< 64 - log2(bucket count) - log2(sizeof(Bucket)); < 64
  uint64_t OffsetMask = 0;    ///< (bucket count - 1) * sizeof(Bucket): byte offsets of buckets
  uint64_t MaxProbes = 0;     ///< buckets the longest search for a present key reads
  FptrTable *Older = nullptr; ///< previous snapshot (kept for lookups still reading it)

  Bucket *buckets() { return reinterpret_cast<Bucket *>(this + 1); }
  const Bucket *buckets() const { return reinterpret_cast<const Bucket *>(this + 1); }

  /// The published form: the buckets' address (64-byte aligned) with the
  /// offset shift in its low 6 bits.
  uint64_t word() const { return reinterpret_cast<uintptr_t>(buckets()) | OffsetShift; }
  static const FptrTable *fromWord(uint64_t Word) {
    return reinterpret_cast<const FptrTable *>(Word & ~uint64_t(CacheLine - 1)) - 1;
  }

  /// Searches for `Key` (non-zero) from its home bucket at `Offset`; returns
  /// true and sets `Out` on a hit. Reads at most MaxProbes buckets.
  bool find(uint64_t Key, uint64_t Offset, uint64_t &Out) const {
    for (uint64_t Probe = 0; Probe < MaxProbes; ++Probe) {
      const Bucket &B = bucketAt(buckets(), Offset);
      unsigned Slot = B.slotOf(Key);
      if (Slot < SlotsPerBucket) {
        Out = B.Values[Slot];
        return true;
      }
      if (!B.isFull()) // nothing spilled past a bucket that never filled
        return false;
      Offset = (Offset + sizeof(Bucket)) & OffsetMask;
    }
    return false;
  }
};
static_assert(sizeof(FptrTable) == CacheLine, "the buckets start one line after the header");

/// The table before the first publish and after publishing zero pairs: two
/// all-zero buckets, so every lookup ends at its home bucket.
struct alignas(CacheLine) EmptyTableStorage {
  FptrTable Header{64 - 1 - BucketBytesLog2, sizeof(Bucket), 1, nullptr};
  Bucket Buckets[2] = {};
} EmptyTable;

/// Builds the hash table for `Sorted[0..N)` (sorted, no duplicates); null if
/// out of memory.
FptrTable *buildTable(const __omp_offloading_fptr_map_ty *Sorted, uint64_t N) {
  if (N > (uint64_t(1) << 48)) // more than any address space holds
    return nullptr;
  uint64_t SlotsPerEntry = N <= SmallTableEntries ? 4 : 2;
  uint64_t Count = 2, Log2 = 1;
  while (Count * SlotsPerBucket < SlotsPerEntry * N) {
    Count *= 2;
    ++Log2;
  }
  void *Memory = std::aligned_alloc(CacheLine, sizeof(FptrTable) + Count * sizeof(Bucket));
  if (!Memory)
    return nullptr;
  auto *Table = new (Memory) FptrTable;
  Bucket *Storage = Table->buckets();
  std::memset(Storage, 0, Count * sizeof(Bucket));
  Table->OffsetShift = 64 - Log2 - BucketBytesLog2;
  Table->OffsetMask = (Count - 1) * sizeof(Bucket);
  uint64_t MaxProbes = 0;
  for (uint64_t I = 0; I < N; ++I) {
    uint64_t Key = Sorted[I].host_ptr;
    if (Key == 0) // never looked up; storing it would read as an empty slot
      continue;
    uint64_t Offset = homeOffset(Key, Table->OffsetShift), Probes = 1;
    // Terminates: at most half the slots are used, and keys are distinct.
    while (bucketAt(Storage, Offset).isFull()) {
      Offset = (Offset + sizeof(Bucket)) & Table->OffsetMask;
      ++Probes;
    }
    Bucket &B = Storage[Offset / sizeof(Bucket)];
    unsigned Free = 0;
    while (!B.isEmpty(Free))
      ++Free;
    B.set(Free, Key, Sorted[I].tgt_ptr);
    if (Probes > MaxProbes)
      MaxProbes = Probes;
  }
  Table->MaxProbes = MaxProbes;
  return Table;
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

/// The published table as FptrTable::word(): one atomic word, so a lookup
/// gets the buckets and their hash shift with a single load.
alignas(CacheLine) std::atomic<uint64_t> PublishedTable{EmptyTable.Header.word()};
/// Every replaced snapshot (never freed, see Publication above), reachable so
/// leak checkers do not report them; under RuntimeMutex.
FptrTable *Retired = nullptr;

/// One thread's translate counts.
struct ThreadCounts {
  /// Calls[1] hits, Calls[0] misses (indexed by the outcome, no select).
  /// Written only by the owning thread (load + store, not an atomic
  /// increment); atomic so the log reader may read them at any time.
  std::atomic<uint64_t> Calls[2] = {0, 0};
  /// What the log reader has already taken; under RuntimeMutex.
  uint64_t TakenHits = 0;
  uint64_t TakenMisses = 0;
  /// Links of the registry; under RuntimeMutex.
  ThreadCounts *Next = nullptr;
  ThreadCounts *Prev = nullptr;
  /// True until this thread is in the registry (and again after its exit
  /// destructor); read and written only by the owning thread (the destructor
  /// runs on it). Inverted so the lookup ORs it with Recording.On as is.
  bool Unregistered = true;
};

/// Constant-initialised and trivially destructible: no TLS guard or wrapper
/// call on the lookup path. Initial-exec: a %fs-relative access with no
/// resolver call (general-dynamic or TLS-descriptor access costs about 1 ns
/// more per lookup). A library with initial-exec TLS can still be dlopen'ed:
/// glibc sets aside static TLS for that (512 bytes by default, tunable with
/// glibc.rtld.optional_static_tls); this block takes 56.
constinit thread_local ThreadCounts MyCounts __attribute__((tls_model("initial-exec")));

ThreadCounts *Registry = nullptr; ///< registered threads; under RuntimeMutex
uint64_t ExitedHits = 0;          ///< untaken counts of exited threads; under RuntimeMutex
uint64_t ExitedMisses = 0;
/// Counts of threads that could not be registered (no pthread key): the slow
/// but exact fallback.
std::atomic<uint64_t> UnregisteredHits{0};
std::atomic<uint64_t> UnregisteredMisses{0};
pthread_key_t ExitKey;
bool HaveExitKey = false;

/// Recording state, on its own cache line: On is read by every lookup; Next
/// is written only by record-slot claims, which happen only while recording
/// is on (when lookups take the slow path anyway).
struct alignas(CacheLine) RecordState {
  std::atomic<uint64_t> Cap{64};              ///< records kept per period; 0 disables recording
  std::atomic<bool> On{true};                 ///< Cap != 0, as one byte for the lookup's test
  std::atomic<uint64_t> Next{0};              ///< slots claimed this period (may pass Cap by racing claims)
  ompsim_translate_record *Records = nullptr; ///< grown only by set_translate_cap (between kernels)
  uint64_t Capacity = 0;
} Recording;

/// Folds an exiting thread's untaken counts into the shared totals.
void onThreadExit(void *Arg) {
  auto *Counts = static_cast<ThreadCounts *>(Arg);
  RuntimeLock Lock;
  ExitedHits += Counts->Calls[1].load(std::memory_order_relaxed) - Counts->TakenHits;
  ExitedMisses += Counts->Calls[0].load(std::memory_order_relaxed) - Counts->TakenMisses;
  if (Counts->Prev)
    Counts->Prev->Next = Counts->Next;
  else
    Registry = Counts->Next;
  if (Counts->Next)
    Counts->Next->Prev = Counts->Prev;
  Counts->Next = Counts->Prev = nullptr;
  // A later lookup from another key's destructor registers the thread again
  // (the destructor then runs once more).
  Counts->Unregistered = true;
}

/// Adds one to a counter only this thread writes: a plain load and store, no
/// locked instruction.
inline void bump(std::atomic<uint64_t> &Counter) {
  Counter.store(Counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

/// Puts this thread's counters in the registry and arms its exit destructor;
/// leaves Unregistered set if the thread cannot be registered.
void registerThread(ThreadCounts &Mine) {
  if (!HaveExitKey || pthread_setspecific(ExitKey, &Mine) != 0)
    return;
  RuntimeLock Lock;
  // Counts from before an earlier exit destructor were folded already.
  Mine.TakenHits = Mine.Calls[1].load(std::memory_order_relaxed);
  Mine.TakenMisses = Mine.Calls[0].load(std::memory_order_relaxed);
  Mine.Prev = nullptr;
  Mine.Next = Registry;
  if (Registry)
    Registry->Prev = &Mine;
  Registry = &Mine;
  Mine.Unregistered = false;
}

/// Records one call if this period still has room.
void record(uint64_t Cap, uint64_t Host, uint64_t Result, bool Hit) {
  // Once the period is full, calls only read the claim counter.
  if (Recording.Next.load(std::memory_order_relaxed) >= Cap)
    return;
  // acq_rel, and the call is counted before it claims: the log reader's
  // exchange of Next then also sees this thread's count of the call, so a
  // period never has more records than counted calls.
  uint64_t Index = Recording.Next.fetch_add(1, std::memory_order_acq_rel);
  if (Index >= Cap || Index >= Recording.Capacity)
    return;
  Recording.Records[Index] = ompsim_translate_record{Host, Result, Hit ? 1u : 0u, 0u};
}

/// The lookups the fast path leaves out: the thread's first (it registers the
/// thread), every one on a thread that cannot be registered (shared atomic
/// counters), and every one while recording is on. A tail call of the fast
/// path, so the fast path needs no stack frame.
__attribute__((noinline)) void *countAndRecord(uint64_t Key, uint64_t Result, bool Hit) {
  ThreadCounts &Mine = MyCounts;
  if (Mine.Unregistered)
    registerThread(Mine);
  if (!Mine.Unregistered)
    bump(Mine.Calls[Hit]);
  else
    (Hit ? UnregisteredHits : UnregisteredMisses).fetch_add(1, std::memory_order_relaxed);
  uint64_t Cap = Recording.Cap.load(std::memory_order_relaxed);
  if (Cap != 0)
    record(Cap, Key, Result, Hit);
  return reinterpret_cast<void *>(static_cast<uintptr_t>(Result));
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

/// Sets up the default record storage and the thread-exit hook at load.
/// Nothing is torn down: the library is linked -z nodelete, so it stays (with
/// its thread-exit destructor and its static TLS) for the life of the process,
/// and threads still translating while the process exits keep valid tables.
struct RuntimeLifetime {
  RuntimeLifetime() {
    if (!ensureRecordStorage(Recording.Cap.load(std::memory_order_relaxed))) {
      Recording.Cap.store(0, std::memory_order_relaxed);
      Recording.On.store(false, std::memory_order_relaxed);
    }
    HaveExitKey = pthread_key_create(&ExitKey, onThreadExit) == 0;
  }
} Lifetime;

/// A lookup the home bucket (at `Offset`) alone cannot answer: the bucket is
/// full without the key (it may have spilled on), or two of its keys share
/// the low half being looked up. The full bounded search, then counting and
/// recording like any other lookup. Out of line so the common path keeps
/// everything in registers.
__attribute__((noinline)) void *translateSlow(uint64_t Word, uint64_t Key, uint64_t Offset) {
  uint64_t Result = Key;
  bool Hit = FptrTable::fromWord(Word)->find(Key, Offset, Result);
  return countAndRecord(Key, Result, Hit);
}

/// The lookup both exported names run; inlined into each so a call costs one
/// jump, not two. One load gives the table (buckets and hash shift), one
/// cache line (the home bucket) gives the answer in all but rare cases.
__attribute__((always_inline)) inline void *translate(void *HostPtr) {
  if (!HostPtr)
    return nullptr;
  uint64_t Key = reinterpret_cast<uintptr_t>(HostPtr);
  uint64_t Word = PublishedTable.load(std::memory_order_acquire);
  const Bucket *Buckets = reinterpret_cast<const Bucket *>(Word & ~uint64_t(CacheLine - 1));
  uint64_t Offset = homeOffset(Key, Word & (CacheLine - 1));
  const Bucket &Home = bucketAt(Buckets, Offset);
  uint64_t Result = Key;
  unsigned Matches = Home.lowMatches(Key);
  bool Hit = Matches != 0;
  if (Hit) {
    unsigned Slot = unsigned(__builtin_ctz(Matches));
    if (__builtin_expect(Home.KeyHigh[Slot] != uint32_t(Key >> 32), 0))
      return translateSlow(Word, Key, Offset);
    Result = Home.Values[Slot];
  } else if (__builtin_expect(Home.isFull(), 0)) {
    return translateSlow(Word, Key, Offset);
  }
  // One test for both slow cases: two byte loads ORed.
  if (__builtin_expect(MyCounts.Unregistered | Recording.On.load(std::memory_order_relaxed), 0))
    return countAndRecord(Key, Result, Hit);
  bump(MyCounts.Calls[Hit]);
  return reinterpret_cast<void *>(static_cast<uintptr_t>(Result));
}

} // namespace

OMPSIM_DEVICE_API void *__kmpc_target_translate_fptr(void *HostPtr) { return translate(HostPtr); }

OMPSIM_DEVICE_API void *__llvm_omp_indirect_call_lookup(void *HostPtr) { return translate(HostPtr); }

OMPSIM_DEVICE_API int32_t __ompsim_device_set_fptr_table(const __omp_offloading_fptr_map_ty *Table,
                                                         uint64_t N) {
  if (N > 0 && !Table)
    return -1;
  for (uint64_t I = 1; I < N; ++I)
    if (Table[I - 1].host_ptr >= Table[I].host_ptr)
      return -1;
  FptrTable *Fresh = N > 0 ? buildTable(Table, N) : &EmptyTable.Header;
  if (!Fresh)
    return -1;
  RuntimeLock Lock;
  // Release: a lookup that loads the new pointer sees the finished slots.
  auto *Old = const_cast<FptrTable *>(
      FptrTable::fromWord(PublishedTable.exchange(Fresh->word(), std::memory_order_acq_rel)));
  if (Old != &EmptyTable.Header) {
    Old->Older = Retired;
    Retired = Old;
  }
  return 0;
}

OMPSIM_DEVICE_API void __ompsim_device_set_translate_cap(uint64_t Cap) {
  RuntimeLock Lock;
  if (!ensureRecordStorage(Cap))
    Cap = Recording.Capacity; // out of memory: keep recording what fits
  Recording.Cap.store(Cap, std::memory_order_relaxed);
  Recording.On.store(Cap != 0, std::memory_order_relaxed);
}

OMPSIM_DEVICE_API ompsim_translate_stats __ompsim_device_take_translate_log(ompsim_translate_record *Out,
                                                                            uint64_t Max) {
  RuntimeLock Lock;
  // Claims first (see record()): every record taken here has its call counted.
  uint64_t Claimed = Recording.Next.exchange(0, std::memory_order_acq_rel);
  uint64_t Hits = ExitedHits + UnregisteredHits.exchange(0, std::memory_order_relaxed);
  uint64_t Misses = ExitedMisses + UnregisteredMisses.exchange(0, std::memory_order_relaxed);
  ExitedHits = ExitedMisses = 0;
  for (ThreadCounts *T = Registry; T; T = T->Next) {
    uint64_t H = T->Calls[1].load(std::memory_order_relaxed);
    uint64_t M = T->Calls[0].load(std::memory_order_relaxed);
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
  if (Out && Max > 0 && Stored > 0)
    std::memcpy(Out, Recording.Records, (Stored < Max ? Stored : Max) * sizeof(ompsim_translate_record));
  return Stats;
}

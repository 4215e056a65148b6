// Device lookup micro-benchmark: ns per translate for ompsim's device runtime
// (`ompsim`: __kmpc_target_translate_fptr over the table published with
// __ompsim_device_set_fptr_table) side by side with the two baselines the
// issue names, on the same keys in the same run:
//   * binary_search: a plain binary search over sorted {host, device} pairs,
//     the layout upstream libomptarget's device runtime uses;
//   * unordered_map: std::unordered_map<uint64_t, uint64_t>, GCC's design;
//   * binary_search_call, unordered_map_call: the same two behind an
//     out-of-line call through a pointer, as device code reaches every
//     runtime's lookup (the like-for-like baselines the goals are judged on);
//   * ompsim_inline: the runtime's hash-table layout written inline, with no
//     call into the shared library and no hit/miss counting, so the cost of
//     the call and the counters can be told apart from the cost of the layout
//     (a reference, not a baseline);
//   * call_floor (size 1 only): a call through a pointer to a function that
//     returns its argument, the cost of reaching any out-of-line lookup, which
//     device code pays and the inlined baselines do not (a reference).
// Patterns: hits or misses (an address between two table entries), random or
// sequential (table order) access. Lookups are independent, so the figure is
// throughput per lookup, as device code calling through a table in a loop sees.
//
// Each benchmark reports counters: bytes_per_entry (measured with mallinfo2
// around building the structure) and, where the kernel lets this process count
// hardware events, cache_misses_per_lookup. Where it does not, the JSON context
// says "perf_cache_misses": "not available: <why>".
#include "ompsim/device_runtime.h"

#include <benchmark/benchmark.h>

#include <linux/perf_event.h>
#include <malloc.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

/// Bytes the allocator has handed out (small-bin and mmap'ed blocks alike).
size_t allocatedBytes() {
  struct mallinfo2 Info = mallinfo2();
  return Info.uordblks + Info.hblkhd;
}

/// One hardware cache-miss counter for this thread, or the reason there is none.
class CacheMissCounter {
public:
  CacheMissCounter() {
    perf_event_attr Attr;
    std::memset(&Attr, 0, sizeof(Attr));
    Attr.size = sizeof(Attr);
    Attr.type = PERF_TYPE_HARDWARE;
    Attr.config = PERF_COUNT_HW_CACHE_MISSES;
    Attr.disabled = 1;
    Attr.exclude_kernel = 1;
    Attr.exclude_hv = 1;
    Fd = static_cast<int>(syscall(SYS_perf_event_open, &Attr, 0, -1, -1, 0));
    if (Fd < 0)
      Why = std::string("not available: perf_event_open(PERF_COUNT_HW_CACHE_MISSES) failed: ") +
            std::strerror(errno);
  }
  ~CacheMissCounter() {
    if (Fd >= 0)
      close(Fd);
  }
  bool available() const { return Fd >= 0; }
  const std::string &whyNot() const { return Why; }
  void start() {
    if (Fd < 0)
      return;
    ioctl(Fd, PERF_EVENT_IOC_RESET, 0);
    ioctl(Fd, PERF_EVENT_IOC_ENABLE, 0);
  }
  uint64_t stop() {
    if (Fd < 0)
      return 0;
    ioctl(Fd, PERF_EVENT_IOC_DISABLE, 0);
    uint64_t Count = 0;
    if (read(Fd, &Count, sizeof(Count)) != static_cast<ssize_t>(sizeof(Count)))
      return 0;
    return Count;
  }

private:
  int Fd = -1;
  std::string Why;
};

CacheMissCounter &cacheMisses() {
  static CacheMissCounter Counter;
  return Counter;
}

enum class Pattern { RandomHit, SequentialHit, RandomMiss, SequentialMiss };

const char *patternName(Pattern P) {
  switch (P) {
  case Pattern::RandomHit:
    return "random_hit";
  case Pattern::SequentialHit:
    return "sequential_hit";
  case Pattern::RandomMiss:
    return "random_miss";
  case Pattern::SequentialMiss:
    return "sequential_miss";
  }
  return "?";
}

/// A table of `n` function addresses (16-byte aligned, irregular gaps as in a
/// real .text section) and the query streams for each pattern.
struct Dataset {
  std::vector<__omp_offloading_fptr_map_ty> Sorted;
  std::map<Pattern, std::vector<uint64_t>> Queries; ///< power-of-two length each

  explicit Dataset(uint64_t N) {
    std::mt19937_64 Rng(0x5eed + N);
    Sorted.resize(N);
    uint64_t Host = 0x555555560000ull;
    uint64_t Device = 0x7f0000100000ull;
    for (uint64_t I = 0; I < N; ++I) {
      Host += 16 * (1 + Rng() % 16);
      Device += 16 * (1 + Rng() % 16);
      Sorted[I] = {Host, Device};
    }
    // Enough queries that random access covers the whole table.
    uint64_t Q = std::max<uint64_t>(N, 1u << 16);
    for (Pattern P :
         {Pattern::RandomHit, Pattern::SequentialHit, Pattern::RandomMiss, Pattern::SequentialMiss}) {
      std::vector<uint64_t> Keys(Q);
      bool Random = P == Pattern::RandomHit || P == Pattern::RandomMiss;
      bool Miss = P == Pattern::RandomMiss || P == Pattern::SequentialMiss;
      for (uint64_t I = 0; I < Q; ++I) {
        uint64_t Index = Random ? Rng() % N : I % N;
        // Entries are >= 16 bytes apart, so +8 lies strictly between two keys.
        Keys[I] = Sorted[Index].host_ptr + (Miss ? 8 : 0);
      }
      Queries[P] = std::move(Keys);
    }
  }
};

Dataset &dataset(uint64_t N) {
  static std::map<uint64_t, std::unique_ptr<Dataset>> Cache;
  auto &Slot = Cache[N];
  if (!Slot)
    Slot = std::make_unique<Dataset>(N);
  return *Slot;
}

/// ompsim's device runtime: publishes the dataset's table once per size.
struct Ompsim {
  static constexpr const char *Name = "ompsim";
  double BytesPerEntry = 0;
  explicit Ompsim(const Dataset &D) {
    // The runtime keeps every published snapshot until exit, so republishing
    // only when the size changes keeps the benchmark's footprint bounded.
    static uint64_t PublishedSize = UINT64_MAX;
    static double PublishedBytesPerEntry = 0;
    if (PublishedSize != D.Sorted.size()) {
      size_t Before = allocatedBytes();
      if (__ompsim_device_set_fptr_table(D.Sorted.data(), D.Sorted.size()) != 0) {
        fprintf(
            stderr,
            "ompsim: lookup_bench: __ompsim_device_set_fptr_table rejected a sorted table of %zu entries\n",
            D.Sorted.size());
        std::exit(1);
      }
      PublishedBytesPerEntry = double(allocatedBytes() - Before) / double(D.Sorted.size());
      PublishedSize = D.Sorted.size();
      __ompsim_device_set_translate_cap(0);
    }
    BytesPerEntry = PublishedBytesPerEntry;
  }
  uint64_t lookup(uint64_t Key) const {
    return reinterpret_cast<uintptr_t>(__kmpc_target_translate_fptr(reinterpret_cast<void *>(Key)));
  }
};

/// Upstream's design: binary search over sorted {host, device} pairs.
struct BinarySearch {
  static constexpr const char *Name = "binary_search";
  std::vector<__omp_offloading_fptr_map_ty> Pairs;
  double BytesPerEntry = 0;
  explicit BinarySearch(const Dataset &D) {
    size_t Before = allocatedBytes();
    Pairs = D.Sorted;
    BytesPerEntry = double(allocatedBytes() - Before) / double(D.Sorted.size());
  }
  uint64_t lookup(uint64_t Key) const {
    size_t Low = 0, High = Pairs.size();
    while (Low < High) {
      size_t Mid = Low + (High - Low) / 2;
      if (Pairs[Mid].host_ptr < Key)
        Low = Mid + 1;
      else
        High = Mid;
    }
    if (Low < Pairs.size() && Pairs[Low].host_ptr == Key)
      return Pairs[Low].tgt_ptr;
    return Key;
  }
};

/// GCC's design: a hash map from host to device address.
struct HashMap {
  static constexpr const char *Name = "unordered_map";
  std::unordered_map<uint64_t, uint64_t> Map;
  double BytesPerEntry = 0;
  explicit HashMap(const Dataset &D) {
    size_t Before = allocatedBytes();
    Map.reserve(D.Sorted.size());
    for (const auto &E : D.Sorted)
      Map.emplace(E.host_ptr, E.tgt_ptr);
    BytesPerEntry = double(allocatedBytes() - Before) / double(D.Sorted.size());
  }
  uint64_t lookup(uint64_t Key) const {
    auto It = Map.find(Key);
    return It == Map.end() ? Key : It->second;
  }
};

/// The runtime's hash-table layout (runtime/device/FunctionPointerLookup.cpp) written
/// inline, without the call into the shared library and without hit/miss
/// counting: what the layout alone costs, to tell it apart from the call and
/// the counters (a reference, not a goal). Same 64-byte buckets of four
/// entries, hash, load factors and probing; plain 64-bit key compares instead
/// of the runtime's SSE2 compare of the keys' low halves.
struct OmpsimInline {
  static constexpr const char *Name = "ompsim_inline";
  struct alignas(64) Bucket {
    uint64_t Keys[4];
    uint64_t Values[4];
  };
  std::vector<Bucket> Buckets;
  uint64_t Mask = 0, Shift = 0, MaxProbes = 0;
  double BytesPerEntry = 0;
  static constexpr uint64_t Multiplier = 0x9E3779B97F4A7C15ull;
  explicit OmpsimInline(const Dataset &D) {
    size_t Before = allocatedBytes();
    uint64_t N = D.Sorted.size(), Count = 2, Log2 = 1;
    uint64_t SlotsPerEntry = N <= 64 * 1024 ? 4 : 2;
    while (Count * 4 < SlotsPerEntry * N) {
      Count *= 2;
      ++Log2;
    }
    Buckets.assign(Count, Bucket{});
    Mask = Count - 1;
    Shift = 64 - Log2;
    for (const auto &E : D.Sorted) {
      uint64_t Index = (E.host_ptr * Multiplier) >> Shift, Probes = 1;
      while (Buckets[Index].Keys[3] != 0) {
        Index = (Index + 1) & Mask;
        ++Probes;
      }
      Bucket &B = Buckets[Index];
      unsigned Free = 0;
      while (B.Keys[Free] != 0)
        ++Free;
      B.Keys[Free] = E.host_ptr;
      B.Values[Free] = E.tgt_ptr;
      MaxProbes = std::max(MaxProbes, Probes);
    }
    BytesPerEntry = double(allocatedBytes() - Before) / double(N);
  }
  uint64_t lookup(uint64_t Key) const {
    uint64_t Index = (Key * Multiplier) >> Shift;
    for (uint64_t Probe = 0; Probe < MaxProbes; ++Probe) {
      const Bucket &B = Buckets[Index];
      uint64_t Result = Key;
      bool Found = false;
      for (unsigned I = 0; I < 4; ++I) {
        bool Match = B.Keys[I] == Key;
        Result = Match ? B.Values[I] : Result;
        Found |= Match;
      }
      if (Found || B.Keys[3] == 0)
        return Result;
      Index = (Index + 1) & Mask;
    }
    return Key;
  }
};

/// Returns its argument; out of line so calls to it cannot be inlined.
extern "C" __attribute__((noinline)) void *ompsimLookupBenchIdentity(void *HostPtr) {
  asm volatile("" ::: "memory");
  return HostPtr;
}
/// Read through a volatile pointer, as a call through the PLT reads the GOT.
void *(*volatile IdentityThroughPointer)(void *) = ompsimLookupBenchIdentity;

/// The floor any runtime lookup pays: a call through a pointer to a function
/// that does no lookup at all. Device code reaches __kmpc_target_translate_fptr
/// the same way (a call through the PLT into libompsim-device.so), while the
/// two baselines here are inlined into the loop, so for tiny tables this row
/// says how much of `ompsim` is the call itself (a reference, not a goal).
struct CallFloor {
  static constexpr const char *Name = "call_floor";
  double BytesPerEntry = 0;
  void *(*Identity)(void *);
  explicit CallFloor(const Dataset &) : Identity(IdentityThroughPointer) {}
  uint64_t lookup(uint64_t Key) const {
    return reinterpret_cast<uintptr_t>(Identity(reinterpret_cast<void *>(Key)));
  }
};

/// A baseline reached the way device code reaches any runtime's lookup: an
/// out-of-line call through a pointer, whose body finds its table through a
/// global (as __kmpc_target_translate_fptr finds the published one). This is
/// the like-for-like comparison of the lookup designs: each pays the same
/// call that `ompsim` pays through the PLT.
template <typename Base, const char *BaseName> struct OutOfLine {
  static constexpr const char *Name = BaseName;
  Base Inner;
  double BytesPerEntry;
  void *(*volatile Entry)(void *) = &call;
  static inline const Base *Current = nullptr;
  explicit OutOfLine(const Dataset &D) : Inner(D), BytesPerEntry(Inner.BytesPerEntry) { Current = &Inner; }
  __attribute__((noinline)) static void *call(void *HostPtr) {
    asm volatile("" ::: "memory");
    return reinterpret_cast<void *>(Current->lookup(reinterpret_cast<uintptr_t>(HostPtr)));
  }
  uint64_t lookup(uint64_t Key) const {
    return reinterpret_cast<uintptr_t>(Entry(reinterpret_cast<void *>(Key)));
  }
};
constexpr char BinarySearchCallName[] = "binary_search_call";
constexpr char HashMapCallName[] = "unordered_map_call";

template <typename Impl> void runLookup(benchmark::State &State, uint64_t N, Pattern P) {
  Dataset &D = dataset(N);
  Impl Structure(D);
  const std::vector<uint64_t> &Queries = D.Queries.at(P);
  const uint64_t Mask = Queries.size() - 1;
  uint64_t I = 0;
  CacheMissCounter &Counter = cacheMisses();
  Counter.start();
  for (auto _ : State) {
    uint64_t Result = Structure.lookup(Queries[I & Mask]);
    benchmark::DoNotOptimize(Result);
    ++I;
  }
  uint64_t Misses = Counter.stop();
  State.counters["bytes_per_entry"] = Structure.BytesPerEntry;
  State.counters["table_size"] = double(N);
  if (Counter.available())
    State.counters["cache_misses_per_lookup"] =
        benchmark::Counter(double(Misses), benchmark::Counter::kAvgIterations);
}

template <typename Impl> void registerAll(const std::vector<uint64_t> &Sizes) {
  for (uint64_t N : Sizes)
    for (Pattern P :
         {Pattern::RandomHit, Pattern::SequentialHit, Pattern::RandomMiss, Pattern::SequentialMiss}) {
      std::string Name = std::string("lookup/") + Impl::Name + "/" + std::to_string(N) + "/" + patternName(P);
      benchmark::RegisterBenchmark(Name.c_str(), [N, P](benchmark::State &S) { runLookup<Impl>(S, N, P); });
    }
}

} // namespace

int main(int argc, char **argv) {
  const std::vector<uint64_t> Sizes = {1, 16, 1024, 64 * 1024, 1024 * 1024};
  registerAll<Ompsim>(Sizes);
  registerAll<BinarySearch>(Sizes);
  registerAll<HashMap>(Sizes);
  registerAll<OutOfLine<BinarySearch, BinarySearchCallName>>(Sizes);
  registerAll<OutOfLine<HashMap, HashMapCallName>>(Sizes);
  registerAll<OmpsimInline>(Sizes);
  registerAll<CallFloor>({1});
  benchmark::AddCustomContext("perf_cache_misses",
                              cacheMisses().available() ? "available" : cacheMisses().whyNot());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// Unit tests of the device runtime's translate API: lookups over published
// tables of every shape, concurrency, and the translate log.
#include "ompsim/device_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

namespace {

using Pair = __omp_offloading_fptr_map_ty;

void *ptr(uint64_t V) { return reinterpret_cast<void *>(static_cast<uintptr_t>(V)); }
uint64_t val(void *P) { return reinterpret_cast<uintptr_t>(P); }

/// Publishes `Table` and clears the counters so each test starts fresh.
void publish(const std::vector<Pair> &Table) {
  ASSERT_EQ(__ompsim_device_set_fptr_table(Table.data(), Table.size()), 0);
  __ompsim_device_set_translate_cap(64);
  (void)__ompsim_device_take_translate_log(nullptr, 0);
}

/// Host pointers 0x1000, 0x1010, ... (gaps of 16 so in-range misses exist).
std::vector<Pair> evenTable(uint64_t N) {
  std::vector<Pair> T;
  for (uint64_t I = 0; I < N; ++I)
    T.push_back({0x1000 + 16 * I, 0x7000000 + 8 * I});
  return T;
}

TEST(DeviceTranslate, EmptyTableReturnsInputUnchanged) {
  publish({});
  EXPECT_EQ(__kmpc_target_translate_fptr(ptr(0x1234)), ptr(0x1234));
  EXPECT_EQ(__llvm_omp_indirect_call_lookup(ptr(0x1234)), ptr(0x1234));
  EXPECT_EQ(__kmpc_target_translate_fptr(nullptr), nullptr);
}

TEST(DeviceTranslate, NullGivesNullEvenWhenZeroIsMapped) {
  publish({{0x0, 0x99}, {0x10, 0x20}});
  EXPECT_EQ(__kmpc_target_translate_fptr(nullptr), nullptr);
  EXPECT_EQ(__llvm_omp_indirect_call_lookup(nullptr), nullptr);
}

TEST(DeviceTranslate, OneEntry) {
  publish({{0x5000, 0x9000}});
  EXPECT_EQ(__kmpc_target_translate_fptr(ptr(0x5000)), ptr(0x9000));
  EXPECT_EQ(__kmpc_target_translate_fptr(ptr(0x4fff)), ptr(0x4fff));
  EXPECT_EQ(__kmpc_target_translate_fptr(ptr(0x5001)), ptr(0x5001));
}

TEST(DeviceTranslate, FirstLastBelowAboveAndInsideGaps) {
  for (uint64_t N : {2u, 3u, 7u, 8u, 9u, 100u, 1023u, 1024u, 1025u}) {
    auto T = evenTable(N);
    publish(T);
    EXPECT_EQ(val(__kmpc_target_translate_fptr(ptr(T.front().host_ptr))), T.front().tgt_ptr) << N;
    EXPECT_EQ(val(__kmpc_target_translate_fptr(ptr(T.back().host_ptr))), T.back().tgt_ptr) << N;
    EXPECT_EQ(__kmpc_target_translate_fptr(ptr(0x10)), ptr(0x10)) << N;
    EXPECT_EQ(__kmpc_target_translate_fptr(ptr(UINT64_MAX)), ptr(UINT64_MAX)) << N;
    // Inside the table's address range but not in it: upstream's lookup can
    // spin forever on exactly this input.
    for (uint64_t I = 0; I + 1 < N; ++I) {
      uint64_t Gap = T[I].host_ptr + 8;
      ASSERT_EQ(val(__kmpc_target_translate_fptr(ptr(Gap))), Gap) << N << " " << I;
      ASSERT_EQ(val(__llvm_omp_indirect_call_lookup(ptr(T[I].host_ptr))), T[I].tgt_ptr);
    }
  }
}

TEST(DeviceTranslate, RejectsUnsortedOrDuplicateTableAndKeepsPrevious) {
  publish({{0x10, 0x100}});
  std::vector<Pair> Unsorted{{0x30, 1}, {0x20, 2}};
  std::vector<Pair> Duplicate{{0x20, 1}, {0x20, 2}};
  EXPECT_EQ(__ompsim_device_set_fptr_table(Unsorted.data(), Unsorted.size()), -1);
  EXPECT_EQ(__ompsim_device_set_fptr_table(Duplicate.data(), Duplicate.size()), -1);
  EXPECT_EQ(__ompsim_device_set_fptr_table(nullptr, 3), -1);
  EXPECT_EQ(__kmpc_target_translate_fptr(ptr(0x10)), ptr(0x100));
  EXPECT_EQ(__kmpc_target_translate_fptr(ptr(0x20)), ptr(0x20));
}

TEST(DeviceTranslate, RepublishReplacesTable) {
  publish({{0x10, 0x100}});
  publish({{0x20, 0x200}});
  EXPECT_EQ(__kmpc_target_translate_fptr(ptr(0x10)), ptr(0x10));
  EXPECT_EQ(__kmpc_target_translate_fptr(ptr(0x20)), ptr(0x200));
}

TEST(DeviceTranslate, RandomizedAgainstLowerBound) {
  std::mt19937_64 Rng(20240501);
  for (int Round = 0; Round < 50; ++Round) {
    uint64_t N = Rng() % 3000;
    std::vector<uint64_t> Keys;
    // Narrow key ranges make dense tables and many in-range misses.
    uint64_t Span = (Round % 2) ? 4 * N + 8 : UINT64_MAX;
    for (uint64_t I = 0; I < N; ++I)
      Keys.push_back(Rng() % Span);
    std::sort(Keys.begin(), Keys.end());
    Keys.erase(std::unique(Keys.begin(), Keys.end()), Keys.end());
    std::vector<Pair> T;
    for (uint64_t K : Keys)
      T.push_back({K, Rng()});
    publish(T);
    for (int Q = 0; Q < 2000; ++Q) {
      uint64_t Key = (Q % 3 == 0 && !T.empty()) ? T[Rng() % T.size()].host_ptr : Rng() % Span;
      auto It =
          std::lower_bound(T.begin(), T.end(), Key, [](const Pair &P, uint64_t K) { return P.host_ptr < K; });
      uint64_t Expected = Key == 0 ? 0 : (It != T.end() && It->host_ptr == Key ? It->tgt_ptr : Key);
      ASSERT_EQ(val(__kmpc_target_translate_fptr(ptr(Key))), Expected) << "round " << Round;
    }
  }
}

TEST(DeviceTranslate, ConcurrentLookupsAreCountedExactly) {
  auto T = evenTable(500);
  publish(T);
  __ompsim_device_set_translate_cap(16);
  constexpr int Threads = 8, PerThread = 20000;
  std::vector<std::thread> Pool;
  std::vector<int> Wrong(Threads, 0);
  for (int Id = 0; Id < Threads; ++Id)
    Pool.emplace_back([&, Id] {
      for (int I = 0; I < PerThread; ++I) {
        const Pair &P = T[(Id * 7919 + I) % T.size()];
        bool Hit = I % 2 == 0;
        uint64_t Key = Hit ? P.host_ptr : P.host_ptr + 4;
        uint64_t Want = Hit ? P.tgt_ptr : Key;
        if (val(__kmpc_target_translate_fptr(ptr(Key))) != Want)
          ++Wrong[Id];
      }
    });
  for (auto &Th : Pool)
    Th.join();
  for (int Id = 0; Id < Threads; ++Id)
    EXPECT_EQ(Wrong[Id], 0) << "thread " << Id;
  ompsim_translate_record Out[16];
  ompsim_translate_stats S = __ompsim_device_take_translate_log(Out, 16);
  EXPECT_EQ(S.hits, uint64_t(Threads) * PerThread / 2);
  EXPECT_EQ(S.misses, uint64_t(Threads) * PerThread / 2);
  EXPECT_EQ(S.recorded, 16u);
  EXPECT_EQ(S.dropped, uint64_t(Threads) * PerThread - 16);
  for (const auto &R : Out)
    EXPECT_EQ(R.hit != 0, R.result != R.host_ptr);
}

TEST(DeviceTranslate, LogRecordsInOrderAndResetsPerPeriod) {
  publish({{0x100, 0x900}});
  __ompsim_device_set_translate_cap(2);
  __kmpc_target_translate_fptr(ptr(0x100));
  __llvm_omp_indirect_call_lookup(ptr(0x104));
  __kmpc_target_translate_fptr(ptr(0x108));
  ompsim_translate_record Out[4] = {};
  ompsim_translate_stats S = __ompsim_device_take_translate_log(Out, 4);
  EXPECT_EQ(S.hits, 1u);
  EXPECT_EQ(S.misses, 2u);
  EXPECT_EQ(S.recorded, 2u);
  EXPECT_EQ(S.dropped, 1u);
  EXPECT_EQ(Out[0].host_ptr, 0x100u);
  EXPECT_EQ(Out[0].result, 0x900u);
  EXPECT_EQ(Out[0].hit, 1u);
  EXPECT_EQ(Out[1].host_ptr, 0x104u);
  EXPECT_EQ(Out[1].result, 0x104u);
  EXPECT_EQ(Out[1].hit, 0u);
  S = __ompsim_device_take_translate_log(Out, 4);
  EXPECT_EQ(S.hits + S.misses + S.recorded + S.dropped, 0u);

  // Cap 0: nothing recorded, counting goes on.
  __ompsim_device_set_translate_cap(0);
  __kmpc_target_translate_fptr(ptr(0x100));
  S = __ompsim_device_take_translate_log(Out, 4);
  EXPECT_EQ(S.hits, 1u);
  EXPECT_EQ(S.recorded, 0u);

  // A smaller output buffer than the records available gets a prefix.
  __ompsim_device_set_translate_cap(64);
  for (int I = 0; I < 5; ++I)
    __kmpc_target_translate_fptr(ptr(0x100));
  ompsim_translate_record One[1] = {};
  S = __ompsim_device_take_translate_log(One, 1);
  EXPECT_EQ(S.recorded, 5u);
  EXPECT_EQ(One[0].host_ptr, 0x100u);
}

TEST(DeviceTranslate, NullIsNeitherHitNorMissNorRecorded) {
  publish({{0x100, 0x900}});
  __kmpc_target_translate_fptr(nullptr);
  __llvm_omp_indirect_call_lookup(nullptr);
  ompsim_translate_stats S = __ompsim_device_take_translate_log(nullptr, 0);
  EXPECT_EQ(S.hits + S.misses + S.recorded + S.dropped, 0u);
}

/// Checks every entry of `T` and the address 8 bytes past each (absent: all
/// tables here keep entries at least 16 apart), with the counts to match.
void expectAllHitsAndGapMisses(const std::vector<Pair> &T) {
  uint64_t WrongHits = 0, WrongMisses = 0;
  for (const Pair &P : T) {
    WrongHits += val(__kmpc_target_translate_fptr(ptr(P.host_ptr))) != P.tgt_ptr;
    WrongMisses += val(__kmpc_target_translate_fptr(ptr(P.host_ptr + 8))) != P.host_ptr + 8;
  }
  EXPECT_EQ(WrongHits, 0u);
  EXPECT_EQ(WrongMisses, 0u);
  ompsim_translate_stats S = __ompsim_device_take_translate_log(nullptr, 0);
  EXPECT_EQ(S.hits, T.size());
  EXPECT_EQ(S.misses, T.size());
}

TEST(DeviceTranslate, OneMebiEntriesIrregularGaps) {
  // Function-like addresses: 16-byte aligned, irregular gaps, and a second
  // cluster far away (a shared library next to the executable).
  std::mt19937_64 Rng(7);
  std::vector<Pair> T;
  uint64_t Host = 0x555555560000ull;
  for (uint64_t I = 0; I < (1u << 20); ++I) {
    if (I == (1u << 19))
      Host = 0x7f1234560000ull;
    Host += 16 * (1 + Rng() % 16);
    T.push_back({Host, 0x200000000000ull + 16 * I});
  }
  publish(T);
  expectAllHitsAndGapMisses(T);
  // Outside the table's range on both sides, and between the two clusters.
  EXPECT_EQ(__kmpc_target_translate_fptr(ptr(0x1000)), ptr(0x1000));
  EXPECT_EQ(__kmpc_target_translate_fptr(ptr(0x600000000000ull)), ptr(0x600000000000ull));
  EXPECT_EQ(__kmpc_target_translate_fptr(ptr(UINT64_MAX - 15)), ptr(UINT64_MAX - 15));
}

TEST(DeviceTranslate, OneMebiEntriesDenseAndPowerOfTwoStrides) {
  // Patterns a weak hash would pile into few buckets: consecutive 16-byte
  // slots, and strides of large powers of two.
  for (uint64_t Stride : {uint64_t(16), uint64_t(1) << 12, uint64_t(1) << 24}) {
    std::vector<Pair> T;
    for (uint64_t I = 0; I < (1u << 20); ++I)
      T.push_back({0x10000 + Stride * I, 0x300000000000ull + 8 * I});
    publish(T);
    SCOPED_TRACE(Stride);
    expectAllHitsAndGapMisses(T);
  }
}

TEST(DeviceTranslate, KeysSharingTheirLow32BitsAreToldApart) {
  // A bucket's first compare looks at the low halves only; keys that agree
  // there (one function per 4 GiB, or 4 GiB-aligned ones whose low half is 0
  // like an empty slot's) must still be found, and absent keys with a
  // present low half must still miss.
  for (uint64_t Low : {uint64_t(0x5550), uint64_t(0)}) {
    std::vector<Pair> T;
    for (uint64_t J = 1; J <= 3000; ++J)
      T.push_back({(J << 32) | Low, 0x400000 + J});
    publish(T);
    SCOPED_TRACE(Low);
    expectAllHitsAndGapMisses(T);
    uint64_t Wrong = 0;
    for (uint64_t J = 3001; J <= 6000; ++J)
      Wrong += val(__kmpc_target_translate_fptr(ptr((J << 32) | Low))) != ((J << 32) | Low);
    EXPECT_EQ(Wrong, 0u);
  }
}

TEST(DeviceTranslate, RepublishingAcrossSizesForgetsOldEntries) {
  std::vector<Pair> Big;
  for (uint64_t I = 0; I < 100000; ++I)
    Big.push_back({0x40000 + 32 * I, 0x900000 + I});
  std::vector<Pair> Small{{0x40000 + 16, 0x77}};
  publish(Big);
  expectAllHitsAndGapMisses(Big);
  publish(Small);
  EXPECT_EQ(__kmpc_target_translate_fptr(ptr(Big[5].host_ptr)), ptr(Big[5].host_ptr));
  EXPECT_EQ(__kmpc_target_translate_fptr(ptr(0x40000 + 16)), ptr(0x77));
  publish({});
  EXPECT_EQ(__kmpc_target_translate_fptr(ptr(0x40000 + 16)), ptr(0x40000 + 16));
  publish(Big);
  expectAllHitsAndGapMisses(Big);
}

TEST(DeviceTranslate, CountsStayExactWhileTheLogIsTakenDuringLookups) {
  auto T = evenTable(300);
  publish(T);
  __ompsim_device_set_translate_cap(0);
  constexpr int Threads = 4, PerThread = 200000;
  std::atomic<int> Running{Threads};
  std::vector<std::thread> Pool;
  std::vector<uint64_t> Wrong(Threads, 0);
  for (int Id = 0; Id < Threads; ++Id)
    Pool.emplace_back([&, Id] {
      for (int I = 0; I < PerThread; ++I) {
        const Pair &P = T[(Id * 31 + I) % T.size()];
        bool Hit = I % 4 != 0; // 3 hits per miss
        uint64_t Key = Hit ? P.host_ptr : P.host_ptr + 8;
        Wrong[Id] += val(__kmpc_target_translate_fptr(ptr(Key))) != (Hit ? P.tgt_ptr : Key);
      }
      Running.fetch_sub(1);
    });
  // Take the log over and over while the threads run (and exit): every call
  // lands in exactly one period.
  uint64_t Hits = 0, Misses = 0, Takes = 0;
  while (Running.load() > 0) {
    ompsim_translate_stats S = __ompsim_device_take_translate_log(nullptr, 0);
    Hits += S.hits;
    Misses += S.misses;
    EXPECT_EQ(S.recorded, 0u);
    EXPECT_EQ(S.dropped, S.hits + S.misses); // cap 0: every call is dropped
    ++Takes;
  }
  for (auto &Th : Pool)
    Th.join();
  ompsim_translate_stats S = __ompsim_device_take_translate_log(nullptr, 0);
  Hits += S.hits;
  Misses += S.misses;
  for (int Id = 0; Id < Threads; ++Id)
    EXPECT_EQ(Wrong[Id], 0u) << "thread " << Id;
  EXPECT_EQ(Hits, uint64_t(Threads) * PerThread * 3 / 4);
  EXPECT_EQ(Misses, uint64_t(Threads) * PerThread / 4);
  EXPECT_GT(Takes, 0u);
}

TEST(DeviceTranslate, CountsOfExitedThreadsAreKeptUntilTaken) {
  publish({{0x100, 0x900}});
  for (int Round = 0; Round < 3; ++Round) {
    std::vector<std::thread> Pool;
    for (int Id = 0; Id < 5; ++Id)
      Pool.emplace_back([] {
        for (int I = 0; I < 1000; ++I)
          __kmpc_target_translate_fptr(ptr(I % 2 ? 0x100 : 0x104));
      });
    for (auto &Th : Pool)
      Th.join();
  }
  ompsim_translate_stats S = __ompsim_device_take_translate_log(nullptr, 0);
  EXPECT_EQ(S.hits, 3u * 5 * 500);
  EXPECT_EQ(S.misses, 3u * 5 * 500);
  S = __ompsim_device_take_translate_log(nullptr, 0);
  EXPECT_EQ(S.hits + S.misses, 0u);
}

TEST(DeviceTranslate, LookupsDuringRepublicationSeeOneWholeTable) {
  // The plugins publish between kernels; even a publish racing lookups must
  // give each lookup the old table or the new one, never a torn one.
  std::vector<Pair> A, B;
  for (uint64_t I = 0; I < 4096; ++I) {
    A.push_back({0x10000 + 16 * I, 0xA00000 + I});
    B.push_back({0x10000 + 16 * I, 0xB00000 + I});
  }
  publish(A);
  std::atomic<bool> Stop{false};
  std::vector<std::thread> Pool;
  std::vector<uint64_t> Torn(2, 0);
  for (int Id = 0; Id < 2; ++Id)
    Pool.emplace_back([&, Id] {
      for (uint64_t I = 0; !Stop.load(std::memory_order_relaxed); ++I) {
        uint64_t Index = (I * 2654435761u + Id) % A.size();
        uint64_t Got = val(__kmpc_target_translate_fptr(ptr(A[Index].host_ptr)));
        Torn[Id] += Got != A[Index].tgt_ptr && Got != B[Index].tgt_ptr;
      }
    });
  for (int Round = 0; Round < 50; ++Round)
    ASSERT_EQ(__ompsim_device_set_fptr_table((Round % 2 ? A : B).data(), A.size()), 0);
  Stop.store(true);
  for (auto &Th : Pool)
    Th.join();
  EXPECT_EQ(Torn[0] + Torn[1], 0u);
}

} // namespace

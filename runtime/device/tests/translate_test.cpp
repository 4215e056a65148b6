// Unit tests of the device runtime's translate API: lookups over published
// tables of every shape, concurrency, and the translate log.
#include "ompsim/device_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
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
      auto It = std::lower_bound(T.begin(), T.end(), Key,
                                 [](const Pair &P, uint64_t K) { return P.host_ptr < K; });
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

} // namespace

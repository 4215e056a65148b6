//===- WarpCheck.cpp - a program's warp collectives, as CUDA's rules say --===//
#include "WarpCheck.h"

#include "../DeviceStop.h"

#include <cstdio>

namespace ompsim::vgpu {
namespace {

unsigned long long addressOf(const void *P) {
  return static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(P));
}

unsigned long long bitsOf(uint64_t Mask) { return static_cast<unsigned long long>(Mask); }

} // namespace

void reportUnnamedCaller(const WarpCall &Call, uint32_t Caller) {
  device::stopDevice(
      "block %u, warp %u: lane %u (thread %u) calls a warp collective, called from 0x%llx, with mask 0x%llx, "
      "which does not name the calling lane: a GPU's result is undefined; a lane's mask names the lane",
      Call.Block, Caller / Call.WarpSize, Caller % Call.WarpSize, Caller, addressOf(Call.Program),
      bitsOf(Call.Mask));
}

void reportNamedLaneAtBarrier(const WarpCall &Call, uint32_t Caller, uint32_t Named) {
  device::stopDevice(
      "block %u, warp %u: lane %u (thread %u) calls a warp collective, called from 0x%llx, with mask 0x%llx, "
      "which names lane %u (thread %u), which waits at a barrier of the block: on a GPU each waits for the "
      "other forever; every lane a mask names that has not finished makes the same call",
      Call.Block, Caller / Call.WarpSize, Caller % Call.WarpSize, Caller, addressOf(Call.Program),
      bitsOf(Call.Mask), Named % Call.WarpSize, Named);
}

void reportLaneLeft(const WarpCall &Call, uint32_t T, uint64_t Arrived) {
  char Lanes[160];
  size_t Used = 0;
  Lanes[0] = 0;
  uint32_t Listed = 0, Count = uint32_t(__builtin_popcountll(Arrived));
  for (uint64_t Left = Arrived; Left && Listed < 4; Left &= Left - 1, ++Listed) {
    int N = std::snprintf(Lanes + Used, sizeof Lanes - Used, "%s%u", Listed ? ", " : "",
                          uint32_t(__builtin_ctzll(Left)));
    if (N > 0 && Used + size_t(N) < sizeof Lanes)
      Used += size_t(N);
  }
  if (Count > Listed)
    std::snprintf(Lanes + Used, sizeof Lanes - Used, " and %u more", Count - Listed);
  device::stopDevice(
      "block %u, warp %u: lane%s %s wait%s at a warp collective called from 0x%llx whose mask 0x%llx names "
      "lane %u (thread %u), which waits at a barrier of the block instead: on a GPU each waits for the other "
      "forever; every lane a mask names that has not finished makes the same call",
      Call.Block, T / Call.WarpSize, Count == 1 ? "" : "s", Lanes, Count == 1 ? "s" : "",
      addressOf(Call.Program), bitsOf(Call.Mask), T % Call.WarpSize, T);
}

void reportShuffleRead(const WarpCall &Call, uint32_t Caller, uint32_t Source, const char *Why) {
  device::stopDevice(
      "block %u, warp %u: lane %u (thread %u) reads lane %u in a shuffle called from 0x%llx with mask "
      "0x%llx, "
      "but lane %u %s: a GPU gives an undefined value; a shuffle reads only lanes that take part",
      Call.Block, Caller / Call.WarpSize, Caller % Call.WarpSize, Caller, Source, addressOf(Call.Program),
      bitsOf(Call.Mask), Source, Why);
}

} // namespace ompsim::vgpu

//===- KernelLanguage.cpp - the ompx kernel-language API on a device ------===//
//
// clang-22's <ompx.h> gives every device of kind cpu (the x86_64 offload
// target) its host fallback: block id 0, grid size 1, shuffles and ballots
// that trap. ompsim's own <ompx.h> (ompx/include/, on the device compile's
// include path only) declares the API instead, and libompsim-device exports
// these definitions under the names a GPU's device runtime exports them
// (ELF images link the library; the JIT of bitcode images resolves them in
// the executor). Host code never calls them: clang's header gives the host
// inline answers of its own. They answer as a GPU's device runtime does:
//
//  - a block is one of the launch's teams: block id = omp_get_team_num(),
//    grid size = omp_get_num_teams();
//  - the block's threads are the team's threads running the caller's code:
//    thread id = omp_get_thread_num(), block size = omp_get_num_threads() in
//    a parallel region; 0 and 1 in the team's own region, which runs on the
//    team's initial thread only (also the body of an ompx_bare region built
//    without ompsim's pass plugin: clang-22's x86_64 code does not run it on
//    every thread);
//  - in an ompx_bare region that ompsim's pass plugin handed to the device
//    runtime (vgpu/), every thread of every block runs the
//    region: the ids, sizes, barriers and warps are that launch's, in three
//    dimensions;
//  - elsewhere clang-22's x86_64 code launches teams and threads in x only, so y and z
//    are id 0 and size 1;
//  - ompx_sync_block* is a barrier of the team's threads;
//  - a warp is kWarpSize consecutive thread ids of the team (a GPU image's
//    bare kernel: its architecture's lanes, 64 on amdgcn); shuffles and
//    ballots exchange values through a buffer the team's threads share;
//  - on the virtual GPU (a bare region, a GPU image) a shuffle or ballot is
//    the warp's own collective, in lockstep as on a GPU, and on warps of 32
//    it follows CUDA's rules (vgpu/WarpCheck.h: a break ends the launch with
//    a line); AMD's warps of 64 ignore the mask, as AMD's hardware does;
//    ompx_sync_block is the block's barrier, named when the block's threads
//    wait at different ones (vgpu/BarrierReport.h).
//
// A kernel run by stock's host plugin (host-upstream) is no ompsim device
// (__ompsim_device_current_device() < 0): there every function gives
// clang-22's host answer, so that backend runs the image as it runs one
// built with clang's header.
//
//===----------------------------------------------------------------------===//
#include "../DeviceStop.h"
#include "../libomp/Libomp.h"
#include "../vgpu/BarrierSite.h"
#include "../vgpu/Block.h"
#include "ompsim/device_runtime.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define OMPSIM_OMPX_API extern "C" __attribute__((visibility("default")))

using ompsim::device::Libomp;
using ompsim::device::runtimeIdent;

namespace {

/// Lanes of a warp, NVIDIA's (DeviceRTL's default for nvptx64).
constexpr int kWarpSize = 32;

/// True inside a kernel that an ompsim plugin launched (sim, ours-host).
bool onOmpsimDevice() { return __ompsim_device_current_device() >= 0; }

/// Threads of the caller's block: those of the innermost parallel region, or
/// the caller alone outside any (a team's own region runs on its initial
/// thread; libomp's omp_get_num_threads() answers the team's thread limit
/// there).
int threadsInBlock() {
  if (ompsim::vgpu::ThreadView V; ompsim::vgpu::current(V))
    return int(V.Threads);
  const Libomp &L = Libomp::get();
  return L.GetLevel() == 0 ? 1 : L.GetNumThreads();
}

int threadInBlock() {
  if (ompsim::vgpu::ThreadView V; ompsim::vgpu::current(V))
    return int(V.LinearThread);
  const Libomp &L = Libomp::get();
  return L.GetLevel() == 0 ? 0 : L.GetThreadNum();
}

void teamBarrier() {
  const Libomp &L = Libomp::get();
  L.Barrier(runtimeIdent(), L.GlobalThreadNum(runtimeIdent()));
}

void copyPointer(void *Dst, void *Src) { *static_cast<void **>(Dst) = *static_cast<void **>(Src); }

/// What a shuffle or ballot of a warp sees of its lanes.
struct WarpView {
  int Lane;     ///< the caller's lane
  int WarpBase; ///< thread id of lane 0
  int Lanes;    ///< lanes of this warp that are threads of the team
};

/// Lanes of the caller's warps: a bare launch's (its GPU image's), else
/// kWarpSize.
int warpSize() {
  if (ompsim::vgpu::ThreadView V; ompsim::vgpu::current(V))
    return int(V.WarpSize);
  return kWarpSize;
}

WarpView warpOf(int Tid, int Threads, int Lanes) {
  WarpView W;
  W.Lane = Tid % Lanes;
  W.WarpBase = Tid - W.Lane;
  W.Lanes = Threads - W.WarpBase < Lanes ? Threads - W.WarpBase : Lanes;
  return W;
}

[[noreturn]] void outOfMemory(const char *What) {
  ompsim::device::stopDevice("%s: cannot allocate the team's exchange buffer", What);
}

/// Every thread of the team publishes `Value`; returns the values of all the
/// team's threads, in a buffer the caller must release with
/// releaseExchange() (every thread of the team calls both, as every thread of
/// a block reaches a warp collective that names all its lanes). The buffer is
/// the team's: one thread allocates it and libomp's copyprivate hands its
/// address to the others.
uint64_t *exchange(uint64_t Value, int Tid, int Threads, const char *What) {
  if (uint64_t *Slots = ompsim::vgpu::exchangeSlots()) {
    Slots[Tid] = Value;
    ompsim::vgpu::syncBlock();
    return Slots;
  }
  const Libomp &L = Libomp::get();
  int32_t Gtid = L.GlobalThreadNum(runtimeIdent());
  void *Slots = nullptr;
  int32_t Allocated = 0;
  if (L.Single(runtimeIdent(), Gtid)) {
    Slots = std::malloc(sizeof(uint64_t) * size_t(Threads));
    if (!Slots)
      outOfMemory(What);
    Allocated = 1;
    L.EndSingle(runtimeIdent(), Gtid);
  }
  L.CopyPrivate(runtimeIdent(), Gtid, sizeof(void *), &Slots, copyPointer, Allocated);
  auto *Values = static_cast<uint64_t *>(Slots);
  Values[Tid] = Value;
  teamBarrier();
  return Values;
}

void releaseExchange(uint64_t *Slots) {
  if (ompsim::vgpu::exchangeSlots()) {
    ompsim::vgpu::syncBlock(); // the block's slots: nothing to free
    return;
  }
  // Nobody reads the buffer once every thread is past this barrier.
  teamBarrier();
  const Libomp &L = Libomp::get();
  int32_t Gtid = L.GlobalThreadNum(runtimeIdent());
  if (L.Single(runtimeIdent(), Gtid)) {
    std::free(Slots);
    L.EndSingle(runtimeIdent(), Gtid);
  }
}

template <typename T> uint64_t toBits(T V) {
  uint64_t Bits = 0;
  std::memcpy(&Bits, &V, sizeof(T));
  return Bits;
}

template <typename T> T fromBits(uint64_t Bits) {
  T V;
  std::memcpy(&V, &Bits, sizeof(T));
  return V;
}

/// Whether a collective's mask counts: on warps of 32 (NVIDIA's), not on
/// AMD's of 64, whose hardware reads any lane of its wavefront (DeviceRTL's
/// amdgcn shuffle has no use for the mask: programs pass NVIDIA's 32-bit
/// ~0U).
bool maskCounts(int Lanes) { return Lanes != 64; }

/// CUDA's __shfl_down_sync: the value of lane + Delta when that lane lies in
/// the caller's segment of Width lanes (and is a thread of the team, and in
/// Mask on a warp of 32), else the caller's own value. `Program`: the
/// program's call.
template <typename T>
T shuffleDown(uint64_t Mask, T Var, unsigned Delta, int Width, const char *What, const void *Program) {
  if (!onOmpsimDevice())
    __builtin_trap(); // clang-22's host answer
  int Threads = threadsInBlock(), Tid = threadInBlock(), Lanes = warpSize();
  WarpView W = warpOf(Tid, Threads, Lanes);
  int Segment = Width > 0 && Width <= Lanes ? Width : Lanes;
  uint64_t SegmentEnd = uint64_t(W.Lane - W.Lane % Segment + Segment);
  uint64_t Source = uint64_t(W.Lane) + Delta;
  bool Strict = maskCounts(Lanes);
  if (ompsim::vgpu::ThreadView V; ompsim::vgpu::current(V)) {
    // Out of the caller's segment: its own value, as on a GPU. On a warp of
    // 32 a lane the mask does not name, or past the block's threads, has an
    // undefined value there: the virtual GPU names the read.
    bool Take = Source < SegmentEnd && (Strict || Source < uint64_t(W.Lanes));
    return fromBits<T>(ompsim::vgpu::warpShuffle(Strict ? Mask : ~uint64_t(0), toBits(Var),
                                                 uint32_t(Take ? Source : uint64_t(W.Lane)),
                                                 Strict ? Program : nullptr));
  }
  if (Threads == 1)
    return Var;
  uint64_t *Slots = exchange(toBits(Var), Tid, Threads, What);
  T Result = Var;
  bool InMask = !Strict || ((Mask >> Source) & 1);
  if (Source < SegmentEnd && Source < uint64_t(W.Lanes) && InMask)
    Result = fromBits<T>(Slots[W.WarpBase + int(Source)]);
  releaseExchange(Slots);
  return Result;
}

} // namespace

OMPSIM_OMPX_API uint32_t __ompsim_ompx_warp_size(void) {
  if (!onOmpsimDevice())
    __builtin_trap(); // clang-22's host answer
  return kWarpSize;
}

OMPSIM_OMPX_API int ompx_thread_id(int Dim) {
  if (ompsim::vgpu::ThreadView V; ompsim::vgpu::current(V))
    return Dim >= 0 && Dim < 3 ? int(V.ThreadId[Dim]) : 0;
  if (!onOmpsimDevice())
    return Libomp::get().GetAncestorThreadNum(Dim + 1);
  return Dim == 0 ? threadInBlock() : 0;
}

OMPSIM_OMPX_API int ompx_block_dim(int Dim) {
  if (ompsim::vgpu::ThreadView V; ompsim::vgpu::current(V))
    return Dim >= 0 && Dim < 3 ? int(V.BlockDim[Dim]) : 0;
  if (!onOmpsimDevice())
    return Libomp::get().GetTeamSize(Dim + 1);
  return Dim == 0 ? threadsInBlock() : 1;
}

OMPSIM_OMPX_API int ompx_block_id(int Dim) {
  if (ompsim::vgpu::ThreadView V; ompsim::vgpu::current(V))
    return Dim >= 0 && Dim < 3 ? int(V.BlockId[Dim]) : 0;
  if (!onOmpsimDevice())
    return 0;
  return Dim == 0 ? Libomp::get().GetTeamNum() : 0;
}

OMPSIM_OMPX_API int ompx_grid_dim(int Dim) {
  if (ompsim::vgpu::ThreadView V; ompsim::vgpu::current(V))
    return Dim >= 0 && Dim < 3 ? int(V.GridDim[Dim]) : 0;
  if (!onOmpsimDevice())
    return 1;
  return Dim == 0 ? Libomp::get().GetNumTeams() : 1;
}

namespace {

/// ompx_sync_block*, called from `Program` (a barrier orders every access);
/// null: a divergent one, which any of the block's barriers completes.
void syncBlock(const void *Program) {
  if (ompsim::vgpu::ThreadView V; ompsim::vgpu::current(V)) {
    const ompsim::vgpu::BarrierSite Site = {Program, nullptr, ompsim::vgpu::BarrierSite::BlockBarrier, 0};
    return ompsim::vgpu::syncBlock(Program ? &Site : nullptr);
  }
  // A team's own region runs on one thread: its barrier has nobody to wait
  // for (and libomp's barrier there would wait for the team's pool).
  if (onOmpsimDevice() && threadsInBlock() == 1)
    return;
  teamBarrier();
}

} // namespace

OMPSIM_OMPX_API void ompx_sync_block(int) { syncBlock(__builtin_return_address(0)); }

OMPSIM_OMPX_API void ompx_sync_block_acq_rel(void) { syncBlock(__builtin_return_address(0)); }

// A barrier its block's threads may meet at different calls (DeviceRTL's
// unaligned barrier): none is named.
OMPSIM_OMPX_API void ompx_sync_block_divergent(int) { syncBlock(nullptr); }

OMPSIM_OMPX_API uint64_t ompx_ballot_sync(uint64_t Mask, int Pred) {
  if (!onOmpsimDevice())
    __builtin_trap(); // clang-22's host answer
  if (ompsim::vgpu::ThreadView V; ompsim::vgpu::current(V)) {
    if (maskCounts(int(V.WarpSize)))
      return ompsim::vgpu::warpBallot(Mask, Pred != 0, __builtin_return_address(0));
    return ompsim::vgpu::warpBallot(~uint64_t(0), Pred != 0) & Mask;
  }
  int Threads = threadsInBlock();
  if (Threads == 1)
    return Pred && (Mask & 1) ? 1 : 0;
  int Tid = threadInBlock();
  uint64_t *Slots = exchange(Pred != 0, Tid, Threads, "ompx_ballot_sync");
  WarpView W = warpOf(Tid, Threads, warpSize());
  uint64_t Ballot = 0;
  for (int L = 0; L < W.Lanes; ++L)
    if (Slots[W.WarpBase + L] && ((Mask >> L) & 1))
      Ballot |= uint64_t(1) << L;
  releaseExchange(Slots);
  return Ballot;
}

OMPSIM_OMPX_API int ompx_shfl_down_sync_i(uint64_t Mask, int Var, unsigned Delta, int Width) {
  return shuffleDown(Mask, Var, Delta, Width, "ompx_shfl_down_sync_i", __builtin_return_address(0));
}

OMPSIM_OMPX_API float ompx_shfl_down_sync_f(uint64_t Mask, float Var, unsigned Delta, int Width) {
  return shuffleDown(Mask, Var, Delta, Width, "ompx_shfl_down_sync_f", __builtin_return_address(0));
}

OMPSIM_OMPX_API long ompx_shfl_down_sync_l(uint64_t Mask, long Var, unsigned Delta, int Width) {
  return shuffleDown(Mask, Var, Delta, Width, "ompx_shfl_down_sync_l", __builtin_return_address(0));
}

OMPSIM_OMPX_API double ompx_shfl_down_sync_d(uint64_t Mask, double Var, unsigned Delta, int Width) {
  return shuffleDown(Mask, Var, Delta, Width, "ompx_shfl_down_sync_d", __builtin_return_address(0));
}

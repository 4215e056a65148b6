//===- DeviceWorkshare.cpp - static loops of GPU-ABI device code ----------===//
//
// The loop entry points of LLVM 22's DeviceRTL (Workshare.cpp): the compiler
// outlines the loop body as `void body(T iv, void *arg)` over the normalized
// iteration space [0, num_iters), and the runtime calls it for the
// iterations of the calling thread:
//
//   __kmpc_for_static_loop_*             one team's threads (`do`/`for`)
//   __kmpc_distribute_static_loop_*      the teams (`distribute`), one thread each
//   __kmpc_distribute_for_static_loop_*  teams and their threads
//                                        (`distribute parallel do`)
//
// Iterations go round-robin in block chunks over the teams, and inside a
// block chunk in thread chunks over the team's threads. A chunk of 0 is the
// default: a block chunk of as many iterations as the team has threads and
// a thread chunk of 1, as on a GPU. `one_iteration_per_thread` is the
// compiler's promise that each thread has at most one chunk; the nest below
// gives the same iterations without relying on it.
//
//===----------------------------------------------------------------------===//
#include "../libomp/Libomp.h"
#include "KernelLaunchState.h"

#include <algorithm>
#include <type_traits>

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

namespace ompsim::device {
namespace {

/// Where the calling thread stands in the loop's distribution.
struct LoopPlace {
  uint64_t NumBlocks, BlockId, NumThreads, ThreadId;
};

/// Runs the calling thread's iterations of [0, NumIters). Block chunk B of
/// team T covers [(T + k*NumBlocks)*B, ... + B); inside it, thread t takes
/// thread chunks t, t + NumThreads, ... (arithmetic in 128 bits: no bound
/// of a 64-bit space wraps).
template <typename T>
void runIterations(void (*Body)(T, void *), void *Arg, uint64_t NumIters, uint64_t BlockChunk,
                   uint64_t ThreadChunk, const LoopPlace &P) {
  using Wide = unsigned __int128;
  if (P.ThreadId >= P.NumThreads || P.BlockId >= P.NumBlocks)
    return;
  Wide BlockStride = Wide(P.NumBlocks) * BlockChunk;
  Wide ThreadStride = Wide(P.NumThreads) * ThreadChunk;
  for (Wide Block = Wide(P.BlockId) * BlockChunk; Block < NumIters; Block += BlockStride) {
    Wide BlockEnd = std::min<Wide>(Block + BlockChunk, NumIters);
    for (Wide Chunk = Block + Wide(P.ThreadId) * ThreadChunk; Chunk < BlockEnd; Chunk += ThreadStride) {
      Wide ChunkEnd = std::min<Wide>(Chunk + ThreadChunk, BlockEnd);
      for (Wide I = Chunk; I < ChunkEnd; ++I)
        Body(T(uint64_t(I)), Arg);
    }
  }
}

/// A non-negative count from a signed or unsigned argument (a negative one
/// is an empty loop).
template <typename T> uint64_t count(T V) {
  if constexpr (std::is_signed_v<T>)
    return V < 0 ? 0 : uint64_t(V);
  else
    return uint64_t(V);
}

uint64_t threadNum() { return uint64_t(std::max(Libomp::get().GetThreadNum(), 0)); }

template <typename T>
void forLoop(void (*Body)(T, void *), void *Arg, T NumIters, T NumThreads, T ThreadChunk) {
  uint64_t Threads = std::max<uint64_t>(count(NumThreads), 1);
  uint64_t Iters = count(NumIters);
  uint64_t Chunk = count(ThreadChunk) ? count(ThreadChunk) : 1;
  // One block holding the whole space: only the team's threads share it.
  runIterations<T>(Body, Arg, Iters, std::max<uint64_t>(Iters, 1), Chunk, {1, 0, Threads, threadNum()});
}

template <typename T> void distributeLoop(void (*Body)(T, void *), void *Arg, T NumIters, T BlockChunk) {
  const ThreadPlace &Team = currentPlace();
  uint64_t Chunk = count(BlockChunk) ? count(BlockChunk) : 1;
  runIterations<T>(Body, Arg, count(NumIters), Chunk, Chunk, {Team.NumTeams, Team.TeamNum, 1, 0});
}

template <typename T>
void distributeForLoop(void (*Body)(T, void *), void *Arg, T NumIters, T NumThreads, T BlockChunk,
                       T ThreadChunk) {
  const ThreadPlace &Team = currentPlace();
  uint64_t Threads = std::max<uint64_t>(count(NumThreads), 1);
  uint64_t Block = count(BlockChunk) ? count(BlockChunk) : Threads;
  uint64_t Chunk = count(ThreadChunk) ? count(ThreadChunk) : 1;
  runIterations<T>(Body, Arg, count(NumIters), Block, Chunk,
                   {Team.NumTeams, Team.TeamNum, Threads, threadNum()});
}

} // namespace
} // namespace ompsim::device

using namespace ompsim::device;

#define OMPSIM_STATIC_LOOPS(SUFFIX, T)                                                                       \
  OMPSIM_DEVICE_API void __kmpc_for_static_loop##SUFFIX(Ident *, void (*Body)(T, void *), void *Arg,         \
                                                        T NumIters, T NumThreads, T ThreadChunk, uint8_t) {  \
    forLoop<T>(Body, Arg, NumIters, NumThreads, ThreadChunk);                                                \
  }                                                                                                          \
  OMPSIM_DEVICE_API void __kmpc_distribute_static_loop##SUFFIX(Ident *, void (*Body)(T, void *), void *Arg,  \
                                                               T NumIters, T BlockChunk, uint8_t) {          \
    distributeLoop<T>(Body, Arg, NumIters, BlockChunk);                                                      \
  }                                                                                                          \
  OMPSIM_DEVICE_API void __kmpc_distribute_for_static_loop##SUFFIX(Ident *, void (*Body)(T, void *),         \
                                                                   void *Arg, T NumIters, T NumThreads,      \
                                                                   T BlockChunk, T ThreadChunk, uint8_t) {   \
    distributeForLoop<T>(Body, Arg, NumIters, NumThreads, BlockChunk, ThreadChunk);                          \
  }

OMPSIM_STATIC_LOOPS(_4, int32_t)
OMPSIM_STATIC_LOOPS(_4u, uint32_t)
OMPSIM_STATIC_LOOPS(_8, int64_t)
OMPSIM_STATIC_LOOPS(_8u, uint64_t)

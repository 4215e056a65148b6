//===- BarrierReport.h - where a block's threads wait -----------*- C++ -*-===//
//
// The line that ends a launch whose block cannot go on as a GPU would: its
// threads wait at different program barriers (a GPU hangs, or lets the
// threads past each other's barriers), or a barrier can never complete.
// It groups the block's threads by where they are, names each program
// barrier by its construct's source location (an OpenMP ident's, with -g)
// or its call's address, and gives the threads of each group as ranges.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_VGPU_BARRIERREPORT_H
#define OMPSIM_DEVICE_VGPU_BARRIERREPORT_H

#include "BarrierSite.h"
#include "BlockRunner.h"

#include <cstddef>
#include <cstdint>

namespace ompsim::vgpu {

/// Whether two program barriers are one: the same call, or constructs of
/// the same source location (a construct the compiler copied).
bool sameBarrier(const BarrierSite &A, const BarrierSite &B);

class BarrierReport {
public:
  using WaitTy = decltype(Fiber::Wait);

  BarrierReport(const Fiber *Fibers, uint32_t Threads) : Fibers(Fibers), Threads(Threads) {}

  /// Thread `T`, which arrived last and has not marked its wait, waits at
  /// `Wait` (unless it has finished).
  void treatAsWaiting(uint32_t T, WaitTy Wait);

  /// "threads 0-15 wait at the barrier at f.c:13:1 (a barrier of 64
  /// threads); threads 16-63 at ...; threads 65-95 have finished".
  /// `GroupCount`: the count of the counted barrier.
  const char *whereThreadsAre(uint32_t GroupCount);

private:
  static constexpr uint32_t kMaxGroups = 8;
  static constexpr uint32_t kMaxRanges = 4;

  /// Threads that are in one place: the same wait at the same barrier.
  struct Group {
    enum : uint8_t { Finished, Spinning, AtBlock, AtWarp, AtGroup } Where;
    const BarrierSite *Site;
    uint32_t Threads;
    uint32_t Ranges[kMaxRanges][2];
    uint32_t RangeCount;
    uint32_t Unlisted; ///< threads past the ranges kept
  };

  void add(uint32_t T);
  void append(const char *Format, ...) __attribute__((format(printf, 2, 3)));
  void appendThreads(const Group &G);
  void appendSite(const BarrierSite *Site);

  const Fiber *Fibers;
  uint32_t Threads;
  uint32_t Override = UINT32_MAX;
  WaitTy OverrideWait{};
  Group Groups[kMaxGroups];
  uint32_t GroupsUsed = 0;
  uint32_t Elsewhere = 0; ///< threads in places past kMaxGroups
  char Text[3072];
  size_t Used = 0;
};

} // namespace ompsim::vgpu

#endif // OMPSIM_DEVICE_VGPU_BARRIERREPORT_H

//===- Block.cpp - what a running block's threads ask of it ---------------===//
#include "Block.h"

#include "BlockRunner.h"

#include <time.h>

namespace ompsim::vgpu {

uint64_t nanoseconds() {
  timespec Now;
  clock_gettime(CLOCK_MONOTONIC, &Now);
  return uint64_t(Now.tv_sec) * 1000000000u + uint64_t(Now.tv_nsec);
}

bool current(ThreadView &View) {
  const BlockRunner *R = BlockRunner::TRunner;
  if (!R)
    return false;
  R->view(View);
  return true;
}

const LaneRegisters &runnerRegisters() {
  // Code outside a block: thread 0 of a block of one, warps of 32.
  static const LaneRegisters Outside = {{0, 0, 0}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 0, 32, 0, nullptr};
  const BlockRunner *R = BlockRunner::TRunner;
  return R ? R->registers() : Outside;
}

uint32_t linearBlock() {
  const BlockRunner *R = BlockRunner::TRunner;
  return R ? R->blockNum() : 0;
}

uint32_t linearThread() {
  const BlockRunner *R = BlockRunner::TRunner;
  return R ? R->current() : 0;
}

void syncBlock(const BarrierSite *Site) {
  if (BlockRunner *R = BlockRunner::TRunner)
    R->syncBlock(Site);
}

uint64_t warpActiveMask() {
  const BlockRunner *R = BlockRunner::TRunner;
  return R ? R->activeMask() : 1;
}

void syncWarp(uint64_t Mask) {
  if (BlockRunner *R = BlockRunner::TRunner)
    R->syncWarp(Mask);
}

uint64_t warpShuffle(uint64_t Mask, uint64_t Value, uint32_t SourceLane, const void *Program) {
  BlockRunner *R = BlockRunner::TRunner;
  return R ? R->shuffle(Mask, Value, SourceLane, Program) : Value;
}

uint64_t warpBallot(uint64_t Mask, bool Predicate, const void *Program) {
  BlockRunner *R = BlockRunner::TRunner;
  return R ? R->ballot(Mask, Predicate, Program) : uint64_t(Predicate);
}

void pause() {
  if (BlockRunner *R = BlockRunner::TRunner)
    R->pause();
}

void syncThreads(uint32_t Count, const BarrierSite *Site) {
  if (BlockRunner *R = BlockRunner::TRunner)
    R->syncThreads(Count, Site);
}

void runAsLoops() {
  if (BlockRunner *R = BlockRunner::TRunner)
    R->runAsLoops();
}

bool blockRunsAsLoops() {
  const BlockRunner *R = BlockRunner::TRunner;
  return R && R->runsAsLoops();
}

void runAsThread(uint32_t T) {
  if (BlockRunner *R = BlockRunner::TRunner)
    R->runAsThread(T);
}

void forEachThread(uint32_t Count, void (*Fn)(void *, uint32_t), void *Context) {
  if (BlockRunner *R = BlockRunner::TRunner) {
    R->forEachThread(Count, Fn, Context);
    return;
  }
  // Outside a block: a block of one.
  if (Count)
    Fn(Context, 0);
}

void runInRounds(void *(*Start)(void *), void *Context, const BarrierSite *const *Site) {
  if (BlockRunner *R = BlockRunner::TRunner) {
    R->runInRounds(Start, Context, Site);
    return;
  }
  failLaunch("a kernel split at its block barriers runs outside a block; threads", 0);
}

void forEachThreadInRounds(uint32_t Count, void *(*Start)(void *, uint32_t, const BarrierSite **),
                           void *Context, const RoundEnd &End) {
  if (BlockRunner *R = BlockRunner::TRunner) {
    R->forEachThreadInRounds(Count, Start, Context, End);
    return;
  }
  failLaunch("a parallel region split at its barriers runs outside a block; threads", Count);
}

void *roundFrame(uint64_t Bytes, uint64_t Align) {
  if (BlockRunner *R = BlockRunner::TRunner)
    return R->roundFrame(Bytes, Align);
  failLaunch("a coroutine frame outside a block, bytes", Bytes);
}

void *blockState(uint64_t Bytes) {
  BlockRunner *R = BlockRunner::TRunner;
  return R ? R->state(Bytes) : nullptr;
}

uint64_t *exchangeSlots() {
  const BlockRunner *R = BlockRunner::TRunner;
  return R ? R->slots() : nullptr;
}

void *blockShared(uint64_t Bytes) {
  BlockRunner *R = BlockRunner::TRunner;
  return R ? R->shared(Bytes) : nullptr;
}

void *blockSharedPages(uint64_t Bytes, bool &Fresh) {
  BlockRunner *R = BlockRunner::TRunner;
  return R ? R->sharedPages(Bytes, Fresh) : nullptr;
}

void *blockDynamicShared(bool &InBlock) {
  BlockRunner *R = BlockRunner::TRunner;
  InBlock = R != nullptr;
  return R ? R->dynamicShared() : nullptr;
}

} // namespace ompsim::vgpu

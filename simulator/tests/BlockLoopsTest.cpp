// Which kernels' blocks run as loops (simulator/src/gpu/BlockLoops.h), on
// hand-written retargeted kernels: openmp-opt's guard of a Generic-SPMD
// kernel's sequential code, behind which the team's thread 0 alone runs.
#include "gpu/BlockLoops.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace llvm;
using namespace ompsim::sim::gpu;

namespace {

/// A Generic-SPMD kernel `@k` (execution mode 3) whose sequential code is
/// `Body` (its blocks after `%tid`, the thread's id, ending at `exit`), with
/// `%out` (a kernel argument), `%args` (the region's shared variables),
/// `%mine` (a variable of the kernel's own) and `@slot` (memory the threads
/// share) at hand, and `@region`, a parallel region that only reads its one
/// shared variable.
std::string kernel(const std::string &Body) {
  return R"(
target triple = "x86_64-pc-linux-gnu"
@k_kernel_environment = constant { { i8, i8, i8 }, ptr, ptr } { { i8, i8, i8 } { i8 0, i8 0, i8 3 }, ptr null, ptr null }
@slot = global ptr null
declare i32 @__kmpc_target_init(ptr, ptr)
declare void @__kmpc_target_deinit()
declare i32 @__kmpc_get_hardware_thread_id_in_block()
declare void @__kmpc_barrier_simple_spmd(ptr, i32)
declare void @__kmpc_parallel_60(ptr, i32, i32, i32, i32, ptr, ptr, ptr, i64, i32)
define internal void @region(ptr %gtid, ptr %btid, ptr readonly captures(none) %p) {
  %v = load ptr, ptr %p
  ret void
}
define void @k(ptr %env, ptr %out) "kernel" {
entry:
  %args = alloca [1 x ptr]
  %mine = alloca ptr
  %init = call i32 @__kmpc_target_init(ptr @k_kernel_environment, ptr %env)
  %go = icmp eq i32 %init, -1
  br i1 %go, label %body, label %exit
body:
  %tid = call i32 @__kmpc_get_hardware_thread_id_in_block()
)" + Body +
         R"(
exit:
  ret void
}
)";
}

/// The region's call and the kernel's end, from block `after`.
constexpr const char *RegionAndEnd = R"(
  call void @__kmpc_parallel_60(ptr null, i32 0, i32 1, i32 -1, i32 -1, ptr @region, ptr null, ptr %args, i64 1, i32 0)
  call void @__kmpc_target_deinit()
  br label %exit
)";

/// The kernel's body `if (Condition) { Guarded } After`, then the region's
/// call and the kernel's end.
std::string guarded(const std::string &Condition, const std::string &Guarded, const std::string &After) {
  return kernel("  %cond = " + Condition + "\n  br i1 %cond, label %guarded, label %after\nguarded:\n" +
                Guarded + "\n  br label %after\nafter:\n" + After + RegionAndEnd);
}

class BlockLoops : public ::testing::Test {
protected:
  LLVMContext Ctx;

  KernelBlockPlan plan(const std::string &Ir) {
    SMDiagnostic Diag;
    std::unique_ptr<Module> M = parseAssemblyString(Ir, Diag, Ctx);
    EXPECT_TRUE(M) << Diag.getMessage().str();
    if (!M)
      return {};
    std::vector<KernelBlockPlan> Plans = planBlockLoops(*M, /*Enabled=*/true);
    EXPECT_EQ(Plans.size(), 1u);
    return Plans.empty() ? KernelBlockPlan{} : Plans.front();
  }
};

TEST_F(BlockLoops, ThreadZerosGuardedStoresWhereThreadsShareRunAsLoops) {
  // openmp-opt's form: thread 0 stores the kernel's argument where the
  // threads share it, they meet at the barrier, and the region reads it.
  KernelBlockPlan P = plan(guarded("icmp eq i32 %tid, 0", "  store ptr %out, ptr @slot",
                                   "  call void @__kmpc_barrier_simple_spmd(ptr null, i32 %tid)\n"
                                   "  store ptr @slot, ptr %args"));
  EXPECT_EQ(P.Mode, BlockMode::Loops) << P.Reason;
}

TEST_F(BlockLoops, AKernelThatThreadZeroAloneRunsRunsAsLoops) {
  // openmp-opt's form of a `target` region without a parallel one: thread
  // 0 alone, where the kernel's start let it run, runs it and ends it.
  KernelBlockPlan P = plan(kernel(R"(
  %is0 = icmp eq i32 %tid, 0
  %both = select i1 %is0, i1 %go, i1 false
  br i1 %both, label %guarded, label %exit
guarded:
  store ptr %out, ptr @slot
  call void @__kmpc_target_deinit()
  br label %exit
)"));
  EXPECT_EQ(P.Mode, BlockMode::Loops) << P.Reason;
}

TEST_F(BlockLoops, WhatThreadZerosGuardedCodeLeavesOnItsStackIsNoRegionsToShare) {
  // Thread 0's copy of %mine holds the argument, the other threads' none:
  // a region handed thread 0's copy would give each thread that.
  KernelBlockPlan P = plan(guarded("icmp eq i32 %tid, 0", "  store ptr %out, ptr %mine",
                                   "  call void @__kmpc_barrier_simple_spmd(ptr null, i32 %tid)\n"
                                   "  store ptr %mine, ptr %args"));
  EXPECT_EQ(P.Mode, BlockMode::Fibers);
  EXPECT_NE(P.Reason.find("is passed the address of a variable of the kernel's own"), std::string::npos)
      << P.Reason;
}

TEST_F(BlockLoops, AValueThatTellsThreadZeroFromTheOthersIsTheThreadsId) {
  // A phi after the guard holds 1 on thread 0 alone: a branch on it is one
  // on the thread's id.
  KernelBlockPlan P = plan(guarded("icmp eq i32 %tid, 0", "", R"(
  %was0 = phi i1 [ true, %guarded ], [ false, %body ]
  br i1 %was0, label %store, label %done
store:
  store ptr %out, ptr %mine
  br label %done
done:
  store ptr @slot, ptr %args)"));
  EXPECT_EQ(P.Mode, BlockMode::Fibers);
  EXPECT_NE(P.Reason.find("a branch on the thread's id outside parallel regions"), std::string::npos)
      << P.Reason;
}

TEST_F(BlockLoops, ARegionThatThreadZeroAloneStartsKeepsFibers) {
  KernelBlockPlan P = plan(kernel(R"(
  store ptr @slot, ptr %args
  %is0 = icmp eq i32 %tid, 0
  br i1 %is0, label %guarded, label %after
guarded:
  call void @__kmpc_parallel_60(ptr null, i32 0, i32 1, i32 -1, i32 -1, ptr @region, ptr null, ptr %args, i64 1, i32 0)
  br label %after
after:
  call void @__kmpc_target_deinit()
  br label %exit
)"));
  EXPECT_EQ(P.Mode, BlockMode::Fibers);
  EXPECT_NE(P.Reason.find("a parallel region the team's thread 0 alone starts"), std::string::npos)
      << P.Reason;
}

TEST_F(BlockLoops, AnotherThreadsGuardIsABranchOnTheThreadsId) {
  KernelBlockPlan P =
      plan(guarded("icmp eq i32 %tid, 1", "  store ptr %out, ptr @slot", "  store ptr @slot, ptr %args"));
  EXPECT_EQ(P.Mode, BlockMode::Fibers);
  EXPECT_NE(P.Reason.find("a branch on the thread's id outside parallel regions"), std::string::npos)
      << P.Reason;
}

} // namespace

// Retargeting GPU device modules for the host's CPU (simulator/src/gpu/):
// what is rewritten, and the one line an image that cannot run gets.
#include "gpu/GpuImageRetarget.h"
#include "gpu/TeamSharedGuards.h"
#include "gpu/TeamSharedReach.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

using namespace llvm;
using namespace ompsim::sim::gpu;

namespace {

constexpr const char *HostTriple = "x86_64-pc-linux-gnu";
constexpr const char *HostLayout =
    "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128";

class Retarget : public ::testing::Test {
protected:
  LLVMContext Ctx;

  std::unique_ptr<Module> parse(const char *Ir) {
    SMDiagnostic Diag;
    auto M = parseAssemblyString(Ir, Diag, Ctx);
    EXPECT_TRUE(M) << Diag.getMessage().str();
    return M;
  }
  Expected<RetargetedImage> run(Module &M) {
    return retargetGpuModule(M, HostTriple, DataLayout(HostLayout), "#1", /*LinkedRuntime=*/false);
  }
};

TEST_F(Retarget, NamesTheGpusByTheirTriples) {
  EXPECT_EQ(gpuArchOf("nvptx64-nvidia-cuda"), GpuArch::Nvptx);
  EXPECT_EQ(gpuArchOf("amdgcn-amd-amdhsa"), GpuArch::Amdgcn);
  EXPECT_EQ(gpuArchOf("x86_64-pc-linux-gnu"), GpuArch::None);
}

TEST_F(Retarget, AKernelBecomesAHostFunction) {
  auto M = parse(R"(
target triple = "nvptx64-nvidia-cuda"
declare i32 @vprintf(ptr, ptr)
declare double @__nv_sin(double)
declare i32 @omp_get_device_num()
define ptx_kernel void @k(ptr %p) #0 {
  %x = call double @__nv_sin(double 1.0)
  %d = call i32 @omp_get_device_num()
  %r = call i32 @vprintf(ptr %p, ptr null)
  ret void
}
attributes #0 = { alwaysinline "kernel" "target-cpu"="sm_90" "target-features"="+ptx88" "nvvm.maxntid"="128" }
)");
  auto R = run(*M);
  ASSERT_TRUE(bool(R)) << toString(R.takeError());
  EXPECT_EQ(R->Arch, GpuArch::Nvptx);
  EXPECT_EQ(R->TeamSharedBytes, 0u);
  EXPECT_EQ(M->getTargetTriple().str(), HostTriple);
  Function *K = M->getFunction("k");
  EXPECT_EQ(K->getCallingConv(), CallingConv::C);
  EXPECT_FALSE(K->hasFnAttribute("target-cpu"));
  EXPECT_FALSE(K->hasFnAttribute("nvvm.maxntid"));
  EXPECT_FALSE(K->hasFnAttribute(Attribute::AlwaysInline));
  // libdevice's sin is libm's; nvptx's printf is the device runtime's.
  EXPECT_NE(M->getFunction("sin"), nullptr);
  EXPECT_EQ(M->getFunction("__nv_sin"), nullptr);
  EXPECT_NE(M->getFunction("__ompsim_gpu_vprintf"), nullptr);
  EXPECT_EQ(M->getFunction("vprintf"), nullptr);
  // The device's number is the device runtime's answer, not libomp's.
  EXPECT_NE(M->getFunction("__ompsim_device_current_device"), nullptr);
  EXPECT_EQ(M->getFunction("omp_get_device_num"), nullptr);
}

TEST_F(Retarget, TeamSharedGlobalsLiveAtOffsetsOfTheTeamsBlock) {
  auto M = parse(R"(
target triple = "amdgcn-amd-amdhsa"
@a = internal addrspace(3) global i32 poison, align 4
@b = internal addrspace(3) global [3 x double] zeroinitializer, align 8
@llvm.compiler.used = appending global [1 x ptr] [ptr addrspacecast (ptr addrspace(3) @a to ptr)], section "llvm.metadata"
define amdgpu_kernel void @k() {
  %s = alloca i32, align 4, addrspace(5)
  call void @llvm.lifetime.start.p5(ptr addrspace(5) %s)
  store i32 1, ptr addrspace(3) @a
  %p = getelementptr [3 x double], ptr addrspace(3) @b, i32 0, i32 2
  store double 2.0, ptr addrspace(3) %p
  store i32 3, ptr addrspace(5) %s
  call void @llvm.lifetime.end.p5(ptr addrspace(5) %s)
  ret void
}
)");
  auto R = run(*M);
  ASSERT_TRUE(bool(R)) << toString(R.takeError());
  // a at 0 (4 bytes), b at 8 (24 bytes): 32 bytes, a multiple of 16.
  EXPECT_EQ(R->TeamSharedBytes, 32u);
  EXPECT_EQ(M->getGlobalVariable("a", true), nullptr);
  EXPECT_EQ(M->getGlobalVariable("b", true), nullptr);
  Function *K = M->getFunction("k");
  const auto &Entry = cast<CallInst>(K->getEntryBlock().front());
  EXPECT_EQ(Entry.getCalledFunction()->getName(), TeamSharedEntry);
  EXPECT_EQ(cast<ConstantInt>(Entry.getArgOperand(0))->getZExtValue(), 32u);
  for (Instruction &I : K->getEntryBlock()) {
    if (auto *A = dyn_cast<AllocaInst>(&I))
      EXPECT_EQ(A->getAddressSpace(), 0u);
    EXPECT_FALSE(isa<IntrinsicInst>(&I) && cast<IntrinsicInst>(&I)->isLifetimeStartOrEnd());
  }
}

TEST_F(Retarget, UnderTheCheckerEachTeamSharedGlobalEndsAtAGuardPage) {
  auto M = parse(R"(
target triple = "amdgcn-amd-amdhsa"
@a = internal addrspace(3) global i32 poison, align 4
@b = internal addrspace(3) global [3 x double] zeroinitializer, align 8
define amdgpu_kernel void @k() {
  store i32 1, ptr addrspace(3) @a
  %p = getelementptr [3 x double], ptr addrspace(3) @b, i32 0, i32 2
  store double 2.0, ptr addrspace(3) %p
  ret void
}
)");
  auto R = retargetGpuModule(*M, HostTriple, DataLayout(HostLayout), "#1", /*LinkedRuntime=*/true,
                             /*GuardTeamShared=*/true);
  ASSERT_TRUE(bool(R)) << toString(R.takeError());
  // a's page, its guard, b's page, its guard.
  EXPECT_EQ(R->TeamSharedBytes, 4 * GuardPageBytes);
  Function *K = M->getFunction("k");
  const auto &Entry = cast<CallInst>(K->getEntryBlock().front());
  EXPECT_EQ(Entry.getCalledFunction()->getName(), GuardedTeamSharedEntry);
  EXPECT_EQ(cast<ConstantInt>(Entry.getArgOperand(0))->getZExtValue(), 4 * GuardPageBytes);
  EXPECT_EQ(cast<ConstantInt>(Entry.getArgOperand(2))->getZExtValue(), 2u);
  // The table: each global's offset (its end at a page boundary), bytes, element bytes, name.
  auto *Table = cast<ConstantArray>(cast<GlobalVariable>(Entry.getArgOperand(1))->getInitializer());
  auto Field = [&](unsigned Var, unsigned F) {
    return cast<ConstantInt>(Table->getOperand(Var)->getOperand(F))->getZExtValue();
  };
  EXPECT_EQ(Field(0, 0), GuardPageBytes - 4);
  EXPECT_EQ(Field(0, 1), 4u);
  EXPECT_EQ(Field(1, 0), 3 * GuardPageBytes - 24);
  EXPECT_EQ(Field(1, 1), 24u);
  EXPECT_EQ(Field(1, 2), 8u);
  auto *Name = cast<GlobalVariable>(Table->getOperand(1)->getOperand(3));
  EXPECT_EQ(cast<ConstantDataArray>(Name->getInitializer())->getAsCString(), "b");
  // Each global's uses are at its offset.
  StoreInst *Store = nullptr;
  for (Instruction &I : K->getEntryBlock())
    if (!Store)
      Store = dyn_cast<StoreInst>(&I);
  ASSERT_NE(Store, nullptr);
  auto *Gep = dyn_cast<GetElementPtrInst>(Store->getPointerOperand()->stripPointerCasts());
  ASSERT_NE(Gep, nullptr);
  EXPECT_EQ(cast<ConstantInt>(Gep->getOperand(1))->getZExtValue(), GuardPageBytes - 4);
}

TEST_F(Retarget, AGpuIntrinsicIsRefusedNamingItAndTheFunction) {
  auto M = parse(R"(
target triple = "nvptx64-nvidia-cuda"
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
define void @f() {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  ret void
}
)");
  auto R = run(*M);
  ASSERT_FALSE(bool(R));
  EXPECT_EQ(toString(R.takeError()),
            "image #1 (nvptx64): function 'f' calls llvm.nvvm.read.ptx.sreg.tid.x, a GPU "
            "intrinsic the simulated device does not run");
}

TEST_F(Retarget, InlineGpuAssemblyIsRefused) {
  auto M = parse(R"(
target triple = "nvptx64-nvidia-cuda"
define void @g() {
  call void asm sideeffect "exit;", ""()
  ret void
}
)");
  auto R = run(*M);
  ASSERT_FALSE(bool(R));
  EXPECT_EQ(
      toString(R.takeError()),
      "image #1 (nvptx64): function 'g' has GPU inline assembly, which the simulated device does not run");
}

TEST_F(Retarget, AnInitializedTeamSharedGlobalIsRefused) {
  auto M = parse(R"(
target triple = "amdgcn-amd-amdhsa"
@s = addrspace(3) global i32 7
define void @f() {
  store i32 1, ptr addrspace(3) @s
  ret void
}
)");
  auto R = run(*M);
  ASSERT_FALSE(bool(R));
  EXPECT_EQ(toString(R.takeError()),
            "image #1 (amdgcn): team-shared global 's' has an initializer other than zero, "
            "which a GPU's shared memory cannot have");
}

TEST_F(Retarget, AGlobalHoldingATeamSharedAddressIsRefused) {
  auto M = parse(R"(
target triple = "amdgcn-amd-amdhsa"
@s = addrspace(3) global i32 poison
@table = addrspace(1) constant [1 x i32] [i32 ptrtoint (ptr addrspace(3) @s to i32)]
define void @f() {
  store i32 1, ptr addrspace(3) @s
  ret void
}
)");
  auto R = run(*M);
  ASSERT_FALSE(bool(R));
  EXPECT_EQ(toString(R.takeError()),
            "image #1 (amdgcn): global 'table' holds the address of team-shared 's', which "
            "differs from team to team");
}

TEST_F(Retarget, AKernelWithMoreTeamSharedMemoryThanABlockHasIsRefused) {
  auto M = parse(R"(
target triple = "nvptx64-nvidia-cuda"
@big = internal addrspace(3) global [49153 x i8] poison
define ptx_kernel void @k() {
  store i8 1, ptr addrspace(3) @big
  ret void
}
)");
  auto R = run(*M);
  ASSERT_FALSE(bool(R));
  EXPECT_EQ(toString(R.takeError()),
            "image #1 (nvptx64): kernel 'k' needs 49153 bytes of team-shared globals a "
            "team (its own and its callees'); nvptx64 gives a block at most 49152");
}

// Four kernels of 20000 bytes each: 80000 in the image, more than either GPU
// gives a block, but no kernel over the limit; each reaches its global in
// another way (its own use, a callee's, a parallel region's whose address it
// hands the runtime, a table of functions it calls through).
constexpr const char *FourKernels = R"(
@a = internal addrspace(3) global [20000 x i8] poison, align 16
@b = internal addrspace(3) global [20000 x i8] poison, align 16
@c = internal addrspace(3) global [20000 x i8] poison, align 16
@d = internal addrspace(3) global [20000 x i8] poison, align 16
@table = internal constant [1 x ptr] [ptr @usesD]
declare void @__kmpc_parallel_60(ptr, ptr)
define KERNEL void @k1() {
  store i8 1, ptr addrspace(3) @a
  ret void
}
define internal void @usesB() {
  %p = getelementptr i8, ptr addrspace(3) @b, i64 5
  store i8 2, ptr addrspace(3) %p
  ret void
}
define internal void @calls() {
  call void @usesB()
  ret void
}
define KERNEL void @k2() {
  call void @calls()
  ret void
}
define internal void @region(ptr %x) {
  store i8 3, ptr addrspace(3) @c
  ret void
}
define KERNEL void @k3() {
  call void @__kmpc_parallel_60(ptr @region, ptr null)
  ret void
}
define internal void @usesD() {
  store i8 4, ptr addrspace(3) @d
  ret void
}
define KERNEL void @k4() {
  %f = load ptr, ptr @table
  call void %f()
  ret void
}
)";

TEST_F(Retarget, TheSharedMemoryLimitHoldsKernelByKernel) {
  for (auto [Triple, Kernel] :
       {std::pair{"nvptx64-nvidia-cuda", "ptx_kernel"}, {"amdgcn-amd-amdhsa", "amdgpu_kernel"}}) {
    std::string Ir = "target triple = \"" + std::string(Triple) + "\"\n" + FourKernels;
    for (size_t At = Ir.find("KERNEL"); At != std::string::npos; At = Ir.find("KERNEL"))
      Ir.replace(At, 6, Kernel);
    auto M = parse(Ir.c_str());
    ASSERT_TRUE(M);
    std::vector<std::pair<std::string, uint64_t>> Reach;
    for (const KernelTeamShared &K : teamSharedPerKernel(*M, DataLayout(HostLayout)))
      Reach.emplace_back(K.Kernel->getName().str(), K.Bytes);
    // k4 calls through a pointer: it may reach any function whose address is
    // taken (@region, @usesD).
    EXPECT_EQ(Reach, (std::vector<std::pair<std::string, uint64_t>>{
                         {"k1", 20000}, {"k2", 20000}, {"k3", 20000}, {"k4", 40000}}))
        << Triple;
    auto R = run(*M);
    ASSERT_TRUE(bool(R)) << toString(R.takeError());
    // Every team still gets one block holding them all.
    EXPECT_EQ(R->TeamSharedBytes, 80000u);
  }
}

TEST_F(Retarget, AKernelOverTheLimitThroughItsCalleesIsNamed) {
  auto M = parse(R"(
target triple = "amdgcn-amd-amdhsa"
@small = internal addrspace(3) global [1000 x i8] poison, align 16
@tile = internal addrspace(3) global [40000 x i8] poison, align 16
@more = internal addrspace(3) global [30000 x i8] poison, align 16
define internal void @leaf() {
  store i8 1, ptr addrspace(3) @more
  ret void
}
define internal void @middle() {
  call void @leaf()
  ret void
}
define amdgpu_kernel void @fine() {
  store i8 1, ptr addrspace(3) @small
  store i8 1, ptr addrspace(3) @tile
  ret void
}
define amdgpu_kernel void @over() {
  store i8 1, ptr addrspace(3) @tile
  call void @middle()
  ret void
}
)");
  auto R = run(*M);
  ASSERT_FALSE(bool(R));
  EXPECT_EQ(toString(R.takeError()),
            "image #1 (amdgcn): kernel 'over' needs 70000 bytes of team-shared globals "
            "a team (its own and its callees'); amdgcn gives a block at most 65536");
}

TEST_F(Retarget, AHostModuleIsNotRetargeted) {
  auto M = parse(R"(
target triple = "x86_64-pc-linux-gnu"
define void @f() { ret void }
)");
  auto R = run(*M);
  ASSERT_FALSE(bool(R));
  EXPECT_EQ(toString(R.takeError()),
            "image #1 (not a GPU): the module's triple x86_64-pc-linux-gnu is not a GPU's");
}

} // namespace

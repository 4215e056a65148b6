// The checker's instrumentation of a GPU image's memory accesses
// (simulator/src/gpu/CheckedAccesses.cpp): which accesses call the device
// runtime first, and with what.
#include "gpu/CheckedAccesses.h"

#include "ompsim/device_runtime.h"

#include "llvm/Analysis/ConstantFolding.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace llvm;
using namespace ompsim::sim::gpu;

namespace {

/// One call of the check entry: the access's bytes, kind, site, value, and
/// the instruction it precedes.
struct CheckCall {
  uint64_t Bytes;
  uint32_t Kind;
  std::string Site;
  const Value *Stored;
  std::string Before;
};

class CheckedAccesses : public ::testing::Test {
protected:
  LLVMContext Ctx;

  std::unique_ptr<Module> instrument(const char *Ir) {
    SMDiagnostic Diag;
    auto M = parseAssemblyString(Ir, Diag, Ctx);
    EXPECT_TRUE(M) << Diag.getMessage().str();
    if (!M)
      return nullptr;
    instrumentAccesses(*M);
    std::string Problems;
    raw_string_ostream OS(Problems);
    EXPECT_FALSE(verifyModule(*M, &OS)) << Problems;
    return M;
  }

  static std::vector<CheckCall> calls(Function &F) {
    std::vector<CheckCall> Out;
    for (Instruction &I : instructions(F)) {
      auto *C = dyn_cast<CallInst>(&I);
      if (!C || !C->getCalledFunction() || C->getCalledFunction()->getName() != CheckAccessEntry)
        continue;
      auto *Site = cast<GlobalVariable>(C->getArgOperand(3));
      std::string Next;
      raw_string_ostream OS(Next);
      C->getNextNode()->print(OS);
      Out.push_back({cast<ConstantInt>(C->getArgOperand(1))->getZExtValue(),
                     uint32_t(cast<ConstantInt>(C->getArgOperand(2))->getZExtValue()),
                     cast<ConstantDataArray>(Site->getInitializer())->getAsCString().str(),
                     C->getArgOperand(4), Next});
    }
    return Out;
  }
};

TEST_F(CheckedAccesses, EachAccessThroughAPointerCallsTheCheckFirstWithItsBytesKindAndLine) {
  auto M = instrument(R"(
define void @k(ptr %p, ptr %q) !dbg !4 {
  %v = load i32, ptr %p, align 4, !dbg !7
  store double 2.0, ptr %q, align 8, !dbg !8
  %old = atomicrmw add ptr %p, i32 1 monotonic, align 4, !dbg !7
  %a = load atomic i64, ptr %q acquire, align 8, !dbg !8
  ret void
}
!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3}
!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, emissionKind: FullDebug)
!1 = !DIFile(filename: "race.c", directory: "/src")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = distinct !DISubprogram(name: "k", scope: !1, file: !1, line: 1, type: !5, unit: !0, spFlags: DISPFlagDefinition)
!5 = !DISubroutineType(types: !6)
!6 = !{null}
!7 = !DILocation(line: 31, column: 14, scope: !4)
!8 = !DILocation(line: 29, column: 5, scope: !4)
)");
  ASSERT_TRUE(M);
  std::vector<CheckCall> C = calls(*M->getFunction("k"));
  ASSERT_EQ(C.size(), 4u);
  EXPECT_EQ(C[0].Bytes, 4u);
  EXPECT_EQ(C[0].Kind, uint32_t(OMPSIM_ACCESS_READ));
  EXPECT_EQ(C[0].Site, "race.c:31:14");
  EXPECT_NE(C[0].Before.find("load i32"), std::string::npos) << C[0].Before;
  // A plain store gives its value's bytes: 2.0 as a double.
  EXPECT_EQ(C[1].Bytes, 8u);
  EXPECT_EQ(C[1].Kind, uint32_t(OMPSIM_ACCESS_WRITE | OMPSIM_ACCESS_VALUE));
  EXPECT_EQ(C[1].Site, "race.c:29:5");
  auto *Bits = dyn_cast<ConstantInt>(C[1].Stored);
  ASSERT_TRUE(Bits);
  EXPECT_EQ(Bits->getZExtValue(), 0x4000000000000000u);
  EXPECT_EQ(C[2].Kind, uint32_t(OMPSIM_ACCESS_READ | OMPSIM_ACCESS_WRITE | OMPSIM_ACCESS_ATOMIC));
  EXPECT_EQ(C[3].Kind, uint32_t(OMPSIM_ACCESS_READ | OMPSIM_ACCESS_ATOMIC));
}

TEST_F(CheckedAccesses, AStoreOfAPairGivesItsBytesAndOneOfMoreThan8BytesGivesNone) {
  auto M = instrument(R"(
define void @k(ptr %p, ptr %q) {
  store <2 x i32> <i32 1, i32 2>, ptr %p, align 8
  store <4 x i32> <i32 1, i32 2, i32 3, i32 4>, ptr %q, align 16
  ret void
}
)");
  ASSERT_TRUE(M);
  std::vector<CheckCall> C = calls(*M->getFunction("k"));
  ASSERT_EQ(C.size(), 2u);
  EXPECT_EQ(C[0].Kind, uint32_t(OMPSIM_ACCESS_WRITE | OMPSIM_ACCESS_VALUE));
  // A bitcast of the constant pair, which the JIT's optimizer folds.
  auto *Pair =
      dyn_cast_or_null<ConstantInt>(ConstantFoldConstant(cast<Constant>(C[0].Stored), M->getDataLayout()));
  ASSERT_TRUE(Pair);
  EXPECT_EQ(Pair->getZExtValue(), 0x0000000200000001u);
  EXPECT_EQ(C[1].Bytes, 16u);
  EXPECT_EQ(C[1].Kind, uint32_t(OMPSIM_ACCESS_WRITE));
}

TEST_F(CheckedAccesses, TheStackAndConstantGlobalsAreNotChecked) {
  auto M = instrument(R"(
@g = global i32 0
@c = constant i32 7
define void @k(ptr %p) {
  %local = alloca [4 x i32], align 4
  %e = getelementptr i32, ptr %local, i64 2
  store i32 1, ptr %e, align 4
  %k = load i32, ptr @c, align 4
  %v = load i32, ptr %p, align 4
  store i32 2, ptr @g, align 4
  ret void
}
)");
  ASSERT_TRUE(M);
  std::vector<CheckCall> C = calls(*M->getFunction("k"));
  ASSERT_EQ(C.size(), 2u);
  EXPECT_EQ(C[0].Kind, uint32_t(OMPSIM_ACCESS_READ));
  // A global the program writes is device memory that teams share.
  EXPECT_EQ(C[1].Kind, uint32_t(OMPSIM_ACCESS_WRITE | OMPSIM_ACCESS_VALUE));
  // Without debug information the site is the function.
  EXPECT_EQ(C[0].Site, "function 'k'");
}

TEST_F(CheckedAccesses, ACopyReadsItsSourceAndWritesFromItAndAMemsetGivesItsByte) {
  auto M = instrument(R"(
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
define void @k(ptr %to, ptr %from, i64 %n) {
  call void @llvm.memcpy.p0.p0.i64(ptr %to, ptr %from, i64 16, i1 false)
  call void @llvm.memset.p0.i64(ptr %to, i8 7, i64 %n, i1 false)
  ret void
}
)");
  ASSERT_TRUE(M);
  Function &F = *M->getFunction("k");
  std::vector<CheckCall> C;
  for (Instruction &I : instructions(F))
    if (auto *Call = dyn_cast<CallInst>(&I);
        Call && Call->getCalledFunction() && Call->getCalledFunction()->getName() == CheckAccessEntry)
      C.push_back({0, uint32_t(cast<ConstantInt>(Call->getArgOperand(2))->getZExtValue()), "",
                   Call->getArgOperand(4), ""});
  ASSERT_EQ(C.size(), 3u);
  EXPECT_EQ(C[0].Kind, uint32_t(OMPSIM_ACCESS_COPY));
  EXPECT_EQ(C[1].Kind, uint32_t(OMPSIM_ACCESS_WRITE | OMPSIM_ACCESS_FROM));
  // The copy's destination gives its source's address.
  auto *Source = dyn_cast<PtrToIntInst>(C[1].Stored);
  ASSERT_TRUE(Source);
  EXPECT_EQ(Source->getOperand(0), F.getArg(1));
  EXPECT_EQ(C[2].Kind, uint32_t(OMPSIM_ACCESS_WRITE | OMPSIM_ACCESS_FILL));
  auto *Byte = dyn_cast<ConstantInt>(C[2].Stored);
  ASSERT_TRUE(Byte);
  EXPECT_EQ(Byte->getZExtValue(), 7u);
}

} // namespace

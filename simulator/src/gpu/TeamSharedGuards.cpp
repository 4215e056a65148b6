//===- TeamSharedGuards.cpp - Team-shared globals between guard pages ------===//
#include "TeamSharedGuards.h"

#include "TeamSharedReach.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Alignment.h"

#include <string>

using namespace llvm;

namespace ompsim::sim::gpu {
namespace {

/// What the line calls `G`: its source name and place with -g ("slot at
/// shared.c:12"), else its demangled symbol ("main.slot").
std::string sourceName(const GlobalVariable &G) {
  SmallVector<DIGlobalVariableExpression *, 1> Debug;
  G.getDebugInfo(Debug);
  for (DIGlobalVariableExpression *E : Debug)
    if (DIGlobalVariable *V = E->getVariable(); V && !V->getName().empty()) {
      std::string Name = V->getName().str();
      if (DIFile *File = V->getFile(); File && V->getLine())
        Name += " at " + File->getFilename().str() + ":" + std::to_string(V->getLine());
      return Name;
    }
  return demangle(G.getName().str());
}

/// The size of one element when `T` is an array (of arrays): the unit an
/// index counts; else the whole.
uint64_t elementBytes(Type *T, const DataLayout &Layout) {
  while (auto *A = dyn_cast<ArrayType>(T))
    T = A->getElementType();
  return Layout.getTypeAllocSize(T);
}

} // namespace

GuardedTeamShared placeBetweenGuards(Module &M, ArrayRef<GlobalVariable *> Shared, const DataLayout &Layout,
                                     uint64_t PageBytes) {
  LLVMContext &Ctx = M.getContext();
  Type *I64 = Type::getInt64Ty(Ctx);
  PointerType *Ptr = PointerType::get(Ctx, 0);
  // ompsim_team_shared_var (runtime/include/ompsim/device_runtime.h).
  StructType *VarType = StructType::get(Ctx, {I64, I64, I64, Ptr});
  GuardedTeamShared Out;
  std::vector<Constant *> Vars;
  uint64_t Cursor = 0;
  for (GlobalVariable *G : Shared) {
    uint64_t Size = Layout.getTypeAllocSize(G->getValueType());
    Align A = teamSharedAlign(*G, Layout);
    // Its end at a page boundary (its start aligned, down from there).
    uint64_t Pages = std::max<uint64_t>(1, divideCeil(alignTo(Size, A), PageBytes));
    uint64_t Page = std::max<uint64_t>(PageBytes, A.value());
    Cursor = alignTo(Cursor, Page);
    uint64_t End = Cursor + Pages * PageBytes;
    uint64_t Offset = alignDown(End - Size, A.value());
    Out.Offsets.push_back(Offset);
    Constant *Name = IRBuilder<>(Ctx).CreateGlobalString(sourceName(*G), "ompsim.team.shared.name", 0, &M);
    Vars.push_back(
        ConstantStruct::get(VarType, {ConstantInt::get(I64, Offset), ConstantInt::get(I64, Size),
                                      ConstantInt::get(I64, elementBytes(G->getValueType(), Layout)), Name}));
    Cursor = End + PageBytes; // the guard page
  }
  Out.Bytes = Cursor;
  Out.Count = Vars.size();
  ArrayType *TableType = ArrayType::get(VarType, Vars.size());
  // In the host's address space (amdgcn's modules put globals in 1 until
  // the retarget is done).
  Out.Vars = new GlobalVariable(M, TableType, /*isConstant=*/true, GlobalValue::PrivateLinkage,
                                ConstantArray::get(TableType, Vars), "ompsim.team.shared.vars", nullptr,
                                GlobalValue::NotThreadLocal, /*AddressSpace=*/0u);
  return Out;
}

} // namespace ompsim::sim::gpu

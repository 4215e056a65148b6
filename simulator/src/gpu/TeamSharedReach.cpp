//===- TeamSharedReach.cpp - The team-shared memory each GPU kernel reaches ===//
//
// See TeamSharedReach.h. The call graph is the module's own: the device
// runtime is not linked in yet (it keeps its team state elsewhere), so a
// call into it reaches the module again only through a function whose
// address the module handed it, which counts for the function that did.
//
//===----------------------------------------------------------------------===//
#include "TeamSharedReach.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalAlias.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/InstrTypes.h"
#include "llvm/IR/Module.h"

#include <algorithm>

namespace ompsim::sim::gpu {

using namespace llvm;

namespace {

/// The functions a function may call.
struct Callees {
  /// Those it names: its direct callees and the functions whose address it
  /// takes (through constants and the initializers of the globals it names).
  SmallPtrSet<const Function *, 8> Named;
  /// It calls through a pointer.
  bool Indirect = false;
};

Callees calleesOf(const Function &F) {
  Callees Out;
  SmallPtrSet<const Value *, 16> Seen;
  SmallVector<const Value *, 16> Work;
  for (const Instruction &I : instructions(F)) {
    if (const auto *Call = dyn_cast<CallBase>(&I);
        Call && !Call->isInlineAsm() && !isa<Function>(Call->getCalledOperand()->stripPointerCasts()))
      Out.Indirect = true;
    for (const Use &Op : I.operands())
      Work.push_back(Op.get());
  }
  while (!Work.empty()) {
    const Value *V = Work.pop_back_val();
    if (!isa<Constant>(V) || !Seen.insert(V).second)
      continue;
    if (const auto *Callee = dyn_cast<Function>(V))
      Out.Named.insert(Callee);
    else if (const auto *G = dyn_cast<GlobalVariable>(V); G && G->hasInitializer())
      Work.push_back(G->getInitializer());
    else if (const auto *A = dyn_cast<GlobalAlias>(V))
      Work.push_back(A->getAliasee());
    else if (!isa<GlobalValue>(V)) // a constant expression or aggregate
      for (const Use &Op : cast<Constant>(V)->operands())
        Work.push_back(Op.get());
  }
  return Out;
}

} // namespace

bool isGpuKernel(const Function &F) {
  CallingConv::ID CC = F.getCallingConv();
  return CC == CallingConv::PTX_Kernel || CC == CallingConv::AMDGPU_KERNEL || F.hasFnAttribute("kernel");
}

Align teamSharedAlign(const GlobalVariable &G, const DataLayout &Layout) {
  return std::max(G.getAlign().value_or(Layout.getABITypeAlign(G.getValueType())), Align(1));
}

std::vector<KernelTeamShared> teamSharedPerKernel(const Module &M, const DataLayout &Layout) {
  std::vector<const GlobalVariable *> Shared;
  for (const GlobalVariable &G : M.globals())
    if (G.getAddressSpace() == TeamSharedAddressSpace)
      Shared.push_back(&G);
  std::vector<KernelTeamShared> Out;
  if (Shared.empty()) {
    for (const Function &F : M)
      if (isGpuKernel(F))
        Out.push_back({&F, 0});
    return Out;
  }

  // Which functions use each global (through constant expressions too).
  DenseMap<const Function *, SmallVector<unsigned, 2>> UsedBy;
  BitVector UsedOutsideFunctions(Shared.size());
  for (unsigned I = 0; I < Shared.size(); ++I) {
    SmallVector<const User *, 8> Work(Shared[I]->users());
    SmallPtrSet<const User *, 8> Seen;
    while (!Work.empty()) {
      const User *U = Work.pop_back_val();
      if (!Seen.insert(U).second)
        continue;
      if (const auto *Inst = dyn_cast<Instruction>(U)) {
        UsedBy[Inst->getFunction()].push_back(I);
      } else if (const auto *G = dyn_cast<GlobalVariable>(U)) {
        // llvm.used and llvm.compiler.used only keep it; another global
        // holding its address hands it to whoever reads that.
        if (G->getSection() != "llvm.metadata")
          UsedOutsideFunctions.set(I);
      } else if (isa<Constant>(U) && !isa<GlobalValue>(U)) {
        Work.append(U->user_begin(), U->user_end());
      } else {
        UsedOutsideFunctions.set(I);
      }
    }
  }

  std::vector<const Function *> AddressTaken;
  for (const Function &F : M)
    if (F.hasAddressTaken(nullptr, /*IgnoreCallbackUses=*/false, /*IgnoreAssumeLikeCalls=*/true,
                          /*IgnoreLLVMUsed=*/true))
      AddressTaken.push_back(&F);

  DenseMap<const Function *, Callees> CalleesCache;
  auto CalleesOf = [&](const Function *F) -> const Callees & {
    auto It = CalleesCache.find(F);
    if (It == CalleesCache.end())
      It = CalleesCache.try_emplace(F, calleesOf(*F)).first;
    return It->second;
  };

  for (const Function &K : M) {
    if (!isGpuKernel(K))
      continue;
    BitVector Reached = UsedOutsideFunctions;
    SmallPtrSet<const Function *, 32> Visited;
    SmallVector<const Function *, 32> Work{&K};
    bool CallsIndirectly = false;
    while (!Work.empty()) {
      const Function *F = Work.pop_back_val();
      if (!Visited.insert(F).second)
        continue;
      if (auto It = UsedBy.find(F); It != UsedBy.end())
        for (unsigned I : It->second)
          Reached.set(I);
      const Callees &C = CalleesOf(F);
      Work.append(C.Named.begin(), C.Named.end());
      if (C.Indirect && !CallsIndirectly) {
        CallsIndirectly = true;
        Work.append(AddressTaken.begin(), AddressTaken.end());
      }
    }
    uint64_t Bytes = 0;
    for (unsigned I : Reached.set_bits())
      Bytes = alignTo(Bytes, teamSharedAlign(*Shared[I], Layout)) +
              Layout.getTypeAllocSize(Shared[I]->getValueType());
    Out.push_back({&K, Bytes});
  }
  return Out;
}

} // namespace ompsim::sim::gpu

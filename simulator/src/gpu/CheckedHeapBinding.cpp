//===- CheckedHeapBinding.cpp - A GPU image's device heap under the checker ===//
#include "CheckedHeapBinding.h"
#include "SourceSites.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

using namespace llvm;

namespace ompsim::sim::gpu {

void bindCheckedHeap(Module &M) {
  static constexpr StringRef Heap[] = {"malloc", "free", "calloc", "realloc"};
  SourceSites Sites(M);
  PointerType *Ptr = PointerType::get(M.getContext(), 0);
  for (StringRef Name : Heap) {
    Function *F = M.getFunction(Name);
    if (!F || !F->isDeclaration())
      continue;
    F->setName("__ompsim_heap_" + Name);
    // Each call names its source line: the entry that takes it has the
    // call's parameters and the line.
    SmallVector<Type *, 3> Params(F->getFunctionType()->params());
    Params.push_back(Ptr);
    FunctionCallee At =
        M.getOrInsertFunction(("__ompsim_heap_" + Name + "_at").str(),
                              FunctionType::get(F->getReturnType(), Params, /*isVarArg=*/false));
    for (User *U : make_early_inc_range(F->users())) {
      auto *Call = dyn_cast<CallInst>(U);
      if (!Call || Call->getCalledOperand() != F || Call->arg_size() + 1 != Params.size())
        continue;
      Constant *Site = Sites.lineOf(*Call);
      SmallVector<Value *, 3> Args(Call->args());
      Args.push_back(Site ? Site : ConstantPointerNull::get(Ptr));
      CallInst *New = CallInst::Create(At, Args, "", Call->getIterator());
      New->takeName(Call);
      New->setDebugLoc(Call->getDebugLoc());
      Call->replaceAllUsesWith(New);
      Call->eraseFromParent();
    }
  }
}

} // namespace ompsim::sim::gpu

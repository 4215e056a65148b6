//===- CheckedHeapBinding.cpp - A GPU image's device heap under the checker ===//
#include "CheckedHeapBinding.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"

namespace ompsim::sim::gpu {

void bindCheckedHeap(llvm::Module &M) {
  static constexpr llvm::StringRef Heap[] = {"malloc", "free", "calloc", "realloc"};
  for (llvm::StringRef Name : Heap)
    if (llvm::Function *F = M.getFunction(Name); F && F->isDeclaration())
      F->setName("__ompsim_heap_" + Name);
}

} // namespace ompsim::sim::gpu

//===- JitImageFunctions.cpp - Partitioning facts of a JIT image ---------===//
//
// The helpers over an image's ImageFunctions: rewriting address uses to the
// stubs, loading the bodies a compile needs, and the partition of a first
// call (a definition with the direct callees only it reaches).
//
//===----------------------------------------------------------------------===//

#include "JitImageFunctions.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/InstrTypes.h"

namespace ompsim::sim {

using namespace llvm;
using namespace llvm::orc;

/// Points every use of each function's address (in code and in initializers,
/// vtables and offload entries alike) at "<f>.ompsim.addr", an alias of its
/// stub, while calls keep naming the function: code compiled in the same
/// object as the function would otherwise take its compiled address, and a
/// pointer taken on the device would differ from the translated one.
/// llvm.used and llvm.compiler.used keep naming the definitions.
void rewriteAddressUses(ArrayRef<std::pair<Function *, Function *>> AddressOf) {
  auto InUsedList = [](const User *U) {
    return isa<ConstantArray>(U) && llvm::any_of(U->users(), [](const User *G) {
             const auto *Gv = dyn_cast<GlobalVariable>(G);
             return Gv && (Gv->getName() == "llvm.used" || Gv->getName() == "llvm.compiler.used");
           });
  };
  for (auto [F, Address] : AddressOf)
    F->replaceUsesWithIf(Address, [&](Use &U) {
      const auto *Call = dyn_cast<CallBase>(U.getUser());
      return !(Call && Call->isCallee(&U)) && !InUsedList(U.getUser());
    });
}

/// Loads the bodies a compile needs: those of `Partition` (all of the
/// module's when null) not loaded yet, rewriting their address uses.
Error materializeBodies(Module &M, ImageFunctions *Fns, const IRPartitionLayer::GlobalValueSet *Partition) {
  bool Loaded = false;
  if (!Partition) {
    if (M.isMaterialized())
      return Error::success();
    if (Error Err = M.materializeAll())
      return Err;
    Loaded = true;
  } else {
    for (const GlobalValue *Gv : *Partition) {
      const GlobalObject *Object = Gv->getAliaseeObject();
      if (Object && Object->isMaterializable()) {
        if (Error Err = const_cast<GlobalObject *>(Object)->materialize())
          return Err;
        Loaded = true;
      }
    }
  }
  if (Loaded && Fns)
    rewriteAddressUses(Fns->AddressOf);
  return Error::success();
}

/// The partition compiled on a first call: the requested definitions and,
/// transitively, the functions they call directly whose address is never
/// taken. Those can only be reached through these calls, so compiling them
/// now saves a round trip each; a function whose address is taken keeps
/// its stub (compiled on its own first call) so that every pointer to it,
/// in device code, vtables and the function-pointer table, stays the stub's.
IRPartitionLayer::GlobalValueSet withDirectCallees(const IRPartitionLayer::GlobalValueSet &Requested,
                                                   const ImageFunctions &Fns) {
  IRPartitionLayer::GlobalValueSet Out = Requested;
  std::vector<const Function *> Work;
  for (const GlobalValue *Gv : Requested)
    if (const auto *F = dyn_cast<Function>(Gv))
      Work.push_back(F);
  while (!Work.empty()) {
    const Function *F = Work.back();
    Work.pop_back();
    auto It = Fns.Info.find(F);
    if (It == Fns.Info.end())
      continue;
    for (const Function *Callee : It->second.Callees)
      if (!Callee->isDeclaration() && Out.insert(Callee).second)
        Work.push_back(Callee);
  }
  return Out;
}

} // namespace ompsim::sim

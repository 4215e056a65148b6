//===- SourceSites.cpp - The source lines the checker's reports name ------===//
#include "SourceSites.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Instruction.h"
#include "llvm/IR/Module.h"

using namespace llvm;

namespace ompsim::sim::gpu {

Constant *SourceSites::of(const Instruction &I) {
  if (Constant *Line = lineOf(I))
    return Line;
  return named(("function '" + I.getFunction()->getName() + "'").str());
}

Constant *SourceSites::lineOf(const Instruction &I) {
  const DILocation *Loc = I.getDebugLoc();
  if (!Loc || !Loc->getLine())
    return nullptr;
  return named((Loc->getFilename() + ":" + Twine(Loc->getLine()) + ":" + Twine(Loc->getColumn())).str());
}

Constant *SourceSites::named(const std::string &Text) {
  GlobalVariable *&G = Names[Text];
  if (!G) {
    Constant *Init = ConstantDataArray::getString(M.getContext(), Text);
    G = new GlobalVariable(M, Init->getType(), /*isConstant=*/true, GlobalValue::PrivateLinkage, Init,
                           "__ompsim_access_site");
    G->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
  }
  return G;
}

} // namespace ompsim::sim::gpu

#include "JitImageSummary.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/InstrTypes.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/JSON.h"

namespace ompsim::sim {

using namespace llvm;

std::string JitImageSummary::serialize() const {
  json::Object Fns;
  for (const auto &[Name, Info] : Functions)
    Fns[Name] = json::Array{Info.Instructions, json::Array(Info.Callees)};
  json::Value Doc = json::Object{
      {"version", 1}, {"address_taken", json::Array(AddressTaken)}, {"functions", std::move(Fns)}};
  std::string Out;
  raw_string_ostream(Out) << Doc;
  return Out;
}

std::optional<JitImageSummary> JitImageSummary::parse(StringRef Bytes) {
  auto Doc = json::parse(Bytes);
  if (!Doc) {
    consumeError(Doc.takeError());
    return std::nullopt;
  }
  const json::Object *Top = Doc->getAsObject();
  if (!Top || Top->getInteger("version") != 1)
    return std::nullopt;
  const json::Array *Taken = Top->getArray("address_taken");
  const json::Object *Fns = Top->getObject("functions");
  if (!Taken || !Fns)
    return std::nullopt;
  JitImageSummary S;
  for (const json::Value &V : *Taken) {
    auto Name = V.getAsString();
    if (!Name)
      return std::nullopt;
    S.AddressTaken.push_back(Name->str());
  }
  for (const auto &[Name, V] : *Fns) {
    const json::Array *Pair = V.getAsArray();
    if (!Pair || Pair->size() != 2)
      return std::nullopt;
    auto Count = (*Pair)[0].getAsInteger();
    const json::Array *Callees = (*Pair)[1].getAsArray();
    if (!Count || *Count < 0 || *Count > UINT32_MAX || !Callees)
      return std::nullopt;
    FunctionInfo &Info = S.Functions[Name.str()];
    Info.Instructions = uint32_t(*Count);
    for (const json::Value &C : *Callees) {
      auto Callee = C.getAsString();
      if (!Callee)
        return std::nullopt;
      Info.Callees.push_back(Callee->str());
    }
  }
  return S;
}

std::vector<Function *> JitImageSummary::addressTaken(Module &M) {
  std::vector<Function *> Out;
  for (Function &F : M)
    if (!F.isDeclaration() && F.hasAddressTaken(nullptr, /*IgnoreCallbackUses=*/false,
                                                /*IgnoreAssumeLikeCalls=*/true, /*IgnoreLLVMUsed=*/true))
      Out.push_back(&F);
  return Out;
}

std::vector<const Function *> JitImageSummary::directCallees(const Function &F) {
  std::vector<const Function *> Out;
  SmallPtrSet<const Function *, 8> Seen;
  for (const BasicBlock &Bb : F)
    for (const Instruction &I : Bb) {
      const auto *Call = dyn_cast<CallBase>(&I);
      if (!Call)
        continue;
      const auto *Callee = dyn_cast<Function>(Call->getCalledOperand()->stripPointerCasts());
      if (Callee && !Callee->isDeclaration() && !Callee->hasAddressTaken() && Seen.insert(Callee).second)
        Out.push_back(Callee);
    }
  return Out;
}

} // namespace ompsim::sim

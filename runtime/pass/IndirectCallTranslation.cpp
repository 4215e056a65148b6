// OmpsimIndirect: an LLVM 22 pass plugin that makes device code translate host
// function pointers before calling through them.
//
// clang-22 emits no translation at indirect call sites for the host-offload
// target, so a host function pointer (or a host object's vtable pointer) that
// reaches device code is called as is. This pass rewrites, in device code,
//
//   call %fp(args)           into   %t = call ptr @translate(ptr %fp)
//                                   call %t(args)
//
// and, for a virtual call, translates the vtable pointer loaded from the
// object before any slot is read from it. The runtime registers every slot of
// a host vtable used in a target region (0x20 entries, one pair per 8-byte
// slot), so a host-built, mapped object then reads the device vtable, while a
// device-built object's vtable pointer misses and is returned unchanged.
//
// Pipeline names: `ompsim-indirect`, `ompsim-indirect<kmpc>` (the default,
// calling __kmpc_target_translate_fptr) and `ompsim-indirect<llvm>` (calling
// upstream's __llvm_omp_indirect_call_lookup). Loaded with -fpass-plugin the
// pass also adds itself at the end of clang's pipelines (at every -O level)
// and then only touches modules carrying the "openmp-device" module flag.
#include "BareKernels.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Plugins/PassPlugin.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/TargetParser/Triple.h"

using namespace llvm;

namespace {

/// The design note's translate function (ompsim's device runtime).
constexpr StringLiteral KmpcTranslateName = "__kmpc_target_translate_fptr";
/// Upstream's translate function (GPU device runtimes).
constexpr StringLiteral LlvmTranslateName = "__llvm_omp_indirect_call_lookup";
/// Marks instructions the pass created or already handled, for idempotence.
constexpr StringLiteral TranslatedMD = "ompsim.translated";

/// Which translate function the rewritten call sites call.
enum class TranslateFunction { Kmpc, Llvm };

/// Overrides the translate function when the pass runs from a default
/// pipeline (where pipeline parameters cannot be given); usable with
/// `-mllvm -ompsim-indirect-fn=llvm` when the plugin is loaded early enough.
cl::opt<std::string> TranslateFunctionOption(
    "ompsim-indirect-fn", cl::init(""),
    cl::desc("translate function for ompsim-indirect in default pipelines: kmpc or llvm "
             "(default: llvm for GPU triples, kmpc otherwise)"));

bool isTranslateFunctionName(StringRef Name) {
  return Name == KmpcTranslateName || Name == LlvmTranslateName;
}

/// True if `V` is the result of a translate call (ours or one the program
/// wrote itself), so translating it again would only cost time.
bool isTranslateResult(const Value *V) {
  // A pointer outside the generic address space comes back through a cast.
  if (const auto *Cast = dyn_cast<AddrSpaceCastInst>(V))
    V = Cast->getPointerOperand();
  const auto *Call = dyn_cast<CallBase>(V);
  if (!Call)
    return false;
  const Function *Callee = Call->getCalledFunction();
  return Callee && isTranslateFunctionName(Callee->getName());
}

/// The callee operand is a global (a function, alias or ifunc): a direct call
/// in all but name, even when its function type differs from the call's.
bool calleeIsGlobal(const CallBase &Call) {
  return isa<GlobalValue>(Call.getCalledOperand()->stripPointerCasts());
}

/// Returns the TBAA access tag's base type name, or "" if there is none.
StringRef tbaaBaseTypeName(const Instruction &I) {
  const MDNode *Tag = I.getMetadata(LLVMContext::MD_tbaa);
  if (!Tag || Tag->getNumOperands() < 1)
    return "";
  const auto *Base = dyn_cast<MDNode>(Tag->getOperand(0));
  if (!Base || Base->getNumOperands() < 1)
    return "";
  if (const auto *Name = dyn_cast<MDString>(Base->getOperand(0)))
    return Name->getString();
  return "";
}

/// Decides whether `Load` (the load the slot address is computed from) reads
/// an object's vtable pointer.
///
/// Optimised C++ tags vtable pointer loads with the TBAA type "vtable
/// pointer" (or !invariant.group under -fstrict-vtable-pointers, or feeds
/// them to llvm.type.test under whole-program vtables). At -O0 there is no
/// TBAA, so the shape `load (gep* (load %obj))` is taken as a vtable read; a
/// wrong guess only costs one translate call that misses and returns the
/// pointer unchanged. A load carrying a different TBAA type is not a vtable
/// pointer (merged loads keep a tag only when all agree).
bool isVtablePointerLoad(const LoadInst &Load, bool SlotThroughStructGEP) {
  if (!Load.getType()->isPointerTy())
    return false;
  if (Load.hasMetadata(LLVMContext::MD_invariant_group))
    return true;
  for (const User *U : Load.users())
    if (const auto *II = dyn_cast<IntrinsicInst>(U))
      if (II->getIntrinsicID() == Intrinsic::type_test || II->getIntrinsicID() == Intrinsic::public_type_test)
        return true;
  StringRef TBAAType = tbaaBaseTypeName(Load);
  if (!TBAAType.empty())
    return TBAAType == "vtable pointer";
  // No TBAA: a slot is indexed as an array of pointers (or bytes, for
  // pointers to member functions), never as a struct field.
  return !SlotThroughStructGEP;
}

/// Rewrites one function's indirect calls; see the file comment.
class IndirectCallRewriter {
public:
  IndirectCallRewriter(Function &F, FunctionCallee Translate, MDNode *Marker)
      : F(F), Translate(Translate), Marker(Marker) {}

  /// Returns true if anything changed.
  bool run() {
    SmallVector<CallBase *, 16> Sites;
    for (Instruction &I : instructions(F))
      if (auto *Call = dyn_cast<CallBase>(&I))
        if (needsTranslation(*Call))
          Sites.push_back(Call);
    bool Changed = false;
    for (CallBase *Call : Sites) {
      SmallPtrSet<const Value *, 16> Visited;
      Changed |= translateVtablePointers(Call->getCalledOperand(), Visited);
      Changed |= translateCallee(*Call);
    }
    return Changed;
  }

private:
  bool needsTranslation(const CallBase &Call) const {
    if (Call.getCalledFunction() || Call.isInlineAsm() || calleeIsGlobal(Call))
      return false;
    return true;
  }

  /// A translation emitted by emitTranslate: the translated value (with the
  /// type of the value translated) and the instruction that reads the
  /// original value.
  struct Translation {
    Value *Result;
    Instruction *Reader;
  };

  /// Inserts `%t = call @translate(%V)` at the builder's position, marked.
  /// The translate function takes and returns a generic pointer; a pointer in
  /// another address space (AMDGPU keeps vtables in the global one) is cast
  /// to it and the result cast back, so every use keeps its type.
  Translation emitTranslate(IRBuilder<> &B, Value *V, const DebugLoc &Loc) {
    Type *Generic = PointerType::getUnqual(V->getContext());
    Value *Arg = V;
    if (V->getType() != Generic) {
      Arg = B.CreateAddrSpaceCast(V, Generic);
      if (auto *I = dyn_cast<Instruction>(Arg))
        I->setMetadata(TranslatedMD, Marker);
    }
    CallInst *T = B.CreateCall(Translate, {Arg}, V->getName().empty() ? "" : V->getName() + ".dev");
    T->setMetadata(TranslatedMD, Marker);
    T->setDebugLoc(Loc);
    Instruction *Reader = Arg == V ? T : dyn_cast<Instruction>(Arg);
    if (V->getType() == Generic)
      return {T, Reader};
    Value *Back = B.CreateAddrSpaceCast(T, V->getType());
    if (auto *I = dyn_cast<Instruction>(Back))
      I->setMetadata(TranslatedMD, Marker);
    return {Back, Reader ? Reader : T};
  }

  /// Translates the callee operand in place, before the call.
  bool translateCallee(CallBase &Call) {
    Value *Callee = Call.getCalledOperand();
    if (Call.hasMetadata(TranslatedMD) || isTranslateResult(Callee))
      return false;
    IRBuilder<> B(&Call);
    Call.setCalledOperand(emitTranslate(B, Callee, Call.getDebugLoc()).Result);
    Call.setMetadata(TranslatedMD, Marker);
    return true;
  }

  /// Walks back from a callee through phis and selects to slot loads of the
  /// form `load (gep* %vptr)` and translates each vtable pointer found.
  bool translateVtablePointers(Value *V, SmallPtrSetImpl<const Value *> &Visited) {
    if (!Visited.insert(V).second)
      return false;
    if (auto *Phi = dyn_cast<PHINode>(V)) {
      bool Changed = false;
      for (Value *In : Phi->incoming_values())
        Changed |= translateVtablePointers(In, Visited);
      return Changed;
    }
    if (auto *Sel = dyn_cast<SelectInst>(V)) {
      bool Changed = translateVtablePointers(Sel->getTrueValue(), Visited);
      Changed |= translateVtablePointers(Sel->getFalseValue(), Visited);
      return Changed;
    }
    auto *SlotLoad = dyn_cast<LoadInst>(V);
    if (!SlotLoad)
      return false;
    Value *Addr = SlotLoad->getPointerOperand();
    bool ThroughStructGEP = false;
    unsigned Steps = 0;
    while (auto *GEP = dyn_cast<GEPOperator>(Addr)) {
      if (GEP->getSourceElementType()->isStructTy() || GEP->getSourceElementType()->isArrayTy())
        ThroughStructGEP = true;
      Addr = GEP->getPointerOperand();
      if (++Steps > 8)
        return false;
    }
    if (isTranslateResult(Addr))
      return false; // this vtable pointer is already translated
    auto *VtableLoad = dyn_cast<LoadInst>(Addr);
    if (!VtableLoad || VtableLoad->hasMetadata(TranslatedMD) ||
        !isVtablePointerLoad(*VtableLoad, ThroughStructGEP))
      return false;
    IRBuilder<> B(VtableLoad->getNextNode());
    Translation T = emitTranslate(B, VtableLoad, VtableLoad->getDebugLoc());
    VtableLoad->replaceUsesWithIf(T.Result, [&T](Use &U) { return U.getUser() != T.Reader; });
    VtableLoad->setMetadata(TranslatedMD, Marker);
    return true;
  }

  Function &F;
  FunctionCallee Translate;
  MDNode *Marker;
};

/// The module pass: rewrites every defined function's indirect calls.
class OmpsimIndirectPass : public PassInfoMixin<OmpsimIndirectPass> {
public:
  /// `Which` picks the translate function; `DeviceModulesOnly` restricts the
  /// pass to modules with the "openmp-device" flag (for default pipelines).
  OmpsimIndirectPass(TranslateFunction Which, bool DeviceModulesOnly)
      : Which(Which), DeviceModulesOnly(DeviceModulesOnly) {}

  PreservedAnalyses run(Module &M, ModuleAnalysisManager &) {
    if (DeviceModulesOnly && !M.getModuleFlag("openmp-device"))
      return PreservedAnalyses::all();
    LLVMContext &Ctx = M.getContext();
    StringRef Name = Which == TranslateFunction::Llvm ? LlvmTranslateName : KmpcTranslateName;
    PointerType *Ptr = PointerType::getUnqual(Ctx);
    bool HadDeclaration = M.getFunction(Name) != nullptr;
    FunctionCallee Translate = M.getOrInsertFunction(Name, FunctionType::get(Ptr, {Ptr}, false));
    // The device runtime's lookup never throws; a declaration the module
    // already had is left as it is.
    if (auto *Decl = dyn_cast<Function>(Translate.getCallee()); !HadDeclaration && Decl)
      Decl->setDoesNotThrow();
    MDNode *Marker = MDNode::get(Ctx, {});
    bool Changed = false;
    for (Function &F : M) {
      if (F.isDeclaration() || isTranslateFunctionName(F.getName()))
        continue;
      Changed |= IndirectCallRewriter(F, Translate, Marker).run();
    }
    if (!Changed) {
      // Leave the module exactly as it was: drop an unused declaration we added.
      if (auto *Decl = dyn_cast<Function>(Translate.getCallee());
          !HadDeclaration && Decl && Decl->use_empty())
        Decl->eraseFromParent();
      return PreservedAnalyses::all();
    }
    return PreservedAnalyses::none();
  }

  static bool isRequired() { return true; }

private:
  TranslateFunction Which;
  bool DeviceModulesOnly;
};

/// The translate function for a default pipeline: the option if given,
/// otherwise upstream's name for GPU targets (their device runtimes define
/// it) and ompsim's for the host-offload target.
TranslateFunction defaultTranslateFunctionFor(const Module &M) {
  if (TranslateFunctionOption == "llvm")
    return TranslateFunction::Llvm;
  if (TranslateFunctionOption == "kmpc")
    return TranslateFunction::Kmpc;
  Triple T(M.getTargetTriple());
  return T.isGPU() ? TranslateFunction::Llvm : TranslateFunction::Kmpc;
}

/// The default-pipeline form: decides the translate function per module.
class OmpsimIndirectAutoPass : public PassInfoMixin<OmpsimIndirectAutoPass> {
public:
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &AM) {
    return OmpsimIndirectPass(defaultTranslateFunctionFor(M), /*DeviceModulesOnly=*/true).run(M, AM);
  }
  static bool isRequired() { return true; }
};

Expected<TranslateFunction> parseTranslateFunction(StringRef Params) {
  if (Params.empty() || Params == "kmpc")
    return TranslateFunction::Kmpc;
  if (Params == "llvm")
    return TranslateFunction::Llvm;
  return createStringError(inconvertibleErrorCode(),
                           "invalid ompsim-indirect parameter '%s' (expected kmpc or llvm)",
                           Params.str().c_str());
}

void registerCallbacks(PassBuilder &PB) {
  PB.registerPipelineParsingCallback(
      [](StringRef Name, ModulePassManager &MPM, ArrayRef<PassBuilder::PipelineElement>) {
        if (Name != "ompsim-bare")
          return false;
        MPM.addPass(ompsim::pass::BareKernelsPass());
        return true;
      });
  PB.registerPipelineParsingCallback(
      [](StringRef Name, ModulePassManager &MPM, ArrayRef<PassBuilder::PipelineElement>) {
        if (!PassBuilder::checkParametrizedPassName(Name, "ompsim-indirect"))
          return false;
        auto Which = PassBuilder::parsePassParameters(parseTranslateFunction, Name, "ompsim-indirect");
        if (!Which) {
          errs() << "ompsim: " << toString(Which.takeError()) << "\n";
          return false;
        }
        MPM.addPass(OmpsimIndirectPass(*Which, /*DeviceModulesOnly=*/false));
        return true;
      });
  // Last in the per-module pipeline (all -O levels, including the LTO
  // pre-link pipelines used for bitcode device images) ...
  PB.registerOptimizerLastEPCallback([](ModulePassManager &MPM, OptimizationLevel, ThinOrFullLTOPhase) {
    // ompx_bare kernels of a host-offload device compile first (its body
    // function's call of the region is direct: nothing to translate).
    MPM.addPass(ompsim::pass::BareKernelsPass());
    MPM.addPass(OmpsimIndirectAutoPass());
  });
  // ... and after full LTO, where inlining may expose new indirect calls.
  PB.registerFullLinkTimeOptimizationLastEPCallback(
      [](ModulePassManager &MPM, OptimizationLevel) { MPM.addPass(OmpsimIndirectAutoPass()); });
}

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK ::llvm::PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "OmpsimIndirect", "0.1.0", registerCallbacks};
}

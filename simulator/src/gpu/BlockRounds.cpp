//===- BlockRounds.cpp - ompx_bare kernels whose blocks run in rounds -----===//
#include "BlockRounds.h"

#include "BlockLoops.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Attributes.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Transforms/Coroutines/CoroCleanup.h"
#include "llvm/Transforms/Coroutines/CoroEarly.h"
#include "llvm/Transforms/Coroutines/CoroSplit.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

#include <functional>
#include <string>

using namespace llvm;

namespace ompsim::sim::gpu {

bool blockBarrierEntry(StringRef Name) {
  return Name == "ompx_sync_block" || Name == "ompx_sync_block_acq_rel" ||
         Name == "ompx_sync_block_divergent";
}

namespace {

/// BarrierSite::Construct and ::BlockBarrier (runtime/device/vgpu/BarrierSite.h).
constexpr uint32_t ConstructKind = 0, BlockBarrierKind = 2;

/// An OpenMP ident's flags and psource (ident_t: four 32-bit fields, the
/// second the flags, then the source string), where `Ident` is a constant.
void identOf(const Value *Ident, uint32_t &Flags, Constant *&Source) {
  const auto *Global = dyn_cast<GlobalVariable>(Ident->stripPointerCasts());
  const auto *Init = Global && Global->hasDefinitiveInitializer()
                         ? dyn_cast<ConstantStruct>(Global->getInitializer())
                         : nullptr;
  if (!Init || Init->getNumOperands() < 5)
    return;
  if (const auto *F = dyn_cast<ConstantInt>(Init->getOperand(1)))
    Flags = uint32_t(F->getZExtValue());
  if (Init->getOperand(4)->getType()->isPointerTy())
    Source = Init->getOperand(4);
}

/// The coroutine's frame, entry and exits, as LLVM's switch-resumed
/// coroutines have them (llvm.coro.id, .begin, .suspend, .end).
class RoundsCoroutine {
public:
  /// `Body` leaves the barrier it suspends at where `SiteSlot` points.
  RoundsCoroutine(Function &Body, Value &SiteSlot) : Body(Body), SiteSlot(SiteSlot), C(Body.getContext()) {}

  /// Gives the body its frame, from the virtual GPU, before its code.
  void begin() {
    Body.setPresplitCoroutine();
    BasicBlock *Code = &Body.getEntryBlock();
    BasicBlock *Entry = BasicBlock::Create(C, "rounds.begin", &Body, Code);
    // The kernel's stack variables stay static: those a barrier separates
    // from their uses live in the frame.
    for (Instruction &I : make_early_inc_range(*Code))
      if (auto *Alloca = dyn_cast<AllocaInst>(&I); Alloca && Alloca->isStaticAlloca())
        Alloca->moveBefore(*Entry, Entry->end());
    IRBuilder<> B(Entry);
    Value *Null = ConstantPointerNull::get(PointerType::getUnqual(C));
    Id = B.CreateIntrinsic(Intrinsic::coro_id, {}, {B.getInt32(16), Null, Null, Null});
    Value *Size = B.CreateIntrinsic(Intrinsic::coro_size, {B.getInt64Ty()}, {});
    Value *Align = B.CreateIntrinsic(Intrinsic::coro_align, {B.getInt64Ty()}, {});
    Module &M = *Body.getParent();
    FunctionCallee Frame =
        M.getOrInsertFunction(RoundFrameEntry, PointerType::getUnqual(C), B.getInt64Ty(), B.getInt64Ty());
    Handle = B.CreateIntrinsic(Intrinsic::coro_begin, {}, {Id, B.CreateCall(Frame, {Size, Align})});
    B.CreateBr(Code);
  }

  /// The thread's run ends at each of the body's returns.
  void endAtReturns() {
    SmallVector<ReturnInst *, 4> Returns;
    for (BasicBlock &BB : Body)
      if (auto *Ret = dyn_cast<ReturnInst>(BB.getTerminator()))
        Returns.push_back(Ret);
    makeExits();
    BasicBlock *End = BasicBlock::Create(C, "rounds.end", &Body);
    BasicBlock *Never = BasicBlock::Create(C, "rounds.never", &Body);
    new UnreachableInst(C, Never);
    IRBuilder<> B(End);
    suspend(B, /*Final=*/true, Never);
    for (ReturnInst *Ret : Returns) {
      BranchInst::Create(End, Ret->getIterator());
      Ret->eraseFromParent();
    }
  }

  /// The thread waits for its round's end where it called `Barrier`.
  void suspendAt(CallInst &Barrier) {
    BasicBlock *At = Barrier.getParent();
    BasicBlock *Resume = At->splitBasicBlock(std::next(Barrier.getIterator()), "rounds.resume");
    At->getTerminator()->eraseFromParent();
    IRBuilder<> B(At);
    B.CreateStore(siteOf(Barrier), &SiteSlot);
    suspend(B, /*Final=*/false, Resume);
    Barrier.eraseFromParent();
  }

private:
  /// Where a suspended thread's run returns its handle, and where a
  /// destroyed one goes first (its frame is the virtual GPU's to keep).
  void makeExits() {
    Leave = BasicBlock::Create(C, "rounds.leave", &Body);
    IRBuilder<> B(Leave);
    B.CreateIntrinsic(Intrinsic::coro_end, {}, {Handle, B.getFalse(), ConstantTokenNone::get(C)});
    B.CreateRet(Handle);
    Cleanup = BasicBlock::Create(C, "rounds.cleanup", &Body);
    B.SetInsertPoint(Cleanup);
    B.CreateIntrinsic(Intrinsic::coro_free, {}, {Id, Handle});
    B.CreateBr(Leave);
  }

  /// The barrier's BarrierSite (runtime/device/vgpu/BarrierSite.h): its own
  /// address is its code; an OpenMP barrier's source location is its
  /// ident's, an ompx_sync_block's the call's, with -g. Null for a
  /// divergent barrier, which any of the block's completes.
  Constant *siteOf(const CallInst &Barrier) {
    PointerType *Ptr = PointerType::getUnqual(C);
    StringRef Name = Barrier.getCalledFunction()->getName();
    if (Name == "ompx_sync_block_divergent")
      return ConstantPointerNull::get(Ptr);
    Module &M = *Body.getParent();
    Constant *Source = ConstantPointerNull::get(Ptr);
    uint32_t Kind = BlockBarrierKind, Flags = 0;
    if (regionBarrierEntry(Name)) {
      Kind = ConstructKind;
      identOf(Barrier.getArgOperand(0), Flags, Source);
    } else if (const DILocation *Loc = Barrier.getDebugLoc().get()) {
      std::string Psource = (";" + Loc->getFilename() + ";" + Body.getName() + ";").str() +
                            std::to_string(Loc->getLine()) + ";" + std::to_string(Loc->getColumn()) + ";;";
      Source = IRBuilder<>(C).CreateGlobalString(Psource, "rounds.source", 0, &M);
    }
    Type *I32 = Type::getInt32Ty(C);
    StructType *SiteType = StructType::get(C, {Ptr, Ptr, I32, I32});
    // Named for the function and the barrier's place in it, and known to
    // the image's symbols: without -g, a report names the barrier by it.
    auto *Site = new GlobalVariable(M, SiteType, /*isConstant=*/true, GlobalValue::ExternalLinkage, nullptr,
                                    Body.getName() + "_barrier" + std::to_string(++Sites));
    Site->setVisibility(GlobalValue::HiddenVisibility);
    Site->setInitializer(ConstantStruct::get(
        SiteType, {Site, Source, ConstantInt::get(I32, Kind), ConstantInt::get(I32, Flags)}));
    return Site;
  }

  void suspend(IRBuilder<> &B, bool Final, BasicBlock *Resume) {
    Value *State =
        B.CreateIntrinsic(Intrinsic::coro_suspend, {}, {ConstantTokenNone::get(C), B.getInt1(Final)});
    SwitchInst *Switch = B.CreateSwitch(State, Leave, 2);
    Switch->addCase(B.getInt8(0), Resume);
    Switch->addCase(B.getInt8(1), Cleanup);
  }

  Function &Body;
  Value &SiteSlot;
  LLVMContext &C;
  unsigned Sites = 0;
  Value *Id = nullptr;
  Value *Handle = nullptr;
  BasicBlock *Leave = nullptr;
  BasicBlock *Cleanup = nullptr;
};

/// Inlines into `F` the program's functions it calls that reach a barrier
/// (`Barrier` says which entries are) through their direct calls (an
/// outlined region, and what it calls, in a build without optimization), so
/// that the barriers are `F`'s own calls. False if one cannot be inlined
/// (or a recursion keeps bringing more).
bool inlineBarrierCallers(Function &F, function_ref<bool(StringRef)> Barrier) {
  // Whether a function reaches a barrier through its direct calls.
  DenseMap<const Function *, bool> Reaches;
  // Whether a function calls a barrier itself (a runtime function's body is
  // scanned once).
  DenseMap<const Function *, bool> Calls;
  auto CallsBarrier = [&](const Function &G) {
    auto [It, New] = Calls.try_emplace(&G, false);
    if (New)
      It->second = any_of(instructions(G), [&](const Instruction &I) {
        const auto *Call = dyn_cast<CallBase>(&I);
        const Function *Callee = Call ? Call->getCalledFunction() : nullptr;
        return Callee && Barrier(Callee->getName());
      });
    return It->second;
  };
  // The program's functions, and the runtime's that call a barrier
  // themselves (the parallel reduction's, GPU device runtime Reduction.cpp).
  auto Inlinable = [&](const Function *Callee) {
    return Callee && !Callee->isDeclaration() && !Barrier(Callee->getName()) &&
           (!Callee->hasFnAttribute(GpuRuntimeAttribute) || CallsBarrier(*Callee));
  };
  std::function<bool(const Function &)> Barriered = [&](const Function &G) {
    auto [It, New] = Reaches.try_emplace(&G, false);
    if (!New)
      return It->second; // known, or being looked at (a cycle adds nothing)
    bool Found = false;
    for (const Instruction &I : instructions(G))
      if (const auto *Call = dyn_cast<CallBase>(&I))
        if (const Function *Callee = Call->getCalledFunction())
          if (Barrier(Callee->getName()) || (Inlinable(Callee) && Barriered(*Callee)))
            Found = true;
    return Reaches[&G] = Found;
  };
  constexpr unsigned kMostInlined = 64;
  for (unsigned Inlined = 0;;) {
    CallBase *Next = nullptr;
    for (Instruction &I : instructions(F))
      if (auto *Call = dyn_cast<CallBase>(&I))
        if (Function *Callee = Call->getCalledFunction();
            Inlinable(Callee) && Callee != &F && Barriered(*Callee)) {
          Next = Call;
          break;
        }
    if (!Next)
      return true;
    InlineFunctionInfo Info;
    if (++Inlined > kMostInlined || !InlineFunction(*Next, Info).isSuccess())
      return false;
  }
}

/// `F`'s direct calls of a barrier (`Barrier` says which entries are), in
/// `Barriers`; why the split cannot suspend `F` at them, or nothing.
std::optional<std::string> findBarriers(Function &F, function_ref<bool(StringRef)> Barrier,
                                        SmallVectorImpl<CallInst *> &Barriers) {
  for (Instruction &I : instructions(F)) {
    if (auto *Alloca = dyn_cast<AllocaInst>(&I); Alloca && !Alloca->isStaticAlloca())
      return "a variable-length array in function '" + F.getName().str() + "'";
    auto *Call = dyn_cast<CallBase>(&I);
    if (!Call)
      continue;
    if (auto *Intrinsic = dyn_cast<IntrinsicInst>(Call)) {
      // Its stack is the coroutine's frame, which the split lays out.
      if (Intrinsic->getIntrinsicID() == Intrinsic::stacksave ||
          Intrinsic->getIntrinsicID() == Intrinsic::stackrestore)
        return "a stack save or restore in function '" + F.getName().str() + "'";
      continue;
    }
    const auto *Callee = dyn_cast<Function>(Call->getCalledOperand()->stripPointerCasts());
    if (!Callee || !Barrier(Callee->getName()))
      continue;
    auto *Direct = dyn_cast<CallInst>(Call);
    if (!Direct || Direct->isMustTailCall())
      return "a barrier '" + Callee->getName().str() + "' called by an invoke or a musttail call";
    Barriers.push_back(Direct);
  }
  return std::nullopt;
}

} // namespace

bool regionBarrierEntry(StringRef Name) { return Name == "__kmpc_barrier" || Name == ReductionBarrierEntry; }

std::optional<std::string> splittableAtBarriers(Function &Kernel, SmallVectorImpl<CallInst *> &Barriers) {
  if (!Kernel.getReturnType()->isVoidTy())
    return std::string("the kernel returns a value");
  for (const Argument &Arg : Kernel.args())
    if (Arg.hasPassPointeeByValueCopyAttr() || Arg.hasStructRetAttr())
      return "its argument " + std::to_string(Arg.getArgNo()) + " is passed by value in memory";
  if (!inlineBarrierCallers(Kernel, blockBarrierEntry))
    return std::string("a function that reaches a block barrier cannot be inlined into the kernel");
  return findBarriers(Kernel, blockBarrierEntry, Barriers);
}

Function *splitRegion(CallBase &Call, Function &Region) {
  // The region's shared variables, each handed over as a pointer-sized slot:
  // a known count of pointers and integers.
  const auto *Count = Call.arg_size() >= 9 ? dyn_cast<ConstantInt>(Call.getArgOperand(8)) : nullptr;
  FunctionType *Type = Region.getFunctionType();
  if (!Count || Type->isVarArg() || !Type->getReturnType()->isVoidTy() || Type->getNumParams() < 2 ||
      Type->getNumParams() != Count->getZExtValue() + 2)
    return nullptr;
  Module &M = *Region.getParent();
  LLVMContext &C = M.getContext();
  IntegerType *I32 = Type::getInt32Ty(C);
  // The thread's global and bound ids, the shared variables, and where the
  // thread leaves the barrier it suspends at.
  SmallVector<llvm::Type *, 8> Params = {I32, I32};
  for (unsigned I = 0; I < Type->getNumParams(); ++I) {
    llvm::Type *Param = Type->getParamType(I);
    if (!(Param->isPointerTy() && (I >= 2 || Param == Type->getParamType(0))) &&
        !(I >= 2 && Param->isIntegerTy() && Param->getIntegerBitWidth() <= 64))
      return nullptr;
    if (I >= 2)
      Params.push_back(Param);
  }
  Params.push_back(PointerType::getUnqual(C));
  Function *Rounds = Function::Create(FunctionType::get(PointerType::getUnqual(C), Params, false),
                                      GlobalValue::InternalLinkage, Region.getName() + "_rounds", M);
  Rounds->setAttributes(
      AttributeList::get(C, AttributeList::FunctionIndex, Region.getAttributes().getFnAttrs()));
  // A copy of the region (with a debug information entry of its own, which
  // the function takes over), inlined with the ids in variables of its own.
  ValueToValueMapTy Map;
  Function *Copy = CloneFunction(&Region, Map);
  IRBuilder<> B(BasicBlock::Create(C, "", Rounds));
  Value *Global = B.CreateAlloca(I32), *Bound = B.CreateAlloca(I32);
  B.CreateStore(Rounds->getArg(0), Global);
  B.CreateStore(Rounds->getArg(1), Bound);
  SmallVector<Value *, 8> Args = {Global, Bound};
  for (unsigned I = 2; I < Type->getNumParams(); ++I)
    Args.push_back(Rounds->getArg(I));
  CallInst *Inlined = B.CreateCall(Copy, Args);
  B.CreateRet(ConstantPointerNull::get(PointerType::getUnqual(C)));
  DISubprogram *Debug = Copy->getSubprogram();
  InlineFunctionInfo Info;
  bool Done = InlineFunction(*Inlined, Info).isSuccess();
  Copy->setSubprogram(nullptr);
  Copy->eraseFromParent();
  Rounds->setSubprogram(Debug);
  SmallVector<CallInst *, 8> Barriers;
  if (!Done || !inlineBarrierCallers(*Rounds, regionBarrierEntry) ||
      findBarriers(*Rounds, regionBarrierEntry, Barriers)) {
    Rounds->eraseFromParent();
    return nullptr;
  }
  return Rounds;
}

void runRegionInRounds(CallBase &Call, Function &Rounds) {
  Module &M = *Rounds.getParent();
  LLVMContext &C = M.getContext();
  PointerType *Ptr = PointerType::getUnqual(C);
  SmallVector<CallInst *, 8> Barriers;
  findBarriers(Rounds, regionBarrierEntry, Barriers);
  RoundsCoroutine Coroutine(Rounds, *Rounds.getArg(Rounds.arg_size() - 1));
  Coroutine.begin();
  Coroutine.endAtReturns();
  for (CallInst *Barrier : Barriers)
    Coroutine.suspendAt(*Barrier);

  // Starts thread T's coroutine from the runtime's RoundRegion (the shared
  // variables' slots, and whether the bound id is 0) and where it leaves
  // its barrier.
  IntegerType *I32 = Type::getInt32Ty(C);
  Function *Start = Function::Create(FunctionType::get(Ptr, {Ptr, I32, Ptr}, false),
                                     GlobalValue::InternalLinkage, Rounds.getName() + "_start", M);
  IRBuilder<> B(BasicBlock::Create(C, "", Start));
  StructType *RegionType = StructType::get(C, {Ptr, I32});
  Value *Slots = B.CreateLoad(Ptr, B.CreateStructGEP(RegionType, Start->getArg(0), 0));
  Value *ZeroBound = B.CreateLoad(I32, B.CreateStructGEP(RegionType, Start->getArg(0), 1));
  Value *T = Start->getArg(1);
  SmallVector<Value *, 8> Args = {T,
                                  B.CreateSelect(B.CreateICmpNE(ZeroBound, B.getInt32(0)), B.getInt32(0), T)};
  for (unsigned I = 2; I + 1 < Rounds.arg_size(); ++I) {
    Value *Slot = B.CreateLoad(Ptr, B.CreateConstGEP1_64(Ptr, Slots, I - 2));
    llvm::Type *Param = Rounds.getArg(I)->getType();
    Args.push_back(Param->isPointerTy() ? Slot : B.CreatePtrToInt(Slot, Param));
  }
  Args.push_back(Start->getArg(2));
  B.CreateRet(B.CreateCall(&Rounds, Args));

  // The region's call, with the start.
  SmallVector<llvm::Type *, 10> Types;
  SmallVector<Value *, 10> Operands;
  for (unsigned I = 0; I < 9; ++I) {
    Operands.push_back(Call.getArgOperand(I));
    Types.push_back(Call.getArgOperand(I)->getType());
  }
  Types.push_back(Ptr);
  Operands.push_back(Start);
  FunctionCallee Entry =
      M.getOrInsertFunction(ParallelInRoundsEntry, FunctionType::get(Type::getVoidTy(C), Types, false));
  B.SetInsertPoint(&Call);
  CallInst *New = B.CreateCall(Entry, Operands);
  New->setDebugLoc(Call.getDebugLoc());
  Call.eraseFromParent();
}

void splitAtBarriers(Function &Kernel, ArrayRef<CallInst *> Barriers) {
  Module &M = *Kernel.getParent();
  LLVMContext &C = M.getContext();
  PointerType *Ptr = PointerType::getUnqual(C);
  FunctionType *KernelType = Kernel.getFunctionType();
  // The kernel's code, with its arguments, debug information and
  // attributes, as a coroutine that gives its handle; a last argument says
  // where it leaves the barrier it suspends at.
  SmallVector<Type *, 8> Params(KernelType->params());
  Params.push_back(Ptr);
  Function *Body = Function::Create(FunctionType::get(Ptr, Params, false), GlobalValue::InternalLinkage,
                                    Kernel.getName() + "_rounds", M);
  Body->copyAttributesFrom(&Kernel);
  Body->setLinkage(GlobalValue::InternalLinkage);
  Body->setVisibility(GlobalValue::DefaultVisibility);
  Body->splice(Body->begin(), &Kernel);
  for (auto [From, To] : zip(Kernel.args(), Body->args())) {
    To.takeName(&From);
    From.replaceAllUsesWith(&To);
  }
  Body->setSubprogram(Kernel.getSubprogram());
  Kernel.setSubprogram(nullptr);
  Argument *SiteSlot = Body->getArg(KernelType->getNumParams());
  SiteSlot->setName("site");
  RoundsCoroutine Coroutine(*Body, *SiteSlot);
  Coroutine.begin();
  Coroutine.endAtReturns();
  for (CallInst *Barrier : Barriers)
    Coroutine.suspendAt(*Barrier);

  // Starts a thread's coroutine from the kernel's arguments, which thread 0
  // keeps on its stack for the block's run, with the barrier's slot.
  StructType *ArgsType = StructType::get(C, Params);
  Function *Start = Function::Create(FunctionType::get(Ptr, {Ptr}, false), GlobalValue::InternalLinkage,
                                     Kernel.getName() + "_rounds_start", M);
  IRBuilder<> B(BasicBlock::Create(C, "", Start));
  SmallVector<Value *, 8> Args;
  for (unsigned I = 0; I < KernelType->getNumParams(); ++I)
    Args.push_back(B.CreateLoad(Params[I], B.CreateStructGEP(ArgsType, Start->getArg(0), I)));
  Args.push_back(B.CreateStructGEP(ArgsType, Start->getArg(0), KernelType->getNumParams()));
  B.CreateRet(B.CreateCall(Body, Args));

  B.SetInsertPoint(BasicBlock::Create(C, "", &Kernel));
  Value *Kept = B.CreateAlloca(ArgsType);
  for (unsigned I = 0; I < KernelType->getNumParams(); ++I)
    B.CreateStore(Kernel.getArg(I), B.CreateStructGEP(ArgsType, Kept, I));
  FunctionCallee Run = M.getOrInsertFunction(RunInRoundsEntry, B.getVoidTy(), Ptr, Ptr, Ptr);
  B.CreateCall(Run, {Start, Kept, B.CreateStructGEP(ArgsType, Kept, KernelType->getNumParams())});
  B.CreateRetVoid();
}

void lowerRounds(Module &M) {
  LoopAnalysisManager Lam;
  FunctionAnalysisManager Fam;
  CGSCCAnalysisManager Cgam;
  ModuleAnalysisManager Mam;
  PassBuilder Pb;
  Pb.registerModuleAnalyses(Mam);
  Pb.registerCGSCCAnalyses(Cgam);
  Pb.registerFunctionAnalyses(Fam);
  Pb.registerLoopAnalyses(Lam);
  Pb.crossRegisterProxies(Lam, Fam, Cgam, Mam);
  ModulePassManager Mpm;
  Mpm.addPass(CoroEarlyPass());
  Mpm.addPass(createModuleToPostOrderCGSCCPassAdaptor(CoroSplitPass()));
  Mpm.addPass(CoroCleanupPass());
  Mpm.run(M, Mam);
}

} // namespace ompsim::sim::gpu

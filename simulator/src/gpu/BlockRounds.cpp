//===- BlockRounds.cpp - ompx_bare kernels whose blocks run in rounds -----===//
#include "BlockRounds.h"

#include "BlockLoops.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/DebugInfoMetadata.h"
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

#include <functional>
#include <string>

using namespace llvm;

namespace ompsim::sim::gpu {

bool blockBarrierEntry(StringRef Name) {
  return Name == "ompx_sync_block" || Name == "ompx_sync_block_acq_rel" || Name == "ompx_sync_block_divergent";
}

namespace {

/// BarrierSite::BlockBarrier (runtime/device/vgpu/BarrierSite.h).
constexpr uint32_t BlockBarrierKind = 2;

/// The coroutine's frame, entry and exits, as LLVM's switch-resumed
/// coroutines have them (llvm.coro.id, .begin, .suspend, .end).
class RoundsCoroutine {
public:
  /// `Body` leaves the barrier it suspends at where `SiteSlot` points.
  RoundsCoroutine(Function &Body, Value &SiteSlot) : Body(Body), SiteSlot(SiteSlot), C(Body.getContext()) {}

  /// Gives the body its frame, from the virtual GPU, before its code.
  void begin() {
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
  /// address is its code, and its source location the call's, with -g.
  /// Null for a divergent barrier, which any of the block's completes.
  Constant *siteOf(const CallInst &Barrier) {
    PointerType *Ptr = PointerType::getUnqual(C);
    if (Barrier.getCalledFunction()->getName() == "ompx_sync_block_divergent")
      return ConstantPointerNull::get(Ptr);
    Module &M = *Body.getParent();
    Constant *Source = ConstantPointerNull::get(Ptr);
    if (const DILocation *Loc = Barrier.getDebugLoc().get()) {
      std::string Psource = (";" + Loc->getFilename() + ";" + Body.getName() + ";").str() +
                            std::to_string(Loc->getLine()) + ";" + std::to_string(Loc->getColumn()) + ";;";
      Source = IRBuilder<>(C).CreateGlobalString(Psource, "rounds.source", 0, &M);
    }
    Type *I32 = Type::getInt32Ty(C);
    StructType *SiteType = StructType::get(C, {Ptr, Ptr, I32, I32});
    auto *Site = new GlobalVariable(M, SiteType, /*isConstant=*/true, GlobalValue::PrivateLinkage, nullptr,
                                    "rounds.site");
    Site->setInitializer(ConstantStruct::get(SiteType, {Site, Source, ConstantInt::get(I32, BlockBarrierKind),
                                                        ConstantInt::get(I32, 0)}));
    return Site;
  }

  void suspend(IRBuilder<> &B, bool Final, BasicBlock *Resume) {
    Value *State = B.CreateIntrinsic(Intrinsic::coro_suspend, {}, {ConstantTokenNone::get(C), B.getInt1(Final)});
    SwitchInst *Switch = B.CreateSwitch(State, Leave, 2);
    Switch->addCase(B.getInt8(0), Resume);
    Switch->addCase(B.getInt8(1), Cleanup);
  }

  Function &Body;
  Value &SiteSlot;
  LLVMContext &C;
  Value *Id = nullptr;
  Value *Handle = nullptr;
  BasicBlock *Leave = nullptr;
  BasicBlock *Cleanup = nullptr;
};

/// Inlines into `Kernel` the program's functions it calls that reach a
/// block barrier through their direct calls (an ompx_bare region's outlined
/// function, and what it calls, in a build without optimization), so that
/// the barriers are `Kernel`'s own calls. False if one cannot be inlined
/// (or a recursion keeps bringing more).
bool inlineBarrierCallers(Function &Kernel) {
  // Whether a function reaches a block barrier through its direct calls.
  DenseMap<const Function *, bool> Reaches;
  std::function<bool(const Function &)> Barriered = [&](const Function &F) {
    auto [It, New] = Reaches.try_emplace(&F, false);
    if (!New)
      return It->second; // known, or being looked at (a cycle adds nothing)
    bool Found = false;
    for (const Instruction &I : instructions(F))
      if (const auto *Call = dyn_cast<CallBase>(&I))
        if (const Function *Callee = Call->getCalledFunction())
          if (blockBarrierEntry(Callee->getName()) ||
              (!Callee->isDeclaration() && !Callee->hasFnAttribute(GpuRuntimeAttribute) && Barriered(*Callee)))
            Found = true;
    return Reaches[&F] = Found;
  };
  constexpr unsigned kMostInlined = 64;
  for (unsigned Inlined = 0;;) {
    CallBase *Next = nullptr;
    for (Instruction &I : instructions(Kernel))
      if (auto *Call = dyn_cast<CallBase>(&I))
        if (Function *Callee = Call->getCalledFunction(); Callee && !Callee->isDeclaration() &&
                                                           !Callee->hasFnAttribute(GpuRuntimeAttribute) &&
                                                           Callee != &Kernel && Barriered(*Callee)) {
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

} // namespace

std::optional<std::string> splittableAtBarriers(Function &Kernel, SmallVectorImpl<CallInst *> &Barriers) {
  if (!Kernel.getReturnType()->isVoidTy())
    return std::string("the kernel returns a value");
  for (const Argument &Arg : Kernel.args())
    if (Arg.hasPassPointeeByValueCopyAttr() || Arg.hasStructRetAttr())
      return "its argument " + std::to_string(Arg.getArgNo()) + " is passed by value in memory";
  if (!inlineBarrierCallers(Kernel))
    return std::string("a function that reaches a block barrier cannot be inlined into the kernel");
  for (Instruction &I : instructions(Kernel)) {
    if (auto *Alloca = dyn_cast<AllocaInst>(&I); Alloca && !Alloca->isStaticAlloca())
      return "a variable-length array in function '" + Kernel.getName().str() + "'";
    auto *Call = dyn_cast<CallBase>(&I);
    if (!Call)
      continue;
    if (auto *Intrinsic = dyn_cast<IntrinsicInst>(Call)) {
      // Its stack is the coroutine's frame, which the split lays out.
      if (Intrinsic->getIntrinsicID() == Intrinsic::stacksave ||
          Intrinsic->getIntrinsicID() == Intrinsic::stackrestore)
        return "a stack save or restore in function '" + Kernel.getName().str() + "'";
      continue;
    }
    const auto *Callee = dyn_cast<Function>(Call->getCalledOperand()->stripPointerCasts());
    if (!Callee || !blockBarrierEntry(Callee->getName()))
      continue;
    auto *Barrier = dyn_cast<CallInst>(Call);
    if (!Barrier || Barrier->isMustTailCall())
      return "a block barrier '" + Callee->getName().str() + "' called by an invoke or a musttail call";
    Barriers.push_back(Barrier);
  }
  return std::nullopt;
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
                                    Kernel.getName() + ".rounds", M);
  Body->copyAttributesFrom(&Kernel);
  Body->setLinkage(GlobalValue::InternalLinkage);
  Body->setVisibility(GlobalValue::DefaultVisibility);
  Body->setPresplitCoroutine();
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
                                     Kernel.getName() + ".rounds.start", M);
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

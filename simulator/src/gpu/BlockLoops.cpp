//===- BlockLoops.cpp - GPU kernels whose blocks run as loops -------------===//
#include "BlockLoops.h"

#include "BlockRounds.h"
#include "CheckedAccesses.h"
#include "GpuImageRetarget.h"
#include "KernelAnalysis.h"
#include "TeamSharedGuards.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Frontend/OpenMP/OMPDeviceConstants.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PatternMatch.h"

#include <optional>

using namespace llvm;

namespace ompsim::sim::gpu {
namespace {

/// The runtime's entries a kernel's code outside parallel regions may call:
/// every thread would get from them what thread 0 gets (the distribute
/// schedule is the team's), or they are the kernel's start and end. A teams
/// reduction answers every thread but 0 with 0 and does nothing else (its
/// buffer is the launch's); openmp-opt's barrier after thread 0's guarded
/// code passes at once where thread 0 alone runs that code.
bool sequentialEntry(StringRef Name) {
  static constexpr StringLiteral Entries[] = {
      "__kmpc_target_init",
      "__kmpc_target_deinit",
      "__kmpc_global_thread_num",
      "__kmpc_get_hardware_thread_id_in_block",
      "__kmpc_get_hardware_num_threads_in_block",
      "__kmpc_get_warp_size",
      "__kmpc_distribute_static_init_4",
      "__kmpc_distribute_static_init_4u",
      "__kmpc_distribute_static_init_8",
      "__kmpc_distribute_static_init_8u",
      "__kmpc_distribute_static_fini",
      "omp_get_team_num",
      "omp_get_num_teams",
      TeamsReductionEntry,
      "__kmpc_reduction_get_fixed_buffer",
      "__kmpc_barrier_simple_spmd",
  };
  // The block's team-shared memory (GpuImageRetarget.h, TeamSharedGuards.h):
  // one block for all its threads; a store through it is a store to memory
  // the threads share.
  return is_contained(Entries, Name) || Name == TeamSharedEntry || Name == GuardedTeamSharedEntry;
}

/// The entries that answer the calling thread's id.
bool threadIdQuery(StringRef Name) {
  return Name == "__kmpc_global_thread_num" || Name == "__kmpc_get_hardware_thread_id_in_block";
}

/// Intrinsics that neither write memory nor synchronize.
bool harmlessIntrinsic(const IntrinsicInst &I) {
  switch (I.getIntrinsicID()) {
  case Intrinsic::lifetime_start:
  case Intrinsic::lifetime_end:
  case Intrinsic::assume:
  case Intrinsic::experimental_noalias_scope_decl:
  case Intrinsic::dbg_declare:
  case Intrinsic::dbg_value:
  case Intrinsic::dbg_label:
  case Intrinsic::donothing:
    return true;
  default:
    return I.doesNotAccessMemory() && !I.isConvergent();
  }
}

/// Whether `Condition` holds on the team's thread 0 alone: openmp-opt's
/// guard of a Generic-SPMD kernel's sequential code (the thread's id equal
/// to 0, alone or and-ed with the kernel start's answer).
bool threadZeroCondition(const Value *Condition) {
  using namespace PatternMatch;
  const Value *Id = nullptr, *A = nullptr, *B = nullptr;
  if (match(Condition, m_SpecificICmp(ICmpInst::ICMP_EQ, m_Value(Id), m_Zero()))) {
    const auto *Query = dyn_cast<CallBase>(Id);
    const Function *Callee = Query ? Query->getCalledFunction() : nullptr;
    return Callee && threadIdQuery(Callee->getName());
  }
  auto KernelStart = [](const Value *V) {
    const Value *Init = nullptr;
    const auto *Call = match(V, m_ICmp(m_Value(Init), m_Constant())) ? dyn_cast<CallBase>(Init) : nullptr;
    const Function *Callee = Call ? Call->getCalledFunction() : nullptr;
    return Callee && Callee->getName() == "__kmpc_target_init";
  };
  return match(Condition, m_LogicalAnd(m_Value(A), m_Value(B))) &&
         ((threadZeroCondition(A) && KernelStart(B)) || (threadZeroCondition(B) && KernelStart(A)));
}

} // namespace

bool KernelAnalysis::guardsThreadZero(const Instruction &Terminator) {
  const auto *Branch = dyn_cast<BranchInst>(&Terminator);
  return Branch && Branch->isConditional() && Branch->getSuccessor(0) != Branch->getSuccessor(1) &&
         threadZeroCondition(Branch->getCondition());
}

bool KernelAnalysis::masterOnly(const Instruction &I, Master By) {
  Function &F = *const_cast<Function *>(I.getFunction());
  MasterEdges &Known = Masters[&F];
  if (!Known.Tree) {
    Known.Tree = std::make_unique<DominatorTree>(F);
    // A team's reduction tells its thread 0 alone that it holds the values
    // (1): the compiler combines them into the variable behind `== 1`.
    for (const Instruction &Call : instructions(F)) {
      const auto *Reduce = dyn_cast<CallBase>(&Call);
      const Function *Callee = Reduce ? Reduce->getCalledFunction() : nullptr;
      if (!Callee ||
          (Callee->getName() != ParallelReductionEntry && Callee->getName() != TeamsReductionEntry))
        continue;
      const Master Kind =
          Callee->getName() == ParallelReductionEntry ? Master::ParallelReduction : Master::TeamsReduction;
      for (const User *U : Reduce->users()) {
        const auto *Compare = dyn_cast<ICmpInst>(U);
        const auto *One = Compare ? dyn_cast<ConstantInt>(Compare->getOperand(1)) : nullptr;
        if (!One || !One->isOne() || Compare->getPredicate() != CmpInst::ICMP_EQ)
          continue;
        for (const User *B : Compare->users())
          if (const auto *Branch = dyn_cast<BranchInst>(B);
              Branch && Branch->isConditional() && Branch->getSuccessor(0) != Branch->getSuccessor(1))
            Known.Edges.push_back({Kind, BasicBlockEdge(Branch->getParent(), Branch->getSuccessor(0))});
      }
    }
    for (const BasicBlock &BB : F)
      if (guardsThreadZero(*BB.getTerminator()))
        Known.Edges.push_back(
            {Master::ThreadZeroGuard, BasicBlockEdge(&BB, BB.getTerminator()->getSuccessor(0))});
  }
  return any_of(Known.Edges, [&](const auto &Edge) {
    return Edge.first == By && Known.Tree->dominates(Edge.second, I.getParent());
  });
}

bool KernelAnalysis::writtenByReductionMaster(const Argument &Param) {
  // Every use behind the reduction's `== 1`, directly or through an
  // address computed from it.
  SmallVector<const Value *, 8> Pointers = {&Param};
  for (size_t N = 0; N < Pointers.size(); ++N)
    for (const User *U : Pointers[N]->users()) {
      const auto *I = dyn_cast<Instruction>(U);
      if (!I)
        return false;
      if (isa<GetElementPtrInst, AddrSpaceCastInst, BitCastInst>(I)) {
        Pointers.push_back(I);
        continue;
      }
      if (!masterOnly(*I, Master::ParallelReduction))
        return false;
    }
  return true;
}

std::optional<std::string> KernelAnalysis::collectSequential() {
  Sequential.insert(&Kernel);
  for (size_t N = 0; N < Sequential.size(); ++N)
    for (Instruction &I : instructions(*Sequential[N])) {
      auto *Call = dyn_cast<CallBase>(&I);
      if (!Call || isa<IntrinsicInst>(Call))
        continue;
      if (!isa<CallInst>(Call))
        return "an invoke or callbr " + where(I);
      if (Call->isInlineAsm())
        return "inline assembly " + where(I);
      Function *Callee = dyn_cast<Function>(Call->getCalledOperand()->stripPointerCasts());
      if (!Callee)
        return "an indirect call outside a parallel region, " + where(I);
      if (!Callee->isDeclaration() && !runtime(*Callee))
        Sequential.insert(Callee);
    }
  return std::nullopt;
}

Origins KernelAnalysis::originsOf(const Value *V) {
  auto It = Values.find(V);
  if (It != Values.end())
    return It->second;
  Origins O;
  if (isa<GlobalValue>(V))
    O.Outside = true;
  else if (const auto *C = dyn_cast<ConstantExpr>(V))
    for (const Use &Op : C->operands())
      O.merge(originsOf(Op.get()));
  else if (const auto *A = dyn_cast<Argument>(V))
    O.Outside = A->getParent() == &Kernel; // a program function's: from its calls
  return O;
}

Origins KernelAnalysis::heldIn(const Origins &Pointer) {
  Origins O;
  for (const AllocaInst *A : Pointer.Stack) {
    auto It = Held.find(A);
    if (It != Held.end())
      O.merge(It->second);
  }
  // A value read through a pointer that depends on the thread's id may be
  // another for each thread; one read from shared memory is shared.
  O.ThreadId |= Pointer.ThreadId;
  O.Outside |= Pointer.Outside;
  return O;
}

bool KernelAnalysis::transfer(Instruction &I) {
  Origins O;
  bool Changed = false;
  auto Hold = [&](const Value *Pointer, const Origins &Value) {
    Origins P = originsOf(Pointer);
    Origins Stored = Value;
    // What thread 0's guarded code stores, the other threads' copies lack.
    Stored.ThreadId |= P.ThreadId || masterOnly(I, Master::ThreadZeroGuard);
    for (const AllocaInst *A : P.Stack)
      Changed |= Held[A].merge(Stored);
  };
  if (auto *A = dyn_cast<AllocaInst>(&I)) {
    O.Stack.insert(A);
  } else if (auto *L = dyn_cast<LoadInst>(&I)) {
    O = heldIn(originsOf(L->getPointerOperand()));
  } else if (auto *S = dyn_cast<StoreInst>(&I)) {
    Hold(S->getPointerOperand(), originsOf(S->getValueOperand()));
  } else if (auto *X = dyn_cast<AtomicRMWInst>(&I)) {
    Hold(X->getPointerOperand(), originsOf(X->getValOperand()));
    O = heldIn(originsOf(X->getPointerOperand()));
  } else if (auto *X = dyn_cast<AtomicCmpXchgInst>(&I)) {
    Hold(X->getPointerOperand(), originsOf(X->getNewValOperand()));
    O = heldIn(originsOf(X->getPointerOperand()));
  } else if (auto *M = dyn_cast<MemTransferInst>(&I)) {
    Hold(M->getRawDest(), heldIn(originsOf(M->getRawSource())));
  } else if (auto *M = dyn_cast<MemSetInst>(&I)) {
    Hold(M->getRawDest(), originsOf(M->getValue()));
  } else if (auto *Call = dyn_cast<CallBase>(&I)) {
    Function *Callee = dyn_cast<Function>(Call->getCalledOperand()->stripPointerCasts());
    if (Callee && Sequential.contains(Callee)) {
      for (auto [Param, Arg] : zip(Callee->args(), Call->args()))
        Changed |= Values[&Param].merge(originsOf(Arg.get()));
      O = Returned.lookup(Callee);
    } else if (Callee && threadIdQuery(Callee->getName())) {
      O.ThreadId = true;
    } else if (!isa<IntrinsicInst>(Call)) {
      O.Outside = I.getType()->isPointerTy();
    } else {
      for (const Use &Arg : Call->args())
        O.merge(originsOf(Arg.get()));
    }
  } else if (auto *R = dyn_cast<ReturnInst>(&I)) {
    if (Value *V = R->getReturnValue())
      Changed |= Returned[I.getFunction()].merge(originsOf(V));
  } else if (auto *Phi = dyn_cast<PHINode>(&I);
             Phi && !masterOnly(I, Master::ThreadZeroGuard) &&
             any_of(Phi->blocks(), [&](const BasicBlock *From) {
               return guardsThreadZero(*From->getTerminator()) ||
                      masterOnly(*From->getTerminator(), Master::ThreadZeroGuard);
             })) {
    // Thread 0's way from its guarded code meets the other threads' here.
    O.ThreadId = true;
  } else {
    // Arithmetic, comparisons, casts, address arithmetic, phis, selects:
    // from each operand (inttoptr makes an address of anything).
    for (const Use &Op : I.operands())
      O.merge(originsOf(Op.get()));
    if (isa<IntToPtrInst>(&I))
      O.Outside = true;
  }
  if (!O.empty())
    Changed |= Values[&I].merge(O);
  return Changed;
}

void KernelAnalysis::propagate() {
  for (bool Changed = true; Changed;) {
    Changed = false;
    for (Function *F : Sequential)
      for (Instruction &I : instructions(*F))
        Changed |= transfer(I);
  }
}

std::optional<std::string> KernelAnalysis::sharedStackVariables(const Function &Region, const Origins &Args) {
  // Each thread would pass its own copy; thread 0's does for all when the
  // region only reads it, and no thread's copy holds its id.
  const DataLayout &Layout = Region.getDataLayout();
  const uint64_t Slot = Layout.getPointerSize();
  auto Refuse = [&](const Instruction &At) -> std::optional<std::string> {
    return "parallel region '" + Region.getName().str() +
           "' is passed the address of a variable of the kernel's own, which it may write or keep, " +
           where(At);
  };
  auto IntoArgs = [&](const Value *Pointer) {
    return any_of(originsOf(Pointer).Stack, [&](const AllocaInst *A) { return Args.Stack.contains(A); });
  };
  for (Function *F : Sequential)
    for (Instruction &I : instructions(*F)) {
      // A copy into the shared variables is not followed to its slots.
      if (auto *Copy = dyn_cast<MemTransferInst>(&I);
          Copy && IntoArgs(Copy->getRawDest()) && !heldIn(originsOf(Copy->getRawSource())).Stack.empty())
        return Refuse(I);
      auto *Store = dyn_cast<StoreInst>(&I);
      if (!Store)
        continue;
      Origins Value = originsOf(Store->getValueOperand());
      if (Value.Stack.empty() || !IntoArgs(Store->getPointerOperand()))
        continue; // not a stack address into the region's shared variables
      APInt Offset(Layout.getIndexTypeSizeInBits(Store->getPointerOperand()->getType()), 0);
      const auto *Base = dyn_cast<AllocaInst>(Store->getPointerOperand()->stripAndAccumulateConstantOffsets(
          Layout, Offset, /*AllowNonInbounds=*/true));
      if (!Base || !Args.Stack.contains(Base) || Offset.isNegative())
        return Refuse(I);                                // a slot the analysis cannot name
      uint64_t Index = Offset.getZExtValue() / Slot + 2; // after the global and bound thread ids
      if (Offset.getZExtValue() % Slot || Index >= Region.arg_size())
        return Refuse(I);
      // The team's thread 0 alone may write it, as the region's parallel
      // reduction's master: that thread's copy is thread 0's.
      const Argument &Param = *Region.getArg(unsigned(Index));
      if (!Param.hasNoCaptureAttr() || !(Param.onlyReadsMemory() || writtenByReductionMaster(Param)))
        return Refuse(I);
      for (const AllocaInst *A : Value.Stack) {
        Origins Holds = Held.lookup(A);
        if (Holds.ThreadId || !Holds.Stack.empty())
          return Refuse(I);
      }
    }
  return std::nullopt;
}

std::optional<std::string> KernelAnalysis::checkRegion(CallBase &Call) {
  if (Call.arg_size() < 9)
    return "a parallel region call of an unknown form, " + where(Call);
  if (originsOf(Call.getArgOperand(2)).ThreadId || originsOf(Call.getArgOperand(3)).ThreadId)
    return "a parallel region whose if or num_threads depends on the thread's id, " + where(Call);
  auto *Region = dyn_cast<Function>(Call.getArgOperand(5)->stripPointerCasts());
  if (!Region || Region->isDeclaration())
    return "a parallel region whose function is not known, " + where(Call);
  Origins Args = originsOf(Call.getArgOperand(7));
  if (Args.Outside || Args.ThreadId)
    return "a parallel region's shared variables outside the kernel's stack, " + where(Call);
  Origins Shared = heldIn(Args);
  if (!Shared.Stack.empty())
    if (auto Why = sharedStackVariables(*Region, Args))
      return Why;
  if (Shared.ThreadId)
    return "parallel region '" + Region->getName().str() + "' is passed the thread's id, " + where(Call);
  return regionWaits(Call, *Region);
}

std::optional<std::string> KernelAnalysis::check(Instruction &I) {
  // What the team's thread 0 alone runs on a GPU too (a teams reduction's
  // combining into the program's variable) may store where threads share.
  auto Shared = [&](const Value *Pointer) {
    Origins P = originsOf(Pointer);
    return (P.Stack.empty() || P.Outside) && !masterOnly(I, Master::TeamsReduction) &&
           !masterOnly(I, Master::ThreadZeroGuard);
  };
  if (auto *S = dyn_cast<StoreInst>(&I); S && Shared(S->getPointerOperand()))
    return "a store outside parallel regions to memory the threads share, " + where(I);
  const Value *Atomic = nullptr;
  if (auto *X = dyn_cast<AtomicRMWInst>(&I))
    Atomic = X->getPointerOperand();
  else if (auto *X = dyn_cast<AtomicCmpXchgInst>(&I))
    Atomic = X->getPointerOperand();
  if (Atomic && Shared(Atomic))
    return "an atomic outside parallel regions on memory the threads share, " + where(I);
  const Value *Condition = nullptr;
  if (auto *B = dyn_cast<BranchInst>(&I); B && B->isConditional())
    Condition = B->getCondition();
  else if (auto *S = dyn_cast<SwitchInst>(&I))
    Condition = S->getCondition();
  else if (auto *S = dyn_cast<SelectInst>(&I); S && !all_of(S->users(), [&](const User *U) {
                                                 // openmp-opt's guard's `thread id == 0 && ...`.
                                                 const auto *Guard = dyn_cast<Instruction>(U);
                                                 return Guard && guardsThreadZero(*Guard);
                                               }))
    Condition = S->getCondition();
  else if (isa<IndirectBrInst>(I))
    return "an indirect branch " + where(I);
  // openmp-opt's guard: thread 0 alone runs the code behind it, as here,
  // and whatever that code branches on.
  if (Condition && originsOf(Condition).ThreadId && !guardsThreadZero(I) &&
      !masterOnly(I, Master::ThreadZeroGuard))
    return "a branch on the thread's id outside parallel regions, " + where(I);
  auto *Call = dyn_cast<CallBase>(&I);
  if (!Call)
    return std::nullopt;
  if (auto *Intrinsic = dyn_cast<IntrinsicInst>(Call)) {
    if (harmlessIntrinsic(*Intrinsic))
      return std::nullopt;
    if (auto *M = dyn_cast<MemIntrinsic>(Intrinsic); M && !Shared(M->getRawDest()))
      return std::nullopt;
    return "intrinsic '" + Intrinsic->getCalledFunction()->getName().str() + "' outside parallel regions, " +
           where(I);
  }
  Function *Callee = dyn_cast<Function>(Call->getCalledOperand()->stripPointerCasts());
  if (Sequential.contains(Callee))
    return std::nullopt;
  StringRef Name = Callee->getName();
  if (parallelEntry(Name) && masterOnly(I, Master::ThreadZeroGuard))
    return "a parallel region the team's thread 0 alone starts, " + where(I);
  if (parallelEntry(Name))
    return checkRegion(*Call);
  // The checker's call before an access (CheckedAccesses.h): an access of
  // the kernel's own stack is each thread's own, and keeps no history.
  if (Name == CheckAccessEntry && Call->arg_size() > 0 && !Shared(Call->getArgOperand(0)))
    return std::nullopt;
  if (sequentialEntry(Name))
    return std::nullopt;
  return "a call of '" + Name.str() + "' outside parallel regions, " + where(I);
}

std::optional<std::string> KernelAnalysis::blocker() {
  if (auto Why = collectSequential())
    return Why;
  propagate();
  for (Function *F : Sequential)
    for (Instruction &I : instructions(*F))
      if (auto Why = check(I))
        return Why;
  return std::nullopt;
}

/// Whether the program's code may keep `F`'s address anywhere but in the
/// arguments of the runtime's calls (a parallel region's function, a
/// reduction's callbacks): where the program's own calls through a pointer
/// may find it. The runtime's code keeps only its own.
namespace {

bool escapes(const Function &F) {
  for (const Use &U : F.uses()) {
    const auto *I = dyn_cast<Instruction>(U.getUser());
    if (!I)
      return true; // a constant's, a global's initializer
    if (I->getFunction()->hasFnAttribute(GpuRuntimeAttribute))
      continue;
    const auto *Call = dyn_cast<CallBase>(I);
    if (!Call)
      return true;
    if (Call->isCallee(&U))
      continue;
    // The program's declaration of a runtime entry may differ in type from
    // the runtime's: the call's callee, whatever its type.
    const auto *Callee = dyn_cast<Function>(Call->getCalledOperand()->stripPointerCasts());
    if (!Callee || !(Callee->hasFnAttribute(GpuRuntimeAttribute) || Callee->getName().starts_with("__kmpc_")))
      return true;
  }
  return false;
}

/// The kernel environment's configuration field `Field` (LLVM 22's
/// ConfigurationEnvironmentTy: 0 UseGenericStateMachine, 2 ExecMode).
std::optional<uint64_t> configuration(const GlobalVariable &Env, unsigned Field) {
  auto *Configuration = Env.hasInitializer()
                            ? dyn_cast_or_null<ConstantStruct>(Env.getInitializer()->getAggregateElement(0u))
                            : nullptr;
  auto *Value =
      Configuration ? dyn_cast_or_null<ConstantInt>(Configuration->getAggregateElement(Field)) : nullptr;
  if (!Value)
    return std::nullopt;
  return Value->getZExtValue();
}

/// The kernel environment's execution mode (OMPTgtExecModeFlags), if `Env`
/// has the layout of LLVM 22's KernelEnvironmentTy.
std::optional<uint64_t> executionMode(const GlobalVariable &Env) { return configuration(Env, 2); }

} // namespace

const char *blockModeName(BlockMode Mode) {
  static constexpr const char *Names[] = {"fibers", "loops", "rounds"};
  return Names[static_cast<int>(Mode)];
}

std::vector<KernelBlockPlan> planBlockLoops(Module &M, bool Enabled) {
  static constexpr StringLiteral EnvironmentSuffix = "_kernel_environment";
  std::vector<Function *> AddressTaken, Escaped;
  // The runtime's entries in llvm.used are kept for their names, not called
  // through pointers (as TeamSharedReach.cpp counts them).
  for (Function &F : M)
    if (!F.isDeclaration() && F.hasAddressTaken(nullptr, /*IgnoreCallbackUses=*/false,
                                                /*IgnoreAssumeLikeCalls=*/true, /*IgnoreLLVMUsed=*/true)) {
      AddressTaken.push_back(&F);
      if (escapes(F))
        Escaped.push_back(&F);
    }
  std::vector<KernelBlockPlan> Plans;
  std::vector<std::pair<Function *, SmallVector<CallInst *, 8>>> Split;
  bool Coroutines = false;
  // The image's kernels: each has a kernel environment, but ompx_bare ones.
  std::vector<Function *> Kernels;
  for (Function &F : M)
    if (!F.isDeclaration() && F.hasFnAttribute("kernel"))
      Kernels.push_back(&F);
  for (Function *Kernel : Kernels) {
    KernelBlockPlan Plan{Kernel->getName().str(), BlockMode::Fibers, {}, {}};
    const GlobalVariable *Env = M.getGlobalVariable((Kernel->getName() + EnvironmentSuffix).str(), true);
    std::optional<uint64_t> Mode =
        Env ? executionMode(*Env) : std::optional<uint64_t>(omp::OMP_TGT_EXEC_MODE_BARE);
    KernelAnalysis Analysis(*Kernel, AddressTaken, Escaped);
    SmallVector<CallInst *, 8> Barriers;
    if (!Enabled)
      Plan.Reason = "OMPSIM_GPU_BLOCK_LOOPS=0";
    else if (!Mode)
      Plan.Reason = "its kernel environment has an unknown layout";
    else if (*Mode == omp::OMP_TGT_EXEC_MODE_BARE) {
      if (auto Why = Analysis.bareBlocker(Barriers))
        Plan.Reason = "ompx_bare mode: " + *Why;
      else
        Plan.Mode = BlockMode::Rounds;
    } else if (*Mode == omp::OMP_TGT_EXEC_MODE_GENERIC_SPMD) {
      // Every thread runs its sequential part: once, on thread 0, where
      // each thread's run of it would do what thread 0's does.
      if (auto Why = Analysis.blocker())
        Plan.Reason = "Generic-SPMD mode, whose every thread runs its sequential part: " + *Why;
      else
        Plan.Mode = BlockMode::Loops;
    } else if (*Mode == omp::OMP_TGT_EXEC_MODE_GENERIC && configuration(*Env, 0).value_or(0) == 0)
      Plan.Reason = "generic mode with the compiler's own state machine";
    else if (*Mode != omp::OMP_TGT_EXEC_MODE_SPMD && *Mode != omp::OMP_TGT_EXEC_MODE_GENERIC)
      Plan.Reason = "an unknown execution mode";
    else if (auto Why = *Mode == omp::OMP_TGT_EXEC_MODE_SPMD ? Analysis.blocker() : Analysis.genericBlocker())
      Plan.Reason = *Why;
    else
      Plan.Mode = BlockMode::Loops;
    if (Plan.Mode != BlockMode::Loops)
      Analysis.dropSplits();
    if (Plan.Mode == BlockMode::Loops) {
      Plan.RoundRegions = Analysis.applySplits();
      FunctionCallee Entry = M.getOrInsertFunction(RunAsLoopsEntry, Type::getVoidTy(M.getContext()));
      BasicBlock &First = Kernel->getEntryBlock();
      BasicBlock::iterator At = First.getFirstInsertionPt();
      while (isa<AllocaInst>(*At))
        ++At;
      IRBuilder<>(&First, At).CreateCall(Entry);
    }
    if (Plan.Mode == BlockMode::Rounds)
      Split.emplace_back(Kernel, std::move(Barriers));
    Coroutines |= !Plan.RoundRegions.empty();
    Plans.push_back(std::move(Plan));
  }
  // After every kernel's analysis, as the split moves a kernel's code.
  for (auto &[Kernel, Barriers] : Split)
    splitAtBarriers(*Kernel, Barriers);
  if (Coroutines || !Split.empty())
    lowerRounds(M);
  return Plans;
}

} // namespace ompsim::sim::gpu

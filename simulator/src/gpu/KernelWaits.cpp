//===- KernelWaits.cpp - the waits a kernel or a region may reach ---------===//
#include "KernelAnalysis.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"

using namespace llvm;

namespace ompsim::sim::gpu {

/// What the virtual GPU makes a thread wait for: a barrier, a warp
/// collective, a spin (VirtualGpu.h).
bool waits(StringRef Name) {
  static constexpr StringLiteral Waits[] = {
      "__ompsim_vgpu_sync_block",      "__ompsim_vgpu_sync_block_at",   "__ompsim_vgpu_sync_threads",
      "__ompsim_vgpu_sync_threads_at", "__ompsim_vgpu_sync_warp",       "__ompsim_vgpu_shuffle",
      "__ompsim_vgpu_ballot",          "__ompsim_vgpu_active_mask",     "__ompsim_vgpu_pause",
      "__ompsim_vgpu_run_as_loops",    "__ompsim_vgpu_for_each_thread", "__ompsim_vgpu_run_as_thread",
      "__ompsim_vgpu_run_in_rounds"};
  // The executor serves the ompx API: its collectives wait, its ids and
  // extents do not. An OpenMP entry the runtime does not define is unknown.
  static constexpr StringLiteral OmpxQueries[] = {"ompx_thread_id", "ompx_block_dim", "ompx_block_id",
                                                  "ompx_grid_dim"};
  if (is_contained(OmpxQueries, Name))
    return false;
  return is_contained(Waits, Name) || Name.starts_with("ompx_") || Name.starts_with("__kmpc_");
}

std::string where(const Instruction &I) { return "in function '" + I.getFunction()->getName().str() + "'"; }

namespace {

/// The runtime's entries that call through a pointer only the functions
/// the call hands them: the loop entries of OpenMPIRBuilder's form
/// (flang-22's) their loop's body, the reductions their combining functions
/// (GPU device runtime, Workshare.cpp and Reduction.cpp).
bool callsOnlyWhatItIsHanded(StringRef Name) {
  return Name.starts_with("__kmpc_for_static_loop_") || Name.starts_with("__kmpc_distribute_static_loop_") ||
         Name.starts_with("__kmpc_distribute_for_static_loop_") || Name == ParallelReductionEntry ||
         Name == TeamsReductionEntry;
}

} // namespace

std::optional<std::string> KernelAnalysis::firstWait(const Function &Root, Runner By, bool ThroughPointers) {
  SetVector<const Function *> Reached;
  Reached.insert(&Root);
  for (size_t N = 0; N < Reached.size(); ++N)
    for (const Instruction &I : instructions(*Reached[N])) {
      const auto *Call = dyn_cast<CallBase>(&I);
      if (!Call || isa<IntrinsicInst>(Call))
        continue;
      if (Call->isInlineAsm())
        return "inline assembly " + where(I);
      const auto *Callee = dyn_cast<Function>(Call->getCalledOperand()->stripPointerCasts());
      if (!Callee) {
        if (!ThroughPointers)
          continue;
        // The runtime calls what it was handed (a region, a reduction's
        // callback); the program, what its own pointers may hold.
        for (const Function *F : runtime(*Reached[N]) ? AddressTaken : Escaped)
          Reached.insert(F);
        continue;
      }
      StringRef Name = Callee->getName();
      if (Reached[N] == &Root && ((By == Runner::BareKernel && blockBarrierEntry(Name)) ||
                                  (By == Runner::RegionRounds && regionBarrierEntry(Name))))
        continue;
      if (By == Runner::MainThread) {
        // The kernel's start and end: thread 0 alone, without their barriers.
        if (Name == "__kmpc_target_init" || Name == "__kmpc_target_deinit")
          continue;
        // Outside regions the main thread is a team of one, whose barrier
        // and parallel reduction (a teams reduction's, at its level) return
        // without waiting.
        if (regionBarrierEntry(Name) || Name == ParallelReductionEntry)
          continue;
        if (parallelEntry(Name)) {
          // The main thread's call, in the kernel: the split may rewrite it.
          if (auto Why = checkGenericRegion(const_cast<CallBase &>(*Call)))
            return Why;
          continue;
        }
      }
      // Such an entry calls what this call hands it, not whatever the
      // runtime was handed anywhere.
      if (callsOnlyWhatItIsHanded(Name) && !Callee->isDeclaration() && Reached[N] != Callee) {
        if (auto Wait = firstWait(*Callee, Runner::Thread, /*ThroughPointers=*/false))
          return Wait;
        // Those of its parameters it uses (the simulated GPU's reductions
        // leave the inter-warp copy, with its barriers, alone).
        for (const Use &Arg : Call->args())
          if (const auto *Handed = dyn_cast<Function>(Arg->stripPointerCasts());
              Handed &&
              (Arg.getOperandNo() >= Callee->arg_size() || !Callee->getArg(Arg.getOperandNo())->use_empty()))
            Reached.insert(Handed);
        continue;
      }
      if (!Callee->isDeclaration()) {
        Reached.insert(Callee);
        continue;
      }
      if (waits(Name))
        return (By == Runner::MainThread ? "the main thread's code outside parallel regions may reach '"
                                         : "'") +
               Name.str() + "' (a barrier, a warp collective or a spin), from function '" +
               Reached[N]->getName().str() + "'";
    }
  return std::nullopt;
}

std::optional<std::string> KernelAnalysis::checkGenericRegion(CallBase &Call) {
  if (Call.arg_size() < 9)
    return "a parallel region call of an unknown form, " + where(Call);
  const size_t SplitsBefore = Splits.size();
  for (unsigned Operand : {5u, 6u}) { // the region, its wrapper
    Value *Fn = Call.getArgOperand(Operand)->stripPointerCasts();
    if (Operand == 6 && isa<ConstantPointerNull>(Fn))
      continue;
    // A region split at its barriers runs without its wrapper.
    if (Operand == 6 && Splits.size() > SplitsBefore)
      continue;
    auto *Region = dyn_cast<Function>(Fn);
    if (!Region || Region->isDeclaration())
      return "a parallel region whose function is not known, " + where(Call);
    if (Operand == 5) {
      if (auto Why = regionWaits(Call, *Region))
        return Why;
    } else if (auto Wait = firstWait(*Region, Runner::Thread)) {
      return "parallel region '" + Region->getName().str() + "' may reach " + *Wait;
    }
  }
  return std::nullopt;
}

std::optional<std::string> KernelAnalysis::regionWaits(CallBase &Call, Function &Region) {
  std::optional<std::string> Wait = firstWait(Region, Runner::Thread);
  if (!Wait)
    return std::nullopt;
  // Its threads run in rounds where its only waits are its own barriers.
  if (Function *Rounds = splitRegion(Call, Region)) {
    if (!firstWait(*Rounds, Runner::RegionRounds)) {
      Splits.push_back({&Call, Rounds});
      return std::nullopt;
    }
    Rounds->eraseFromParent();
  }
  return "parallel region '" + Region.getName().str() + "' may reach " + *Wait;
}

std::vector<std::string> KernelAnalysis::applySplits() {
  std::vector<std::string> Names;
  for (const RegionSplit &Split : Splits) {
    Names.push_back(Split.Call->getArgOperand(5)->stripPointerCasts()->getName().str());
    runRegionInRounds(*Split.Call, *Split.Rounds);
  }
  Splits.clear();
  return Names;
}

void KernelAnalysis::dropSplits() {
  for (const RegionSplit &Split : Splits)
    Split.Rounds->eraseFromParent();
  Splits.clear();
}

std::optional<std::string> KernelAnalysis::genericBlocker() {
  // The main thread runs everything but the regions in either mode, so only
  // its waits matter: a barrier among the workers it would not meet.
  return firstWait(Kernel, Runner::MainThread);
}

std::optional<std::string> KernelAnalysis::bareBlocker(SmallVectorImpl<CallInst *> &Barriers) {
  if (auto Why = splittableAtBarriers(Kernel, Barriers))
    return Why;
  if (auto Wait = firstWait(Kernel, Runner::BareKernel))
    return "it may reach " + *Wait + ", not one of the kernel's own block barriers";
  return std::nullopt;
}

} // namespace ompsim::sim::gpu

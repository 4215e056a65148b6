//===- KernelAnalysis.h - which kernels' blocks run as loops -----*- C++ -*-===//
//
// The analysis behind planBlockLoops() (BlockLoops.h), one kernel at a time:
// BlockLoops.cpp follows the values of an SPMD kernel's code outside its
// parallel regions; KernelWaits.cpp finds the waits (barriers, warp
// collectives, spins) a kernel's code or a region may reach, and splits
// regions and ompx_bare kernels whose only waits are their own barriers
// (BlockRounds.h). Internal to the executor's GPU code.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_SIMULATOR_GPU_KERNELANALYSIS_H
#define OMPSIM_SIMULATOR_GPU_KERNELANALYSIS_H

#include "BlockLoops.h"
#include "BlockRounds.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instructions.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ompsim::sim::gpu {

using llvm::AllocaInst;
using llvm::Argument;
using llvm::ArrayRef;
using llvm::CallBase;
using llvm::CallInst;
using llvm::DenseMap;
using llvm::DominatorTree;
using llvm::Function;
using llvm::Instruction;
using llvm::SetVector;
using llvm::SmallPtrSet;
using llvm::SmallVector;
using llvm::SmallVectorImpl;
using llvm::StringRef;
using llvm::Value;

/// What the virtual GPU makes a thread wait for: a barrier, a warp
/// collective, a spin (VirtualGpu.h).
bool waits(StringRef Name);

/// "in function '...'", of `I`'s function.
std::string where(const Instruction &I);

/// The runtime's reductions of a parallel region's and of a kernel's teams:
/// each returns 1 to the team's thread 0 alone (GPU device runtime,
/// Reduction.cpp).
inline constexpr llvm::StringLiteral ParallelReductionEntry = "__kmpc_nvptx_parallel_reduce_nowait_v2";
inline constexpr llvm::StringLiteral TeamsReductionEntry = "__kmpc_nvptx_teams_reduce_nowait_v2";

/// The runtime's entries that start a parallel region.
inline bool parallelEntry(StringRef Name) {
  return Name == "__kmpc_parallel_60" || Name == "__kmpc_parallel_51";
}

/// Where a value of the kernel's code outside parallel regions may come
/// from: the stack variables (allocas) a pointer may point into, the
/// thread's id, or anything else outside the kernel's own stack (an
/// argument, a global, a pointer read from memory the threads share).
struct Origins {
  SmallPtrSet<const AllocaInst *, 4> Stack;
  bool ThreadId = false;
  bool Outside = false;

  bool merge(const Origins &O) {
    bool Changed = false;
    for (const AllocaInst *A : O.Stack)
      Changed |= Stack.insert(A).second;
    if (O.ThreadId && !ThreadId)
      Changed = ThreadId = true;
    if (O.Outside && !Outside)
      Changed = Outside = true;
    return Changed;
  }
  bool empty() const { return Stack.empty() && !ThreadId && !Outside; }
};

/// One kernel's analysis (see BlockLoops.h).
class KernelAnalysis {
public:
  KernelAnalysis(Function &Kernel, ArrayRef<Function *> AddressTaken, ArrayRef<Function *> Escaped)
      : Kernel(Kernel), AddressTaken(AddressTaken), Escaped(Escaped) {}

  /// Why the SPMD kernel's blocks cannot run as loops, or nothing.
  std::optional<std::string> blocker();
  /// Why the generic-mode kernel's blocks cannot run as loops, or nothing:
  /// its main thread's code may reach a wait but through the kernel's start,
  /// end and parallel regions, or a region may reach one.
  std::optional<std::string> genericBlocker();
  /// Why the ompx_bare kernel cannot run in rounds, or nothing: each wait
  /// it may reach is one of its own calls of a block barrier (`Barriers`,
  /// where the executor splits it, BlockRounds.h).
  std::optional<std::string> bareBlocker(SmallVectorImpl<CallInst *> &Barriers);
  /// The parallel regions the analysis split at their barriers: they run
  /// in rounds if the kernel runs as loops (applySplits()); else they are
  /// dropped (dropSplits()).
  /// applySplits() gives the regions' names.
  std::vector<std::string> applySplits();
  void dropSplits();

private:
  bool runtime(const Function &F) const { return F.hasFnAttribute(GpuRuntimeAttribute); }
  /// The program's functions the code outside regions runs in.
  std::optional<std::string> collectSequential();
  void propagate();
  bool transfer(Instruction &I);
  Origins originsOf(const Value *V);
  Origins heldIn(const Origins &Pointer);
  std::optional<std::string> check(Instruction &I);
  std::optional<std::string> checkRegion(CallBase &Call);
  /// Why `Region` cannot be given thread 0's copies of the kernel's stack
  /// variables whose addresses the shared variables `Args` hold.
  std::optional<std::string> sharedStackVariables(const Function &Region, const Origins &Args);
  /// What tells the team's thread 0 alone to run some code: a parallel or a
  /// teams reduction's `== 1` (it holds the team's values), or openmp-opt's
  /// guard of a Generic-SPMD kernel's sequential code (guardsThreadZero()).
  enum class Master { ParallelReduction, TeamsReduction, ThreadZeroGuard };
  /// Whether `I` runs behind `By`: in a block that the branch's way to the
  /// team's thread 0 dominates, which that thread alone runs on a GPU.
  bool masterOnly(const Instruction &I, Master By);
  /// Whether `Terminator` is openmp-opt's guard of a Generic-SPMD kernel's
  /// sequential code: a branch whose first way the team's thread 0 alone
  /// takes, its other the other threads, which meet it at the barrier after.
  bool guardsThreadZero(const Instruction &Terminator);
  /// Whether `Param` of a region is used only where its parallel reduction
  /// told the team's thread 0 it holds the values (masterOnly()).
  bool writtenByReductionMaster(const Argument &Param);
  /// Who runs the code firstWait() looks at: any thread, a generic-mode
  /// kernel's main thread (for which the kernel's start and end do not
  /// count, and a parallel region's call is its functions' check), an
  /// ompx_bare kernel split at its own block barriers, or a parallel
  /// region's thread split at its own barriers (which do not count).
  enum class Runner { Thread, MainThread, BareKernel, RegionRounds };
  /// The first wait `Root` may reach through its calls, or nothing; without
  /// `ThroughPointers`, through its direct calls alone.
  std::optional<std::string> firstWait(const Function &Root, Runner By, bool ThroughPointers = true);
  /// Why a generic-mode parallel region (its function and wrapper) may wait.
  std::optional<std::string> checkGenericRegion(CallBase &Call);
  /// Why the region `Call` hands `Region` may wait, or nothing; nothing too
  /// where its only waits are its own barriers, and its split (a coroutine,
  /// BlockRounds.h) joins Splits.
  std::optional<std::string> regionWaits(CallBase &Call, Function &Region);

  Function &Kernel;
  /// The functions whose address is taken: those a call of the runtime's
  /// through a pointer may reach.
  ArrayRef<Function *> AddressTaken;
  /// Those whose address is kept other than by a call of the runtime's: those
  /// a call of the program's through a pointer may reach.
  ArrayRef<Function *> Escaped;
  SetVector<Function *> Sequential;
  DenseMap<const Value *, Origins> Values;
  DenseMap<const AllocaInst *, Origins> Held;
  DenseMap<const Function *, Origins> Returned;
  std::vector<RegionSplit> Splits;
  /// Per function, the edges masterOnly() looks for (each reduction's
  /// `== 1`, each guard's way to thread 0), and the dominator tree that
  /// places an instruction behind them.
  struct MasterEdges {
    std::unique_ptr<DominatorTree> Tree;
    SmallVector<std::pair<Master, llvm::BasicBlockEdge>, 2> Edges;
  };
  DenseMap<const Function *, MasterEdges> Masters;
};

} // namespace ompsim::sim::gpu

#endif // OMPSIM_SIMULATOR_GPU_KERNELANALYSIS_H

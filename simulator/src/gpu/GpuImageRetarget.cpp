//===- GpuImageRetarget.cpp - GPU device images on the simulated device ---===//
//
// See GpuImageRetarget.h. What a GPU module holds that the host's code
// generator cannot take as it is, measured over the suites' programs: its
// triple, data layout and target attributes; kernel calling conventions;
// addrspace(3) globals, which a GPU keeps once per block (amdgcn's already
// gathered into LDS structs with absolute addresses); amdgcn's allocas in
// addrspace(5); nvptx's printf, which packs its arguments into a buffer for
// `vprintf`; and the device math libraries' names. Address spaces 1, 3, 4
// and 5 are plain memory to the host's code generator.
//
//===----------------------------------------------------------------------===//
#include "GpuImageRetarget.h"

#include "DeviceMathBindings.h"
#include "TeamSharedGuards.h"
#include "TeamSharedReach.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Frontend/OpenMP/OMPGridValues.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/ReplaceConstant.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace ompsim::sim::gpu {

using namespace llvm;

namespace {

/// The first user of `V` of type `UserT`, looking through constants (a
/// constant expression, an initializer), or null.
template <typename UserT> const UserT *firstUser(const Value &V) {
  SmallVector<const User *, 8> Work(V.user_begin(), V.user_end());
  for (size_t I = 0; I < Work.size() && I < 4096; ++I) {
    if (const auto *Found = dyn_cast<UserT>(Work[I]))
      return Found;
    if (isa<Constant>(Work[I]))
      Work.append(Work[I]->user_begin(), Work[I]->user_end());
  }
  return nullptr;
}

/// A global whose initializer holds `V` (through constants), or null.
const GlobalValue *globalHolding(const Value &V) { return firstUser<GlobalValue>(V); }

bool isGpuCallingConv(CallingConv::ID CC) {
  switch (CC) {
  case CallingConv::PTX_Kernel:
  case CallingConv::PTX_Device:
  case CallingConv::AMDGPU_KERNEL:
  case CallingConv::AMDGPU_Gfx:
  case CallingConv::AMDGPU_CS:
  case CallingConv::AMDGPU_ES:
  case CallingConv::AMDGPU_GS:
  case CallingConv::AMDGPU_HS:
  case CallingConv::AMDGPU_LS:
  case CallingConv::AMDGPU_PS:
  case CallingConv::AMDGPU_VS:
    return true;
  default:
    return false;
  }
}

/// Function attributes only a GPU's code generator reads.
bool isGpuAttribute(StringRef Kind) {
  return Kind == "target-cpu" || Kind == "target-features" || Kind == "uniform-work-group-size" ||
         Kind.starts_with("nvvm.") || Kind.starts_with("amdgpu-");
}

/// An error about the image, in one line.
class Failure {
public:
  Failure(StringRef Image, GpuArch Arch) : Prefix(("image " + Image + " (" + archName(Arch) + "): ").str()) {}
  Error operator()(const Twine &What) const {
    return createStringError(inconvertibleErrorCode(), "%s", (Prefix + What.str()).c_str());
  }

private:
  std::string Prefix;
};

/// The intrinsics that only read a constant of the architecture (its warp
/// size, which the optimizer folds when it knows the target's features, not
/// at -O0): the constant, as the simulated GPU's warps have it.
void foldArchitectureConstants(Module &M, GpuArch Arch) {
  for (Function &F : M) {
    if (!F.isIntrinsic())
      continue;
    StringRef N = F.getName();
    if (N != "llvm.amdgcn.wavefrontsize" && N != "llvm.nvvm.read.ptx.sreg.warpsize")
      continue;
    Constant *Lanes =
        ConstantInt::get(F.getReturnType(), Arch == GpuArch::Amdgcn ? omp::AMDGPUGridValues64.GV_Warp_Size
                                                                    : omp::NVPTXGridValues.GV_Warp_Size);
    for (User *U : make_early_inc_range(F.users()))
      if (auto *Call = dyn_cast<CallInst>(U); Call && Call->getCalledFunction() == &F) {
        Call->replaceAllUsesWith(Lanes);
        Call->eraseFromParent();
      }
  }
}

/// GPU intrinsics and GPU assembly: code the host cannot run.
Error refuseGpuCode(Module &M, const Failure &Fail) {
  for (Function &F : M) {
    StringRef N = F.getName();
    if (F.isIntrinsic() &&
        (N.starts_with("llvm.nvvm.") || N.starts_with("llvm.amdgcn.") || N.starts_with("llvm.r600.")) &&
        !F.use_empty())
      return Fail(usedBy(F) + " calls " + N + ", a GPU intrinsic the simulated device does not run");
    for (Instruction &I : instructions(F))
      if (auto *Call = dyn_cast<CallBase>(&I); Call && Call->isInlineAsm())
        return Fail("function '" + F.getName() +
                    "' has GPU inline assembly, which the simulated device does not run");
  }
  return Error::success();
}

/// The address space of a pointer narrower than the host's that `T` is or
/// holds, in the GPU's `Layout`; none when it holds none.
std::optional<unsigned> narrowPointerIn(Type *T, const DataLayout &Layout) {
  if (auto *P = dyn_cast<PointerType>(T)) {
    if (Layout.getPointerSizeInBits(P->getAddressSpace()) < 64)
      return P->getAddressSpace();
    return std::nullopt;
  }
  if (auto *V = dyn_cast<VectorType>(T))
    return narrowPointerIn(V->getElementType(), Layout);
  if (auto *A = dyn_cast<ArrayType>(T))
    return narrowPointerIn(A->getElementType(), Layout);
  if (auto *S = dyn_cast<StructType>(T))
    for (Type *E : S->elements())
      if (auto AS = narrowPointerIn(E, Layout))
        return AS;
  return std::nullopt;
}

/// True when `T` has the same size in both layouts and, for an aggregate,
/// every element at the same offset: code the GPU's compiler wrote for it
/// reads the same bytes on the host (a narrow pointer's field then has 8
/// bytes of its own, the rest padding in the GPU's layout).
bool sameLayout(Type *T, const DataLayout &Gpu, const DataLayout &Host) {
  if (Gpu.getTypeAllocSize(T) != Host.getTypeAllocSize(T))
    return false;
  if (auto *A = dyn_cast<ArrayType>(T))
    return sameLayout(A->getElementType(), Gpu, Host);
  if (auto *V = dyn_cast<VectorType>(T))
    return sameLayout(V->getElementType(), Gpu, Host);
  if (auto *S = dyn_cast<StructType>(T)) {
    const StructLayout *G = Gpu.getStructLayout(S), *H = Host.getStructLayout(S);
    for (unsigned I = 0; I < S->getNumElements(); ++I) {
      if (G->getElementOffset(I) != H->getElementOffset(I))
        return false;
      Type *E = S->getElementType(I);
      if (E->isPointerTy()) {
        // A narrow pointer's field needs the host pointer's 8 bytes before
        // the next field (or the end).
        uint64_t Next = I + 1 < S->getNumElements() ? G->getElementOffset(I + 1) : G->getSizeInBytes();
        if (Next - G->getElementOffset(I) < Host.getTypeStoreSize(E))
          return false;
      } else if (!sameLayout(E, Gpu, Host)) {
        return false;
      }
    }
  }
  return true;
}

/// amdgcn's private (address space 5) and LDS (3) pointers are 32 bits;
/// the simulated GPU's are 64, the host's. Code that keeps one in memory
/// laid that memory out for 32 bits: where the next thing it keeps there
/// starts less than 8 bytes after the pointer (flang-22 hands a parallel
/// region pointers to its private variables 4 bytes apart), the host's
/// code would overwrite it, and where an aggregate that holds such pointers
/// is laid out differently by the host, its code would read other bytes.
/// Such an image is refused, naming the function. A pointer with 8 bytes of
/// its own is kept.
Error refuseNarrowPointersInMemory(Module &M, const DataLayout &HostLayout, const Failure &Fail) {
  const DataLayout &Layout = M.getDataLayout();
  auto Refuse = [&](const Function &F, unsigned AS) {
    return Fail("function '" + F.getName() + "' keeps " + Twine(Layout.getPointerSizeInBits(AS)) +
                "-bit pointers of address space " + Twine(AS) +
                (AS == 5   ? " (private)"
                 : AS == 3 ? " (LDS)"
                           : "") +
                " in memory laid out for that size, which the simulated GPU's 64-bit pointers would overrun");
  };
  struct Access {
    const Value *Base;
    int64_t Offset;
    std::optional<unsigned> NarrowAS; ///< a narrow pointer is what is accessed
  };
  for (Function &F : M) {
    std::vector<Access> Accesses;
    for (Instruction &I : instructions(F)) {
      Type *T = nullptr;
      const Value *Address = nullptr;
      if (auto *Load = dyn_cast<LoadInst>(&I)) {
        T = Load->getType();
        Address = Load->getPointerOperand();
      } else if (auto *Store = dyn_cast<StoreInst>(&I)) {
        T = Store->getValueOperand()->getType();
        Address = Store->getPointerOperand();
      } else if (auto *Rmw = dyn_cast<AtomicRMWInst>(&I)) {
        T = Rmw->getValOperand()->getType();
        Address = Rmw->getPointerOperand();
      } else if (auto *Cas = dyn_cast<AtomicCmpXchgInst>(&I)) {
        T = Cas->getNewValOperand()->getType();
        Address = Cas->getPointerOperand();
      } else if (auto *Gep = dyn_cast<GetElementPtrInst>(&I)) {
        // Indexing through a type that holds narrow pointers: its offsets
        // are the GPU's layout's, the same on the host only if its layout is.
        Type *Source = Gep->getSourceElementType();
        if (auto AS = narrowPointerIn(Source, Layout); AS && !sameLayout(Source, Layout, HostLayout))
          return Refuse(F, *AS);
        continue;
      } else {
        continue;
      }
      auto AS = narrowPointerIn(T, Layout);
      if (AS && !T->isPointerTy() && !sameLayout(T, Layout, HostLayout))
        return Refuse(F, *AS); // an aggregate or vector of them, moved whole
      APInt Offset(Layout.getIndexTypeSizeInBits(Address->getType()), 0);
      const Value *Base =
          Address->stripAndAccumulateConstantOffsets(Layout, Offset, /*AllowNonInbounds=*/true);
      Accesses.push_back({Base, Offset.getSExtValue(), T->isPointerTy() ? AS : std::nullopt});
    }
    for (const Access &Narrow : Accesses) {
      if (!Narrow.NarrowAS)
        continue;
      for (const Access &Other : Accesses)
        if (Other.Base == Narrow.Base && Other.Offset > Narrow.Offset && Other.Offset < Narrow.Offset + 8)
          return Refuse(F, *Narrow.NarrowAS);
    }
  }
  return Error::success();
}

/// flang-22's OpenMPIRBuilder emits a "keep alive" list of its own per
/// target region, each an appending global in llvm.metadata whose name the
/// module already had (llvm.compiler.used4, ...): LLVM takes them for plain
/// globals. Their entries go into the module's one llvm.compiler.used.
void foldStrayUsedLists(Module &M) {
  std::vector<GlobalVariable *> Stray;
  for (GlobalVariable &G : M.globals())
    if (G.hasAppendingLinkage() && G.getSection() == "llvm.metadata" &&
        G.getName().starts_with("llvm.compiler.used") && G.getName() != "llvm.compiler.used")
      Stray.push_back(&G);
  for (GlobalVariable *G : Stray) {
    SmallVector<GlobalValue *, 4> Kept;
    if (auto *List = dyn_cast_or_null<ConstantArray>(G->hasInitializer() ? G->getInitializer() : nullptr))
      for (Value *Op : List->operands())
        if (auto *Gv = dyn_cast<GlobalValue>(Op->stripPointerCasts()))
          Kept.push_back(Gv);
    G->eraseFromParent();
    appendToCompilerUsed(M, Kept);
  }
}

/// addrspace(3) globals: one block per team, each global at its offset.
Expected<uint64_t> placeTeamShared(Module &M, const DataLayout &Layout, bool Guarded, const Failure &Fail) {
  std::vector<GlobalVariable *> Shared;
  for (GlobalVariable &G : M.globals())
    if (G.getAddressSpace() == TeamSharedAddressSpace)
      Shared.push_back(&G);
  if (Shared.empty())
    return 0;
  // llvm.used and llvm.compiler.used keep a GPU's LDS from being dropped;
  // the globals are about to go.
  removeFromUsedLists(M, [](Constant *C) {
    auto *G = dyn_cast<GlobalVariable>(C->stripPointerCasts());
    return G && G->getAddressSpace() == TeamSharedAddressSpace;
  });
  std::vector<std::pair<GlobalVariable *, uint64_t>> Offsets;
  uint64_t Size = 0;
  for (GlobalVariable *G : Shared) {
    if (G->isDeclaration())
      return Fail("team-shared global '" + G->getName() + "' has no definition in the image");
    // clang-22 gives a team-shared static zero as its initializer, which a
    // GPU's backend drops: a team's block starts with whatever it held, and
    // the simulated GPU's with 0x7f bytes (vgpu::UnwrittenSharedByte).
    if (G->hasInitializer() && !isa<UndefValue>(G->getInitializer()) && !G->getInitializer()->isNullValue())
      return Fail("team-shared global '" + G->getName() +
                  "' has an initializer other than zero, which a GPU's shared memory cannot have");
    if (const GlobalValue *Other = globalHolding(*G))
      return Fail("global '" + Other->getName() + "' holds the address of team-shared '" + G->getName() +
                  "', which differs from team to team");
    Size = alignTo(Size, teamSharedAlign(*G, Layout));
    Offsets.emplace_back(G, Size);
    Size += Layout.getTypeAllocSize(G->getValueType());
  }
  Size = alignTo(Size, Align(16));
  std::vector<Constant *> Consts(Shared.begin(), Shared.end());
  convertUsersOfConstantsToInstructions(Consts);

  LLVMContext &Ctx = M.getContext();
  Type *I64 = Type::getInt64Ty(Ctx);
  PointerType *Ptr = PointerType::get(Ctx, 0);
  // Under the checker each global ends at a guard page (TeamSharedGuards.h).
  std::optional<GuardedTeamShared> Guards;
  if (Guarded) {
    Guards = placeBetweenGuards(M, Shared, Layout, GuardPageBytes);
    for (size_t I = 0; I < Offsets.size(); ++I)
      Offsets[I].second = Guards->Offsets[I];
    Size = Guards->Bytes;
  }
  FunctionCallee Entry = Guards ? M.getOrInsertFunction(GuardedTeamSharedEntry, Ptr, I64, Ptr, I64)
                                : M.getOrInsertFunction(TeamSharedEntry, Ptr, I64);
  // One call per function, at its entry: the team's block, as a team-shared
  // pointer, and each global at its offset.
  DenseMap<Function *, Value *> Bases;
  auto BaseOf = [&](Function *F) {
    auto [It, New] = Bases.try_emplace(F, nullptr);
    if (New) {
      IRBuilder<> B(&*F->getEntryBlock().getFirstInsertionPt());
      Value *Block = Guards ? B.CreateCall(Entry, {B.getInt64(Size), Guards->Vars, B.getInt64(Guards->Count)},
                                           "team.shared")
                            : B.CreateCall(Entry, {B.getInt64(Size)}, "team.shared");
      It->second =
          B.CreateAddrSpaceCast(Block, PointerType::get(Ctx, TeamSharedAddressSpace), "team.shared.as3");
    }
    return It->second;
  };
  for (auto &[G, Offset] : Offsets) {
    DenseMap<Function *, Value *> Places;
    for (Use &U : make_early_inc_range(G->uses())) {
      auto *Inst = dyn_cast<Instruction>(U.getUser());
      if (!Inst)
        return Fail("team-shared global '" + G->getName() + "' is used outside the image's functions");
      Function *F = Inst->getFunction();
      auto [It, New] = Places.try_emplace(F, nullptr);
      if (New) {
        Value *Base = BaseOf(F);
        IRBuilder<> B(cast<Instruction>(Base)->getNextNode());
        It->second = B.CreateConstInBoundsGEP1_64(Type::getInt8Ty(Ctx), Base, Offset, G->getName());
      }
      U.set(It->second);
    }
    G->eraseFromParent();
  }
  return Size;
}

/// amdgcn's stack is addrspace(5); the host's is 0.
void moveAllocasToHostStack(Module &M) {
  for (Function &F : M) {
    SmallVector<AllocaInst *, 8> Moved;
    for (Instruction &I : instructions(F))
      if (auto *A = dyn_cast<AllocaInst>(&I); A && A->getAddressSpace() != 0)
        Moved.push_back(A);
    for (AllocaInst *A : Moved) {
      // A lifetime marker must name an alloca, not a cast of one; they are
      // hints, dropped.
      for (User *U : make_early_inc_range(A->users()))
        if (auto *Marker = dyn_cast<IntrinsicInst>(U); Marker && Marker->isLifetimeStartOrEnd())
          Marker->eraseFromParent();
      IRBuilder<> B(A);
      AllocaInst *Host = B.CreateAlloca(A->getAllocatedType(), /*AddrSpace=*/0, A->getArraySize());
      Host->setAlignment(A->getAlign());
      Host->takeName(A);
      Value *Cast = B.CreateAddrSpaceCast(Host, A->getType());
      A->replaceAllUsesWith(Cast);
      A->eraseFromParent();
    }
  }
}

void dropGpuTargetDetails(Module &M) {
  for (Function &F : M) {
    AttributeList Attrs = F.getAttributes();
    for (const Attribute &A : Attrs.getFnAttrs())
      if (A.isStringAttribute() && isGpuAttribute(A.getKindAsString()))
        F.removeFnAttr(A.getKindAsString());
    // The device link marks the functions it will inline into the kernels;
    // the host's JIT compiles each function on its own.
    F.removeFnAttr(Attribute::AlwaysInline);
    if (isGpuCallingConv(F.getCallingConv()))
      F.setCallingConv(CallingConv::C);
    for (Instruction &I : instructions(F))
      if (auto *Call = dyn_cast<CallBase>(&I); Call && isGpuCallingConv(Call->getCallingConv()))
        Call->setCallingConv(CallingConv::C);
  }
  for (GlobalVariable &G : M.globals())
    G.setMetadata("absolute_symbol", nullptr);
  // The device link saw every symbol; on the host the runtime's entries and
  // libc's live in other objects, reached through the GOT.
  for (GlobalValue &Gv : M.global_values())
    if (Gv.isDeclaration())
      Gv.setDSOLocal(false);
  for (const char *Name : {"nvvm.annotations", "nvvmir.version"})
    if (NamedMDNode *Md = M.getNamedMetadata(Name))
      M.eraseNamedMetadata(Md);
}

/// A declaration renamed to `To` (merged into `To` when the module declares
/// it already with the same type).
void rebind(Module &M, Function &F, StringRef To) {
  if (Function *Existing = M.getFunction(To)) {
    if (Existing->getFunctionType() != F.getFunctionType())
      return; // left as it is: the missing-symbol check names it
    F.replaceAllUsesWith(Existing);
    F.eraseFromParent();
    return;
  }
  F.setName(To);
}

/// The executor's GPU form of an entry point GPU code calls, or empty. With
/// ompsim's GPU device runtime linked in (`LinkedRuntime`), that runtime
/// serves the entries only the libomp model rebinds.
StringRef gpuRuntimeName(StringRef Name, bool LinkedRuntime) {
  struct Rebinding {
    StringLiteral From, To;
    bool LibompModelOnly;
  };
  static constexpr Rebinding Names[] = {
      // The device's own number and answer (libomp's are the host's).
      {"omp_get_device_num", "__ompsim_device_current_device", false},
      {"omp_is_initial_device", "__ompsim_gpu_is_initial_device", false},
      // The block's dynamic shared memory (libomp's answers the host's null).
      {"llvm_omp_target_dynamic_shared_alloc", "__ompsim_gpu_dynamic_shared", false},
      // On libomp's teams and threads: an SPMD kernel runs on every thread of
      // its block (DeviceKernel.cpp).
      {"__kmpc_target_init", "__ompsim_gpu_target_init", true},
      // On libomp's teams and threads: a barrier in a team's sequential part
      // (openmp-opt's SPMDized kernels place them there) has the team's one
      // thread to wait for; libomp's would wait for the team's idle pool.
      {"__kmpc_barrier", "__ompsim_gpu_barrier", true},
  };
  for (const Rebinding &R : Names)
    if (Name == R.From && !(LinkedRuntime && R.LibompModelOnly))
      return R.To;
  return {};
}

void bindHostLibraries(Module &M, GpuArch Arch, bool LinkedRuntime) {
  for (Function &F : make_early_inc_range(M)) {
    if (!F.isDeclaration() || F.isIntrinsic())
      continue;
    StringRef N = F.getName();
    if (Arch == GpuArch::Nvptx && N == "vprintf") {
      rebind(M, F, "__ompsim_gpu_vprintf");
      continue;
    }
    // Entry points whose GPU answer is not libomp's (the executor's libomp
    // answers as the host): the device runtime's own.
    if (StringRef To = gpuRuntimeName(N, LinkedRuntime); !To.empty()) {
      rebind(M, F, To);
      continue;
    }
    if (!LinkedRuntime) {
      // Worksharing loops answer as a GPU's runtime answers (chunk 1 means
      // one iteration per chunk to clang's GPU codegen, even in a team of one).
      if (N.consume_front("__kmpc_for_static_init_")) {
        rebind(M, F, ("__ompsim_gpu_for_static_init_" + N).str());
        continue;
      }
    }
    if (StringRef Host = hostMathFunction(N); !Host.empty())
      rebind(M, F, Host);
  }
}

} // namespace

std::string usedBy(const Value &V) {
  const Instruction *Inst = firstUser<Instruction>(V);
  return Inst ? "function '" + Inst->getFunction()->getName().str() + "'" : std::string("the image");
}

GpuArch gpuArchOf(StringRef TripleName) {
  Triple T(TripleName);
  if (T.isNVPTX())
    return GpuArch::Nvptx;
  if (T.isAMDGCN())
    return GpuArch::Amdgcn;
  return GpuArch::None;
}

StringRef archName(GpuArch Arch) {
  switch (Arch) {
  case GpuArch::Nvptx:
    return "nvptx64";
  case GpuArch::Amdgcn:
    return "amdgcn";
  case GpuArch::None:
    break;
  }
  return "not a GPU";
}

uint64_t sharedMemoryLimit(GpuArch Arch) { return Arch == GpuArch::Amdgcn ? 64 * 1024 : 48 * 1024; }

Expected<RetargetedImage> retargetGpuModule(Module &M, StringRef HostTriple, const DataLayout &HostLayout,
                                            StringRef ImageName, bool LinkedRuntime, bool GuardTeamShared) {
  RetargetedImage Out;
  Out.Arch = gpuArchOf(M.getTargetTriple().str());
  Failure Fail(ImageName, Out.Arch);
  if (Out.Arch == GpuArch::None)
    return Fail("the module's triple " + M.getTargetTriple().str() + " is not a GPU's");
  foldArchitectureConstants(M, Out.Arch);
  foldStrayUsedLists(M);
  if (Error Err = refuseGpuCode(M, Fail))
    return std::move(Err);
  if (Error Err = refuseNarrowPointersInMemory(M, HostLayout, Fail))
    return std::move(Err);
  // Sizes and alignments of the team-shared globals are the host's: the
  // host's code addresses them. What the GPU's own build would refuse: a
  // kernel whose static shared memory (its own team-shared globals and its
  // callees') is beyond what the architecture gives a block (ptxas and the
  // AMDGPU backend check each kernel, not the image).
  uint64_t Limit = sharedMemoryLimit(Out.Arch);
  for (const KernelTeamShared &K : teamSharedPerKernel(M, HostLayout))
    if (K.Bytes > Limit)
      return Fail("kernel '" + K.Kernel->getName() + "' needs " + Twine(K.Bytes) +
                  " bytes of team-shared globals a team (its own and its callees'); " + archName(Out.Arch) +
                  " gives a block at most " + Twine(Limit));
  // Every team gets one block holding all of them: a kernel uses its own at
  // their offsets there.
  auto Shared = placeTeamShared(M, HostLayout, GuardTeamShared, Fail);
  if (!Shared)
    return Shared.takeError();
  Out.TeamSharedBytes = *Shared;
  moveAllocasToHostStack(M);
  dropGpuTargetDetails(M);
  bindHostLibraries(M, Out.Arch, LinkedRuntime);
  M.setTargetTriple(Triple(HostTriple));
  M.setDataLayout(HostLayout);
  // A rewrite this file lacks would otherwise stop the JIT's code
  // generator on a broken module.
  std::string Problem;
  raw_string_ostream Os(Problem);
  if (verifyModule(M, &Os)) {
    StringRef First = StringRef(Problem).split('\n').first;
    return Fail("the retargeted module is not valid IR: " + First);
  }
  return Out;
}

} // namespace ompsim::sim::gpu

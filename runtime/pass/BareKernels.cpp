//===- BareKernels.cpp - ompx_bare kernels run on every thread ------------===//
//
// For the x86_64 offload target clang-22 emits an ompx_bare region as
//
//   kernel(dyn_ptr, args...):          (or its `<kernel>_debug__` under -g)
//     __kmpc_push_num_teams(loc, gtid, teams, threads)
//     __kmpc_fork_teams(loc, N, region, a1, ..., aN)
//
// exactly as without the clause. This pass rewrites the fork of a bare
// kernel into
//
//   argv = {a1, ..., aN}                       (8 bytes each)
//   __ompsim_bare_fork_teams(loc, body, argv)
//   body(gtid, btid, argv): region(gtid, btid, argv[0], ..., argv[N-1])
//
// and gives the kernel a `<name>_kernel_environment` whose execution mode is
// bare. Kernels are matched to the source's ompx_bare directives by the file
// id and line their names carry. A kernel whose fork does not have this shape
// is left as clang emitted it.
//
//===----------------------------------------------------------------------===//
#include "BareKernels.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Frontend/OpenMP/OMPDeviceConstants.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"
#include "llvm/TargetParser/Triple.h"

using namespace llvm;

namespace ompsim::pass {
namespace {

constexpr StringLiteral ForkTeamsName = "__kmpc_fork_teams";
constexpr StringLiteral BareForkName = "__ompsim_bare_fork_teams";

bool isIdentifierChar(char C) { return isAlnum(C) || C == '_'; }

/// True if `Text` has `ompx_bare` as a whole word.
bool hasBareClause(StringRef Text) {
  for (size_t At = Text.find("ompx_bare"); At != StringRef::npos; At = Text.find("ompx_bare", At + 1)) {
    bool Before = At > 0 && isIdentifierChar(Text[At - 1]);
    size_t End = At + 9;
    bool After = End < Text.size() && isIdentifierChar(Text[End]);
    if (!Before && !After)
      return true;
  }
  return false;
}

/// True if the logical line `Line` is an OpenMP directive: `# pragma omp`
/// (spaces allowed around `#`), or holds `_Pragma("omp`.
bool isOpenMPDirective(StringRef Line) {
  StringRef L = Line.ltrim();
  if (L.consume_front("#")) {
    L = L.ltrim();
    if (!L.consume_front("pragma") || L.empty() || !isSpace(L.front()))
      return false;
    return L.ltrim().starts_with("omp") && (L.ltrim().size() == 3 || !isIdentifierChar(L.ltrim()[3]));
  }
  for (size_t At = Line.find("_Pragma"); At != StringRef::npos; At = Line.find("_Pragma", At + 1)) {
    StringRef Rest = Line.drop_front(At + 7).ltrim();
    if (!Rest.consume_front("("))
      continue;
    Rest = Rest.ltrim();
    if (Rest.consume_front("\"") && Rest.ltrim().starts_with("omp"))
      return true;
  }
  return false;
}

/// The source file's unique id as clang puts it in kernel names.
std::optional<std::pair<uint64_t, uint64_t>> sourceFileId(StringRef Path) {
  sys::fs::UniqueID Id;
  if (Path.empty() || sys::fs::getUniqueID(Path, Id))
    return std::nullopt;
  return std::make_pair(Id.getDevice(), Id.getFile());
}

/// The KernelEnvironmentTy of LLVM 22's device runtime (its
/// ConfigurationEnvironmentTy, then two pointers), in bare mode.
GlobalVariable *addBareEnvironment(Module &M, Function &Kernel) {
  LLVMContext &Ctx = M.getContext();
  Type *I8 = Type::getInt8Ty(Ctx);
  Type *I32 = Type::getInt32Ty(Ctx);
  PointerType *Ptr = PointerType::getUnqual(Ctx);
  auto *ConfigTy = StructType::get(Ctx, {I8, I8, I8, I32, I32, I32, I32, I32, I32});
  auto *EnvTy = StructType::get(Ctx, {ConfigTy, Ptr, Ptr});
  Constant *Config = ConstantStruct::get(
      ConfigTy, {ConstantInt::get(I8, 0),                                   // UseGenericStateMachine
                 ConstantInt::get(I8, 0),                                   // MayUseNestedParallelism
                 ConstantInt::get(I8, llvm::omp::OMP_TGT_EXEC_MODE_BARE),   // ExecMode
                 ConstantInt::get(I32, 1), ConstantInt::getSigned(I32, -1), // Min/MaxThreads
                 ConstantInt::get(I32, 1), ConstantInt::getSigned(I32, -1), // Min/MaxTeams
                 ConstantInt::get(I32, 0), ConstantInt::get(I32, 0)});      // reductions
  Constant *Init =
      ConstantStruct::get(EnvTy, {Config, ConstantPointerNull::get(Ptr), ConstantPointerNull::get(Ptr)});
  auto *Env = new GlobalVariable(M, EnvTy, /*isConstant=*/true, GlobalValue::WeakODRLinkage, Init,
                                 Kernel.getName() + "_kernel_environment");
  Env->setVisibility(GlobalValue::ProtectedVisibility);
  return Env;
}

/// Rewrites `Fork` (a `__kmpc_fork_teams` call in a bare kernel); false when
/// its shape is not clang's (then nothing changes).
bool rewriteFork(Module &M, Function &Kernel, CallInst &Fork) {
  if (Fork.arg_size() < 3)
    return false;
  auto *Region = dyn_cast<Function>(Fork.getArgOperand(2)->stripPointerCasts());
  unsigned N = Fork.arg_size() - 3;
  if (!Region || Region->arg_size() != N + 2)
    return false;
  const DataLayout &DL = M.getDataLayout();
  for (unsigned I = 0; I < N; ++I) {
    Type *T = Fork.getArgOperand(3 + I)->getType();
    if (T != Region->getArg(2 + I)->getType() || DL.getTypeAllocSize(T) > 8)
      return false;
  }
  LLVMContext &Ctx = M.getContext();
  PointerType *Ptr = PointerType::getUnqual(Ctx);
  Type *I8 = Type::getInt8Ty(Ctx);

  // body(gtid, btid, argv): region(gtid, btid, argv[0], ..., argv[N-1])
  auto *Body = Function::Create(FunctionType::get(Type::getVoidTy(Ctx), {Ptr, Ptr, Ptr}, false),
                                GlobalValue::InternalLinkage, Kernel.getName() + ".ompsim_bare_body", M);
  Body->setDoesNotThrow();
  IRBuilder<> BB(BasicBlock::Create(Ctx, "entry", Body));
  SmallVector<Value *> CallArgs = {Body->getArg(0), Body->getArg(1)};
  for (unsigned I = 0; I < N; ++I) {
    Value *Slot = BB.CreateConstInBoundsGEP1_64(I8, Body->getArg(2), 8 * I);
    CallArgs.push_back(BB.CreateLoad(Region->getArg(2 + I)->getType(), Slot));
  }
  BB.CreateCall(Region->getFunctionType(), Region, CallArgs);
  BB.CreateRetVoid();

  // argv in the frame of the function that forks, filled where the fork was.
  IRBuilder<> Entry(&*Fork.getFunction()->getEntryBlock().getFirstInsertionPt());
  Value *Argv = ConstantPointerNull::get(Ptr);
  if (N)
    Argv = Entry.CreateAlloca(ArrayType::get(Type::getInt64Ty(Ctx), N), nullptr, "ompsim.bare.argv");
  IRBuilder<> At(&Fork);
  for (unsigned I = 0; I < N; ++I)
    At.CreateStore(Fork.getArgOperand(3 + I), At.CreateConstInBoundsGEP1_64(I8, Argv, 8 * I));
  FunctionCallee BareFork =
      M.getOrInsertFunction(BareForkName, FunctionType::get(Type::getVoidTy(Ctx), {Ptr, Ptr, Ptr}, false));
  At.CreateCall(BareFork, {Fork.getArgOperand(0), Body, Argv});
  Fork.eraseFromParent();
  return true;
}

} // namespace

SmallVector<unsigned> bareDirectiveLines(StringRef Text) {
  SmallVector<unsigned> Lines;
  unsigned LineNo = 0;
  while (!Text.empty()) {
    // One logical line: physical lines joined while they end in a backslash.
    unsigned First = ++LineNo;
    std::string Logical;
    while (true) {
      auto [Physical, Rest] = Text.split('\n');
      Text = Rest;
      StringRef P = Physical.rtrim("\r");
      if (P.ends_with("\\") && !Text.empty()) {
        Logical += P.drop_back().str();
        Logical += ' ';
        ++LineNo;
        continue;
      }
      Logical += P.str();
      break;
    }
    if (isOpenMPDirective(Logical) && hasBareClause(Logical))
      Lines.push_back(First);
  }
  return Lines;
}

std::optional<KernelSite> parseKernelName(StringRef Name) {
  // The last `_l<digits>` (then maybe `_<count>`) ends the name: a mangled
  // function name may hold `_l` itself.
  static const Regex Pattern("^__omp_offloading_([0-9a-f]+)_([0-9a-f]+)_.*_l([0-9]+)(_[0-9]+)?$");
  SmallVector<StringRef, 5> Parts;
  KernelSite Site;
  if (!Pattern.match(Name, &Parts) || Parts[1].getAsInteger(16, Site.Device) ||
      Parts[2].getAsInteger(16, Site.File) || Parts[3].getAsInteger(10, Site.Line))
    return std::nullopt;
  return Site;
}

PreservedAnalyses BareKernelsPass::run(Module &M, ModuleAnalysisManager &) {
  if (!M.getModuleFlag("openmp-device") || Triple(M.getTargetTriple()).isGPU())
    return PreservedAnalyses::all();
  SmallVector<std::pair<Function *, KernelSite>> Kernels;
  for (Function &F : M)
    if (!F.isDeclaration() && !F.getName().contains('.'))
      if (auto Site = parseKernelName(F.getName()))
        Kernels.push_back({&F, *Site});
  if (Kernels.empty())
    return PreservedAnalyses::all();
  auto Id = sourceFileId(M.getSourceFileName());
  if (!Id)
    return PreservedAnalyses::all();
  auto Source = MemoryBuffer::getFile(M.getSourceFileName(), /*IsText=*/true);
  if (!Source || !hasBareClause((*Source)->getBuffer()))
    return PreservedAnalyses::all();
  SmallVector<unsigned> BareLines = bareDirectiveLines((*Source)->getBuffer());
  bool Changed = false;
  for (auto &[Kernel, Site] : Kernels) {
    if (Site.Device != Id->first || Site.File != Id->second || !is_contained(BareLines, Site.Line))
      continue;
    if (M.getNamedGlobal((Kernel->getName() + "_kernel_environment").str()))
      continue; // already rewritten
    // With -g (and not inlined, as at -O0) clang puts the kernel's code in
    // `<kernel>_debug__`, which the kernel calls.
    SmallVector<CallInst *> Forks;
    for (Function *F : {Kernel, M.getFunction((Kernel->getName() + "_debug__").str())})
      if (F && !F->isDeclaration())
        for (Instruction &I : instructions(*F))
          if (auto *Call = dyn_cast<CallInst>(&I))
            if (Function *Callee = Call->getCalledFunction(); Callee && Callee->getName() == ForkTeamsName)
              Forks.push_back(Call);
    // clang's kernel forks its teams once.
    if (Forks.size() != 1 || !rewriteFork(M, *Kernel, *Forks.front()))
      continue;
    addBareEnvironment(M, *Kernel);
    Changed = true;
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

} // namespace ompsim::pass

//===- DeviceJitImages.cpp - Adding a bitcode image to the JIT -----------===//
//
// DeviceJIT::add: parsing an image's bitcode (lazily with a cached summary),
// the stock JIT variables' stages, preparing its module (constructors and
// destructors, the stubs of functions whose address is taken, the facts the
// partition function needs), and defining and linking it in a dylib.
//
//===----------------------------------------------------------------------===//

#include "DeviceJit.h"

#include "JitImageFunctions.h"
#include "JitImageSummary.h"
#include "JitObjectCache.h"
#include "gpu/BlockLoops.h"
#include "gpu/CheckedAccesses.h"
#include "gpu/CheckedHeapBinding.h"
#include "gpu/GpuDeviceRuntime.h"
#include "gpu/GpuImageRetarget.h"
#include "ompsim/Config.h"

#include "ompsim/Errors.h"
#include "ompsim/Trace.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/ExecutionEngine/Orc/AbsoluteSymbols.h"
#include "llvm/ExecutionEngine/Orc/EPCDynamicLibrarySearchGenerator.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <mutex>

namespace ompsim::sim {

using namespace llvm;
using namespace llvm::orc;

namespace {

/// Replaces llvm.global_ctors / llvm.global_dtors with one external function
/// that calls them in order, so the executor can run them with a plain call.
Function *lowerCtorsDtors(Module &M, bool Ctors, const std::string &Name) {
  std::vector<std::pair<unsigned, Function *>> Fns;
  for (const auto &E : Ctors ? getConstructors(M) : getDestructors(M))
    if (E.Func)
      Fns.emplace_back(E.Priority, E.Func);
  if (GlobalVariable *Gv = M.getGlobalVariable(Ctors ? "llvm.global_ctors" : "llvm.global_dtors"))
    Gv->eraseFromParent();
  if (Fns.empty())
    return nullptr;
  // Constructors run by ascending priority, destructors by descending; equal
  // priorities keep their order in the module (std::sort on (priority, index)
  // avoids libstdc++'s deprecated temporary buffer inside std::stable_sort).
  std::vector<size_t> Order(Fns.size());
  for (size_t I = 0; I < Order.size(); ++I)
    Order[I] = I;
  std::sort(Order.begin(), Order.end(), [&](size_t A, size_t B) {
    if (Fns[A].first != Fns[B].first)
      return Ctors ? Fns[A].first < Fns[B].first : Fns[A].first > Fns[B].first;
    return A < B;
  });
  std::vector<std::pair<unsigned, Function *>> Sorted;
  for (size_t I : Order)
    Sorted.push_back(Fns[I]);
  Fns.swap(Sorted);
  LLVMContext &Ctx = M.getContext();
  Function *F =
      Function::Create(FunctionType::get(Type::getVoidTy(Ctx), false), GlobalValue::ExternalLinkage, Name, M);
  IRBuilder<> B(BasicBlock::Create(Ctx, "entry", F));
  for (auto &[prio, fn] : Fns)
    B.CreateCall(FunctionType::get(Type::getVoidTy(Ctx), false), fn);
  B.CreateRetVoid();
  return F;
}

} // namespace

Error DeviceJIT::runStockStages(Module &M, StringRef Name, StringRef Digest) {
  auto Tm = Target->createTargetMachine();
  if (!Tm)
    return Tm.takeError();
  Stock.run(M, **Tm);
  if (!Stock.savesImage())
    return Error::success();
  // The saved object is a function of the module the stages leave, which the
  // image's digest and the salt (levels, IR pipeline) decide: a warm run
  // writes it from the cache.
  std::string Key;
  if (Cache) {
    Key = toHex(BLAKE3::hash(arrayRefFromStringRef(Salt + "image\n" + Digest.str())), /*LowerCase=*/true);
    if (auto Cached = Cache->get(Key)) {
      Stock.saveImage(Cached->getBuffer());
      return Error::success();
    }
  }
  auto Object = StockJitPipeline::emitObject(M, **Tm);
  if (!Object)
    return makeError("image " + Name + ": cannot compile the image to save: " + toString(Object.takeError()));
  if (Cache)
    Cache->put(Key, *Object);
  Stock.saveImage(*Object);
  return Error::success();
}

Error DeviceJIT::checkServed(JITDylib &Jd, const Module &M, StringRef Name, StringRef Arch) {
  // What the module declares and uses, which the executor must define: the
  // device runtime's entries, libc's and libm's functions.
  std::vector<const GlobalValue *> Needed;
  const ImageFunctions *Fns = Images->find(&M).get();
  for (const GlobalValue &Gv : M.global_values()) {
    if (!Gv.isDeclaration() || Gv.use_empty() || !Gv.hasName() || Gv.getName().starts_with("llvm."))
      continue;
    // The image's own stubs (address-taken functions), defined as aliases.
    if (Fns && llvm::any_of(Fns->AddressOf, [&](const auto &Pair) { return Pair.second == &Gv; }))
      continue;
    Needed.push_back(&Gv);
  }
  if (Needed.empty())
    return Error::success();
  SymbolLookupSet Set;
  for (const GlobalValue *Gv : Needed)
    Set.add(Es.intern(Gv->getName()), SymbolLookupFlags::WeaklyReferencedSymbol);
  auto Found = Es.lookup(makeJITDylibSearchOrder(&Jd, JITDylibLookupFlags::MatchAllSymbols), std::move(Set));
  if (!Found)
    return makeError("image " + Name + ": " + toString(Found.takeError()));
  // With ompsim's GPU device runtime linked in, a DeviceRTL entry it does not
  // define is not served, whatever the executor's libomp defines under that
  // name (libomp's would answer as the host).
  const bool Linked = config().GpuFibers;
  for (const GlobalValue *Gv : Needed) {
    if (Found->count(Es.intern(Gv->getName())) && !(Linked && Gv->getName().starts_with("__kmpc_")))
      continue;
    // The device runtime's names (DeviceRTL's and OpenMP's API); anything
    // else is the program's own, or a library's the device link lacked.
    StringRef Missing = Gv->getName();
    bool Runtime = Missing.starts_with("__kmpc_") || Missing.starts_with("omp_") ||
                   Missing.starts_with("ompx_") || Missing.starts_with("__llvm_omp") ||
                   Missing.starts_with("llvm_omp_") || Missing.starts_with("__ompsim_");
    // flang's runtime (flang-rt) has a GPU build of its own, which a GPU's
    // device link adds; Debian's flang-22 ships it for the host only.
    bool FortranRuntime = Missing.starts_with("_Fortran");
    // The GPU's device math library, of which the simulated GPU serves what
    // gpu/DeviceMathBindings.cpp binds.
    bool DeviceMath = Missing.starts_with("__nv_") || Missing.starts_with("__ocml_");
    return makeError(
        "image " + Name + " (" + Arch + "): " + gpu::usedBy(*Gv) + " needs '" + Missing +
        (Runtime          ? "', which ompsim's simulated GPU does not provide yet"
         : FortranRuntime ? "', a function of flang's Fortran runtime, whose GPU build (flang-rt "
                            "for the GPU) the simulated GPU does not serve"
         : DeviceMath     ? "', a function of the GPU's device math library that ompsim's simulated GPU "
                            "does not provide yet"
                          : "', which no device code of the program defines (compile the file that "
                            "defines it with offloading, under declare target)"));
  }
  return Error::success();
}

Expected<JITImage> DeviceJIT::add(ArrayRef<char> Bitcode, StringRef Name) {
  StringRef Bytes(Bitcode.data(), Bitcode.size());
  auto Replacement = Stock.replacement();
  if (!Replacement)
    return makeError("image " + Name + ": " + toString(Replacement.takeError()));
  if (*Replacement)
    Bytes = (*Replacement)->getBuffer();
  auto Ctx = std::make_unique<LLVMContext>();
  // A GPU's module is retargeted whole before anything else reads it.
  bool Gpu = false;
  gpu::GpuArch Arch = gpu::GpuArch::None;
  if (auto T = getBitcodeTargetTriple(MemoryBufferRef(Bytes, Name)))
    Gpu = gpu::gpuArchOf(*T) != gpu::GpuArch::None;
  else
    consumeError(T.takeError()); // the parse below says what is wrong
  // With the cache on, an image whose summary an earlier run kept is loaded
  // lazily: most of a large image's load is parsing bodies whose code the
  // cache then holds. Stock's JIT variables need the whole module: then no
  // summary is read or kept (it would describe the module before the stages).
  bool Whole = Stock.needsWholeModule() || Gpu;
  std::string Digest, SummaryKey;
  std::optional<JitImageSummary> Summary;
  if (Cache) {
    Digest = toHex(BLAKE3::hash(arrayRefFromStringRef(Bytes)), /*LowerCase=*/true);
    SummaryKey = toHex(BLAKE3::hash(arrayRefFromStringRef(Salt + "summary\n" + Digest)), /*LowerCase=*/true);
    if (!Whole)
      if (auto Cached = Cache->get(SummaryKey))
        Summary = JitImageSummary::parse((*Cached).getBuffer());
  }
  std::unique_ptr<Module> Owned;
  if (*Replacement) {
    auto Parsed = Stock.parseReplacement((*Replacement)->getMemBufferRef(), *Ctx);
    if (!Parsed)
      return makeError("image " + Name + ": " + toString(Parsed.takeError()));
    Owned = std::move(*Parsed);
  } else {
    auto ParsedModule = Summary
                            ? getOwningLazyBitcodeModule(MemoryBuffer::getMemBufferCopy(Bytes, Name), *Ctx)
                            : parseBitcodeFile(MemoryBufferRef(Bytes, Name), *Ctx);
    if (!ParsedModule)
      return makeError("image " + Name + ": unreadable bitcode: " + toString(ParsedModule.takeError()));
    Owned = std::move(*ParsedModule);
  }
  Module &M = *Owned;
  if (gpu::gpuArchOf(M.getTargetTriple().str()) != gpu::GpuArch::None) {
    auto Layout = Target->getDefaultDataLayoutForTarget();
    if (!Layout)
      return Layout.takeError();
    const bool Fibers = config().GpuFibers;
    // Under the checker, on the virtual GPU: team-shared globals between
    // guard pages (gpu/TeamSharedGuards.h).
    auto Retargeted = gpu::retargetGpuModule(M, Target->getTargetTriple().str(), *Layout, Name, Fibers,
                                             Fibers && config().Check);
    if (!Retargeted)
      return Retargeted.takeError();
    Arch = Retargeted->Arch;
    // Under the checker the program's device heap is the checked one, and on
    // the virtual GPU its accesses are checked for team-shared races and
    // unwritten reads (before the runtime, whose own accesses are not).
    if (config().Check) {
      gpu::bindCheckedHeap(M);
      if (Fibers)
        gpu::instrumentAccesses(M);
    }
    if (Fibers) {
      if (!GpuRuntime)
        return makeError("image " + Name + ": " + GpuRuntimeProblem);
      if (Error Err = gpu::linkGpuDeviceRuntime(M, GpuRuntime->getMemBufferRef(), Name))
        return std::move(Err);
      for (const gpu::KernelBlockPlan &Plan : gpu::planBlockLoops(M, config().GpuBlockLoops)) {
        OMPSIM_TRACE_EVENT(Cat::Image, "gpu-kernel")
            .str("image", Name)
            .str("kernel", Plan.Kernel)
            .str("blocks", gpu::blockModeName(Plan.Mode))
            .str("reason", Plan.Reason);
        for (const std::string &Region : Plan.RoundRegions)
          OMPSIM_TRACE_EVENT(Cat::Image, "gpu-region")
              .str("image", Name)
              .str("kernel", Plan.Kernel)
              .str("region", Region)
              .str("threads", "rounds");
      }
    }
  }
  if (Whole)
    if (Error Err = runStockStages(M, Name, Digest))
      return std::move(Err);
  std::string Tag = std::to_string(NextImage++);
  // The object cache's key (CachingCompiler) starts from the image's digest.
  if (Cache)
    M.getOrInsertNamedMetadata(kImageDigestMD)->addOperand(MDNode::get(*Ctx, MDString::get(*Ctx, Digest)));
  Function *Init = lowerCtorsDtors(M, true, "__ompsim_jit_init_" + Tag);
  Function *Fini = lowerCtorsDtors(M, false, "__ompsim_jit_fini_" + Tag);
  // The device link internalizes every function but the kernels. An internal
  // function whose address is taken (an indirect function, a vtable slot, a
  // callback) gets a stub like an exported one: it then compiles on its
  // first call too, and every pointer to it is the stub's (rewriteAddressUses).
  std::vector<Function *> AddressTaken;
  if (Summary) {
    for (const std::string &N : Summary->AddressTaken) {
      Function *F = M.getFunction(N);
      if (!F || F->isDeclaration()) { // not this image's summary after all
        Summary.reset();
        break;
      }
      AddressTaken.push_back(F);
    }
    if (!Summary) {
      AddressTaken.clear();
      if (Error Err = M.materializeAll())
        return makeError("image " + Name + ": unreadable bitcode: " + toString(std::move(Err)));
    }
  }
  if (!Summary)
    AddressTaken = JitImageSummary::addressTaken(M);
  auto Fns = std::make_shared<ImageFunctions>();
  SymbolAliasMap AddressAliases;
  for (Function *F : AddressTaken) {
    if (F->hasLocalLinkage()) {
      F->setLinkage(GlobalValue::ExternalLinkage);
      F->setVisibility(GlobalValue::HiddenVisibility);
    }
    Function *Address = Function::Create(F->getFunctionType(), GlobalValue::ExternalLinkage,
                                         F->getName() + ".ompsim.addr", M);
    Address->setVisibility(GlobalValue::HiddenVisibility);
    Fns->AddressOf.emplace_back(F, Address);
    AddressAliases[Es.intern(Address->getName())] = {Es.intern(F->getName()),
                                                     JITSymbolFlags::Exported | JITSymbolFlags::Callable};
  }
  rewriteAddressUses(Fns->AddressOf);
  // What the partition function needs of each body: from the body when it is
  // loaded, else from the summary (a function it lacks is loaded now).
  JitImageSummary Made;
  for (Function &F : M) {
    if (F.isDeclaration())
      continue;
    ImageFunctions::Facts &Facts = Fns->Info[&F];
    if (F.isMaterializable()) {
      auto It = Summary->Functions.find(F.getName());
      bool Complete = It != Summary->Functions.end();
      if (Complete)
        for (const std::string &C : It->second.Callees) {
          const Function *Callee = M.getFunction(C);
          if (!Callee) {
            Complete = false;
            break;
          }
          Facts.Callees.push_back(Callee);
        }
      if (Complete) {
        Facts.Instructions = It->second.Instructions;
        continue;
      }
      Facts.Callees.clear();
      if (Error Err = F.materialize())
        return makeError("image " + Name + ": unreadable bitcode: " + toString(std::move(Err)));
      rewriteAddressUses(Fns->AddressOf);
    }
    Facts.Instructions = F.getInstructionCount();
    for (const Function *Callee : JitImageSummary::directCallees(F))
      Facts.Callees.push_back(Callee);
    if (Cache && !Summary && !Whole) {
      JitImageSummary::FunctionInfo &Info = Made.Functions[F.getName()];
      Info.Instructions = Facts.Instructions;
      for (const Function *Callee : Facts.Callees)
        Info.Callees.push_back(Callee->getName().str());
    }
  }
  if (Cache && !Summary && !Whole) {
    for (Function *F : AddressTaken)
      Made.AddressTaken.push_back(F->getName().str());
    Cache->put(SummaryKey, Made.serialize());
  }
  {
    std::lock_guard<std::mutex> Lock(Images->Mu);
    Images->ByModule[&M] = Fns;
  }

  // Functions (their stubs) and data, looked up in that order below.
  std::vector<std::string> Callables, Data;
  for (GlobalValue &Gv : M.global_values()) {
    if (Gv.isDeclaration() || Gv.hasLocalLinkage() || !Gv.hasName() || Gv.getName().starts_with("llvm."))
      continue;
    const GlobalObject *Object = Gv.getAliaseeObject();
    (Object && isa<Function>(Object) ? Callables : Data).push_back(Gv.getName().str());
  }

  auto Jd = Es.createJITDylib("image" + Name.str());
  if (!Jd)
    return Jd.takeError();
  auto Gen = EPCDynamicLibrarySearchGenerator::GetForTargetProcess(Es);
  if (!Gen)
    return Gen.takeError();
  Jd->addGenerator(std::move(*Gen));
  if (auto Err = Jd->define(absoluteSymbols(
          {{Es.intern("__dso_handle"), {ExecutorAddr(DsoHandle), JITSymbolFlags::Exported}}})))
    return std::move(Err);
  // Before the image's own definitions: the check looks up only what the
  // executor is to define.
  if (Arch != gpu::GpuArch::None)
    if (Error Err = checkServed(*Jd, M, Name, gpu::archName(Arch)))
      return std::move(Err);
  if (!AddressAliases.empty())
    if (auto Err = Jd->define(symbolAliases(std::move(AddressAliases))))
      return std::move(Err);
  if (auto Err = Lazy->add(*Jd, ThreadSafeModule(std::move(Owned), std::move(Ctx))))
    return std::move(Err);

  JITImage Img;
  Img.Dylib = &*Jd;
  // Two lookups, one after the other: the stubs first, then the data (which
  // compiles and links the image's globals). ORC materializes what one
  // lookup needs concurrently; in sequence, every run places the stubs and
  // the data at the same device addresses.
  for (std::vector<std::string> *Names : {&Callables, &Data}) {
    SymbolLookupSet Set;
    for (auto &N : *Names)
      Set.add(Es.intern(N), SymbolLookupFlags::WeaklyReferencedSymbol);
    auto Found =
        Es.lookup(makeJITDylibSearchOrder(&*Jd, JITDylibLookupFlags::MatchAllSymbols), std::move(Set));
    if (!Found)
      return makeError("image " + Name + ": JIT compile or link failed: " + toString(Found.takeError()));
    for (auto &[sym, def] : *Found) {
      std::string N = (*sym).str();
      uint64_t A = def.getAddress().getValue();
      if (Init && N == Init->getName())
        Img.Init = A;
      else if (Fini && N == Fini->getName())
        Img.Fini = A;
      Img.Symbols.emplace_back(N, A);
    }
  }
  return Img;
}

} // namespace ompsim::sim

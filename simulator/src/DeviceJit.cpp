#include "DeviceJit.h"

#include "JitImageSummary.h"
#include "JitObjectCache.h"

#include "ompsim/Trace.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/AbsoluteSymbols.h"
#include "llvm/ExecutionEngine/Orc/CompileUtils.h"
#include "llvm/ExecutionEngine/Orc/EHFrameRegistrationPlugin.h"
#include "llvm/ExecutionEngine/Orc/EPCDynamicLibrarySearchGenerator.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"

#include <algorithm>
#include <future>
#include <mutex>

namespace ompsim::sim {

using namespace llvm;
using namespace llvm::orc;

namespace {

Error makeError(const Twine &Msg) { return createStringError(inconvertibleErrorCode(), Msg); }

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

/// The partitioning facts of one image's module: each defined function's
/// instructions and the callees its partition takes along (from its body, or
/// from the cached JitImageSummary while the body is not loaded), and the
/// functions whose address is taken with the declarations that stand for
/// their address (to rewrite bodies loaded later the same way).
struct ImageFunctions {
  struct Facts {
    uint32_t Instructions = 0;
    SmallVector<const Function *, 4> Callees;
  };
  DenseMap<const Function *, Facts> Info;
  std::vector<std::pair<Function *, Function *>> AddressOf;
};

/// ImageFunctions by module, shared by add(), the partition function and the
/// caching compiler (which run on ORC's threads).
struct ImageFunctionsTable {
  std::mutex Mu;
  DenseMap<const Module *, std::shared_ptr<ImageFunctions>> ByModule;

  std::shared_ptr<ImageFunctions> find(const Module *M) {
    std::lock_guard<std::mutex> Lock(Mu);
    return ByModule.lookup(M);
  }
};

namespace {

/// Points every use of each function's address (in code and in initializers,
/// vtables and offload entries alike) at "<f>.ompsim.addr", an alias of its
/// stub, while calls keep naming the function: code compiled in the same
/// object as the function would otherwise take its compiled address, and a
/// pointer taken on the device would differ from the translated one.
/// llvm.used and llvm.compiler.used keep naming the definitions.
void rewriteAddressUses(ArrayRef<std::pair<Function *, Function *>> AddressOf) {
  auto InUsedList = [](const User *U) {
    return isa<ConstantArray>(U) && llvm::any_of(U->users(), [](const User *G) {
             const auto *Gv = dyn_cast<GlobalVariable>(G);
             return Gv && (Gv->getName() == "llvm.used" || Gv->getName() == "llvm.compiler.used");
           });
  };
  for (auto [F, Address] : AddressOf)
    F->replaceUsesWithIf(Address, [&](Use &U) {
      const auto *Call = dyn_cast<CallBase>(U.getUser());
      return !(Call && Call->isCallee(&U)) && !InUsedList(U.getUser());
    });
}

/// Loads the bodies a compile needs: those of `Partition` (all of the
/// module's when null) not loaded yet, rewriting their address uses.
Error materializeBodies(Module &M, ImageFunctions *Fns, const IRPartitionLayer::GlobalValueSet *Partition) {
  bool Loaded = false;
  if (!Partition) {
    if (M.isMaterialized())
      return Error::success();
    if (Error Err = M.materializeAll())
      return Err;
    Loaded = true;
  } else {
    for (const GlobalValue *Gv : *Partition) {
      const GlobalObject *Object = Gv->getAliaseeObject();
      if (Object && Object->isMaterializable()) {
        if (Error Err = const_cast<GlobalObject *>(Object)->materialize())
          return Err;
        Loaded = true;
      }
    }
  }
  if (Loaded && Fns)
    rewriteAddressUses(Fns->AddressOf);
  return Error::success();
}

/// The partition compiled on a first call: the requested definitions and,
/// transitively, the functions they call directly whose address is never
/// taken. Those can only be reached through these calls, so compiling them
/// now saves a round trip each; a function whose address is taken keeps
/// its stub (compiled on its own first call) so that every pointer to it,
/// in device code, vtables and the function-pointer table, stays the stub's.
IRPartitionLayer::GlobalValueSet withDirectCallees(const IRPartitionLayer::GlobalValueSet &Requested,
                                                   const ImageFunctions &Fns) {
  IRPartitionLayer::GlobalValueSet Out = Requested;
  std::vector<const Function *> Work;
  for (const GlobalValue *Gv : Requested)
    if (const auto *F = dyn_cast<Function>(Gv))
      Work.push_back(F);
  while (!Work.empty()) {
    const Function *F = Work.back();
    Work.pop_back();
    auto It = Fns.Info.find(F);
    if (It == Fns.Info.end())
      continue;
    for (const Function *Callee : It->second.Callees)
      if (!Callee->isDeclaration() && Out.insert(Callee).second)
        Work.push_back(Callee);
  }
  return Out;
}

/// Hands out stubs in the order of their names. ORC builds a stub batch from
/// a map keyed by interned-string pointers, so the order the pool hands out
/// addresses in (and with it the device address of every function whose
/// address is taken) followed the host's heap layout and thread timing from
/// run to run; re-inserting the names sorted gives every run the same map.
class OrderedStubsManager : public IndirectStubsManager {
public:
  explicit OrderedStubsManager(std::unique_ptr<IndirectStubsManager> Inner) : Inner(std::move(Inner)) {}

  Error createStub(StringRef StubName, ExecutorAddr StubAddr, JITSymbolFlags StubFlags) override {
    return Inner->createStub(StubName, StubAddr, StubFlags);
  }
  Error createStubs(const StubInitsMap &StubInits) override {
    std::vector<StringRef> Names;
    Names.reserve(StubInits.size());
    for (const auto &Init : StubInits)
      Names.push_back(Init.getKey());
    llvm::sort(Names);
    StubInitsMap Ordered;
    for (StringRef Name : Names)
      Ordered[Name] = StubInits.lookup(Name);
    return Inner->createStubs(Ordered);
  }
  ExecutorSymbolDef findStub(StringRef Name, bool ExportedStubsOnly) override {
    return Inner->findStub(Name, ExportedStubsOnly);
  }
  ExecutorSymbolDef findPointer(StringRef Name) override { return Inner->findPointer(Name); }
  Error updatePointer(StringRef Name, ExecutorAddr NewAddr) override {
    return Inner->updatePointer(Name, NewAddr);
  }

private:
  std::unique_ptr<IndirectStubsManager> Inner;
};

/// The image trace's record of one compile: the first definition asked for,
/// how many were, how many definitions the compile holds, and whether it is
/// everything the image had left.
void traceCompile(const IRPartitionLayer::GlobalValueSet &Requested, size_t Compiled, bool Rest) {
  if (Requested.empty())
    return;
  OMPSIM_TRACE_EVENT(Cat::Image, "jit-compile")
      .str("symbol", (*Requested.begin())->getName())
      .num("requested", int64_t(Requested.size()))
      .num("compiled", int64_t(Compiled))
      .num("rest", Rest ? 1 : 0);
}

/// The name a function had in its image: extracting a partition gives an
/// internal function that another partition calls a new external name,
/// "__orc_lcl.<name>.<n>", which means nothing to the user.
std::string sourceName(StringRef Linked) {
  StringRef Name = Linked;
  if (!Name.consume_front("__orc_lcl."))
    return Linked.str();
  size_t Dot = Name.rfind('.');
  if (Dot == StringRef::npos || Dot == 0 || Dot + 1 == Name.size() ||
      !llvm::all_of(Name.drop_front(Dot + 1), [](char C) { return C >= '0' && C <= '9'; }))
    return Linked.str();
  return Name.take_front(Dot).str();
}

/// Records the functions every link defines, so an address in code that was
/// compiled lazily (away from its stub) can be named in fault reports.
class LinkedCodeRecorder : public ObjectLinkingLayer::Plugin {
public:
  LinkedCodeRecorder(std::shared_ptr<std::mutex> Mu, std::shared_ptr<ImageSymbolTable> Table)
      : Mu(std::move(Mu)), Table(std::move(Table)) {}
  void modifyPassConfig(MaterializationResponsibility &, jitlink::LinkGraph &,
                        jitlink::PassConfiguration &Config) override {
    Config.PostFixupPasses.push_back([Mu = Mu, Table = Table](jitlink::LinkGraph &G) {
      std::lock_guard<std::mutex> Lock(*Mu);
      for (jitlink::Symbol *Sym : G.defined_symbols())
        if (Sym->hasName() && Sym->isCallable())
          Table->add(sourceName(*Sym->getName()), Sym->getAddress().getValue(), Sym->getSize());
      return Error::success();
    });
  }
  Error notifyFailed(MaterializationResponsibility &) override { return Error::success(); }
  Error notifyRemovingResources(JITDylib &, ResourceKey) override { return Error::success(); }
  void notifyTransferringResources(JITDylib &, ResourceKey, ResourceKey) override {}

private:
  std::shared_ptr<std::mutex> Mu;
  std::shared_ptr<ImageSymbolTable> Table;
};

/// The named metadata in which add() records the SHA-256 of the image a module
/// came from (partitions extracted from the module copy it).
constexpr const char *kImageDigestMD = "ompsim.jit.image";

/// Code generation with its objects kept in a JitObjectCache between runs:
/// code generation is most of the time to the first kernel of a large bitcode
/// image. An object is named by a hash of what its module is made from and
/// of what else code generation depends on (LLVM's version, the target, the
/// level), so a changed image or setting never reads a stale object.
class CachingCompiler : public IRCompileLayer::IRCompiler {
public:
  CachingCompiler(JITTargetMachineBuilder Jtmb, std::shared_ptr<JitObjectCache> Cache, std::string Salt,
                  std::shared_ptr<ImageFunctionsTable> Images)
      : IRCompiler(irManglingOptionsFromTargetOptions(Jtmb.getOptions())), Compiler(std::move(Jtmb)),
        Cache(std::move(Cache)), Salt(std::move(Salt)), Images(std::move(Images)) {}

  Expected<std::unique_ptr<MemoryBuffer>> operator()(Module &M) override {
    std::string Key = keyFor(M);
    if (auto Hit = Cache->get(Key))
      return std::move(Hit);
    // A lazily loaded image compiled as a whole: its bodies are needed now.
    if (Error Err = materializeBodies(M, Images->find(&M).get(), nullptr))
      return std::move(Err);
    auto Object = Compiler(M);
    if (Object)
      Cache->put(Key, (*Object)->getBuffer());
    return Object;
  }

private:
  /// A module compiled here is a function of its image (as add() rewrites
  /// it) and of which of the image's definitions it holds, so its key is the
  /// image's digest and each global value's name, linkage, visibility and
  /// whether it is defined: hashing the module's bitcode instead would cost
  /// a fifth of compiling it. A module without the image's digest hashes
  /// its bitcode.
  std::string keyFor(const Module &M) const {
    BLAKE3 Hash;
    Hash.update(Salt);
    const NamedMDNode *Image = M.getNamedMetadata(kImageDigestMD);
    const auto *Digest = Image && Image->getNumOperands() == 1 && Image->getOperand(0)->getNumOperands() == 1
                             ? dyn_cast<MDString>(Image->getOperand(0)->getOperand(0))
                             : nullptr;
    if (Digest) {
      Hash.update(Digest->getString());
      for (const GlobalValue &Gv : M.global_values()) {
        uint64_t Size = Gv.getName().size();
        uint8_t Traits[] = {uint8_t(Size),
                            uint8_t(Size >> 8),
                            uint8_t(Size >> 16),
                            uint8_t(Gv.getLinkage()),
                            uint8_t(Gv.getVisibility()),
                            uint8_t(Gv.isDeclaration()),
                            uint8_t(Gv.getValueID())};
        Hash.update(Traits);
        Hash.update(Gv.getName());
      }
    } else {
      SmallVector<char, 0> Bitcode;
      raw_svector_ostream Os(Bitcode);
      WriteBitcodeToFile(M, Os);
      Hash.update(arrayRefFromStringRef(StringRef(Bitcode.data(), Bitcode.size())));
    }
    return toHex(Hash.final(), /*LowerCase=*/true);
  }

  ConcurrentIRCompiler Compiler;
  std::shared_ptr<JitObjectCache> Cache;
  std::string Salt;
  std::shared_ptr<ImageFunctionsTable> Images;
};

} // namespace

std::string DeviceJIT::symbolize(uint64_t Addr) const {
  std::lock_guard<std::mutex> Lock(*LinkedMu);
  return Linked->symbolize(Addr);
}

DeviceJIT::~DeviceJIT() {
  Lazy.reset();
  Partitioner.reset();
  if (Indirection)
    consumeError(Indirection->cleanup()); // the executor may be gone already
}

DeviceJIT::DeviceJIT(ExecutionSession &Es, uint64_t DsoHandle, const Config::StockJit &Stock)
    : Es(Es), DsoHandle(DsoHandle), Stock(Stock) {}

Expected<std::unique_ptr<DeviceJIT>> DeviceJIT::create(ExecutionSession &Es, uint64_t DsoHandle,
                                                       uint64_t LazyReenter, uint64_t LazyFailed,
                                                       int OptLevel, StringRef CacheDir, uint64_t CacheMax,
                                                       const Config::StockJit &Stock) {
  static std::once_flag Targets;
  std::call_once(Targets, [] {
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
  });
  std::unique_ptr<DeviceJIT> Jit(new DeviceJIT(Es, DsoHandle, Stock));
  Jit->Linker = std::make_unique<ObjectLinkingLayer>(Es);
  Jit->Linker->addPlugin(std::make_shared<LinkedCodeRecorder>(Jit->LinkedMu, Jit->Linked));
  if (auto Eh = EHFrameRegistrationPlugin::Create(Es))
    Jit->Linker->addPlugin(std::move(*Eh));
  else
    consumeError(Eh.takeError()); // unwinding through JIT code then stops at its frames
  JITTargetMachineBuilder Jtmb((Triple("x86_64-pc-linux-gnu")));
  // The arena is far from the executor's libraries: reach them through the GOT.
  Jtmb.setRelocationModel(Reloc::PIC_);
  Jtmb.setCodeModel(CodeModel::Small);
  // The image's IR was optimized when it was built; what is left is code
  // generation, whose optimizing levels take many times longer on large
  // kernels (OMPSIM_JIT_OPT_LEVEL; 0 by default).
  static constexpr CodeGenOptLevel kLevels[] = {CodeGenOptLevel::None, CodeGenOptLevel::Less,
                                                CodeGenOptLevel::Default, CodeGenOptLevel::Aggressive};
  Jtmb.setCodeGenOptLevel(kLevels[std::clamp(OptLevel, 0, 3)]);
  Jit->Target = Jtmb;
  std::unique_ptr<IRCompileLayer::IRCompiler> Compiler;
  Jit->Images = std::make_shared<ImageFunctionsTable>();
  if (!CacheDir.empty()) {
    Jit->Cache = std::make_shared<JitObjectCache>(CacheDir.str(), CacheMax);
    // Bump the version when add() rewrites images or partitions them
    // differently: the keys trust that an image's bytes decide its
    // rewritten module and its summary.
    Jit->Salt = std::string("ompsim-jit-object-4\n") + LLVM_VERSION_STRING + "\n" +
                Jtmb.getTargetTriple().str() + "\nlevel " + std::to_string(std::clamp(OptLevel, 0, 3)) +
                "\n" + Jit->Stock.cacheSalt();
    Compiler = std::make_unique<CachingCompiler>(Jtmb, Jit->Cache, Jit->Salt, Jit->Images);
  }
  if (!Compiler)
    Compiler = std::make_unique<ConcurrentIRCompiler>(std::move(Jtmb));
  Jit->Compiler = std::make_unique<IRCompileLayer>(Es, *Jit->Linker, std::move(Compiler));
  // Lazy compilation: stubs and trampolines live in the arena; a trampoline
  // enters the executor's resolver block, which asks us (resolveLazyCall).
  auto Indirection = EPCIndirectionUtils::Create(Es);
  if (!Indirection)
    return Indirection.takeError();
  Jit->Indirection = std::move(*Indirection);
  if (auto Resolver = Jit->Indirection->writeResolverBlock(ExecutorAddr(LazyReenter), ExecutorAddr(0));
      !Resolver)
    return Resolver.takeError();
  LazyCallThroughManager &Calls =
      Jit->Indirection->createLazyCallThroughManager(Es, ExecutorAddr(LazyFailed));
  Jit->Partitioner = std::make_unique<IRPartitionLayer>(Es, *Jit->Compiler);
  // A program that calls many functions once each would pay a round trip and
  // a compile per function; after kLazyCompilesPerImage of them, an image's
  // next first call compiles everything it has left at once. So does a first
  // call whose partition holds most of what is left: extracting a partition
  // copies it into a module of its own, which then costs more than compiling
  // the few functions it would leave out.
  constexpr unsigned kLazyCompilesPerImage = 32;
  Jit->Partitioner->setPartitionFunction(
      [Images = Jit->Images,
       Counts = std::make_shared<std::pair<std::mutex, DenseMap<const Module *, unsigned>>>()](
          IRPartitionLayer::GlobalValueSet Requested) -> std::optional<IRPartitionLayer::GlobalValueSet> {
        if (Requested.empty())
          return Requested;
        const Module *M = (*Requested.begin())->getParent();
        std::shared_ptr<ImageFunctions> Fns = Images->find(M);
        if (!Fns) // not an image add() took in: compile it whole
          return std::nullopt;
        auto Rest = [&]() -> std::optional<IRPartitionLayer::GlobalValueSet> {
          traceCompile(
              Requested,
              llvm::count_if(M->global_values(), [](const GlobalValue &Gv) { return !Gv.isDeclaration(); }),
              true);
          return std::nullopt; // the whole (remaining) module
        };
        // ORC copies a partition into a module of its own: the bodies in it
        // must be loaded (a lazily loaded image's may not be yet). One that
        // cannot be leaves the compile of the whole module to report it.
        auto Extract = [&](IRPartitionLayer::GlobalValueSet Partition)
            -> std::optional<IRPartitionLayer::GlobalValueSet> {
          if (Error Err = materializeBodies(*const_cast<Module *>(M), Fns.get(), &Partition)) {
            consumeError(std::move(Err));
            return Rest();
          }
          traceCompile(Requested, Partition.size(), false);
          return Partition;
        };
        bool Code = llvm::any_of(Requested, [](const GlobalValue *Gv) { return isa<Function>(Gv); });
        auto Partition = withDirectCallees(Requested, *Fns);
        if (!Code)
          return Extract(std::move(Partition));
        {
          std::lock_guard<std::mutex> Lock(Counts->first);
          if (++Counts->second[M] > kLazyCompilesPerImage)
            return Rest();
        }
        // "Most": three quarters of the functions, or of the instructions.
        auto InstructionsOf = [&](const Function &F) -> size_t {
          auto It = Fns->Info.find(&F);
          return It == Fns->Info.end() ? F.getInstructionCount() : It->second.Instructions;
        };
        size_t FunctionsLeft = 0, InstructionsLeft = 0, FunctionsIn = 0, InstructionsIn = 0;
        for (const Function &F : M->functions())
          if (!F.isDeclaration()) {
            ++FunctionsLeft;
            InstructionsLeft += InstructionsOf(F);
          }
        for (const GlobalValue *Gv : Partition)
          if (const auto *F = dyn_cast<Function>(Gv)) {
            ++FunctionsIn;
            InstructionsIn += InstructionsOf(*F);
          }
        if ((FunctionsLeft >= 16 && FunctionsIn * 4 >= FunctionsLeft * 3) ||
            (InstructionsLeft >= 2000 && InstructionsIn * 4 >= InstructionsLeft * 3))
          return Rest();
        return Extract(std::move(Partition));
      });
  EPCIndirectionUtils *Iu = Jit->Indirection.get();
  Jit->Lazy = std::make_unique<CompileOnDemandLayer>(
      Es, *Jit->Partitioner, Calls, [Iu]() -> std::unique_ptr<IndirectStubsManager> {
        return std::make_unique<OrderedStubsManager>(Iu->createIndirectStubsManager());
      });
  return std::move(Jit);
}

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

Expected<JITImage> DeviceJIT::add(ArrayRef<char> Bitcode, StringRef Name) {
  StringRef Bytes(Bitcode.data(), Bitcode.size());
  auto Replacement = Stock.replacement();
  if (!Replacement)
    return makeError("image " + Name + ": " + toString(Replacement.takeError()));
  if (*Replacement)
    Bytes = (*Replacement)->getBuffer();
  auto Ctx = std::make_unique<LLVMContext>();
  // With the cache on, an image whose summary an earlier run kept is loaded
  // lazily: most of a large image's load is parsing bodies whose code the
  // cache then holds. Stock's JIT variables need the whole module: then no
  // summary is read or kept (it would describe the module before the stages).
  bool Whole = Stock.needsWholeModule();
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

uint64_t DeviceJIT::resolveLazyCall(uint64_t Trampoline) {
  std::promise<uint64_t> Landing;
  auto Result = Landing.get_future();
  Indirection->getLazyCallThroughManager().resolveTrampolineLandingAddress(
      ExecutorAddr(Trampoline), [&Landing](ExecutorAddr A) { Landing.set_value(A.getValue()); });
  return Result.get();
}

Expected<uint64_t> DeviceJIT::lookup(const JITImage &Image, StringRef Symbol) {
  for (auto &[n, a] : Image.Symbols)
    if (n == Symbol)
      return a;
  return 0;
}

Error DeviceJIT::remove(JITImage &Image) {
  if (!Image.Dylib)
    return Error::success();
  // The compile-on-demand layer keeps the definitions in "<name>.impl" and
  // holds on to both dylibs for the session: empty them (their memory
  // returns to the arena) rather than remove them, so that a later image's
  // dylib can never take the address the layer still knows.
  JITDylib *Impl = Es.getJITDylibByName((Image.Dylib->getName() + ".impl"));
  Error Err = Image.Dylib->clear();
  if (Impl)
    Err = joinErrors(std::move(Err), Impl->clear());
  Image.Dylib = nullptr;
  return Err;
}

} // namespace ompsim::sim

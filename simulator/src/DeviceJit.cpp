//===- DeviceJit.cpp - The JIT's ORC layers over a device ----------------===//
//
// DeviceJIT's layers: linking (with the plug-ins that record linked code and
// register unwind records), the caching compiler, the partitioning and
// compile-on-demand layers with their stubs, and what runs through them
// later: lazy re-entry, lookups, removal and symbolization. Adding an image
// is DeviceJitImages.cpp.
//
//===----------------------------------------------------------------------===//

#include "DeviceJit.h"
#include "gpu/GpuDeviceRuntime.h"

#include "JitImageFunctions.h"
#include "JitObjectCache.h"
#include "LingeringTaskDispatcher.h"

#include "ompsim/Config.h"
#include "ompsim/Trace.h"
#include "ompsim/TsanHandover.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/CompileUtils.h"
#include "llvm/ExecutionEngine/Orc/EHFrameRegistrationPlugin.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"

#include <algorithm>
#include <future>
#include <mutex>

namespace ompsim::sim {

using namespace llvm;
using namespace llvm::orc;

namespace {

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
  void modifyPassConfig(MaterializationResponsibility &, jitlink::LinkGraph &Graph,
                        jitlink::PassConfiguration &Config) override {
    if constexpr (TsanBuild)
      orderPhasesForTsan(Config);
    Config.PostFixupPasses.push_back([Mu = Mu, Table = Table](jitlink::LinkGraph &G) {
      tsanAcquire(&G);
      std::lock_guard<std::mutex> Lock(*Mu);
      for (jitlink::Symbol *Sym : G.defined_symbols())
        if (Sym->hasName() && Sym->isCallable())
          Table->add(sourceName(*Sym->getName()), Sym->getAddress().getValue(), Sym->getSize());
      return Error::success();
    });
    tsanRelease(&Graph);
  }
  Error notifyFailed(MaterializationResponsibility &) override { return Error::success(); }
  Error notifyRemovingResources(JITDylib &, ResourceKey) override { return Error::success(); }
  void notifyTransferringResources(JITDylib &, ResourceKey, ResourceKey) override {}

private:
  /// JITLink runs a link's phases on ORC's dispatcher threads and hands the
  /// graph from one phase to the next inside libLLVM, where ThreadSanitizer
  /// cannot see it: each phase's passes begin by taking the graph over and
  /// end by handing it on.
  static void orderPhasesForTsan(jitlink::PassConfiguration &Config) {
    auto Take = [](jitlink::LinkGraph &G) {
      tsanAcquire(&G);
      return Error::success();
    };
    auto HandOn = [](jitlink::LinkGraph &G) {
      tsanRelease(&G);
      return Error::success();
    };
    for (jitlink::LinkGraphPassList *Passes : {&Config.PrePrunePasses, &Config.PostPrunePasses,
                                               &Config.PostAllocationPasses, &Config.PreFixupPasses}) {
      Passes->insert(Passes->begin(), Take);
      Passes->push_back(HandOn);
    }
  }

  std::shared_ptr<std::mutex> Mu;
  std::shared_ptr<ImageSymbolTable> Table;
};

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
  if (Indirection) {
    Error Cleanup = Indirection->cleanup();           // the executor may be gone already
    LingeringTaskDispatcher::takeOverFinishedTasks(); // the error was made by an ORC task
    consumeError(std::move(Cleanup));
  }
}

DeviceJIT::DeviceJIT(ExecutionSession &Es, uint64_t DsoHandle, const Config::StockJit &Stock)
    : Es(Es), DsoHandle(DsoHandle), Stock(Stock) {}

Expected<std::unique_ptr<DeviceJIT>> DeviceJIT::create(ExecutionSession &Es, uint64_t DsoHandle,
                                                       uint64_t LazyReenter, uint64_t LazyFailed,
                                                       int OptLevel, StringRef CacheDir, uint64_t CacheMax,
                                                       const Config::StockJit &Stock, StringRef LibDir) {
  static std::once_flag Targets;
  std::call_once(Targets, [] {
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
  });
  std::unique_ptr<DeviceJIT> Jit(new DeviceJIT(Es, DsoHandle, Stock));
  if (auto Runtime = gpu::loadGpuDeviceRuntime(LibDir))
    Jit->GpuRuntime = std::move(*Runtime);
  else
    Jit->GpuRuntimeProblem = toString(Runtime.takeError());
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
    Jit->Salt = std::string("ompsim-jit-object-12\n") + LLVM_VERSION_STRING + "\n" +
                Jtmb.getTargetTriple().str() + "\nlevel " + std::to_string(std::clamp(OptLevel, 0, 3)) +
                "\n" + Jit->Stock.cacheSalt() + "\ngpu fibers " + (config().GpuFibers ? "1" : "0") +
                "\ngpu block loops " + (config().GpuBlockLoops ? "1" : "0") + "\ncheck " +
                (config().Check ? "1" : "0") + "\ngpu runtime " +
                (Jit->GpuRuntime ? toHex(BLAKE3::hash(arrayRefFromStringRef(Jit->GpuRuntime->getBuffer())),
                                         /*LowerCase=*/true)
                                 : std::string("none"));
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

#include "DeviceJit.h"

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
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/TargetSelect.h"

#include <algorithm>
#include <cstdio>
#include <future>
#include <mutex>

namespace ompsim::sim {

using namespace llvm;
using namespace llvm::orc;

namespace {

Error makeError(const Twine &msg) { return createStringError(inconvertibleErrorCode(), msg); }

/// Replaces llvm.global_ctors / llvm.global_dtors with one external function
/// that calls them in order, so the executor can run them with a plain call.
Function *lowerCtorsDtors(Module &m, bool ctors, const std::string &name) {
  std::vector<std::pair<unsigned, Function *>> fns;
  for (const auto &e : ctors ? getConstructors(m) : getDestructors(m))
    if (e.Func)
      fns.emplace_back(e.Priority, e.Func);
  if (GlobalVariable *gv = m.getGlobalVariable(ctors ? "llvm.global_ctors" : "llvm.global_dtors"))
    gv->eraseFromParent();
  if (fns.empty())
    return nullptr;
  // Constructors run by ascending priority, destructors by descending; equal
  // priorities keep their order in the module (std::sort on (priority, index)
  // avoids libstdc++'s deprecated temporary buffer inside std::stable_sort).
  std::vector<size_t> order(fns.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (fns[a].first != fns[b].first)
      return ctors ? fns[a].first < fns[b].first : fns[a].first > fns[b].first;
    return a < b;
  });
  std::vector<std::pair<unsigned, Function *>> sorted;
  for (size_t i : order)
    sorted.push_back(fns[i]);
  fns.swap(sorted);
  LLVMContext &ctx = m.getContext();
  Function *f =
      Function::Create(FunctionType::get(Type::getVoidTy(ctx), false), GlobalValue::ExternalLinkage, name, m);
  IRBuilder<> b(BasicBlock::Create(ctx, "entry", f));
  for (auto &[prio, fn] : fns)
    b.CreateCall(FunctionType::get(Type::getVoidTy(ctx), false), fn);
  b.CreateRetVoid();
  return f;
}

/// The partition compiled on a first call: the requested definitions and,
/// transitively, the functions they call directly whose address is never
/// taken. Those can only be reached through these calls, so compiling them
/// now saves a round trip each; a function whose address is taken keeps
/// its stub (compiled on its own first call) so that every pointer to it,
/// in device code, vtables and the function-pointer table, stays the stub's.
std::optional<IRPartitionLayer::GlobalValueSet>
withDirectCallees(IRPartitionLayer::GlobalValueSet requested) {
  IRPartitionLayer::GlobalValueSet out = requested;
  std::vector<const Function *> work;
  for (const GlobalValue *gv : requested)
    if (const auto *f = dyn_cast<Function>(gv))
      work.push_back(f);
  while (!work.empty()) {
    const Function *f = work.back();
    work.pop_back();
    for (const BasicBlock &bb : *f)
      for (const Instruction &i : bb) {
        const auto *call = dyn_cast<CallBase>(&i);
        if (!call)
          continue;
        const auto *callee = dyn_cast<Function>(call->getCalledOperand()->stripPointerCasts());
        if (!callee || callee->isDeclaration() || callee->hasAddressTaken())
          continue;
        if (out.insert(callee).second)
          work.push_back(callee);
      }
  }
  return out;
}

/// The image trace's record of one compile: the first definition asked for,
/// how many were, how many definitions the compile holds, and whether it is
/// everything the image had left.
void traceCompile(const IRPartitionLayer::GlobalValueSet &requested, size_t compiled, bool rest) {
  if (requested.empty())
    return;
  OMPSIM_TRACE_EVENT(Cat::Image, "jit-compile")
      .str("symbol", (*requested.begin())->getName())
      .num("requested", int64_t(requested.size()))
      .num("compiled", int64_t(compiled))
      .num("rest", rest ? 1 : 0);
}

/// The name a function had in its image: extracting a partition gives an
/// internal function that another partition calls a new external name,
/// "__orc_lcl.<name>.<n>", which means nothing to the user.
std::string sourceName(StringRef linked) {
  StringRef name = linked;
  if (!name.consume_front("__orc_lcl."))
    return linked.str();
  size_t dot = name.rfind('.');
  if (dot == StringRef::npos || dot == 0 || dot + 1 == name.size() ||
      !llvm::all_of(name.drop_front(dot + 1), [](char c) { return c >= '0' && c <= '9'; }))
    return linked.str();
  return name.take_front(dot).str();
}

/// Records the functions every link defines, so an address in code that was
/// compiled lazily (away from its stub) can be named in fault reports.
class LinkedCodeRecorder : public ObjectLinkingLayer::Plugin {
public:
  LinkedCodeRecorder(std::shared_ptr<std::mutex> mu, std::shared_ptr<ImageSymbolTable> table)
      : mu_(std::move(mu)), table_(std::move(table)) {}
  void modifyPassConfig(MaterializationResponsibility &, jitlink::LinkGraph &,
                        jitlink::PassConfiguration &config) override {
    config.PostFixupPasses.push_back([mu = mu_, table = table_](jitlink::LinkGraph &g) {
      std::lock_guard<std::mutex> lock(*mu);
      for (jitlink::Symbol *sym : g.defined_symbols())
        if (sym->hasName() && sym->isCallable())
          table->add(sourceName(*sym->getName()), sym->getAddress().getValue(), sym->getSize());
      return Error::success();
    });
  }
  Error notifyFailed(MaterializationResponsibility &) override { return Error::success(); }
  Error notifyRemovingResources(JITDylib &, ResourceKey) override { return Error::success(); }
  void notifyTransferringResources(JITDylib &, ResourceKey, ResourceKey) override {}

private:
  std::shared_ptr<std::mutex> mu_;
  std::shared_ptr<ImageSymbolTable> table_;
};

/// The named metadata in which add() records the SHA-256 of the image a module
/// came from (partitions extracted from the module copy it).
constexpr const char *kImageDigestMD = "ompsim.jit.image";

/// Code generation with its objects kept in a folder between runs: code
/// generation is most of the time to the first kernel of a large bitcode
/// image. An object is named by a SHA-256 of what its module is made from
/// and of what else code generation depends on (LLVM's version, the target,
/// the level), so a changed image or setting never reads a stale object. Each
/// file starts with the SHA-256 of the object after it: a truncated or
/// damaged file is compiled afresh and rewritten, never linked. Files are
/// written aside and renamed into place, so processes sharing the folder see
/// whole files only.
class CachingCompiler : public IRCompileLayer::IRCompiler {
public:
  CachingCompiler(JITTargetMachineBuilder jtmb, std::string dir, std::string salt)
      : IRCompiler(irManglingOptionsFromTargetOptions(jtmb.getOptions())), compiler_(std::move(jtmb)),
        dir_(std::move(dir)), salt_(std::move(salt)) {}

  Expected<std::unique_ptr<MemoryBuffer>> operator()(Module &m) override {
    std::string path = pathFor(m);
    if (auto file = MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false)) {
      StringRef bytes = (*file)->getBuffer();
      if (bytes.size() > kDigestSize &&
          digestOf(bytes.drop_front(kDigestSize)) == bytes.take_front(kDigestSize))
        return MemoryBuffer::getMemBufferCopy(bytes.drop_front(kDigestSize), m.getModuleIdentifier());
    }
    auto object = compiler_(m);
    if (object)
      store(path, (*object)->getBuffer());
    return object;
  }

private:
  static constexpr size_t kDigestSize = 32;

  static std::string digestOf(StringRef bytes) {
    auto d = SHA256::hash(arrayRefFromStringRef(bytes));
    return std::string(d.begin(), d.end());
  }

  /// A module compiled here is a function of its image (as add() rewrites
  /// it) and of which of the image's definitions it holds, so its key is the
  /// image's digest and each global value's name, linkage, visibility and
  /// whether it is defined: hashing the module's bitcode instead would cost
  /// a fifth of compiling it. A module without the image's digest hashes
  /// its bitcode.
  std::string pathFor(const Module &m) const {
    SHA256 hash;
    hash.update(salt_);
    const NamedMDNode *image = m.getNamedMetadata(kImageDigestMD);
    const auto *digest = image && image->getNumOperands() == 1 && image->getOperand(0)->getNumOperands() == 1
                             ? dyn_cast<MDString>(image->getOperand(0)->getOperand(0))
                             : nullptr;
    if (digest) {
      hash.update(digest->getString());
      for (const GlobalValue &gv : m.global_values()) {
        uint64_t size = gv.getName().size();
        uint8_t traits[] = {uint8_t(size),
                            uint8_t(size >> 8),
                            uint8_t(size >> 16),
                            uint8_t(gv.getLinkage()),
                            uint8_t(gv.getVisibility()),
                            uint8_t(gv.isDeclaration()),
                            uint8_t(gv.getValueID())};
        hash.update(traits);
        hash.update(gv.getName());
      }
    } else {
      SmallVector<char, 0> bitcode;
      raw_svector_ostream os(bitcode);
      WriteBitcodeToFile(m, os);
      hash.update(arrayRefFromStringRef(StringRef(bitcode.data(), bitcode.size())));
    }
    SmallString<128> path(dir_);
    sys::path::append(path, toHex(hash.final(), /*LowerCase=*/true) + ".o");
    return path.str().str();
  }

  void store(const std::string &path, StringRef object) {
    int fd = -1;
    SmallString<128> temp;
    if (std::error_code ec = sys::fs::createUniqueFile(path + ".%%%%%%.tmp", fd, temp))
      return warnOnce("cannot create a file in it: " + ec.message());
    raw_fd_ostream out(fd, /*shouldClose=*/true);
    out << digestOf(object) << object;
    out.close();
    if (out.has_error()) {
      out.clear_error();
      sys::fs::remove(temp);
      return warnOnce("cannot write " + temp.str().str());
    }
    if (std::error_code ec = sys::fs::rename(temp, path)) {
      sys::fs::remove(temp);
      warnOnce("cannot rename " + temp.str().str() + ": " + ec.message());
    }
  }

  /// A folder that cannot be written costs only time: say so once.
  void warnOnce(const std::string &problem) {
    std::lock_guard<std::mutex> lock(mu_);
    if (warned_)
      return;
    warned_ = true;
    std::fprintf(stderr, "ompsim: OMPSIM_JIT_CACHE='%s': %s; compiled code is not kept\n", dir_.c_str(),
                 problem.c_str());
  }

  ConcurrentIRCompiler compiler_;
  std::string dir_, salt_;
  std::mutex mu_;
  bool warned_ = false;
};

} // namespace

std::string DeviceJIT::symbolize(uint64_t addr) const {
  std::lock_guard<std::mutex> lock(*linkedMu_);
  return linked_->symbolize(addr);
}

DeviceJIT::~DeviceJIT() {
  lazy_.reset();
  partitioner_.reset();
  if (indirection_)
    consumeError(indirection_->cleanup()); // the executor may be gone already
}

DeviceJIT::DeviceJIT(ExecutionSession &es, uint64_t dsoHandle) : es_(es), dsoHandle_(dsoHandle) {}

Expected<std::unique_ptr<DeviceJIT>> DeviceJIT::Create(ExecutionSession &es, uint64_t dsoHandle,
                                                       uint64_t lazyReenter, uint64_t lazyFailed,
                                                       int optLevel, StringRef cacheDir) {
  static std::once_flag targets;
  std::call_once(targets, [] {
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
  });
  std::unique_ptr<DeviceJIT> jit(new DeviceJIT(es, dsoHandle));
  jit->linker_ = std::make_unique<ObjectLinkingLayer>(es);
  jit->linker_->addPlugin(std::make_shared<LinkedCodeRecorder>(jit->linkedMu_, jit->linked_));
  if (auto eh = EHFrameRegistrationPlugin::Create(es))
    jit->linker_->addPlugin(std::move(*eh));
  else
    consumeError(eh.takeError()); // unwinding through JIT code then stops at its frames
  JITTargetMachineBuilder jtmb((Triple("x86_64-pc-linux-gnu")));
  // The arena is far from the executor's libraries: reach them through the GOT.
  jtmb.setRelocationModel(Reloc::PIC_);
  jtmb.setCodeModel(CodeModel::Small);
  // The image's IR was optimized when it was built; what is left is code
  // generation, whose optimizing levels take many times longer on large
  // kernels (OMPSIM_JIT_OPT_LEVEL; 0 by default).
  static constexpr CodeGenOptLevel kLevels[] = {CodeGenOptLevel::None, CodeGenOptLevel::Less,
                                                CodeGenOptLevel::Default, CodeGenOptLevel::Aggressive};
  jtmb.setCodeGenOptLevel(kLevels[std::clamp(optLevel, 0, 3)]);
  std::unique_ptr<IRCompileLayer::IRCompiler> compiler;
  if (!cacheDir.empty()) {
    if (std::error_code ec = sys::fs::create_directories(cacheDir)) {
      std::fprintf(stderr,
                   "ompsim: OMPSIM_JIT_CACHE='%s': cannot create the folder: %s; compiled code is not kept\n",
                   cacheDir.str().c_str(), ec.message().c_str());
    } else {
      jit->caching_ = true;
      compiler = std::make_unique<CachingCompiler>(
          jtmb, cacheDir.str(),
          // Bump the version when add() rewrites images differently: the
          // key trusts that an image's bytes decide its rewritten module.
          std::string("ompsim-jit-object-2\n") + LLVM_VERSION_STRING + "\n" + jtmb.getTargetTriple().str() +
              "\nlevel " + std::to_string(std::clamp(optLevel, 0, 3)));
    }
  }
  if (!compiler)
    compiler = std::make_unique<ConcurrentIRCompiler>(std::move(jtmb));
  jit->compiler_ = std::make_unique<IRCompileLayer>(es, *jit->linker_, std::move(compiler));
  // Lazy compilation: stubs and trampolines live in the arena; a trampoline
  // enters the executor's resolver block, which asks us (resolveLazyCall).
  auto indirection = EPCIndirectionUtils::Create(es);
  if (!indirection)
    return indirection.takeError();
  jit->indirection_ = std::move(*indirection);
  if (auto resolver = jit->indirection_->writeResolverBlock(ExecutorAddr(lazyReenter), ExecutorAddr(0));
      !resolver)
    return resolver.takeError();
  LazyCallThroughManager &calls =
      jit->indirection_->createLazyCallThroughManager(es, ExecutorAddr(lazyFailed));
  jit->partitioner_ = std::make_unique<IRPartitionLayer>(es, *jit->compiler_);
  // A program that calls many functions once each would pay a round trip and
  // a compile per function; after kLazyCompilesPerImage of them, an image's
  // next first call compiles everything it has left at once. So does a first
  // call whose partition holds most of what is left: extracting a partition
  // copies it into a module of its own, which then costs more than compiling
  // the few functions it would leave out.
  constexpr unsigned kLazyCompilesPerImage = 32;
  jit->partitioner_->setPartitionFunction(
      [counts = std::make_shared<std::pair<std::mutex, DenseMap<const Module *, unsigned>>>()](
          IRPartitionLayer::GlobalValueSet requested) -> std::optional<IRPartitionLayer::GlobalValueSet> {
        bool code = llvm::any_of(requested, [](const GlobalValue *gv) { return isa<Function>(gv); });
        auto partition = withDirectCallees(requested);
        if (!code || requested.empty()) {
          traceCompile(requested, partition->size(), false);
          return partition;
        }
        const Module *m = (*requested.begin())->getParent();
        auto rest = [&]() -> std::optional<IRPartitionLayer::GlobalValueSet> {
          traceCompile(
              requested,
              llvm::count_if(m->global_values(), [](const GlobalValue &gv) { return !gv.isDeclaration(); }),
              true);
          return std::nullopt; // the whole (remaining) module
        };
        {
          std::lock_guard<std::mutex> lock(counts->first);
          if (++counts->second[m] > kLazyCompilesPerImage)
            return rest();
        }
        // "Most": three quarters of the functions, or of the instructions.
        size_t functionsLeft = 0, instructionsLeft = 0, functionsIn = 0, instructionsIn = 0;
        for (const Function &f : m->functions())
          if (!f.isDeclaration()) {
            ++functionsLeft;
            instructionsLeft += f.getInstructionCount();
          }
        for (const GlobalValue *gv : *partition)
          if (const auto *f = dyn_cast<Function>(gv)) {
            ++functionsIn;
            instructionsIn += f->getInstructionCount();
          }
        if ((functionsLeft >= 16 && functionsIn * 4 >= functionsLeft * 3) ||
            (instructionsLeft >= 2000 && instructionsIn * 4 >= instructionsLeft * 3))
          return rest();
        traceCompile(requested, partition->size(), false);
        return partition;
      });
  EPCIndirectionUtils *iu = jit->indirection_.get();
  jit->lazy_ = std::make_unique<CompileOnDemandLayer>(es, *jit->partitioner_, calls,
                                                      [iu] { return iu->createIndirectStubsManager(); });
  return std::move(jit);
}

Expected<JITImage> DeviceJIT::add(ArrayRef<char> bitcode, StringRef name) {
  auto ctx = std::make_unique<LLVMContext>();
  auto module = parseBitcodeFile(MemoryBufferRef(StringRef(bitcode.data(), bitcode.size()), name), *ctx);
  if (!module)
    return makeError("image " + name + ": unreadable bitcode: " + toString(module.takeError()));
  Module &m = **module;
  std::string tag = std::to_string(nextImage_++);
  // The object cache's key (CachingCompiler) starts from the image's digest.
  if (caching_)
    m.getOrInsertNamedMetadata(kImageDigestMD)
        ->addOperand(MDNode::get(*ctx, MDString::get(*ctx, toHex(SHA256::hash(arrayRefFromStringRef(StringRef(
                                                                     bitcode.data(), bitcode.size()))),
                                                                 /*LowerCase=*/true))));
  Function *init = lowerCtorsDtors(m, true, "__ompsim_jit_init_" + tag);
  Function *fini = lowerCtorsDtors(m, false, "__ompsim_jit_fini_" + tag);
  // The device link internalizes every function but the kernels. An internal
  // function whose address is taken (an indirect function, a vtable slot, a
  // callback) gets a stub like an exported one: it then compiles on its
  // first call too, and every pointer to it is the stub's.
  //
  // Every use of such a function's address (in code and in initializers,
  // vtables and offload entries alike) then names "<f>.ompsim.addr", an alias
  // of its stub, while calls keep naming the function: code compiled in the
  // same object as the function would otherwise take its compiled address,
  // and a pointer taken on the device would differ from the translated one.
  SymbolAliasMap addressAliases;
  std::vector<Function *> addressTaken;
  for (Function &f : m)
    if (!f.isDeclaration() && f.hasAddressTaken(nullptr, /*IgnoreCallbackUses=*/false,
                                                /*IgnoreAssumeLikeCalls=*/true, /*IgnoreLLVMUsed=*/true))
      addressTaken.push_back(&f);
  // llvm.used and llvm.compiler.used keep naming the definitions.
  auto inUsedList = [](const User *user) {
    return isa<ConstantArray>(user) && llvm::any_of(user->users(), [](const User *g) {
             const auto *gv = dyn_cast<GlobalVariable>(g);
             return gv && (gv->getName() == "llvm.used" || gv->getName() == "llvm.compiler.used");
           });
  };
  for (Function *f : addressTaken) {
    if (f->hasLocalLinkage()) {
      f->setLinkage(GlobalValue::ExternalLinkage);
      f->setVisibility(GlobalValue::HiddenVisibility);
    }
    Function *address = Function::Create(f->getFunctionType(), GlobalValue::ExternalLinkage,
                                         f->getName() + ".ompsim.addr", m);
    address->setVisibility(GlobalValue::HiddenVisibility);
    f->replaceUsesWithIf(address, [&](Use &u) {
      const auto *call = dyn_cast<CallBase>(u.getUser());
      return !(call && call->isCallee(&u)) && !inUsedList(u.getUser());
    });
    addressAliases[es_.intern(address->getName())] = {es_.intern(f->getName()),
                                                      JITSymbolFlags::Exported | JITSymbolFlags::Callable};
  }

  // Functions (their stubs) and data, looked up in that order below.
  std::vector<std::string> callables, data;
  for (GlobalValue &gv : m.global_values()) {
    if (gv.isDeclaration() || gv.hasLocalLinkage() || !gv.hasName() || gv.getName().starts_with("llvm."))
      continue;
    const GlobalObject *object = gv.getAliaseeObject();
    (object && isa<Function>(object) ? callables : data).push_back(gv.getName().str());
  }

  auto jd = es_.createJITDylib("image" + name.str());
  if (!jd)
    return jd.takeError();
  auto gen = EPCDynamicLibrarySearchGenerator::GetForTargetProcess(es_);
  if (!gen)
    return gen.takeError();
  jd->addGenerator(std::move(*gen));
  if (auto err = jd->define(absoluteSymbols(
          {{es_.intern("__dso_handle"), {ExecutorAddr(dsoHandle_), JITSymbolFlags::Exported}}})))
    return std::move(err);
  if (!addressAliases.empty())
    if (auto err = jd->define(symbolAliases(std::move(addressAliases))))
      return std::move(err);
  if (auto err = lazy_->add(*jd, ThreadSafeModule(std::move(*module), std::move(ctx))))
    return std::move(err);

  JITImage img;
  img.dylib = &*jd;
  // Two lookups, one after the other: the stubs first, then the data (which
  // compiles and links the image's globals). ORC materializes what one
  // lookup needs concurrently; in sequence, every run places the stubs and
  // the data at the same device addresses.
  for (std::vector<std::string> *names : {&callables, &data}) {
    SymbolLookupSet set;
    for (auto &n : *names)
      set.add(es_.intern(n), SymbolLookupFlags::WeaklyReferencedSymbol);
    auto found =
        es_.lookup(makeJITDylibSearchOrder(&*jd, JITDylibLookupFlags::MatchAllSymbols), std::move(set));
    if (!found)
      return makeError("image " + name + ": JIT compile or link failed: " + toString(found.takeError()));
    for (auto &[sym, def] : *found) {
      std::string n = (*sym).str();
      uint64_t a = def.getAddress().getValue();
      if (init && n == init->getName())
        img.init = a;
      else if (fini && n == fini->getName())
        img.fini = a;
      img.symbols.emplace_back(n, a);
    }
  }
  return img;
}

uint64_t DeviceJIT::resolveLazyCall(uint64_t trampoline) {
  std::promise<uint64_t> landing;
  auto result = landing.get_future();
  indirection_->getLazyCallThroughManager().resolveTrampolineLandingAddress(
      ExecutorAddr(trampoline), [&landing](ExecutorAddr a) { landing.set_value(a.getValue()); });
  return result.get();
}

Expected<uint64_t> DeviceJIT::lookup(const JITImage &image, StringRef symbol) {
  for (auto &[n, a] : image.symbols)
    if (n == symbol)
      return a;
  return 0;
}

Error DeviceJIT::remove(JITImage &image) {
  if (!image.dylib)
    return Error::success();
  // The compile-on-demand layer keeps the definitions in "<name>.impl" and
  // holds on to both dylibs for the session: empty them (their memory
  // returns to the arena) rather than remove them, so that a later image's
  // dylib can never take the address the layer still knows.
  JITDylib *impl = es_.getJITDylibByName((image.dylib->getName() + ".impl"));
  Error err = image.dylib->clear();
  if (impl)
    err = joinErrors(std::move(err), impl->clear());
  image.dylib = nullptr;
  return err;
}

} // namespace ompsim::sim

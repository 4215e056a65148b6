//===- GpuDeviceRuntime.cpp - ompsim's GPU device runtime in GPU images ---===//
#include "GpuDeviceRuntime.h"

#include "BlockLoops.h"
#include "BlockRounds.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/Path.h"

using namespace llvm;

namespace ompsim::sim::gpu {
namespace {

/// Functions the runtime defines that the executor's device runtime answers
/// instead, for every image alike: the indirect-call lookup (over the table
/// sim publishes, with its trace and its misses named), the ompx kernel
/// language (runtime/device/ompx), and what only the host knows.
bool servedByExecutor(StringRef Name) {
  return Name == "__llvm_omp_indirect_call_lookup" || Name == "omp_get_num_devices" ||
         Name == "omp_get_initial_device" || Name.starts_with("ompx_");
}

} // namespace

Expected<std::unique_ptr<MemoryBuffer>> loadGpuDeviceRuntime(StringRef LibDir) {
  SmallString<256> P(LibDir);
  sys::path::append(P, "ompsim-vgpu", "ompdevice.bc");
  std::string Path(P);
  auto Buffer = MemoryBuffer::getFile(Path);
  if (!Buffer)
    return createStringError(Buffer.getError(), "ompsim's GPU device runtime %s: %s", Path.c_str(),
                             Buffer.getError().message().c_str());
  return std::move(*Buffer);
}

Error linkGpuDeviceRuntime(Module &M, MemoryBufferRef Runtime, StringRef ImageName) {
  auto Parsed = parseBitcodeFile(Runtime, M.getContext());
  if (!Parsed)
    return createStringError(inconvertibleErrorCode(), "image %s: ompsim's GPU device runtime %s: %s",
                             ImageName.str().c_str(), Runtime.getBufferIdentifier().str().c_str(),
                             toString(Parsed.takeError()).c_str());
  std::unique_ptr<Module> Rt = std::move(*Parsed);
  Rt->setTargetTriple(M.getTargetTriple());
  Rt->setDataLayout(M.getDataLayout());
  // The runtime keeps its entry points with `used` for a GPU's link; here
  // only what the image calls is linked.
  for (const char *Name : {"llvm.used", "llvm.compiler.used"})
    if (GlobalVariable *Used = Rt->getNamedGlobal(Name))
      Used->eraseFromParent();
  for (Function &F : *Rt) {
    if (!F.isDeclaration() && servedByExecutor(F.getName()))
      F.deleteBody();
    // Known as the runtime's after the link (BlockLoops.h).
    if (!F.isDeclaration())
      F.addFnAttr(GpuRuntimeAttribute);
  }
  // A parallel region's call may become one of the runtime's entry for a
  // region split at its barriers (BlockRounds.h), after the link.
  if (const Function *InRounds = Rt->getFunction(ParallelInRoundsEntry);
      InRounds && (M.getFunction("__kmpc_parallel_60") || M.getFunction("__kmpc_parallel_51")))
    M.getOrInsertFunction(ParallelInRoundsEntry, InRounds->getFunctionType());
  StringSet<> Defined;
  for (GlobalValue &G : Rt->global_values())
    if (!G.isDeclaration() && G.hasExternalLinkage())
      Defined.insert(G.getName());
  if (Linker::linkModules(M, std::move(Rt), Linker::Flags::LinkOnlyNeeded))
    return createStringError(inconvertibleErrorCode(), "image %s: cannot link ompsim's GPU device runtime",
                             ImageName.str().c_str());
  // The runtime is the image's own, as after a GPU's device link.
  for (GlobalValue &G : M.global_values())
    if (!G.isDeclaration() && G.hasExternalLinkage() && Defined.contains(G.getName()))
      G.setLinkage(GlobalValue::InternalLinkage);
  return Error::success();
}

} // namespace ompsim::sim::gpu

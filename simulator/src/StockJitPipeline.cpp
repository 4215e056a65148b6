#include "StockJitPipeline.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Passes/OptimizationLevel.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>

namespace ompsim::sim {

using namespace llvm;

namespace {

/// One writer at a time (devices load images on their own threads), and one
/// report per variable and file in the process.
std::mutex &writeMutex() {
  static std::mutex Mu;
  return Mu;
}

/// Writes `Path` through `Fill`; a failure is reported once, naming the
/// variable and the file, and the run goes on.
void writeFile(const char *Variable, const std::string &Path, bool Text,
               function_ref<void(raw_ostream &)> Fill) {
  static std::set<std::string> Reported;
  std::lock_guard<std::mutex> Lock(writeMutex());
  std::error_code Ec;
  std::string Problem;
  {
    raw_fd_ostream Os(Path, Ec, Text ? sys::fs::OF_Text : sys::fs::OF_None);
    if (Ec) {
      Problem = "cannot open it: " + Ec.message();
      Os.clear_error();
    } else {
      Fill(Os);
      Os.close();
      if (Os.has_error()) {
        Problem = "cannot write it: " + Os.error().message();
        Os.clear_error();
      }
    }
  }
  if (Problem.empty() || !Reported.insert(std::string(Variable) + "\n" + Path).second)
    return;
  std::fprintf(stderr, "ompsim: %s '%s': %s (the run goes on without it)\n", Variable, Path.c_str(),
               Problem.c_str());
}

/// LLVM's default IR pipeline at `Level` (0-3) for `Tm`'s target.
void optimize(Module &M, TargetMachine &Tm, int Level) {
  LoopAnalysisManager Lam;
  FunctionAnalysisManager Fam;
  CGSCCAnalysisManager Cgam;
  ModuleAnalysisManager Mam;
  PassBuilder Pb(&Tm);
  Pb.registerModuleAnalyses(Mam);
  Pb.registerCGSCCAnalyses(Cgam);
  Pb.registerFunctionAnalyses(Fam);
  Pb.registerLoopAnalyses(Lam);
  Pb.crossRegisterProxies(Lam, Fam, Cgam, Mam);
  static const OptimizationLevel *const kLevels[] = {&OptimizationLevel::O0, &OptimizationLevel::O1,
                                                     &OptimizationLevel::O2, &OptimizationLevel::O3};
  ModulePassManager Mpm = Pb.buildPerModuleDefaultPipeline(*kLevels[std::clamp(Level, 0, 3)]);
  Mpm.run(M, Mam);
}

} // namespace

bool StockJitPipeline::needsWholeModule() const {
  return !Opts.PreOptIrModule.empty() || !Opts.PostOptIrModule.empty() || !Opts.SaveImage.empty() ||
         !Opts.ReplacementModule.empty() || optimizes();
}

std::string StockJitPipeline::cacheSalt() const {
  return optimizes() ? "ir-pipeline " + std::to_string(Opts.OptLevel) + "\n" : std::string();
}

Expected<std::unique_ptr<MemoryBuffer>> StockJitPipeline::replacement() const {
  if (Opts.ReplacementModule.empty())
    return nullptr;
  auto Buffer =
      MemoryBuffer::getFile(Opts.ReplacementModule, /*IsText=*/false, /*RequiresNullTerminator=*/true);
  if (!Buffer)
    return createStringError(Buffer.getError(),
                             "LIBOMPTARGET_JIT_REPLACEMENT_MODULE '%s': cannot read it: %s",
                             Opts.ReplacementModule.c_str(), Buffer.getError().message().c_str());
  return std::move(*Buffer);
}

Expected<std::unique_ptr<Module>> StockJitPipeline::parseReplacement(MemoryBufferRef Buffer,
                                                                     LLVMContext &Ctx) const {
  SMDiagnostic Diag;
  std::unique_ptr<Module> M = parseIR(Buffer, Diag, Ctx);
  if (M)
    return std::move(M);
  std::string Where = Diag.getLineNo() > 0 ? "line " + std::to_string(Diag.getLineNo()) + ": " : "";
  return createStringError(inconvertibleErrorCode(),
                           "LIBOMPTARGET_JIT_REPLACEMENT_MODULE '%s': not LLVM IR: %s%s",
                           Opts.ReplacementModule.c_str(), Where.c_str(), Diag.getMessage().str().c_str());
}

void StockJitPipeline::run(Module &M, TargetMachine &Tm) const {
  if (!Opts.PreOptIrModule.empty())
    writeFile("LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE", Opts.PreOptIrModule, /*Text=*/true,
              [&](raw_ostream &Os) { M.print(Os, nullptr); });
  if (optimizes())
    optimize(M, Tm, Opts.OptLevel);
  if (!Opts.PostOptIrModule.empty())
    writeFile("LIBOMPTARGET_JIT_POST_OPT_IR_MODULE", Opts.PostOptIrModule, /*Text=*/true,
              [&](raw_ostream &Os) { M.print(Os, nullptr); });
}

void StockJitPipeline::saveImage(StringRef Object) const {
  writeFile("LIBOMPTARGET_JIT_SAVE_IMAGE_FILENAME", Opts.SaveImage, /*Text=*/false,
            [&](raw_ostream &Os) { Os << Object; });
}

Expected<std::string> StockJitPipeline::emitObject(const Module &M, TargetMachine &Tm) {
  // Code generation changes the IR it runs on; the JIT compiles `M` itself later.
  std::unique_ptr<Module> Copy = CloneModule(M);
  SmallVector<char, 0> Object;
  raw_svector_ostream Os(Object);
  legacy::PassManager Pm;
  if (Tm.addPassesToEmitFile(Pm, Os, nullptr, CodeGenFileType::ObjectFile))
    return createStringError(inconvertibleErrorCode(), "the target cannot emit an object file");
  Pm.run(*Copy);
  return std::string(Object.data(), Object.size());
}

} // namespace ompsim::sim

//===- SourceSites.h - The source lines the checker's reports name -*- C++ -*-===//
//
// Under the checker the JIT hands the device runtime the source line of each
// access it checks and of each device-heap call, as a string of the module
// ("heap.c:45:12", from the instruction's debug location).
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_SIMULATOR_GPU_SOURCESITES_H
#define OMPSIM_SIMULATOR_GPU_SOURCESITES_H

#include "llvm/ADT/StringMap.h"

namespace llvm {
class Constant;
class GlobalVariable;
class Instruction;
class Module;
} // namespace llvm

namespace ompsim::sim::gpu {

/// The sites' strings of one module, each made once.
class SourceSites {
public:
  explicit SourceSites(llvm::Module &M) : M(M) {}

  /// "file:line:column" of `I`, or, without a debug location, "function
  /// 'name'" of its function.
  llvm::Constant *of(const llvm::Instruction &I);

  /// "file:line:column" of `I`, or null without a debug location.
  llvm::Constant *lineOf(const llvm::Instruction &I);

private:
  llvm::Constant *named(const std::string &Text);

  llvm::Module &M;
  llvm::StringMap<llvm::GlobalVariable *> Names;
};

} // namespace ompsim::sim::gpu

#endif // OMPSIM_SIMULATOR_GPU_SOURCESITES_H

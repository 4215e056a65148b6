//===- JitImageFunctions.h - Partitioning facts of a JIT image -*- C++ -*-===//
//
// What DeviceJIT knows of the functions of each bitcode image it added: their
// sizes and direct callees (for the partition compiled on a first call), and
// the functions whose address is taken (whose address uses point at their
// stubs). Shared by adding an image (DeviceJitImages.cpp) and the layers
// that compile it (DeviceJit.cpp). Private to the simulator.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ExecutionEngine/Orc/IRPartitionLayer.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace ompsim::sim {

/// The partitioning facts of one image's module: each defined function's
/// instructions and the callees its partition takes along (from its body, or
/// from the cached JitImageSummary while the body is not loaded), and the
/// functions whose address is taken with the declarations that stand for
/// their address (to rewrite bodies loaded later the same way).
struct ImageFunctions {
  struct Facts {
    uint32_t Instructions = 0;
    llvm::SmallVector<const llvm::Function *, 4> Callees;
  };
  llvm::DenseMap<const llvm::Function *, Facts> Info;
  std::vector<std::pair<llvm::Function *, llvm::Function *>> AddressOf;
};

/// ImageFunctions by module, shared by add(), the partition function and the
/// caching compiler (which run on ORC's threads).
struct ImageFunctionsTable {
  std::mutex Mu;
  llvm::DenseMap<const llvm::Module *, std::shared_ptr<ImageFunctions>> ByModule;

  std::shared_ptr<ImageFunctions> find(const llvm::Module *M) {
    std::lock_guard<std::mutex> Lock(Mu);
    return ByModule.lookup(M);
  }
};

/// Points every use of each function's address at "<f>.ompsim.addr", an
/// alias of its stub, while calls keep naming the function (see the
/// definition for why).
void rewriteAddressUses(llvm::ArrayRef<std::pair<llvm::Function *, llvm::Function *>> AddressOf);

/// Loads the bodies a compile needs: those of `Partition` (all of the
/// module's when null) not loaded yet, rewriting their address uses.
llvm::Error materializeBodies(llvm::Module &M, ImageFunctions *Fns,
                              const llvm::orc::IRPartitionLayer::GlobalValueSet *Partition);

/// The partition compiled on a first call: the requested definitions and,
/// transitively, the functions they call directly whose address is never
/// taken.
llvm::orc::IRPartitionLayer::GlobalValueSet
withDirectCallees(const llvm::orc::IRPartitionLayer::GlobalValueSet &Requested, const ImageFunctions &Fns);

} // namespace ompsim::sim

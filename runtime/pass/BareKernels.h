//===- BareKernels.h - ompx_bare kernels run on every thread --------------===//
//
// clang-22 compiles an `ompx_bare` target region for the x86_64 offload
// target into the same kernel as without the clause, which runs the region
// once per team. The ompsim-bare pass finds those kernels (from the source's
// directives: the IR keeps no trace of the clause) and hands their region to
// the device runtime's __ompsim_bare_fork_teams, which runs it on every
// thread of every block, as a GPU does; the kernel gets the
// `<name>_kernel_environment` a GPU compile gives it (bare mode), from which
// the plugins know the launch's mode.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_PASS_BAREKERNELS_H
#define OMPSIM_PASS_BAREKERNELS_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/PassManager.h"

#include <optional>

namespace ompsim::pass {

/// The lines on which a `#pragma omp` directive (or a `_Pragma("omp ...")`)
/// with the `ompx_bare` clause starts in C or C++ source `Text` (1-based; a
/// directive continued with backslashes counts from its first line, as clang
/// counts the line in a kernel's name).
llvm::SmallVector<unsigned> bareDirectiveLines(llvm::StringRef Text);

/// Where a kernel's name says its target region is:
/// `__omp_offloading_<device>_<file>_<function>_l<line>[_<count>]`, with the
/// device and file numbers of the source file's unique id (hex).
struct KernelSite {
  uint64_t Device = 0;
  uint64_t File = 0;
  unsigned Line = 0;
};
std::optional<KernelSite> parseKernelName(llvm::StringRef Name);

/// The module pass (`ompsim-bare`): acts on host-offload device modules only
/// (the "openmp-device" flag, a non-GPU triple), and on the kernels of the
/// module's own source file.
class BareKernelsPass : public llvm::PassInfoMixin<BareKernelsPass> {
public:
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  static bool isRequired() { return true; }
};

} // namespace ompsim::pass

#endif // OMPSIM_PASS_BAREKERNELS_H

//===- KernelLaunchTraces.cpp - stock's kernel launch record --------------===//
//
// The texts are stock libomptarget 22's (its plugins' ErrorReporter); a
// kernel goes by the name llvm::omp::prettifyFunctionName gives it, as
// there: "omp target in main @ 12 (__omp_offloading_..._main_l12)".
//
//===----------------------------------------------------------------------===//
#include "KernelLaunchTraces.h"
#include "StackTraces.h"

#include "llvm/Frontend/OpenMP/OMP.h"

#include <fmt/format.h>

#include <algorithm>

namespace ompsim::tracking {

void KernelLaunchTraces::launched(const std::string &Kernel, bool WithTrace) {
  std::string Trace = WithTrace ? captureStackTrace() : std::string();
  std::lock_guard<std::mutex> Lock(Mu);
  Launches[Next] = {Kernel, std::move(Trace)};
  Next = (Next + 1) % Capacity;
}

void KernelLaunchTraces::print(llvm::raw_ostream &OS, uint32_t TracesToShow) {
  std::lock_guard<std::mutex> Lock(Mu);
  // The I-th last launch; the record grows forward.
  auto Last = [&](unsigned I) -> const Launch & { return Launches[(Next + Capacity - 1 - I) % Capacity]; };
  unsigned Count = 0;
  while (Count < Capacity && !Last(Count).Kernel.empty())
    ++Count;
  if (Count == 0) {
    OS << "No kernel launches known\n";
    return;
  }
  uint32_t Shown = std::min<uint32_t>(TracesToShow, Count);
  if (Shown == 0)
    OS << (Count == 1 ? std::string("Display only launched kernel:\n")
                      : fmt::format("Display last {} kernels launched:\n", Count));
  else
    OS << (Count == 1 ? std::string("Display kernel launch trace:\n")
                      : fmt::format("Display {} of the {} last kernel launch traces:\n", Shown, Count));
  for (unsigned I = 0; I < Count; ++I) {
    std::string Name = llvm::omp::prettifyFunctionName(Last(I).Kernel);
    OS << (Count == 1 ? fmt::format("Kernel '{}'\n", Name) : fmt::format("Kernel {}: '{}'\n", I, Name));
    if (I < Shown)
      printStackTrace(OS, Last(I).Trace);
  }
  if (Count != 1)
    OS << fmt::format(
        "Use 'OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES=<num>' to adjust the number of shown stack "
        "traces ({} now, up to {})\n",
        TracesToShow, Capacity);
}

} // namespace ompsim::tracking

//===- StackTraces.cpp - stack traces as stock's error reports show them --===//
#include "StackTraces.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Signals.h"

#include <cstdlib>
#include <mutex>

namespace ompsim::tracking {

std::string captureStackTrace() {
  // LLVM looks for llvm-symbolizer on PATH, where a Debian system with only
  // LLVM 22's packages has none: name LLVM 22's, unless the user chose one.
  static std::once_flag SymbolizerChosen;
  std::call_once(SymbolizerChosen, [] {
    if (!std::getenv("LLVM_SYMBOLIZER_PATH") && llvm::sys::fs::can_execute(OMPSIM_LLVM_SYMBOLIZER))
      ::setenv("LLVM_SYMBOLIZER_PATH", OMPSIM_LLVM_SYMBOLIZER, /*overwrite=*/0);
  });
  std::string Trace;
  llvm::raw_string_ostream OS(Trace);
  llvm::sys::PrintStackTrace(OS);
  // The trace starts at its caller: the frames of this folder (and what the
  // symbolizer shows inlined into them) go, where it named them.
  size_t Ours = Trace.rfind("ompsim::tracking::");
  if (Ours != std::string::npos) {
    size_t Next = Trace.find('\n', Ours);
    Trace.erase(0, Next == std::string::npos ? Trace.size() : Next + 1);
  }
  return Trace;
}

void printStackTrace(llvm::raw_ostream &OS, llvm::StringRef Trace) {
  if (Trace.empty())
    return;
  llvm::SmallVector<llvm::StringRef> Lines;
  Trace.split(Lines, "\n", /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  unsigned Digits = 1;
  for (size_t Last = Lines.empty() ? 0 : Lines.size() - 1; Last >= 10; Last /= 10)
    ++Digits;
  unsigned Frame = 0;
  for (llvm::StringRef Line : Lines) {
    Line = Line.ltrim();
    llvm::SmallVector<llvm::StringRef, 3> Parts;
    Line.split(Parts, ' ', /*MaxSplit=*/2);
    if (Parts.size() != 3 || Parts[0].size() < 2 || !Parts[0].starts_with("#")) {
      OS << Line << '\n';
      continue;
    }
    OS << "    #" << llvm::right_justify(std::to_string(Frame++), Digits) << ' ' << Parts[1] << ' '
       << Parts[2] << '\n';
  }
  OS << '\n';
}

} // namespace ompsim::tracking

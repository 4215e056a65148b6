// LIBOMPTARGET_PROFILE: LLVM's time-trace profiler, as stock libomptarget 22
// uses it, so the file has stock's shape: "X" events with args.detail,
// "Total ..." summaries, process_name/thread_name metadata, beginningOfTime.
#include "ompsim/ProfileWriter.h"

#include "ompsim/Config.h"
#include "ompsim/OpenMPRegistration.h"

#include <llvm/Support/Error.h>
#include <llvm/Support/TimeProfiler.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include <unistd.h>

namespace ompsim::profile {
namespace {

struct State {
  std::mutex Mu;
  std::string Path; ///< LIBOMPTARGET_PROFILE (a copy: it is written from exit handlers)
  bool Started = false;
  bool Finished = false;
  std::string Problem; ///< why the file cannot be written (reported at once, fails the run at exit)
};

State &state() {
  static State *S = new State(); // never destroyed: finish() runs from exit handlers
  return *S;
}

/// Writes the profile when the process exits normally. Built when the
/// profile starts (the runtime's first registration), so it is destroyed
/// after the program's unregistration handlers have run, as stock's
/// Profiler singleton is.
struct ExitWriter {
  ~ExitWriter() { finish(); }
};

} // namespace

void start() {
  State &S = state();
  std::lock_guard<std::mutex> Lock(S.Mu);
  if (S.Started)
    return;
  S.Started = true;
  const Config &C = config();
  if (C.ProfileFile.empty())
    return;
  S.Path = C.ProfileFile;
  // Found out now rather than after the whole run; stock only reports a
  // failed write at exit.
  if (std::FILE *F = std::fopen(S.Path.c_str(), "w")) {
    std::fclose(F);
  } else {
    S.Problem = std::strerror(errno);
    std::fprintf(stderr, "ompsim: profile lost: LIBOMPTARGET_PROFILE '%s': cannot open it: %s\n",
                 S.Path.c_str(), S.Problem.c_str());
  }
  if (S.Problem.empty())
    llvm::timeTraceProfilerInitialize(C.ProfileGranularity, "libomptarget");
  static ExitWriter Writer;
}

void finish() {
  State &S = state();
  std::lock_guard<std::mutex> Lock(S.Mu);
  if (S.Path.empty() || S.Finished)
    return;
  S.Finished = true;
  if (S.Problem.empty()) {
    if (!llvm::timeTraceProfilerEnabled()) {
      // The profiler's sections live in the starting thread's storage.
      S.Problem = "the process ended on another thread than the one that started the runtime";
    } else {
      if (llvm::Error Err = llvm::timeTraceProfilerWrite(S.Path, "-"))
        S.Problem = llvm::toString(std::move(Err));
      llvm::timeTraceProfilerCleanup();
    }
    if (!S.Problem.empty())
      std::fprintf(stderr, "ompsim: profile lost: LIBOMPTARGET_PROFILE '%s': %s\n", S.Path.c_str(),
                   S.Problem.c_str());
  }
  if (!S.Problem.empty()) {
    std::fflush(nullptr);
    // _Exit skips libomp's destructor, which would remove this file.
    removeOpenMPRegistration(::getpid());
    std::_Exit(1);
  }
}

bool enabled() { return llvm::timeTraceProfilerEnabled(); }

void beginSection(std::string_view Name, std::string Detail) {
  llvm::timeTraceProfilerBegin(llvm::StringRef(Name.data(), Name.size()), llvm::StringRef(Detail));
}

void endSection() { llvm::timeTraceProfilerEnd(); }

} // namespace ompsim::profile

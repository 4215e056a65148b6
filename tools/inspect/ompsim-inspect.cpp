// ompsim-inspect FILE...: the device images, offload entries and indirect
// functions clang embedded in a host binary, shared library or object.
#include "OffloadInspector.h"
#include "ReportPrinter.h"

#include "ompsim/Trace.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

constexpr const char *kUsage =
    "usage: ompsim-inspect [--json] FILE...\n"
    "\n"
    "Lists the device images embedded in each host FILE (executable, shared library or\n"
    "object built with clang -fopenmp -fopenmp-targets=...), every offload entry with\n"
    "its flags decoded, and the indirect functions and vtables with the device globals\n"
    "they need. Handles clang-20+ (llvm_offload_entries) and LLVM <= 19\n"
    "(omp_offloading_entries) entry tables.\n"
    "\n"
    "  --json    one JSON document per file on stdout (an array when several files)\n";

} // namespace

using namespace ompsim::inspect;

int main(int argc, char **argv) {
  bool Json = false;
  std::vector<std::string> Files;
  for (int I = 1; I < argc; ++I) {
    std::string A = argv[I];
    if (A == "--json")
      Json = true;
    else if (A == "-h" || A == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (A == "--")
      Files.insert(Files.end(), argv + I + 1, argv + argc), I = argc;
    else if (A.size() > 1 && A[0] == '-') {
      ompsim::trace::error("inspect: unknown option '" + A + "' (see --help)");
      return 2;
    } else
      Files.push_back(A);
  }
  if (Files.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }

  std::vector<Report> Reports;
  int Status = 0;
  for (const std::string &F : Files) {
    llvm::Expected<Report> R = inspectFile(F);
    if (!R) {
      ompsim::trace::error(F + ": " + llvm::toString(R.takeError()));
      Status = 1;
      continue;
    }
    Reports.push_back(std::move(*R));
  }

  if (Json) {
    llvm::json::OStream J(llvm::outs(), 2);
    if (Files.size() == 1) {
      if (!Reports.empty())
        jsonReport(J, Reports[0]);
    } else {
      J.array([&] {
        for (const Report &R : Reports)
          jsonReport(J, R);
      });
    }
    if (!Reports.empty() || Files.size() > 1)
      llvm::outs() << "\n";
  } else {
    for (size_t I = 0; I < Reports.size(); ++I)
      llvm::outs() << (I ? "\n" : "") << humanReport(Reports[I]);
  }
  llvm::outs().flush();
  return Status;
}

// ompsim-inspect FILE...: the device images, offload entries and indirect
// functions clang embedded in a host binary, shared library or object.
#include "OffloadInspector.h"
#include "ReportPrinter.h"

#include "ompsim/trace.hpp"

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
  bool json = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json")
      json = true;
    else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--")
      files.insert(files.end(), argv + i + 1, argv + argc), i = argc;
    else if (a.size() > 1 && a[0] == '-') {
      ompsim::trace::error("inspect: unknown option '" + a + "' (see --help)");
      return 2;
    } else
      files.push_back(a);
  }
  if (files.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }

  std::vector<Report> reports;
  int status = 0;
  for (const std::string &f : files) {
    llvm::Expected<Report> r = inspectFile(f);
    if (!r) {
      ompsim::trace::error(f + ": " + llvm::toString(r.takeError()));
      status = 1;
      continue;
    }
    reports.push_back(std::move(*r));
  }

  if (json) {
    llvm::json::OStream j(llvm::outs(), 2);
    if (files.size() == 1) {
      if (!reports.empty())
        jsonReport(j, reports[0]);
    } else {
      j.array([&] {
        for (const Report &r : reports)
          jsonReport(j, r);
      });
    }
    if (!reports.empty() || files.size() > 1)
      llvm::outs() << "\n";
  } else {
    for (size_t i = 0; i < reports.size(); ++i)
      llvm::outs() << (i ? "\n" : "") << humanReport(reports[i]);
  }
  llvm::outs().flush();
  return status;
}

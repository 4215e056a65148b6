// libFuzzer target: the trace's JSON-lines writer.
//
// Every event must come out as one line that a JSON parser accepts, with the
// key and the string value given back. Input: key and value split at the
// first 0x00 byte. Bytes that are not valid UTF-8 cannot appear in a JSON
// string; the writer must still produce valid JSON (it writes each such byte
// as the code point of the same number, \u00XX), and valid UTF-8 must come
// back unchanged. The trace is normalized (OMPSIM_TRACE_NORMALIZE), so values
// holding offload ids or paths are rewritten: for those only the JSON is checked.
#include "ompsim/Trace.h"

#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/JSON.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace {
std::string GPath;
std::FILE *GRead = nullptr;
unsigned long GRuns = 0;

/// The writer's documented mapping of arbitrary bytes into a JSON string.
std::string expected(const std::string &S) {
  if (llvm::json::isUTF8(S))
    return S;
  std::string Out;
  const auto *P = reinterpret_cast<const unsigned char *>(S.data()), *E = P + S.size();
  while (P < E) {
    unsigned Len = llvm::getNumBytesForUTF8(*P);
    if (*P < 0x80 || (P + Len <= E && llvm::isLegalUTF8Sequence(P, P + Len) && Len > 1)) {
      Out.append(reinterpret_cast<const char *>(P), *P < 0x80 ? 1 : Len);
      P += *P < 0x80 ? 1 : Len;
    } else {
      // U+0080..U+00FF in UTF-8.
      Out += char(0xC0 | (*P >> 6));
      Out += char(0x80 | (*P & 0x3F));
      ++P;
    }
  }
  return Out;
}
} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  GPath = "/tmp/ompsim-fuzz-trace-" + std::to_string(getpid()) + ".jsonl";
  std::remove(GPath.c_str());
  setenv("OMPSIM_TRACE", "all", 1);
  setenv("OMPSIM_TRACE_FILE", GPath.c_str(), 1);
  setenv("OMPSIM_TRACE_NORMALIZE", "1", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  std::string All(reinterpret_cast<const char *>(Data), Size);
  size_t Cut = All.find('\0');
  std::string Key = Cut == std::string::npos ? "k" : All.substr(0, Cut);
  std::string Value = Cut == std::string::npos ? All : All.substr(Cut + 1);
  if (Key == "cat" || Key == "event" || Key == "seq")
    return 0; // the writer's own keys
  {
    ompsim::trace::Event(ompsim::trace::Cat::Image, "fuzz").str(Key, Value);
  }
  if (!GRead) {
    GRead = std::fopen(GPath.c_str(), "r");
    if (!GRead)
      __builtin_trap();
  }
  std::string Line;
  for (int Ch; (Ch = std::fgetc(GRead)) != EOF && Ch != '\n';)
    Line += char(Ch);
  std::clearerr(GRead);
  // Keep the scratch file small over millions of runs.
  if (++GRuns % 4096 == 0) {
    if (truncate(GPath.c_str(), 0) != 0)
      __builtin_trap();
    std::rewind(GRead);
  }
  auto Parsed = llvm::json::parse(Line);
  if (!Parsed) {
    std::fprintf(stderr, "invalid JSON line: %s\n%s\n", llvm::toString(Parsed.takeError()).c_str(),
                 Line.c_str());
    __builtin_trap();
  }
  const auto *Obj = Parsed->getAsObject();
  auto Got = Obj ? Obj->getString(expected(Key)) : std::nullopt;
  // Normalized traces rewrite offload ids and paths in values (trace.cpp,
  // normalizeOffloadIds/normalizePaths): those must still give a string.
  bool Rewritten =
      Value.find("__omp_offloading_") != std::string::npos || Value.find('/') != std::string::npos;
  if (!Got || (!Rewritten && Got->str() != expected(Value))) {
    std::fprintf(stderr, "value did not round-trip: %s\n", Line.c_str());
    __builtin_trap();
  }
  return 0;
}

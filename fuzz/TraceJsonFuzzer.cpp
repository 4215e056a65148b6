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
std::string gPath;
std::FILE *gRead = nullptr;
unsigned long gRuns = 0;

/// The writer's documented mapping of arbitrary bytes into a JSON string.
std::string expected(const std::string &s) {
  if (llvm::json::isUTF8(s))
    return s;
  std::string out;
  const auto *p = reinterpret_cast<const unsigned char *>(s.data()), *e = p + s.size();
  while (p < e) {
    unsigned len = llvm::getNumBytesForUTF8(*p);
    if (*p < 0x80 || (p + len <= e && llvm::isLegalUTF8Sequence(p, p + len) && len > 1)) {
      out.append(reinterpret_cast<const char *>(p), *p < 0x80 ? 1 : len);
      p += *p < 0x80 ? 1 : len;
    } else {
      // U+0080..U+00FF in UTF-8.
      out += char(0xC0 | (*p >> 6));
      out += char(0x80 | (*p & 0x3F));
      ++p;
    }
  }
  return out;
}
} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  gPath = "/tmp/ompsim-fuzz-trace-" + std::to_string(getpid()) + ".jsonl";
  std::remove(gPath.c_str());
  setenv("OMPSIM_TRACE", "all", 1);
  setenv("OMPSIM_TRACE_FILE", gPath.c_str(), 1);
  setenv("OMPSIM_TRACE_NORMALIZE", "1", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string all(reinterpret_cast<const char *>(data), size);
  size_t cut = all.find('\0');
  std::string key = cut == std::string::npos ? "k" : all.substr(0, cut);
  std::string value = cut == std::string::npos ? all : all.substr(cut + 1);
  if (key == "cat" || key == "event" || key == "seq")
    return 0; // the writer's own keys
  {
    ompsim::trace::Event(ompsim::trace::Cat::Image, "fuzz").str(key, value);
  }
  if (!gRead) {
    gRead = std::fopen(gPath.c_str(), "r");
    if (!gRead)
      __builtin_trap();
  }
  std::string line;
  for (int ch; (ch = std::fgetc(gRead)) != EOF && ch != '\n';)
    line += char(ch);
  std::clearerr(gRead);
  // Keep the scratch file small over millions of runs.
  if (++gRuns % 4096 == 0) {
    if (truncate(gPath.c_str(), 0) != 0)
      __builtin_trap();
    std::rewind(gRead);
  }
  auto parsed = llvm::json::parse(line);
  if (!parsed) {
    std::fprintf(stderr, "invalid JSON line: %s\n%s\n", llvm::toString(parsed.takeError()).c_str(),
                 line.c_str());
    __builtin_trap();
  }
  const auto *obj = parsed->getAsObject();
  auto got = obj ? obj->getString(expected(key)) : std::nullopt;
  // Normalized traces rewrite offload ids and paths in values (trace.cpp,
  // normalizeOffloadIds/normalizePaths): those must still give a string.
  bool rewritten =
      value.find("__omp_offloading_") != std::string::npos || value.find('/') != std::string::npos;
  if (!got || (!rewritten && got->str() != expected(value))) {
    std::fprintf(stderr, "value did not round-trip: %s\n", line.c_str());
    __builtin_trap();
  }
  return 0;
}

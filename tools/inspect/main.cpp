// ompsim-inspect FILE...: the device images, offload entries and indirect
// functions clang embedded in a host binary, shared library or object.
#include "OffloadInspector.h"

#include "ompsim/trace.hpp"

#include <fmt/format.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using namespace ompsim::inspect;

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

std::string hexString(uint64_t v) { return fmt::format("{:#x}", v); }

/// "mul2+0x0 (0x11b0)", "vtable for Der+0x10 (0x3d48)", "undefined mul2", "null".
std::string describe(const HostLocation &loc) {
  if (loc.undefined)
    return "undefined " + loc.symbol;
  if (loc.symbol.empty())
    return loc.address ? hexString(loc.address) : "null";
  std::string s = fmt::format("{}+{:#x} ({:#x}", loc.symbol, loc.offset, loc.address);
  if (!loc.section.empty())
    s += " in " + loc.section;
  return s + ")";
}

std::string joined(const std::vector<std::string> &items, const char *sep) {
  std::string out;
  for (const std::string &s : items)
    out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string indexList(const std::vector<unsigned> &xs) {
  std::vector<std::string> s;
  for (unsigned x : xs)
    s.push_back(std::to_string(x));
  return joined(s, ",");
}

/// A text table whose columns are as wide as their widest cell.
class TextTable {
public:
  explicit TextTable(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::string &out) const {
    std::vector<size_t> width(rows_[0].size(), 0);
    for (const auto &r : rows_)
      for (size_t i = 0; i < r.size(); ++i)
        width[i] = std::max(width[i], r[i].size());
    for (const auto &r : rows_) {
      std::string line = " ";
      for (size_t i = 0; i < r.size(); ++i)
        line += " " + (i + 1 == r.size() ? r[i] : fmt::format("{:<{}}", r[i], width[i]));
      while (!line.empty() && line.back() == ' ')
        line.pop_back();
      out += line + "\n";
    }
  }

private:
  std::vector<std::vector<std::string>> rows_;
};

std::string formatName(const Report &r) {
  if (!r.format)
    return "no entry section";
  return fmt::format("entries in {} ({})", r.entrySection,
                     *r.format == EntryFormat::Current ? "clang-20+ layout" : "LLVM <= 19 layout");
}

std::string humanReport(const Report &r) {
  std::string out = fmt::format("{}: {} {}, {}\n", r.path, r.machine, r.elfType, formatName(r));

  out += fmt::format("\nDevice images ({})\n", r.images.size());
  if (!r.images.empty()) {
    TextTable t({"#", "kind", "offload", "triple", "arch", "size", "symbols"});
    for (const DeviceImage &img : r.images)
      t.add({std::to_string(img.index), img.kind, img.offloadKind, img.triple,
             img.arch.empty() ? "-" : img.arch, std::to_string(img.size),
             img.symbolsKnown ? std::to_string(img.definedSymbols.size()) + " defined"
                              : (img.symbolsError.empty() ? "-" : "unreadable: " + img.symbolsError)});
    t.print(out);
  }

  out += fmt::format("\nOffload entries ({})\n", r.entries.size());
  if (!r.entries.empty()) {
    TextTable t({"#", "role", "flags", "size", "host address", "name"});
    for (const OffloadEntry &e : r.entries) {
      std::vector<std::string> names = e.flagNames();
      std::string flags = hexString(e.flags);
      if (!names.empty())
        flags += " " + joined(names, "|");
      if (e.flags & 0x10) {
        std::vector<std::string> req = requiresFlagNames(e.data);
        flags += " [" + (req.empty() ? hexString(e.data) : joined(req, ",")) + "]";
      }
      t.add({std::to_string(e.index), e.role(), flags, std::to_string(e.size), describe(e.address), e.name});
    }
    t.print(out);
  }

  out += fmt::format("\nIndirect functions and vtables ({})\n", r.indirect.size());
  if (!r.indirect.empty()) {
    TextTable t({"entry", "kind", "host", "slots", "device global", "device images"});
    for (const IndirectTarget &i : r.indirect) {
      std::string where;
      if (!i.definedIn.empty())
        where = "defined in " + indexList(i.definedIn);
      if (!i.missingIn.empty())
        where += (where.empty() ? "" : "; ") + std::string("MISSING in ") + indexList(i.missingIn);
      if (where.empty())
        where = "not checkable";
      t.add({std::to_string(i.entryIndex), i.isVtable ? "vtable" : "function", describe(i.host),
             std::to_string(i.slots), i.deviceGlobal, where});
    }
    t.print(out);
  }
  return out;
}

void hostFields(llvm::json::OStream &j, const HostLocation &loc, const char *prefix) {
  std::string p(prefix);
  j.attribute(p + "address", hexString(loc.address));
  j.attribute(p + "symbol", loc.symbol.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(loc.symbol));
  j.attribute(p + "symbol_mangled",
              loc.mangled.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(loc.mangled));
  j.attribute(p + "offset", loc.offset);
  j.attribute(p + "undefined", loc.undefined);
  if (!loc.section.empty())
    j.attribute(p + "section", loc.section);
}

template <typename T> llvm::json::Array jsonArray(const std::vector<T> &xs) {
  llvm::json::Array a;
  for (const T &x : xs)
    a.push_back(x);
  return a;
}

void jsonReport(llvm::json::OStream &j, const Report &r) {
  j.object([&] {
    j.attribute("file", r.path);
    j.attribute("elf_type", r.elfType);
    j.attribute("machine", r.machine);
    j.attribute("entry_section", r.entrySection.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(r.entrySection));
    j.attribute("entry_format", !r.format ? llvm::json::Value(nullptr)
                                          : llvm::json::Value(*r.format == EntryFormat::Current ? "current" : "legacy"));
    j.attributeArray("images", [&] {
      for (const DeviceImage &img : r.images)
        j.object([&] {
          j.attribute("index", img.index);
          j.attribute("kind", img.kind);
          j.attribute("offload_kind", img.offloadKind);
          j.attribute("triple", img.triple);
          j.attribute("arch", img.arch);
          j.attribute("size", img.size);
          j.attribute("file_offset", img.fileOffset);
          j.attribute("symbols_known", img.symbolsKnown);
          j.attribute("defined_symbol_count", uint64_t(img.definedSymbols.size()));
          if (!img.symbolsError.empty())
            j.attribute("symbols_error", img.symbolsError);
        });
    });
    j.attributeArray("entries", [&] {
      for (const OffloadEntry &e : r.entries)
        j.object([&] {
          j.attribute("index", e.index);
          j.attribute("name", e.name);
          j.attribute("role", e.role());
          j.attribute("flags", e.flags);
          j.attribute("flag_names", jsonArray(e.flagNames()));
          j.attribute("size", e.size);
          if (e.format == EntryFormat::Current) {
            j.attribute("version", e.version);
            j.attribute("kind", e.kind);
            j.attribute("data", e.data);
          }
          if (e.flags & 0x10)
            j.attribute("requires", jsonArray(requiresFlagNames(e.data)));
          hostFields(j, e.address, "host_");
        });
    });
    j.attributeArray("indirect", [&] {
      for (const IndirectTarget &i : r.indirect)
        j.object([&] {
          j.attribute("entry", i.entryIndex);
          j.attribute("kind", i.isVtable ? "vtable" : "function");
          hostFields(j, i.host, "host_");
          j.attribute("entry_name", i.entryName);
          j.attribute("device_global", i.deviceGlobal);
          j.attribute("slots", i.slots);
          j.attribute("defined_in", jsonArray(i.definedIn));
          j.attribute("missing_in", jsonArray(i.missingIn));
        });
    });
  });
}

} // namespace

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

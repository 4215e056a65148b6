// ompsim-inspect's printers: the human listing and the JSON document of a Report.
#include "ReportPrinter.h"

#include <fmt/format.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <string>
#include <vector>

namespace ompsim::inspect {
namespace {

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

} // namespace

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

} // namespace ompsim::inspect

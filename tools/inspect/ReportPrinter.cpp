// ompsim-inspect's printers: the human listing and the JSON document of a Report.
#include "ReportPrinter.h"

#include <fmt/format.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <string>
#include <vector>

namespace ompsim::inspect {
namespace {

std::string hexString(uint64_t V) { return fmt::format("{:#x}", V); }

/// "mul2+0x0 (0x11b0)", "vtable for Der+0x10 (0x3d48)", "undefined mul2", "null".
std::string describe(const HostLocation &Loc) {
  if (Loc.Undefined)
    return "undefined " + Loc.Symbol;
  if (Loc.Symbol.empty())
    return Loc.Address ? hexString(Loc.Address) : "null";
  std::string S = fmt::format("{}+{:#x} ({:#x}", Loc.Symbol, Loc.Offset, Loc.Address);
  if (!Loc.Section.empty())
    S += " in " + Loc.Section;
  return S + ")";
}

std::string joined(const std::vector<std::string> &Items, const char *Sep) {
  std::string Out;
  for (const std::string &S : Items)
    Out += (Out.empty() ? "" : Sep) + S;
  return Out;
}

std::string indexList(const std::vector<unsigned> &Xs) {
  std::vector<std::string> S;
  for (unsigned X : Xs)
    S.push_back(std::to_string(X));
  return joined(S, ",");
}

/// A text table whose columns are as wide as their widest cell.
class TextTable {
public:
  explicit TextTable(std::vector<std::string> Header) { Rows.push_back(std::move(Header)); }
  void add(std::vector<std::string> Row) { Rows.push_back(std::move(Row)); }
  void print(std::string &Out) const {
    std::vector<size_t> Width(Rows[0].size(), 0);
    for (const auto &R : Rows)
      for (size_t I = 0; I < R.size(); ++I)
        Width[I] = std::max(Width[I], R[I].size());
    for (const auto &R : Rows) {
      std::string Line = " ";
      for (size_t I = 0; I < R.size(); ++I)
        Line += " " + (I + 1 == R.size() ? R[I] : fmt::format("{:<{}}", R[I], Width[I]));
      while (!Line.empty() && Line.back() == ' ')
        Line.pop_back();
      Out += Line + "\n";
    }
  }

private:
  std::vector<std::vector<std::string>> Rows;
};

std::string formatName(const Report &R) {
  if (!R.Format)
    return "no entry section";
  return fmt::format("entries in {} ({})", R.EntrySection,
                     *R.Format == EntryFormat::Current ? "clang-20+ layout" : "LLVM <= 19 layout");
}

void hostFields(llvm::json::OStream &J, const HostLocation &Loc, const char *Prefix) {
  std::string P(Prefix);
  J.attribute(P + "address", hexString(Loc.Address));
  J.attribute(P + "symbol", Loc.Symbol.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(Loc.Symbol));
  J.attribute(P + "symbol_mangled",
              Loc.Mangled.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(Loc.Mangled));
  J.attribute(P + "offset", Loc.Offset);
  J.attribute(P + "undefined", Loc.Undefined);
  if (!Loc.Section.empty())
    J.attribute(P + "section", Loc.Section);
}

template <typename T> llvm::json::Array jsonArray(const std::vector<T> &Xs) {
  llvm::json::Array A;
  for (const T &X : Xs)
    A.push_back(X);
  return A;
}

} // namespace

std::string humanReport(const Report &R) {
  std::string Out = fmt::format("{}: {} {}, {}\n", R.Path, R.Machine, R.ElfType, formatName(R));

  Out += fmt::format("\nDevice images ({})\n", R.Images.size());
  if (!R.Images.empty()) {
    TextTable T({"#", "kind", "offload", "triple", "arch", "size", "symbols"});
    for (const DeviceImage &Img : R.Images)
      T.add({std::to_string(Img.Index), Img.Kind, Img.OffloadKind, Img.Triple,
             Img.Arch.empty() ? "-" : Img.Arch, std::to_string(Img.Size),
             Img.SymbolsKnown ? std::to_string(Img.DefinedSymbols.size()) + " defined"
                              : (Img.SymbolsError.empty() ? "-" : "unreadable: " + Img.SymbolsError)});
    T.print(Out);
  }

  Out += fmt::format("\nOffload entries ({})\n", R.Entries.size());
  if (!R.Entries.empty()) {
    TextTable T({"#", "role", "flags", "size", "host address", "name"});
    for (const OffloadEntry &E : R.Entries) {
      std::vector<std::string> Names = E.flagNames();
      std::string Flags = hexString(E.Flags);
      if (!Names.empty())
        Flags += " " + joined(Names, "|");
      if (E.Flags & 0x10) {
        std::vector<std::string> Req = requiresFlagNames(E.Data);
        Flags += " [" + (Req.empty() ? hexString(E.Data) : joined(Req, ",")) + "]";
      }
      T.add({std::to_string(E.Index), E.role(), Flags, std::to_string(E.Size), describe(E.Address), E.Name});
    }
    T.print(Out);
  }

  Out += fmt::format("\nIndirect functions and vtables ({})\n", R.Indirect.size());
  if (!R.Indirect.empty()) {
    TextTable T({"entry", "kind", "host", "slots", "device global", "device images"});
    for (const IndirectTarget &I : R.Indirect) {
      std::string Where;
      if (!I.DefinedIn.empty())
        Where = "defined in " + indexList(I.DefinedIn);
      if (!I.MissingIn.empty())
        Where += (Where.empty() ? "" : "; ") + std::string("MISSING in ") + indexList(I.MissingIn);
      if (Where.empty())
        Where = "not checkable";
      T.add({std::to_string(I.EntryIndex), I.IsVtable ? "vtable" : "function", describe(I.Host),
             std::to_string(I.Slots), I.DeviceGlobal, Where});
    }
    T.print(Out);
  }
  return Out;
}

void jsonReport(llvm::json::OStream &J, const Report &R) {
  J.object([&] {
    J.attribute("file", R.Path);
    J.attribute("elf_type", R.ElfType);
    J.attribute("machine", R.Machine);
    J.attribute("entry_section",
                R.EntrySection.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(R.EntrySection));
    J.attribute("entry_format",
                !R.Format ? llvm::json::Value(nullptr)
                          : llvm::json::Value(*R.Format == EntryFormat::Current ? "current" : "legacy"));
    J.attributeArray("images", [&] {
      for (const DeviceImage &Img : R.Images)
        J.object([&] {
          J.attribute("index", Img.Index);
          J.attribute("kind", Img.Kind);
          J.attribute("offload_kind", Img.OffloadKind);
          J.attribute("triple", Img.Triple);
          J.attribute("arch", Img.Arch);
          J.attribute("size", Img.Size);
          J.attribute("file_offset", Img.FileOffset);
          J.attribute("symbols_known", Img.SymbolsKnown);
          J.attribute("defined_symbol_count", uint64_t(Img.DefinedSymbols.size()));
          if (!Img.SymbolsError.empty())
            J.attribute("symbols_error", Img.SymbolsError);
        });
    });
    J.attributeArray("entries", [&] {
      for (const OffloadEntry &E : R.Entries)
        J.object([&] {
          J.attribute("index", E.Index);
          J.attribute("name", E.Name);
          J.attribute("role", E.role());
          J.attribute("flags", E.Flags);
          J.attribute("flag_names", jsonArray(E.flagNames()));
          J.attribute("size", E.Size);
          if (E.Format == EntryFormat::Current) {
            J.attribute("version", E.Version);
            J.attribute("kind", E.Kind);
            J.attribute("data", E.Data);
          }
          if (E.Flags & 0x10)
            J.attribute("requires", jsonArray(requiresFlagNames(E.Data)));
          hostFields(J, E.Address, "host_");
        });
    });
    J.attributeArray("indirect", [&] {
      for (const IndirectTarget &I : R.Indirect)
        J.object([&] {
          J.attribute("entry", I.EntryIndex);
          J.attribute("kind", I.IsVtable ? "vtable" : "function");
          hostFields(J, I.Host, "host_");
          J.attribute("entry_name", I.EntryName);
          J.attribute("device_global", I.DeviceGlobal);
          J.attribute("slots", I.Slots);
          J.attribute("defined_in", jsonArray(I.DefinedIn));
          J.attribute("missing_in", jsonArray(I.MissingIn));
        });
    });
  });
}

} // namespace ompsim::inspect

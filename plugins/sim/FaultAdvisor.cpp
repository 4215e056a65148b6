#include "FaultAdvisor.h"

#include "ompsim/HostSymbolizer.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/DebugInfo/Symbolize/Symbolize.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <fmt/format.h>

namespace ompsim::sim {

namespace {

/// Why every diagnosis of an untranslated pointer ends the same way: stock
/// clang-22 never looks a pointer up before an indirect call.
constexpr const char *kNoLookup =
    "clang-22 emits no call-site lookup; build with 'ompsim cc' (the default --translate=pass) "
    "or a compiler that emits one";

/// The name a directive takes for a demangled function: "sub3(int)" -> "sub3".
std::string directiveName(llvm::StringRef Demangled) {
  // The parameter list is the last top-level parenthesis; templates may hold some.
  int Depth = 0;
  for (size_t I = 0; I < Demangled.size(); ++I) {
    char C = Demangled[I];
    if (C == '<')
      ++Depth;
    else if (C == '>')
      --Depth;
    else if (C == '(' && Depth == 0 && I > 0)
      return Demangled.substr(0, I).str();
  }
  return Demangled.str();
}

} // namespace

void FaultAdvisor::setFunctionPointerTable(llvm::ArrayRef<__omp_offloading_fptr_map_ty> Table) {
  HostPtrs.clear();
  for (const __omp_offloading_fptr_map_ty &E : Table)
    HostPtrs.push_back(E.host_ptr);
  std::sort(HostPtrs.begin(), HostPtrs.end());
}

bool FaultAdvisor::inTable(uint64_t Begin, uint64_t End) const {
  auto It = std::lower_bound(HostPtrs.begin(), HostPtrs.end(), Begin);
  return It != HostPtrs.end() && *It < End;
}

std::string FaultAdvisor::definedAt(uint64_t Addr) {
  Dl_info Info{};
  link_map *Map = nullptr;
  if (!::dladdr1(reinterpret_cast<void *>(Addr), &Info, reinterpret_cast<void **>(&Map), RTLD_DL_LINKMAP) ||
      !Map)
    return "";
  std::string Object = HostSymbolizer::get().objectOf(Addr);
  if (Object.empty())
    return "";
  llvm::symbolize::LLVMSymbolizer::Options Opts;
  Opts.UseSymbolTable = true;
  llvm::symbolize::LLVMSymbolizer Symbolizer(Opts);
  auto Line = Symbolizer.symbolizeCode(
      Object, {Addr - uint64_t(Map->l_addr), llvm::object::SectionedAddress::UndefSection});
  if (!Line) {
    llvm::consumeError(Line.takeError());
    return "";
  }
  // The declaration line (DW_AT_decl_line) where present: the address is the
  // function's entry, whose line may be the body's first statement.
  bool HaveStart = Line->StartLine != 0 && Line->StartFileName != llvm::DILineInfo::BadString;
  const std::string &File = HaveStart ? Line->StartFileName : Line->FileName;
  uint32_t Number = HaveStart ? Line->StartLine : Line->Line;
  if (File == llvm::DILineInfo::BadString || Number == 0)
    return "";
  return fmt::format("{}:{}", File, Number);
}

std::string FaultAdvisor::advise(const HostFault &Fault) const {
  if (Fault.Access == HostFault::Access::Call)
    return adviseCall(Fault);
  HostSymbolizer &Hs = HostSymbolizer::get();
  auto Sym = Hs.lookup(Fault.Addr);
  if (!Sym)
    return "";
  llvm::StringRef Name = Sym->Name;
  if (Name.consume_front("vtable for ")) {
    uint64_t Begin = Fault.Addr - Sym->Offset, End = Begin + 8;
    for (const HostVtable &Vt : Hs.vtablesOf(Fault.Addr))
      if (Vt.Address == Begin)
        End = Begin + Vt.Size;
    return adviseVtable(Fault, Name.str(), Begin, End);
  }
  if (Sym->IsFunction)
    return "";
  bool Write = Fault.Access == HostFault::Access::Write;
  return fmt::format("note: '{0}' is host data the device cannot reach: map it ('map({1}: {0})') or "
                     "make it device data ('#pragma omp declare target to({0})')",
                     Sym->Name, Write ? "tofrom" : "to");
}

std::string FaultAdvisor::adviseCall(const HostFault &Fault) const {
  auto Sym = HostSymbolizer::get().lookup(Fault.Addr);
  if (!Sym || Sym->Offset != 0 || !Sym->IsFunction)
    return "";
  std::string Fn = directiveName(Sym->Name);
  if (inTable(Fault.Addr, Fault.Addr + 1))
    return fmt::format("note: '{}' is declare target indirect, but the call site did not translate "
                       "the pointer: {}",
                       Fn, kNoLookup);
  std::string Where = definedAt(Fault.Addr);
  if (Where.empty())
    Where = Sym->Object.empty() ? HostSymbolizer::get().objectOf(Fault.Addr) : Sym->Object;
  return fmt::format("note: '{0}' (defined {1} {2}) is not declare target indirect, so the device "
                     "cannot call it through a host pointer: add "
                     "'#pragma omp declare target to({0}) indirect'",
                     Fn, Where.find(':') != std::string::npos ? "at" : "in", Where);
}

std::string FaultAdvisor::adviseVtable(const HostFault &Fault, const std::string &ClassName, uint64_t Begin,
                                       uint64_t End) const {
  if (inTable(Begin, End))
    return fmt::format("note: this is the host vtable of class '{}', which has an offload entry "
                       "(0x20), but the call site did not translate the object's vtable pointer: {}",
                       ClassName, kNoLookup);
  bool LookedUp = std::any_of(Fault.Lookups.begin(), Fault.Lookups.end(),
                              [&](const auto &R) { return R.HostPtr >= Begin && R.HostPtr < End; });
  std::string CallSite = LookedUp ? "; the call site looked the vtable pointer up, but nothing translates it"
                         : Fault.LookupsComplete
                             ? "; the call site did not translate the vtable pointer either"
                             : "";
  return fmt::format("note: this is the host vtable of class '{0}', which has no offload entry "
                     "(0x20){1}: clang-22 registers the vtable of a class whose objects a target "
                     "construct maps, so map the object as a '{0}'",
                     ClassName, CallSite);
}

} // namespace ompsim::sim

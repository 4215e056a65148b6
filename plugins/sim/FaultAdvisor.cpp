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
std::string directiveName(llvm::StringRef demangled) {
  // The parameter list is the last top-level parenthesis; templates may hold some.
  int depth = 0;
  for (size_t i = 0; i < demangled.size(); ++i) {
    char c = demangled[i];
    if (c == '<')
      ++depth;
    else if (c == '>')
      --depth;
    else if (c == '(' && depth == 0 && i > 0)
      return demangled.substr(0, i).str();
  }
  return demangled.str();
}

} // namespace

void FaultAdvisor::setFunctionPointerTable(llvm::ArrayRef<__omp_offloading_fptr_map_ty> table) {
  hostPtrs_.clear();
  for (const __omp_offloading_fptr_map_ty &e : table)
    hostPtrs_.push_back(e.host_ptr);
  std::sort(hostPtrs_.begin(), hostPtrs_.end());
}

bool FaultAdvisor::inTable(uint64_t begin, uint64_t end) const {
  auto it = std::lower_bound(hostPtrs_.begin(), hostPtrs_.end(), begin);
  return it != hostPtrs_.end() && *it < end;
}

std::string FaultAdvisor::definedAt(uint64_t addr) {
  Dl_info info{};
  link_map *map = nullptr;
  if (!::dladdr1(reinterpret_cast<void *>(addr), &info, reinterpret_cast<void **>(&map), RTLD_DL_LINKMAP) ||
      !map)
    return "";
  std::string object = HostSymbolizer::get().objectOf(addr);
  if (object.empty())
    return "";
  llvm::symbolize::LLVMSymbolizer::Options opts;
  opts.UseSymbolTable = true;
  llvm::symbolize::LLVMSymbolizer symbolizer(opts);
  auto line = symbolizer.symbolizeCode(
      object, {addr - uint64_t(map->l_addr), llvm::object::SectionedAddress::UndefSection});
  if (!line) {
    llvm::consumeError(line.takeError());
    return "";
  }
  // The declaration line (DW_AT_decl_line) where present: the address is the
  // function's entry, whose line may be the body's first statement.
  bool haveStart = line->StartLine != 0 && line->StartFileName != llvm::DILineInfo::BadString;
  const std::string &file = haveStart ? line->StartFileName : line->FileName;
  uint32_t number = haveStart ? line->StartLine : line->Line;
  if (file == llvm::DILineInfo::BadString || number == 0)
    return "";
  return fmt::format("{}:{}", file, number);
}

std::string FaultAdvisor::advise(const HostFault &fault) const {
  if (fault.access == HostFault::Access::Call)
    return adviseCall(fault);
  HostSymbolizer &hs = HostSymbolizer::get();
  auto sym = hs.lookup(fault.addr);
  if (!sym)
    return "";
  llvm::StringRef name = sym->Name;
  if (name.consume_front("vtable for ")) {
    uint64_t begin = fault.addr - sym->Offset, end = begin + 8;
    for (const HostVtable &vt : hs.vtablesOf(fault.addr))
      if (vt.Address == begin)
        end = begin + vt.Size;
    return adviseVtable(fault, name.str(), begin, end);
  }
  if (sym->IsFunction)
    return "";
  bool write = fault.access == HostFault::Access::Write;
  return fmt::format("note: '{0}' is host data the device cannot reach: map it ('map({1}: {0})') or "
                     "make it device data ('#pragma omp declare target to({0})')",
                     sym->Name, write ? "tofrom" : "to");
}

std::string FaultAdvisor::adviseCall(const HostFault &fault) const {
  auto sym = HostSymbolizer::get().lookup(fault.addr);
  if (!sym || sym->Offset != 0 || !sym->IsFunction)
    return "";
  std::string fn = directiveName(sym->Name);
  if (inTable(fault.addr, fault.addr + 1))
    return fmt::format("note: '{}' is declare target indirect, but the call site did not translate "
                       "the pointer: {}",
                       fn, kNoLookup);
  std::string where = definedAt(fault.addr);
  if (where.empty())
    where = sym->Object.empty() ? HostSymbolizer::get().objectOf(fault.addr) : sym->Object;
  return fmt::format("note: '{0}' (defined {1} {2}) is not declare target indirect, so the device "
                     "cannot call it through a host pointer: add "
                     "'#pragma omp declare target to({0}) indirect'",
                     fn, where.find(':') != std::string::npos ? "at" : "in", where);
}

std::string FaultAdvisor::adviseVtable(const HostFault &fault, const std::string &className, uint64_t begin,
                                       uint64_t end) const {
  if (inTable(begin, end))
    return fmt::format("note: this is the host vtable of class '{}', which has an offload entry "
                       "(0x20), but the call site did not translate the object's vtable pointer: {}",
                       className, kNoLookup);
  bool lookedUp = std::any_of(fault.lookups.begin(), fault.lookups.end(),
                              [&](const auto &r) { return r.hostPtr >= begin && r.hostPtr < end; });
  std::string callSite = lookedUp ? "; the call site looked the vtable pointer up, but nothing translates it"
                         : fault.lookupsComplete
                             ? "; the call site did not translate the vtable pointer either"
                             : "";
  return fmt::format("note: this is the host vtable of class '{0}', which has no offload entry "
                     "(0x20){1}: clang-22 registers the vtable of a class whose objects a target "
                     "construct maps, so map the object as a '{0}'",
                     className, callSite);
}

} // namespace ompsim::sim

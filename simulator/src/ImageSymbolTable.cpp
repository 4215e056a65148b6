#include "ImageSymbolTable.h"

#include "llvm/DebugInfo/DWARF/DWARFContext.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <fmt/format.h>

namespace ompsim::sim {

ImageSymbolTable ImageSymbolTable::fromElf(llvm::ArrayRef<char> bytes, uint64_t base) {
  ImageSymbolTable t;
  llvm::MemoryBufferRef ref(llvm::StringRef(bytes.data(), bytes.size()), "device-image");
  auto obj = llvm::object::ObjectFile::createObjectFile(ref);
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return t;
  }
  auto *elf = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(obj->get());
  if (!elf)
    return t;
  auto addAll = [&](auto range) {
    for (const llvm::object::ELFSymbolRef &s : range) {
      auto name = s.getName();
      auto addr = s.getAddress();
      auto type = s.getType();
      if (!name || !addr || !type || name->empty()) {
        if (!name)
          llvm::consumeError(name.takeError());
        if (!addr)
          llvm::consumeError(addr.takeError());
        if (!type)
          llvm::consumeError(type.takeError());
        continue;
      }
      if (*type != llvm::object::SymbolRef::ST_Function && *type != llvm::object::SymbolRef::ST_Data)
        continue;
      t.add(name->str(), base + *addr, s.getSize());
    }
  };
  addAll(elf->symbols());
  addAll(elf->getDynamicSymbolIterators());
  t.addDebugInfoFunctions(*elf, base);
  return t;
}

void ImageSymbolTable::addDebugInfoFunctions(const llvm::object::ObjectFile &obj, uint64_t base) {
  // Code no symbol covers can still have a DW_TAG_subprogram: a copy of a
  // function the optimizer made (a recursive function specialized for its
  // caller) keeps the original's debug info but gets no symbol.
  bool hasDebugInfo = false;
  for (const llvm::object::SectionRef &sec : obj.sections()) {
    auto name = sec.getName();
    if (name && *name == ".debug_info")
      hasDebugInfo = true;
    else if (!name)
      llvm::consumeError(name.takeError());
  }
  if (!hasDebugInfo)
    return;
  auto quiet = [](llvm::Error e) { llvm::consumeError(std::move(e)); };
  auto dwarf = llvm::DWARFContext::create(obj, llvm::DWARFContext::ProcessDebugRelocations::Process, nullptr,
                                          "", quiet, quiet);
  std::vector<Entry> uncovered;
  for (const auto &unit : dwarf->compile_units())
    for (const llvm::DWARFDebugInfoEntry &entry : unit->dies()) {
      llvm::DWARFDie die(unit.get(), &entry);
      if (die.getTag() != llvm::dwarf::DW_TAG_subprogram)
        continue;
      const char *name = die.getName(llvm::DINameKind::LinkageName);
      if (!name)
        name = die.getName(llvm::DINameKind::ShortName);
      auto ranges = die.getAddressRanges();
      if (!ranges) {
        llvm::consumeError(ranges.takeError());
        continue;
      }
      if (!name || !*name)
        continue;
      for (const llvm::DWARFAddressRange &r : *ranges)
        if (r.HighPC > r.LowPC && symbolize(base + r.LowPC).empty())
          uncovered.push_back({base + r.LowPC, r.HighPC - r.LowPC, name});
    }
  for (Entry &e : uncovered)
    add(std::move(e.name), e.addr, e.size);
}

void ImageSymbolTable::add(std::string name, uint64_t addr, uint64_t size) {
  entries_.push_back({addr, size, std::move(name)});
  sorted_ = false;
}

std::string ImageSymbolTable::symbolize(uint64_t addr) const {
  if (!sorted_) {
    std::sort(entries_.begin(), entries_.end(), [](const Entry &a, const Entry &b) {
      return a.addr != b.addr ? a.addr < b.addr : a.size > b.size;
    });
    sorted_ = true;
  }
  auto it = std::upper_bound(entries_.begin(), entries_.end(), addr,
                             [](uint64_t a, const Entry &e) { return a < e.addr; });
  if (it == entries_.begin())
    return "";
  const Entry &e = *std::prev(it);
  uint64_t off = addr - e.addr;
  if (e.size ? off >= e.size : off >= 4096)
    return "";
  return fmt::format("{}+0x{:x}", llvm::demangle(e.name), off);
}

} // namespace ompsim::sim

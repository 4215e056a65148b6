#include "ImageSymbolTable.h"

#include "llvm/DebugInfo/DWARF/DWARFContext.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <fmt/format.h>

namespace ompsim::sim {

ImageSymbolTable ImageSymbolTable::fromElf(llvm::ArrayRef<char> Bytes, uint64_t Base) {
  ImageSymbolTable T;
  llvm::MemoryBufferRef Ref(llvm::StringRef(Bytes.data(), Bytes.size()), "device-image");
  auto Obj = llvm::object::ObjectFile::createObjectFile(Ref);
  if (!Obj) {
    llvm::consumeError(Obj.takeError());
    return T;
  }
  auto *Elf = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(Obj->get());
  if (!Elf)
    return T;
  auto AddAll = [&](auto Range) {
    for (const llvm::object::ELFSymbolRef &S : Range) {
      auto Name = S.getName();
      auto Addr = S.getAddress();
      auto Type = S.getType();
      if (!Name || !Addr || !Type || Name->empty()) {
        if (!Name)
          llvm::consumeError(Name.takeError());
        if (!Addr)
          llvm::consumeError(Addr.takeError());
        if (!Type)
          llvm::consumeError(Type.takeError());
        continue;
      }
      if (*Type != llvm::object::SymbolRef::ST_Function && *Type != llvm::object::SymbolRef::ST_Data)
        continue;
      T.add(Name->str(), Base + *Addr, S.getSize());
    }
  };
  AddAll(Elf->symbols());
  AddAll(Elf->getDynamicSymbolIterators());
  T.addDebugInfoFunctions(*Elf, Base);
  return T;
}

void ImageSymbolTable::addDebugInfoFunctions(const llvm::object::ObjectFile &Obj, uint64_t Base) {
  // Code no symbol covers can still have a DW_TAG_subprogram: a copy of a
  // function the optimizer made (a recursive function specialized for its
  // caller) keeps the original's debug info but gets no symbol.
  bool HasDebugInfo = false;
  for (const llvm::object::SectionRef &Sec : Obj.sections()) {
    auto Name = Sec.getName();
    if (Name && *Name == ".debug_info")
      HasDebugInfo = true;
    else if (!Name)
      llvm::consumeError(Name.takeError());
  }
  if (!HasDebugInfo)
    return;
  auto Quiet = [](llvm::Error E) { llvm::consumeError(std::move(E)); };
  auto Dwarf = llvm::DWARFContext::create(Obj, llvm::DWARFContext::ProcessDebugRelocations::Process, nullptr,
                                          "", Quiet, Quiet);
  std::vector<Entry> Uncovered;
  for (const auto &Unit : Dwarf->compile_units())
    for (const llvm::DWARFDebugInfoEntry &Entry : Unit->dies()) {
      llvm::DWARFDie Die(Unit.get(), &Entry);
      if (Die.getTag() != llvm::dwarf::DW_TAG_subprogram)
        continue;
      const char *Name = Die.getName(llvm::DINameKind::LinkageName);
      if (!Name)
        Name = Die.getName(llvm::DINameKind::ShortName);
      auto Ranges = Die.getAddressRanges();
      if (!Ranges) {
        llvm::consumeError(Ranges.takeError());
        continue;
      }
      if (!Name || !*Name)
        continue;
      for (const llvm::DWARFAddressRange &R : *Ranges)
        if (R.HighPC > R.LowPC && symbolize(Base + R.LowPC).empty())
          Uncovered.push_back({Base + R.LowPC, R.HighPC - R.LowPC, Name});
    }
  for (Entry &E : Uncovered)
    add(std::move(E.Name), E.Addr, E.Size);
}

void ImageSymbolTable::add(std::string Name, uint64_t Addr, uint64_t Size) {
  Entries.push_back({Addr, Size, std::move(Name)});
  Sorted = false;
}

std::string ImageSymbolTable::symbolize(uint64_t Addr) const {
  if (!Sorted) {
    std::sort(Entries.begin(), Entries.end(), [](const Entry &A, const Entry &B) {
      return A.Addr != B.Addr ? A.Addr < B.Addr : A.Size > B.Size;
    });
    Sorted = true;
  }
  auto It = std::upper_bound(Entries.begin(), Entries.end(), Addr,
                             [](uint64_t A, const Entry &E) { return A < E.Addr; });
  if (It == Entries.begin())
    return "";
  const Entry &E = *std::prev(It);
  uint64_t Off = Addr - E.Addr;
  if (E.Size ? Off >= E.Size : Off >= 4096)
    return "";
  return fmt::format("{}+0x{:x}", llvm::demangle(E.Name), Off);
}

} // namespace ompsim::sim

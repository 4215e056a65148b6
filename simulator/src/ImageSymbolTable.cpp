#include "ImageSymbolTable.h"

#include "llvm/DebugInfo/DWARF/DWARFContext.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"

#include <dlfcn.h>

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
  if (auto *Elf = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(Obj->get()))
    T.addElfSymbols(*Elf, Base);
  return T;
}

void ImageSymbolTable::addElfSymbols(const llvm::object::ELFObjectFileBase &Elf, uint64_t Base) {
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
      add(Name->str(), Base + *Addr, S.getSize());
    }
  };
  AddAll(Elf.symbols());
  AddAll(Elf.getDynamicSymbolIterators());
  addDebugInfoFunctions(Elf, Base);
}

std::unique_ptr<ImageSymbolTable> ImageSymbolTable::fromLibraryFile(const std::string &Path,
                                                                    uint64_t FileOffset, uint64_t &Address) {
  auto Buffer = llvm::MemoryBuffer::getFile(Path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!Buffer)
    return nullptr;
  auto Obj = llvm::object::ELF64LEObjectFile::create((*Buffer)->getMemBufferRef());
  if (!Obj) {
    llvm::consumeError(Obj.takeError());
    return nullptr;
  }
  auto Headers = Obj->getELFFile().program_headers();
  if (!Headers) {
    llvm::consumeError(Headers.takeError());
    return nullptr;
  }
  for (const auto &Ph : *Headers)
    if (Ph.p_type == llvm::ELF::PT_LOAD && FileOffset >= Ph.p_offset &&
        FileOffset - Ph.p_offset < Ph.p_filesz) {
      Address = FileOffset - Ph.p_offset + Ph.p_vaddr;
      auto Table = std::make_unique<ImageSymbolTable>();
      Table->addElfSymbols(*Obj, 0);
      Table->addIfuncTargets(Path, *Obj);
      return Table;
    }
  return nullptr;
}

void ImageSymbolTable::addIfuncTargets(const std::string &Path, const llvm::object::ELFObjectFileBase &Obj) {
  // An IFUNC's symbol is its resolver; the code that runs (libm's sincos is
  // __sincos_fma on a CPU with FMA) has no symbol in a stripped library.
  // The executor runs on this machine's CPU, so this process's resolution
  // of the same file is the executor's: where the library is loaded here
  // too, each IFUNC's target gets its name.
  void *Handle = dlopen(Path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (!Handle)
    return;
  for (const llvm::object::ELFSymbolRef &S : Obj.getDynamicSymbolIterators()) {
    if (S.getELFType() != llvm::ELF::STT_GNU_IFUNC)
      continue;
    auto Name = S.getName();
    if (!Name) {
      llvm::consumeError(Name.takeError());
      continue;
    }
    Dl_info Info;
    void *Target = dlsym(Handle, Name->str().c_str());
    if (Target && dladdr(Target, &Info) && Info.dli_fbase)
      add(Name->str(), reinterpret_cast<uint64_t>(Target) - reinterpret_cast<uint64_t>(Info.dli_fbase), 0);
  }
  dlclose(Handle);
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
  std::optional<SymbolAt> At = lookup(Addr);
  return At ? fmt::format("{}+0x{:x}", At->Name, At->Offset) : "";
}

std::optional<ImageSymbolTable::SymbolAt> ImageSymbolTable::lookup(uint64_t Addr) const {
  if (!Sorted) {
    // Of the names of one address, the last wins: the one a program calls
    // (libm's sincos, not its aliases sincosf64 and __sincos): fewest
    // leading underscores, then shortest.
    auto Plainness = [](const std::string &N) {
      size_t Underscores = N.find_first_not_of('_');
      return std::make_pair(Underscores == std::string::npos ? N.size() : Underscores, N.size());
    };
    std::sort(Entries.begin(), Entries.end(), [&](const Entry &A, const Entry &B) {
      if (A.Addr != B.Addr)
        return A.Addr < B.Addr;
      if (A.Size != B.Size)
        return A.Size > B.Size;
      return Plainness(A.Name) > Plainness(B.Name);
    });
    Sorted = true;
  }
  auto It = std::upper_bound(Entries.begin(), Entries.end(), Addr,
                             [](uint64_t A, const Entry &E) { return A < E.Addr; });
  if (It == Entries.begin())
    return std::nullopt;
  const Entry &E = *std::prev(It);
  uint64_t Off = Addr - E.Addr;
  if (E.Size ? Off >= E.Size : Off >= 4096)
    return std::nullopt;
  return SymbolAt{llvm::demangle(E.Name), Off};
}

} // namespace ompsim::sim

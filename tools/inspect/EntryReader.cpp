// Decodes device images and offload entries from a host ELF file with LLVM Object.
//
// The entry table is data the loader finishes: in a PIE or shared library the
// Address and SymbolName fields are zero in the file and only become pointers
// through dynamic relocations, and in a relocatable object through section
// relocations. So every pointer-sized field is read through the relocations
// that target it before it is interpreted.
#include "HostFile.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Demangle/Demangle.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Object/ELF.h>
#include <llvm/Object/OffloadBinary.h>
#include <llvm/Support/Endian.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/MathExtras.h>
#include <llvm/Support/MemoryBuffer.h>

#include "ompsim/offload_abi.h"

#include <algorithm>
#include <cstring>
#include <optional>

using namespace llvm;

namespace ompsim::inspect {
namespace {

constexpr size_t kCurrentEntrySize = sizeof(__tgt_offload_entry);
constexpr size_t kLegacyEntrySize = sizeof(__tgt_offload_entry_legacy);
static_assert(kCurrentEntrySize == 56, "clang-22 entry layout");
static_assert(kLegacyEntrySize == 32, "LLVM <= 19 entry layout");

/// The relocation types that can fill an entry's pointer fields, per machine.
struct RelocKinds {
  uint32_t Relative, Abs64;
};

std::optional<RelocKinds> relocKinds(uint16_t Machine) {
  switch (Machine) {
  case ELF::EM_X86_64:
    return RelocKinds{ELF::R_X86_64_RELATIVE, ELF::R_X86_64_64};
  case ELF::EM_AARCH64:
    return RelocKinds{ELF::R_AARCH64_RELATIVE, ELF::R_AARCH64_ABS64};
  case ELF::EM_PPC64:
    return RelocKinds{ELF::R_PPC64_RELATIVE, ELF::R_PPC64_ADDR64};
  case ELF::EM_RISCV:
    return RelocKinds{ELF::R_RISCV_RELATIVE, ELF::R_RISCV_64};
  default:
    return std::nullopt;
  }
}

/// Collects the relocations that land in `Entries`, keyed by offset inside it.
Expected<DenseMap<uint64_t, RelocTarget>> relocationsInto(const HostFile &File, const Shdr &Entries) {
  DenseMap<uint64_t, RelocTarget> Out;
  const ElfFile &Elf = File.elf();
  std::optional<RelocKinds> Kinds = relocKinds(Elf.getHeader().e_machine);
  unsigned EntriesIndex = File.indexOf(Entries);
  for (const Shdr &Sec : File.sections()) {
    if (Sec.sh_type != ELF::SHT_RELA)
      continue;
    // Section relocations name their target section; dynamic ones cover the whole image.
    if (File.relocatable() ? Sec.sh_info != EntriesIndex : (Sec.sh_flags & ELF::SHF_ALLOC) == 0)
      continue;
    Expected<typename ElfFile::Elf_Rela_Range> Relas = Elf.relas(Sec);
    if (!Relas)
      return fail("malformed relocation section " + File.sectionName(Sec) + ": " +
                  toString(Relas.takeError()));
    const Shdr *Symtab = nullptr;
    if (Sec.sh_link != 0 && Sec.sh_link < File.sections().size())
      Symtab = &File.sections()[Sec.sh_link];
    for (const auto &R : *Relas) {
      uint64_t Off = File.relocatable() ? R.r_offset : R.r_offset - Entries.sh_addr;
      if (!File.relocatable() && (R.r_offset < Entries.sh_addr || Off >= Entries.sh_size))
        continue;
      uint32_t Type = R.getType(false);
      RelocTarget T;
      T.Addend = uint64_t(R.r_addend);
      if (Kinds && Type == Kinds->Relative) {
        T.Loc = {0, uint64_t(R.r_addend)};
      } else if (Kinds && Type == Kinds->Abs64 && Symtab) {
        Expected<const Sym *> SymOrErr = Elf.getRelocationSymbol(R, Symtab);
        Expected<StringRef> Strtab = Elf.getStringTableForSymtab(*Symtab);
        if (!SymOrErr || !*SymOrErr || !Strtab) {
          if (!SymOrErr)
            consumeError(SymOrErr.takeError());
          if (!Strtab)
            consumeError(Strtab.takeError());
          return fail("relocation at " + hex(R.r_offset) + " in " + File.sectionName(Sec) +
                      " names a bad symbol");
        }
        const Sym &S = **SymOrErr;
        if (S.getType() != ELF::STT_SECTION) {
          Expected<StringRef> Name = S.getName(*Strtab);
          if (Name)
            T.Symbol = Name->str();
          else
            consumeError(Name.takeError());
        }
        if (S.st_shndx == ELF::SHN_UNDEF) {
          T.Undefined = true;
        } else {
          unsigned Section = File.relocatable() ? unsigned(S.st_shndx) : 0u;
          T.Loc = {Section, S.st_value + uint64_t(R.r_addend)};
        }
      } else {
        return fail("unsupported relocation type " + Twine(Type) + " at " + hex(R.r_offset) +
                    " in the offload entry section");
      }
      Out[Off] = std::move(T);
    }
  }
  return std::move(Out);
}

/// Reads the pointer field at `Off` of the entry section, through its relocation if any.
struct PointerField {
  Location Loc;
  std::string Symbol;
  bool Undefined = false;
  bool Null = false;
};

PointerField readPointer(const HostFile &File, ArrayRef<uint8_t> Section,
                         const DenseMap<uint64_t, RelocTarget> &Relocs, uint64_t Off) {
  PointerField F;
  auto It = Relocs.find(Off);
  if (It != Relocs.end()) {
    F.Loc = It->second.Loc;
    F.Symbol = It->second.Symbol;
    F.Undefined = It->second.Undefined;
    if (!F.Symbol.empty() && !F.Undefined && It->second.Addend != 0)
      F.Symbol.clear(); // symbol+addend: name the target from the symbol table instead
    return F;
  }
  uint64_t Raw = support::endian::read64le(Section.data() + Off);
  // Without a relocation, a relocatable file's field is section-less: only null makes sense.
  F.Null = Raw == 0 || File.relocatable();
  F.Loc = {0, Raw};
  return F;
}

void fillHostLocation(const HostFile &File, const PointerField &F, HostLocation &Out) {
  if (F.Undefined) {
    Out.Undefined = true;
    Out.Mangled = F.Symbol;
    Out.Symbol = demangle(F.Symbol);
    return;
  }
  if (F.Null)
    return;
  Out.Address = F.Loc.Addr;
  if (F.Loc.Section)
    Out.Section = File.sectionName(File.sections()[F.Loc.Section]).str();
  if (!F.Symbol.empty()) {
    Out.Mangled = F.Symbol;
    Out.Symbol = demangle(F.Symbol);
    return;
  }
  File.symbolize(F.Loc, Out);
}

} // namespace

Expected<std::vector<OffloadEntry>> readEntries(const HostFile &File, const Shdr &Sec, EntryFormat Format) {
  std::string SecName = File.sectionName(Sec).str();
  Expected<ArrayRef<uint8_t>> Bytes = File.contents(Sec);
  if (!Bytes)
    return fail("cannot read " + SecName + ": " + toString(Bytes.takeError()));
  size_t EntrySize = Format == EntryFormat::Current ? kCurrentEntrySize : kLegacyEntrySize;
  if (Bytes->size() % EntrySize != 0)
    return fail("section " + SecName + " is " + Twine(Bytes->size()) + " bytes, not a multiple of the " +
                Twine(EntrySize) + "-byte entry");
  Expected<DenseMap<uint64_t, RelocTarget>> Relocs = relocationsInto(File, Sec);
  if (!Relocs)
    return Relocs.takeError();

  std::vector<OffloadEntry> Entries;
  for (uint64_t Base = 0; Base < Bytes->size(); Base += EntrySize) {
    ArrayRef<uint8_t> Raw = Bytes->slice(Base, EntrySize);
    bool HasReloc = false;
    for (uint64_t O = 0; O < EntrySize; ++O)
      HasReloc |= Relocs->count(Base + O) != 0;
    // Zero padding (the linker's dummy entry) is not an entry.
    if (!HasReloc && std::all_of(Raw.begin(), Raw.end(), [](uint8_t B) { return B == 0; }))
      continue;
    OffloadEntry E;
    E.Index = unsigned(Entries.size());
    E.Format = Format;
    PointerField Addr, Name;
    using support::endian::read16le;
    using support::endian::read32le;
    using support::endian::read64le;
    if (Format == EntryFormat::Current) {
      if (read64le(Raw.data()) != 0 || Relocs->count(Base))
        return fail(SecName + " entry " + Twine(E.Index) +
                    ": first word is not zero, so this is not a clang-20+ entry (legacy layout?)");
      E.Version = read16le(Raw.data() + 8);
      E.Kind = read16le(Raw.data() + 10);
      E.Flags = read32le(Raw.data() + 12);
      Addr = readPointer(File, *Bytes, *Relocs, Base + offsetof(__tgt_offload_entry, Address));
      Name = readPointer(File, *Bytes, *Relocs, Base + offsetof(__tgt_offload_entry, SymbolName));
      E.Size = read64le(Raw.data() + offsetof(__tgt_offload_entry, Size));
      E.Data = read64le(Raw.data() + offsetof(__tgt_offload_entry, Data));
      if (E.Version != 1)
        return fail(SecName + " entry " + Twine(E.Index) + " has version " + Twine(E.Version) +
                    " (only version 1 is known)");
    } else {
      Addr = readPointer(File, *Bytes, *Relocs, Base + offsetof(__tgt_offload_entry_legacy, addr));
      Name = readPointer(File, *Bytes, *Relocs, Base + offsetof(__tgt_offload_entry_legacy, name));
      E.Size = read64le(Raw.data() + offsetof(__tgt_offload_entry_legacy, size));
      E.Flags = read32le(Raw.data() + offsetof(__tgt_offload_entry_legacy, flags));
    }
    fillHostLocation(File, Addr, E.Address);
    if (Name.Undefined || Name.Null)
      return fail(SecName + " entry " + Twine(E.Index) + " has no symbol name");
    Expected<std::string> Str = File.stringAt(Name.Loc);
    if (!Str)
      return fail(SecName + " entry " + Twine(E.Index) + ": bad symbol name: " + toString(Str.takeError()));
    E.Name = std::move(*Str);
    Entries.push_back(std::move(E));
  }
  return std::move(Entries);
}

} // namespace ompsim::inspect

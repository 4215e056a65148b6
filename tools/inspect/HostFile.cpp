// HostFile: a host ELF file opened with LLVM Object, its sections, strings and
// symbols, as the entry and image readers need them.
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

Error fail(const Twine &Message) { return createStringError(inconvertibleErrorCode(), Message); }

std::string errorsOf(Error A, Error B) { return toString(joinErrors(std::move(A), std::move(B))); }

std::string hex(uint64_t V) {
  std::string S;
  raw_string_ostream(S) << format_hex(V, 0);
  return S;
}

Expected<std::unique_ptr<HostFile>> HostFile::create(StringRef Path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf =
      MemoryBuffer::getFile(Path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!Buf)
    return fail("cannot read: " + Buf.getError().message());
  StringRef Data = (*Buf)->getBuffer();
  if (Data.size() < 4 || !Data.starts_with("\x7f"
                                           "ELF"))
    return fail("not an ELF file");
  if (Data.size() < 6 || Data[4] != ELF::ELFCLASS64 || Data[5] != ELF::ELFDATA2LSB)
    return fail("unsupported ELF file: only 64-bit little-endian hosts are supported");
  Expected<ElfFile> Elf = ElfFile::create(Data);
  if (!Elf)
    return fail("malformed ELF file: " + toString(Elf.takeError()));
  std::unique_ptr<HostFile> File(new HostFile(std::move(*Buf), std::move(*Elf)));
  if (Error E = File->load())
    return std::move(E);
  return std::move(File);
}

Error HostFile::load() {
  // Data outside the mapped buffer is the usual sign of a truncated copy.
  if (Elf.getHeader().e_shoff >= Buffer->getBufferSize() && Elf.getHeader().e_shnum != 0)
    return fail("truncated ELF file: section headers at " + hex(Elf.getHeader().e_shoff) +
                " lie past the end of the file (" + Twine(Buffer->getBufferSize()) + " bytes)");
  Expected<ArrayRef<Shdr>> Secs = Elf.sections();
  if (!Secs)
    return fail("malformed ELF file: " + toString(Secs.takeError()));
  Sections = *Secs;
  if (Sections.empty())
    return fail("ELF file has no section headers (stripped of them?)");
  for (const Shdr &S : Sections) {
    if (S.sh_type == ELF::SHT_NOBITS)
      continue;
    if (S.sh_offset > Buffer->getBufferSize() || S.sh_size > Buffer->getBufferSize() - S.sh_offset)
      return fail("truncated ELF file: section " + sectionName(S) + " ends at " +
                  hex(S.sh_offset + S.sh_size) + " but the file has " + Twine(Buffer->getBufferSize()) +
                  " bytes");
  }

  // .symtab knows local symbols too; .dynsym adds nothing it lacks, so it is
  // only the fallback for stripped files.
  bool HaveSymtab = false;
  for (unsigned Want : {unsigned(ELF::SHT_SYMTAB), unsigned(ELF::SHT_DYNSYM)}) {
    if (Want == ELF::SHT_DYNSYM && HaveSymtab)
      break;
    for (const Shdr &Sec : Sections) {
      if (Sec.sh_type != Want)
        continue;
      Expected<typename ElfFile::Elf_Sym_Range> Syms = Elf.symbols(&Sec);
      Expected<StringRef> Strtab = Elf.getStringTableForSymtab(Sec);
      if (!Syms || !Strtab)
        return fail("malformed symbol table " + sectionName(Sec) + ": " +
                    errorsOf(Syms.takeError(), Strtab.takeError()));
      for (const Sym &S : *Syms) {
        unsigned Type = S.getType();
        if (S.st_shndx == ELF::SHN_UNDEF || S.st_shndx >= ELF::SHN_LORESERVE || Type == ELF::STT_SECTION ||
            Type == ELF::STT_FILE)
          continue;
        Expected<StringRef> Name = S.getName(*Strtab);
        if (!Name) {
          consumeError(Name.takeError());
          continue;
        }
        if (Name->empty())
          continue;
        Symbols.push_back({relocatable() ? unsigned(S.st_shndx) : 0u, S.st_value, S.st_size, Name->str(),
                           S.getBinding() != ELF::STB_LOCAL,
                           Type == ELF::STT_FUNC || Type == ELF::STT_OBJECT || Type == ELF::STT_GNU_IFUNC,
                           Name->starts_with(".")});
      }
      HaveSymtab |= Want == ELF::SHT_SYMTAB;
    }
  }
  std::sort(Symbols.begin(), Symbols.end(), [](const NamedSymbol &A, const NamedSymbol &B) {
    return A.Section != B.Section ? A.Section < B.Section : A.Value < B.Value;
  });
  return Error::success();
}

Expected<ArrayRef<uint8_t>> HostFile::bytesAt(Location Loc) const {
  const Shdr *Hit = nullptr;
  if (Loc.Section) {
    if (Loc.Section >= Sections.size())
      return fail("section index " + Twine(Loc.Section) + " out of range");
    Hit = &Sections[Loc.Section];
  } else {
    for (const Shdr &S : Sections)
      if ((S.sh_flags & ELF::SHF_ALLOC) && S.sh_type != ELF::SHT_NOBITS && Loc.Addr >= S.sh_addr &&
          Loc.Addr - S.sh_addr < S.sh_size) {
        Hit = &S;
        break;
      }
    if (!Hit)
      return fail("address " + hex(Loc.Addr) + " is outside every section with file contents");
  }
  Expected<ArrayRef<uint8_t>> Data = contents(*Hit);
  if (!Data)
    return Data.takeError();
  uint64_t Off = Loc.Section ? Loc.Addr : Loc.Addr - Hit->sh_addr;
  if (Off >= Data->size())
    return fail("offset " + hex(Off) + " is past the end of section " + sectionName(*Hit));
  return Data->drop_front(Off);
}

Expected<std::string> HostFile::stringAt(Location Loc) const {
  Expected<ArrayRef<uint8_t>> Bytes = bytesAt(Loc);
  if (!Bytes)
    return Bytes.takeError();
  const auto *Begin = reinterpret_cast<const char *>(Bytes->data());
  const void *Nul = std::memchr(Begin, 0, Bytes->size());
  if (!Nul)
    return fail("string at " + hex(Loc.Addr) + " is not NUL-terminated");
  return std::string(Begin, static_cast<const char *>(Nul));
}

void HostFile::symbolize(Location Loc, HostLocation &Out) const {
  auto It = std::upper_bound(Symbols.begin(), Symbols.end(), Loc, [](Location L, const NamedSymbol &S) {
    return L.Section != S.Section ? L.Section < S.Section : L.Addr < S.Value;
  });
  const NamedSymbol *Best = nullptr;
  auto Score = [](const NamedSymbol &S) {
    return (S.Typed ? 4 : 0) + (S.Global ? 2 : 0) + (S.Dotted ? 0 : 1);
  };
  while (It != Symbols.begin()) {
    --It;
    if (It->Section != Loc.Section || Loc.Addr - It->Value > (1u << 24))
      break;
    bool Covers = Loc.Addr < It->Value + std::max<uint64_t>(It->Size, 1);
    if (Covers && (!Best || (Best->Value == It->Value && Score(*It) > Score(*Best))))
      Best = &*It;
    if (Best && It->Value < Best->Value)
      break;
  }
  if (!Best)
    return;
  Out.Mangled = Best->Name;
  Out.Symbol = demangle(Best->Name);
  Out.Offset = Loc.Addr - Best->Value;
}

std::string HostFile::elfType() const {
  switch (Elf.getHeader().e_type) {
  case ELF::ET_EXEC:
    return "executable";
  case ELF::ET_REL:
    return "relocatable";
  case ELF::ET_DYN: {
    Expected<typename ElfFile::Elf_Phdr_Range> Phdrs = Elf.program_headers();
    if (!Phdrs) {
      consumeError(Phdrs.takeError());
      return "shared-object";
    }
    for (const auto &Ph : *Phdrs)
      if (Ph.p_type == ELF::PT_INTERP)
        return "pie-executable";
    return "shared-library";
  }
  default:
    return "elf-type-" + std::to_string(Elf.getHeader().e_type);
  }
}

std::string HostFile::machine() const {
  switch (Elf.getHeader().e_machine) {
  case ELF::EM_X86_64:
    return "x86_64";
  case ELF::EM_AARCH64:
    return "aarch64";
  case ELF::EM_PPC64:
    return "ppc64le";
  case ELF::EM_RISCV:
    return "riscv64";
  default:
    return "machine-" + std::to_string(Elf.getHeader().e_machine);
  }
}

} // namespace ompsim::inspect

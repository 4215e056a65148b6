//===- ElfRelocator.cpp - Relocating a loaded ELF image ---------------------===//
//
// ImageLoad's relocation: dynamic symbols, RELA and PLT relocations,
// IRELATIVE resolvers, and relocation names for diagnostics.
//
//===----------------------------------------------------------------------===//

#include "ElfImageLoad.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>

namespace ompsim::sim {

llvm::Error ImageLoad::readSymbols() {
  const ImageSpan &LoadedSpan = *Span;
  uint64_t B = Img->Base;
  for (uint64_t I = 1; I < Nsyms; ++I) {
    auto S = LoadedSpan.read<Elf64_Sym>(Symtab + I * sizeof(Elf64_Sym));
    if (S.st_shndx == SHN_UNDEF)
      continue;
    auto Name = string(S.st_name, "dynamic symbol " + llvm::Twine(I));
    if (!Name)
      return Name.takeError();
    unsigned char Type = ELF64_ST_TYPE(S.st_info);
    bool Kernel = isKernelSymbol(Type, *Name);
    llvm::Twine What = Kernel ? "kernel '" : Type == STT_OBJECT ? "device global '" : "function '";
    // A device image has no thread-local storage (PT_TLS is refused), and the
    // dynamic linker's lookup of a TLS symbol needs some.
    if (Type == STT_TLS)
      return fail("dynamic symbol '" + *Name +
                  "' is thread-local (STT_TLS), but a device image has no thread-local storage");
    // A check builds no symbol table: nothing looks symbols up in the image it
    // throws away, and a table of every symbol is most of what checking an
    // image with 100 Ki functions costs.
    if (S.st_shndx == SHN_ABS) {
      // The host calls functions and copies to objects at their address; an
      // absolute one is not in the image (the dynamic linker does not add the
      // load address). Size-less absolute objects (version names) are fine.
      if (Type == STT_FUNC || Type == STT_GNU_IFUNC || (Type == STT_OBJECT && S.st_size))
        return fail(What + *Name + "' is absolute (SHN_ABS, value " + hex(S.st_value) + "), not " +
                    (Type == STT_OBJECT ? "data" : "code") + " of the image");
      if (!CheckOnly)
        Img->Symbols[*Name] = S.st_value;
      continue;
    }
    // Callers read a defined object and call a defined function through
    // lookup(): it must be in the image, and functions in its code.
    if (!LoadedSpan.contains(S.st_value, S.st_size))
      return fail("dynamic symbol '" + *Name + "' (" + hex(S.st_size) + " bytes at " + hex(S.st_value) +
                  ") lies outside the image " + LoadedSpan.describe());
    if (Type == STT_FUNC && !executable(S.st_value))
      return fail("function '" + *Name + "' at " + hex(S.st_value) + " is not in an executable segment");
    // The host writes device globals (map, update, the indirect tables):
    // code pages are not writable, and data there is not data.
    if (Type == STT_OBJECT && Executable.overlaps(S.st_value, S.st_size))
      return fail("device global '" + *Name + "' (" + hex(S.st_size) + " bytes at " + hex(S.st_value) +
                  ") lies in an executable segment, not in the image's data");
    if (Kernel)
      Kernels.push_back({Name->str(), S.st_value, S.st_size});
    if (!CheckOnly)
      Img->Symbols[*Name] = B + S.st_value;
  }
  return llvm::Error::success();
}

llvm::Expected<uint64_t> ImageLoad::symbolValue(uint64_t Index, uint64_t Reloc, const char *Table,
                                                uint32_t RelType) {
  if (Index == 0) // STN_UNDEF: the value is 0
    return 0;
  if (Index >= SymLimit || !Span->contains(Symtab + Index * sizeof(Elf64_Sym), sizeof(Elf64_Sym)))
    return fail("relocation " + llvm::Twine(Reloc) + " (" + Table + ") refers to symbol " +
                llvm::Twine(Index) + ", but the image has " + llvm::Twine(SymLimit) + " dynamic symbols");
  auto S = Span->read<Elf64_Sym>(Symtab + Index * sizeof(Elf64_Sym));
  auto Sname = string(S.st_name, "dynamic symbol " + llvm::Twine(Index));
  if (!Sname)
    return Sname.takeError();
  if (S.st_shndx != SHN_UNDEF && (RelType == R_X86_64_GLOB_DAT || RelType == R_X86_64_JUMP_SLOT) &&
      isKernelSymbol(ELF64_ST_TYPE(S.st_info), *Sname))
    return fail("relocation " + llvm::Twine(Reloc) + " (" + Table + ") binds an " +
                ElfImageLoader::relocationName(RelType) + " slot to kernel '" + *Sname +
                "': device code never calls a kernel, only the host launches one");
  if (S.st_shndx != SHN_UNDEF)
    return S.st_shndx == SHN_ABS ? S.st_value : Img->Base + S.st_value;
  if (CheckOnly) // imports are the dynamic linker's business then; it names a missing one
    return 0;
  if (void *P = Env.Resolve(*Sname))
    return reinterpret_cast<uint64_t>(P);
  if (ELF64_ST_BIND(S.st_info) == STB_WEAK)
    return 0;
  return fail("undefined symbol '" + *Sname + "'");
}

llvm::Error ImageLoad::relocate(uint64_t Table, uint64_t Bytes, const char *TableName) {
  const ImageSpan &LoadedSpan = *Span;
  uint64_t B = Img->Base;
  for (uint64_t I = 0; I < Bytes / sizeof(Elf64_Rela); ++I) {
    auto R = LoadedSpan.read<Elf64_Rela>(Table + I * sizeof(Elf64_Rela));
    uint32_t Type = ELF64_R_TYPE(R.r_info), SymIndex = ELF64_R_SYM(R.r_info);
    if (Type == R_X86_64_NONE)
      continue;
    if (!LoadedSpan.contains(R.r_offset, 8))
      return fail("relocation " + llvm::Twine(I) + " (" + TableName + ") at " + hex(R.r_offset) +
                  " lies outside the image " + LoadedSpan.describe());
    // The dynamic linker writes relocated words in place and makes no
    // segment writable for it without DT_TEXTREL (the simulator's loader
    // writes before protecting, but the image's code would fault there).
    if (Type != R_X86_64_IRELATIVE && !TextRel && !Writable.contains(R.r_offset, 8))
      return fail("relocation " + llvm::Twine(I) + " (" + TableName + ") at " + hex(R.r_offset) +
                  " is not in a writable segment");
    // GLOB_DAT and JUMP_SLOT store a symbol's address; symbol 0 names none.
    if ((Type == R_X86_64_GLOB_DAT || Type == R_X86_64_JUMP_SLOT) && SymIndex == 0)
      return fail("relocation " + llvm::Twine(I) + " (" + TableName + ") at " + hex(R.r_offset) + " is an " +
                  ElfImageLoader::relocationName(Type) + " against symbol 0, which names no symbol");
    int64_t A = R.r_addend;
    switch (Type) {
    case R_X86_64_RELATIVE:
      LoadedSpan.write64(R.r_offset, B + uint64_t(A));
      break;
    case R_X86_64_IRELATIVE:
      // The resolver runs once the code is executable (applyIrelative).
      if (!executable(uint64_t(A)))
        return fail("relocation " + llvm::Twine(I) + " (" + TableName + ") at " + hex(R.r_offset) +
                    ": IRELATIVE resolver " + hex(uint64_t(A)) + " is not in an executable segment");
      if (!Writable.contains(R.r_offset, 8))
        return fail("relocation " + llvm::Twine(I) + " (" + TableName + ") at " + hex(R.r_offset) +
                    ": IRELATIVE target is not in a writable segment");
      Irelative.emplace_back(R.r_offset, uint64_t(A));
      break;
    case R_X86_64_64:
    case R_X86_64_GLOB_DAT:
    case R_X86_64_JUMP_SLOT: {
      auto S = symbolValue(SymIndex, I, TableName, Type);
      if (!S)
        return S.takeError();
      LoadedSpan.write64(R.r_offset, (Type == R_X86_64_64 && *S) ? *S + uint64_t(A) : *S);
      break;
    }
    default:
      return fail("unsupported relocation " + ElfImageLoader::relocationName(Type) + " at offset " +
                  hex(R.r_offset));
    }
  }
  return llvm::Error::success();
}

void ImageLoad::applyIrelative() {
  for (auto [where, resolver] : Irelative) {
    // Checked in relocate(): the resolver is image code, the target writable.
    uint64_t Value = reinterpret_cast<uint64_t (*)()>(Img->Base + resolver)();
    Span->write64(where, Value);
  }
}

std::string ElfImageLoader::relocationName(uint32_t Type) {
  switch (Type) {
#define OMPSIM_RELOC(n)                                                                                      \
  case R_X86_64_##n:                                                                                         \
    return "R_X86_64_" #n;
    OMPSIM_RELOC(NONE)
    OMPSIM_RELOC(64)
    OMPSIM_RELOC(PC32)
    OMPSIM_RELOC(GOT32)
    OMPSIM_RELOC(PLT32)
    OMPSIM_RELOC(COPY)
    OMPSIM_RELOC(GLOB_DAT)
    OMPSIM_RELOC(JUMP_SLOT)
    OMPSIM_RELOC(RELATIVE)
    OMPSIM_RELOC(GOTPCREL)
    OMPSIM_RELOC(32)
    OMPSIM_RELOC(32S)
    OMPSIM_RELOC(16)
    OMPSIM_RELOC(PC16)
    OMPSIM_RELOC(8)
    OMPSIM_RELOC(PC8)
    OMPSIM_RELOC(DTPMOD64)
    OMPSIM_RELOC(DTPOFF64)
    OMPSIM_RELOC(TPOFF64)
    OMPSIM_RELOC(TLSGD)
    OMPSIM_RELOC(TLSLD)
    OMPSIM_RELOC(DTPOFF32)
    OMPSIM_RELOC(GOTTPOFF)
    OMPSIM_RELOC(TPOFF32)
    OMPSIM_RELOC(PC64)
    OMPSIM_RELOC(GOTOFF64)
    OMPSIM_RELOC(GOTPC32)
    OMPSIM_RELOC(SIZE32)
    OMPSIM_RELOC(SIZE64)
    OMPSIM_RELOC(IRELATIVE)
#undef OMPSIM_RELOC
  default:
    return "relocation type " + std::to_string(Type);
  }
}

} // namespace ompsim::sim

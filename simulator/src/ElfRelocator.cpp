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
  const ImageSpan &span = *span_;
  uint64_t B = img_->base_;
  for (uint64_t i = 1; i < nsyms_; ++i) {
    auto s = span.read<Elf64_Sym>(symtab_ + i * sizeof(Elf64_Sym));
    if (s.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s.st_info) == STT_TLS)
      continue;
    auto name = string(s.st_name, "dynamic symbol " + llvm::Twine(i));
    if (!name)
      return name.takeError();
    // A check builds no symbol table: nothing looks symbols up in the image it
    // throws away, and a table of every symbol is most of what checking an
    // image with 100 Ki functions costs.
    if (s.st_shndx == SHN_ABS) {
      if (!checkOnly_)
        img_->symbols_[*name] = s.st_value;
      continue;
    }
    // Callers read a defined object and call a defined function through
    // lookup(): it must be in the image, and functions in its code.
    if (!span.contains(s.st_value, s.st_size))
      return fail("dynamic symbol '" + *name + "' (" + hex(s.st_size) + " bytes at " + hex(s.st_value) +
                  ") lies outside the image " + span.describe());
    if (ELF64_ST_TYPE(s.st_info) == STT_FUNC && !executable(s.st_value))
      return fail("function '" + *name + "' at " + hex(s.st_value) + " is not in an executable segment");
    if (!checkOnly_)
      img_->symbols_[*name] = B + s.st_value;
  }
  return llvm::Error::success();
}

llvm::Expected<uint64_t> ImageLoad::symbolValue(uint64_t index, uint64_t reloc, const char *table) {
  if (index == 0) // STN_UNDEF: the value is 0
    return 0;
  if (index >= symLimit_ || !span_->contains(symtab_ + index * sizeof(Elf64_Sym), sizeof(Elf64_Sym)))
    return fail("relocation " + llvm::Twine(reloc) + " (" + table + ") refers to symbol " +
                llvm::Twine(index) + ", but the image has " + llvm::Twine(symLimit_) + " dynamic symbols");
  auto s = span_->read<Elf64_Sym>(symtab_ + index * sizeof(Elf64_Sym));
  auto sname = string(s.st_name, "dynamic symbol " + llvm::Twine(index));
  if (!sname)
    return sname.takeError();
  if (s.st_shndx != SHN_UNDEF)
    return s.st_shndx == SHN_ABS ? s.st_value : img_->base_ + s.st_value;
  if (checkOnly_) // imports are the dynamic linker's business then; it names a missing one
    return 0;
  if (void *p = env_.resolve(*sname))
    return reinterpret_cast<uint64_t>(p);
  if (ELF64_ST_BIND(s.st_info) == STB_WEAK)
    return 0;
  return fail("undefined symbol '" + *sname + "'");
}

llvm::Error ImageLoad::relocate(uint64_t table, uint64_t bytes, const char *tableName) {
  const ImageSpan &span = *span_;
  uint64_t B = img_->base_;
  for (uint64_t i = 0; i < bytes / sizeof(Elf64_Rela); ++i) {
    auto r = span.read<Elf64_Rela>(table + i * sizeof(Elf64_Rela));
    uint32_t type = ELF64_R_TYPE(r.r_info), symIndex = ELF64_R_SYM(r.r_info);
    if (type == R_X86_64_NONE)
      continue;
    if (!span.contains(r.r_offset, 8))
      return fail("relocation " + llvm::Twine(i) + " (" + tableName + ") at " + hex(r.r_offset) +
                  " lies outside the image " + span.describe());
    int64_t A = r.r_addend;
    switch (type) {
    case R_X86_64_RELATIVE:
      span.write64(r.r_offset, B + uint64_t(A));
      break;
    case R_X86_64_IRELATIVE:
      // The resolver runs once the code is executable (applyIrelative).
      if (!executable(uint64_t(A)))
        return fail("relocation " + llvm::Twine(i) + " (" + tableName + ") at " + hex(r.r_offset) +
                    ": IRELATIVE resolver " + hex(uint64_t(A)) + " is not in an executable segment");
      if (!writable_.contains(r.r_offset, 8))
        return fail("relocation " + llvm::Twine(i) + " (" + tableName + ") at " + hex(r.r_offset) +
                    ": IRELATIVE target is not in a writable segment");
      irelative_.emplace_back(r.r_offset, uint64_t(A));
      break;
    case R_X86_64_64:
    case R_X86_64_GLOB_DAT:
    case R_X86_64_JUMP_SLOT: {
      auto S = symbolValue(symIndex, i, tableName);
      if (!S)
        return S.takeError();
      span.write64(r.r_offset, (type == R_X86_64_64 && *S) ? *S + uint64_t(A) : *S);
      break;
    }
    default:
      return fail("unsupported relocation " + ElfImageLoader::relocationName(type) + " at offset " +
                  hex(r.r_offset));
    }
  }
  return llvm::Error::success();
}

void ImageLoad::applyIrelative() {
  for (auto [where, resolver] : irelative_) {
    // Checked in relocate(): the resolver is image code, the target writable.
    uint64_t value = reinterpret_cast<uint64_t (*)()>(img_->base_ + resolver)();
    span_->write64(where, value);
  }
}

std::string ElfImageLoader::relocationName(uint32_t type) {
  switch (type) {
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
    return "relocation type " + std::to_string(type);
  }
}

} // namespace ompsim::sim

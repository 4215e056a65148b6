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
  uint32_t relative, abs64;
};

std::optional<RelocKinds> relocKinds(uint16_t machine) {
  switch (machine) {
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

/// Collects the relocations that land in `entries`, keyed by offset inside it.
Expected<DenseMap<uint64_t, RelocTarget>> relocationsInto(const HostFile &file, const Shdr &entries) {
  DenseMap<uint64_t, RelocTarget> out;
  const ElfFile &elf = file.elf();
  std::optional<RelocKinds> kinds = relocKinds(elf.getHeader().e_machine);
  unsigned entriesIndex = file.indexOf(entries);
  for (const Shdr &sec : file.sections()) {
    if (sec.sh_type != ELF::SHT_RELA)
      continue;
    // Section relocations name their target section; dynamic ones cover the whole image.
    if (file.relocatable() ? sec.sh_info != entriesIndex : (sec.sh_flags & ELF::SHF_ALLOC) == 0)
      continue;
    Expected<typename ElfFile::Elf_Rela_Range> relas = elf.relas(sec);
    if (!relas)
      return fail("malformed relocation section " + file.sectionName(sec) + ": " + toString(relas.takeError()));
    const Shdr *symtab = nullptr;
    if (sec.sh_link != 0 && sec.sh_link < file.sections().size())
      symtab = &file.sections()[sec.sh_link];
    for (const auto &r : *relas) {
      uint64_t off = file.relocatable() ? r.r_offset : r.r_offset - entries.sh_addr;
      if (!file.relocatable() && (r.r_offset < entries.sh_addr || off >= entries.sh_size))
        continue;
      uint32_t type = r.getType(false);
      RelocTarget t;
      t.addend = uint64_t(r.r_addend);
      if (kinds && type == kinds->relative) {
        t.loc = {0, uint64_t(r.r_addend)};
      } else if (kinds && type == kinds->abs64 && symtab) {
        Expected<const Sym *> sym = elf.getRelocationSymbol(r, symtab);
        Expected<StringRef> strtab = elf.getStringTableForSymtab(*symtab);
        if (!sym || !*sym || !strtab) {
          if (!sym) consumeError(sym.takeError());
          if (!strtab) consumeError(strtab.takeError());
          return fail("relocation at " + hex(r.r_offset) + " in " + file.sectionName(sec) +
                      " names a bad symbol");
        }
        const Sym &s = **sym;
        if (s.getType() != ELF::STT_SECTION) {
          Expected<StringRef> name = s.getName(*strtab);
          if (name)
            t.symbol = name->str();
          else
            consumeError(name.takeError());
        }
        if (s.st_shndx == ELF::SHN_UNDEF) {
          t.undefined = true;
        } else {
          unsigned section = file.relocatable() ? unsigned(s.st_shndx) : 0u;
          t.loc = {section, s.st_value + uint64_t(r.r_addend)};
        }
      } else {
        return fail("unsupported relocation type " + Twine(type) + " at " + hex(r.r_offset) +
                    " in the offload entry section");
      }
      out[off] = std::move(t);
    }
  }
  return std::move(out);
}

/// Reads the pointer field at `off` of the entry section, through its relocation if any.
struct PointerField {
  Location loc;
  std::string symbol;
  bool undefined = false;
  bool null = false;
};

PointerField readPointer(const HostFile &file, ArrayRef<uint8_t> section,
                         const DenseMap<uint64_t, RelocTarget> &relocs, uint64_t off) {
  PointerField f;
  auto it = relocs.find(off);
  if (it != relocs.end()) {
    f.loc = it->second.loc;
    f.symbol = it->second.symbol;
    f.undefined = it->second.undefined;
    if (!f.symbol.empty() && !f.undefined && it->second.addend != 0)
      f.symbol.clear(); // symbol+addend: name the target from the symbol table instead
    return f;
  }
  uint64_t raw = support::endian::read64le(section.data() + off);
  // Without a relocation, a relocatable file's field is section-less: only null makes sense.
  f.null = raw == 0 || file.relocatable();
  f.loc = {0, raw};
  return f;
}

void fillHostLocation(const HostFile &file, const PointerField &f, HostLocation &out) {
  if (f.undefined) {
    out.undefined = true;
    out.mangled = f.symbol;
    out.symbol = demangle(f.symbol);
    return;
  }
  if (f.null)
    return;
  out.address = f.loc.addr;
  if (f.loc.section)
    out.section = file.sectionName(file.sections()[f.loc.section]).str();
  if (!f.symbol.empty()) {
    out.mangled = f.symbol;
    out.symbol = demangle(f.symbol);
    return;
  }
  file.symbolize(f.loc, out);
}

} // namespace

Expected<std::vector<OffloadEntry>> readEntries(const HostFile &file, const Shdr &sec, EntryFormat format) {
  std::string secName = file.sectionName(sec).str();
  Expected<ArrayRef<uint8_t>> bytes = file.contents(sec);
  if (!bytes)
    return fail("cannot read " + secName + ": " + toString(bytes.takeError()));
  size_t entrySize = format == EntryFormat::Current ? kCurrentEntrySize : kLegacyEntrySize;
  if (bytes->size() % entrySize != 0)
    return fail("section " + secName + " is " + Twine(bytes->size()) + " bytes, not a multiple of the " +
                Twine(entrySize) + "-byte entry");
  Expected<DenseMap<uint64_t, RelocTarget>> relocs = relocationsInto(file, sec);
  if (!relocs)
    return relocs.takeError();

  std::vector<OffloadEntry> entries;
  for (uint64_t base = 0; base < bytes->size(); base += entrySize) {
    ArrayRef<uint8_t> raw = bytes->slice(base, entrySize);
    bool hasReloc = false;
    for (uint64_t o = 0; o < entrySize; ++o)
      hasReloc |= relocs->count(base + o) != 0;
    // Zero padding (the linker's dummy entry) is not an entry.
    if (!hasReloc && std::all_of(raw.begin(), raw.end(), [](uint8_t b) { return b == 0; }))
      continue;
    OffloadEntry e;
    e.index = unsigned(entries.size());
    e.format = format;
    PointerField addr, name;
    using support::endian::read16le;
    using support::endian::read32le;
    using support::endian::read64le;
    if (format == EntryFormat::Current) {
      if (read64le(raw.data()) != 0 || relocs->count(base))
        return fail(secName + " entry " + Twine(e.index) +
                    ": first word is not zero, so this is not a clang-20+ entry (legacy layout?)");
      e.version = read16le(raw.data() + 8);
      e.kind = read16le(raw.data() + 10);
      e.flags = read32le(raw.data() + 12);
      addr = readPointer(file, *bytes, *relocs, base + offsetof(__tgt_offload_entry, Address));
      name = readPointer(file, *bytes, *relocs, base + offsetof(__tgt_offload_entry, SymbolName));
      e.size = read64le(raw.data() + offsetof(__tgt_offload_entry, Size));
      e.data = read64le(raw.data() + offsetof(__tgt_offload_entry, Data));
      if (e.version != 1)
        return fail(secName + " entry " + Twine(e.index) + " has version " + Twine(e.version) +
                    " (only version 1 is known)");
    } else {
      addr = readPointer(file, *bytes, *relocs, base + offsetof(__tgt_offload_entry_legacy, addr));
      name = readPointer(file, *bytes, *relocs, base + offsetof(__tgt_offload_entry_legacy, name));
      e.size = read64le(raw.data() + offsetof(__tgt_offload_entry_legacy, size));
      e.flags = read32le(raw.data() + offsetof(__tgt_offload_entry_legacy, flags));
    }
    fillHostLocation(file, addr, e.address);
    if (name.undefined || name.null)
      return fail(secName + " entry " + Twine(e.index) + " has no symbol name");
    Expected<std::string> str = file.stringAt(name.loc);
    if (!str)
      return fail(secName + " entry " + Twine(e.index) + ": bad symbol name: " + toString(str.takeError()));
    e.name = std::move(*str);
    entries.push_back(std::move(e));
  }
  return std::move(entries);
}


} // namespace ompsim::inspect

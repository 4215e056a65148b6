// Decodes device images and offload entries from a host ELF file with LLVM Object.
//
// The entry table is data the loader finishes: in a PIE or shared library the
// Address and SymbolName fields are zero in the file and only become pointers
// through dynamic relocations, and in a relocatable object through section
// relocations. So every pointer-sized field is read through the relocations
// that target it before it is interpreted.
#include "OffloadInspector.h"

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

namespace ompsim::inspect {
namespace {

using namespace llvm;
using ELFT = object::ELF64LE;
using ElfFile = object::ELFFile<ELFT>;
using Shdr = ELFT::Shdr;
using Sym = ELFT::Sym;

constexpr StringRef kCurrentEntrySection = "llvm_offload_entries";
constexpr StringRef kLegacyEntrySection = "omp_offloading_entries";
constexpr StringRef kImageSection = ".llvm.offloading";
constexpr size_t kCurrentEntrySize = sizeof(__tgt_offload_entry);
constexpr size_t kLegacyEntrySize = sizeof(__tgt_offload_entry_legacy);
static_assert(kCurrentEntrySize == 56, "clang-22 entry layout");
static_assert(kLegacyEntrySize == 32, "LLVM <= 19 entry layout");

Error fail(const Twine &message) { return createStringError(inconvertibleErrorCode(), message); }

/// One message for up to two errors that may each be success.
std::string errorsOf(Error a, Error b) { return toString(joinErrors(std::move(a), std::move(b))); }

std::string hex(uint64_t v) {
  std::string s;
  raw_string_ostream(s) << format_hex(v, 0);
  return s;
}

/// An address inside the host file: a virtual address (section 0, linked files)
/// or an offset inside section `section` (relocatable objects).
struct Location {
  unsigned section = 0;
  uint64_t addr = 0;
};

/// Where a relocated field points.
struct RelocTarget {
  Location loc;
  std::string symbol; ///< the relocation's own symbol when it is a named, non-section symbol
  uint64_t addend = 0;
  bool undefined = false;
};

struct NamedSymbol {
  unsigned section; // 0 in linked files (addresses are global)
  uint64_t value, size;
  std::string name;
  bool global, typed, dotted;
};

/// The host file opened as ELF, with the lookups the entry decoder needs.
class HostFile {
public:
  static Expected<std::unique_ptr<HostFile>> Create(StringRef path);

  const ElfFile &elf() const { return elf_; }
  bool relocatable() const { return elf_.getHeader().e_type == ELF::ET_REL; }
  ArrayRef<Shdr> sections() const { return sections_; }
  StringRef sectionName(const Shdr &s) const {
    Expected<StringRef> n = elf_.getSectionName(s);
    if (!n) {
      consumeError(n.takeError());
      return "";
    }
    return *n;
  }
  unsigned indexOf(const Shdr &s) const { return unsigned(&s - sections_.data()); }
  const Shdr *findSection(StringRef name) const {
    for (const Shdr &s : sections_)
      if (sectionName(s) == name)
        return &s;
    return nullptr;
  }
  Expected<ArrayRef<uint8_t>> contents(const Shdr &s) const {
    if (s.sh_type == ELF::SHT_NOBITS)
      return fail("section " + sectionName(s) + " has no contents in the file");
    return elf_.getSectionContents(s);
  }

  /// The bytes from `loc` to the end of the section that holds it.
  Expected<ArrayRef<uint8_t>> bytesAt(Location loc) const;
  /// The NUL-terminated string at `loc`.
  Expected<std::string> stringAt(Location loc) const;
  /// Names `loc` from the symbol tables (fills symbol/mangled/offset).
  void symbolize(Location loc, HostLocation &out) const;

  std::string elfType() const;
  std::string machine() const;

private:
  HostFile(std::unique_ptr<MemoryBuffer> buffer, ElfFile elf)
      : buffer_(std::move(buffer)), elf_(std::move(elf)) {}
  Error load();

  std::unique_ptr<MemoryBuffer> buffer_;
  ElfFile elf_;
  ArrayRef<Shdr> sections_;
  std::vector<NamedSymbol> symbols_; // sorted by (section, value)
};

Expected<std::unique_ptr<HostFile>> HostFile::Create(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buf =
      MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return fail("cannot read: " + buf.getError().message());
  StringRef data = (*buf)->getBuffer();
  if (data.size() < 4 || !data.starts_with("\x7f" "ELF"))
    return fail("not an ELF file");
  if (data.size() < 6 || data[4] != ELF::ELFCLASS64 || data[5] != ELF::ELFDATA2LSB)
    return fail("unsupported ELF file: only 64-bit little-endian hosts are supported");
  Expected<ElfFile> elf = ElfFile::create(data);
  if (!elf)
    return fail("malformed ELF file: " + toString(elf.takeError()));
  std::unique_ptr<HostFile> file(new HostFile(std::move(*buf), std::move(*elf)));
  if (Error e = file->load())
    return std::move(e);
  return std::move(file);
}

Error HostFile::load() {
  // Data outside the mapped buffer is the usual sign of a truncated copy.
  if (elf_.getHeader().e_shoff >= buffer_->getBufferSize() && elf_.getHeader().e_shnum != 0)
    return fail("truncated ELF file: section headers at " + hex(elf_.getHeader().e_shoff) +
                " lie past the end of the file (" + Twine(buffer_->getBufferSize()) + " bytes)");
  Expected<ArrayRef<Shdr>> secs = elf_.sections();
  if (!secs)
    return fail("malformed ELF file: " + toString(secs.takeError()));
  sections_ = *secs;
  if (sections_.empty())
    return fail("ELF file has no section headers (stripped of them?)");
  for (const Shdr &s : sections_) {
    if (s.sh_type == ELF::SHT_NOBITS)
      continue;
    if (s.sh_offset > buffer_->getBufferSize() || s.sh_size > buffer_->getBufferSize() - s.sh_offset)
      return fail("truncated ELF file: section " + sectionName(s) + " ends at " +
                  hex(s.sh_offset + s.sh_size) + " but the file has " +
                  Twine(buffer_->getBufferSize()) + " bytes");
  }

  // .symtab knows local symbols too; .dynsym adds nothing it lacks, so it is
  // only the fallback for stripped files.
  bool haveSymtab = false;
  for (unsigned want : {unsigned(ELF::SHT_SYMTAB), unsigned(ELF::SHT_DYNSYM)}) {
    if (want == ELF::SHT_DYNSYM && haveSymtab)
      break;
    for (const Shdr &sec : sections_) {
      if (sec.sh_type != want)
        continue;
      Expected<typename ElfFile::Elf_Sym_Range> syms = elf_.symbols(&sec);
      Expected<StringRef> strtab = elf_.getStringTableForSymtab(sec);
      if (!syms || !strtab)
        return fail("malformed symbol table " + sectionName(sec) + ": " +
                    errorsOf(syms.takeError(), strtab.takeError()));
      for (const Sym &s : *syms) {
        unsigned type = s.getType();
        if (s.st_shndx == ELF::SHN_UNDEF || s.st_shndx >= ELF::SHN_LORESERVE ||
            type == ELF::STT_SECTION || type == ELF::STT_FILE)
          continue;
        Expected<StringRef> name = s.getName(*strtab);
        if (!name) {
          consumeError(name.takeError());
          continue;
        }
        if (name->empty())
          continue;
        symbols_.push_back({relocatable() ? unsigned(s.st_shndx) : 0u, s.st_value, s.st_size,
                            name->str(), s.getBinding() != ELF::STB_LOCAL,
                            type == ELF::STT_FUNC || type == ELF::STT_OBJECT ||
                                type == ELF::STT_GNU_IFUNC,
                            name->starts_with(".")});
      }
      haveSymtab |= want == ELF::SHT_SYMTAB;
    }
  }
  std::sort(symbols_.begin(), symbols_.end(), [](const NamedSymbol &a, const NamedSymbol &b) {
    return a.section != b.section ? a.section < b.section : a.value < b.value;
  });
  return Error::success();
}

Expected<ArrayRef<uint8_t>> HostFile::bytesAt(Location loc) const {
  const Shdr *hit = nullptr;
  if (loc.section) {
    if (loc.section >= sections_.size())
      return fail("section index " + Twine(loc.section) + " out of range");
    hit = &sections_[loc.section];
  } else {
    for (const Shdr &s : sections_)
      if ((s.sh_flags & ELF::SHF_ALLOC) && s.sh_type != ELF::SHT_NOBITS && loc.addr >= s.sh_addr &&
          loc.addr - s.sh_addr < s.sh_size) {
        hit = &s;
        break;
      }
    if (!hit)
      return fail("address " + hex(loc.addr) + " is outside every section with file contents");
  }
  Expected<ArrayRef<uint8_t>> data = contents(*hit);
  if (!data)
    return data.takeError();
  uint64_t off = loc.section ? loc.addr : loc.addr - hit->sh_addr;
  if (off >= data->size())
    return fail("offset " + hex(off) + " is past the end of section " + sectionName(*hit));
  return data->drop_front(off);
}

Expected<std::string> HostFile::stringAt(Location loc) const {
  Expected<ArrayRef<uint8_t>> bytes = bytesAt(loc);
  if (!bytes)
    return bytes.takeError();
  const auto *begin = reinterpret_cast<const char *>(bytes->data());
  const void *nul = std::memchr(begin, 0, bytes->size());
  if (!nul)
    return fail("string at " + hex(loc.addr) + " is not NUL-terminated");
  return std::string(begin, static_cast<const char *>(nul));
}

void HostFile::symbolize(Location loc, HostLocation &out) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), loc, [](Location l, const NamedSymbol &s) {
    return l.section != s.section ? l.section < s.section : l.addr < s.value;
  });
  const NamedSymbol *best = nullptr;
  auto score = [](const NamedSymbol &s) { return (s.typed ? 4 : 0) + (s.global ? 2 : 0) + (s.dotted ? 0 : 1); };
  while (it != symbols_.begin()) {
    --it;
    if (it->section != loc.section || loc.addr - it->value > (1u << 24))
      break;
    bool covers = loc.addr < it->value + std::max<uint64_t>(it->size, 1);
    if (covers && (!best || (best->value == it->value && score(*it) > score(*best))))
      best = &*it;
    if (best && it->value < best->value)
      break;
  }
  if (!best)
    return;
  out.mangled = best->name;
  out.symbol = demangle(best->name);
  out.offset = loc.addr - best->value;
}

std::string HostFile::elfType() const {
  switch (elf_.getHeader().e_type) {
  case ELF::ET_EXEC:
    return "executable";
  case ELF::ET_REL:
    return "relocatable";
  case ELF::ET_DYN: {
    Expected<typename ElfFile::Elf_Phdr_Range> phdrs = elf_.program_headers();
    if (!phdrs) {
      consumeError(phdrs.takeError());
      return "shared-object";
    }
    for (const auto &ph : *phdrs)
      if (ph.p_type == ELF::PT_INTERP)
        return "pie-executable";
    return "shared-library";
  }
  default:
    return "elf-type-" + std::to_string(elf_.getHeader().e_type);
  }
}

std::string HostFile::machine() const {
  switch (elf_.getHeader().e_machine) {
  case ELF::EM_X86_64:
    return "x86_64";
  case ELF::EM_AARCH64:
    return "aarch64";
  case ELF::EM_PPC64:
    return "ppc64le";
  case ELF::EM_RISCV:
    return "riscv64";
  default:
    return "machine-" + std::to_string(elf_.getHeader().e_machine);
  }
}

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

/// Classifies image bytes by their magic number.
std::string contentKind(StringRef image, object::ImageKind declared) {
  if (image.starts_with("\x7f" "ELF") && image.size() >= sizeof(ELFT::Ehdr)) {
    uint16_t type = support::endian::read16le(image.data() + 16);
    switch (type) {
    case ELF::ET_DYN:
      return "elf-shared-object";
    case ELF::ET_REL:
      return "elf-relocatable";
    case ELF::ET_EXEC:
      return "elf-executable";
    default:
      return "elf";
    }
  }
  if (image.starts_with("BC\xc0\xde") || image.starts_with("\xde\xc0\x17\x0b"))
    return "bitcode";
  StringRef name = object::getImageKindName(declared);
  return name.empty() ? "unknown" : name.str();
}

/// Reads the global symbols a device image defines, so indirect entries can be checked.
void readImageSymbols(StringRef image, DeviceImage &out) {
  if (out.kind.starts_with("elf")) {
    Expected<ElfFile> elf = ElfFile::create(image);
    if (!elf || image.size() < 6 || image[4] != ELF::ELFCLASS64 || image[5] != ELF::ELFDATA2LSB) {
      out.symbolsError = elf ? "not a 64-bit little-endian ELF image" : toString(elf.takeError());
      return;
    }
    Expected<ArrayRef<Shdr>> secs = elf->sections();
    if (!secs) {
      out.symbolsError = toString(secs.takeError());
      return;
    }
    // A linked image is found through its dynamic symbols; a relocatable one has only .symtab.
    unsigned want = elf->getHeader().e_type == ELF::ET_REL ? ELF::SHT_SYMTAB : ELF::SHT_DYNSYM;
    bool found = false;
    for (const Shdr &sec : *secs) {
      if (sec.sh_type != want)
        continue;
      found = true;
      Expected<typename ElfFile::Elf_Sym_Range> syms = elf->symbols(&sec);
      Expected<StringRef> strtab = elf->getStringTableForSymtab(sec);
      if (!syms || !strtab) {
        out.symbolsError = errorsOf(syms.takeError(), strtab.takeError());
        return;
      }
      for (const Sym &s : *syms) {
        if (s.st_shndx == ELF::SHN_UNDEF || s.getBinding() == ELF::STB_LOCAL)
          continue;
        if (Expected<StringRef> n = s.getName(*strtab); n && !n->empty())
          out.definedSymbols.push_back(n->str());
        else if (!n)
          consumeError(n.takeError());
      }
    }
    if (!found) {
      out.symbolsError = want == ELF::SHT_DYNSYM ? "image has no dynamic symbol table" : "image has no symbol table";
      return;
    }
  } else if (out.kind == "bitcode") {
    LLVMContext ctx;
    Expected<std::unique_ptr<Module>> mod =
        getLazyBitcodeModule(MemoryBufferRef(image, "device image"), ctx);
    if (!mod) {
      out.symbolsError = toString(mod.takeError());
      return;
    }
    for (const GlobalValue &gv : (*mod)->global_values())
      if (!gv.isDeclaration() && !gv.hasLocalLinkage())
        out.definedSymbols.push_back(gv.getName().str());
  } else {
    return; // cubin, PTX, ...: nothing ompsim can check
  }
  std::sort(out.definedSymbols.begin(), out.definedSymbols.end());
  out.symbolsKnown = true;
}

Error readOffloadBinaries(const HostFile &file, const Shdr &sec, std::vector<DeviceImage> &images) {
  Expected<ArrayRef<uint8_t>> bytes = file.contents(sec);
  if (!bytes)
    return fail("cannot read " + file.sectionName(sec) + ": " + toString(bytes.takeError()));
  StringRef all(reinterpret_cast<const char *>(bytes->data()), bytes->size());
  using Header = object::OffloadBinary::Header;
  uint64_t pos = 0;
  while (pos < all.size()) {
    StringRef rest = all.drop_front(pos);
    if (rest.find_first_not_of('\0') == StringRef::npos)
      break; // alignment padding after the last blob
    if (rest.size() < sizeof(Header))
      return fail("device image at offset " + hex(pos) + " of " + kImageSection +
                  " is truncated: " + Twine(rest.size()) + " bytes, header needs " + Twine(sizeof(Header)));
    if (!rest.starts_with("\x10\xff\x10\xad"))
      return fail("device image at offset " + hex(pos) + " of " + kImageSection +
                  " lacks the OffloadBinary magic 0x10FF10AD");
    uint64_t size = support::endian::read64le(rest.data() + offsetof(Header, Size));
    if (size < sizeof(Header) || size > rest.size())
      return fail("device image at offset " + hex(pos) + " of " + kImageSection + " claims " +
                  Twine(size) + " bytes but " + Twine(rest.size()) + " remain (truncated?)");
    // OffloadBinary wants an 8-byte aligned buffer; a copy guarantees it.
    std::unique_ptr<MemoryBuffer> copy = MemoryBuffer::getMemBufferCopy(rest.take_front(size), "image");
    Expected<std::unique_ptr<object::OffloadBinary>> bin = object::OffloadBinary::create(*copy);
    if (!bin)
      return fail("device image at offset " + hex(pos) + " of " + kImageSection +
                  " is malformed: " + toString(bin.takeError()));
    DeviceImage img;
    img.index = unsigned(images.size());
    StringRef image = (*bin)->getImage();
    img.kind = contentKind(image, (*bin)->getImageKind());
    StringRef ok = object::getOffloadKindName((*bin)->getOffloadKind());
    img.offloadKind = ok.empty() ? "none" : ok.str();
    img.triple = (*bin)->getTriple().str();
    img.arch = (*bin)->getArch().str();
    img.size = image.size();
    img.fileOffset = sec.sh_offset + pos + uint64_t(image.data() - copy->getBufferStart());
    readImageSymbols(image, img);
    images.push_back(std::move(img));
    pos += alignTo(size, object::OffloadBinary::getAlignment());
  }
  return Error::success();
}

/// Old wrappers (LLVM <= 16) embedded raw images under `.omp_offloading.device_image*` symbols.
Error readRawLegacyImages(const HostFile &file, std::vector<DeviceImage> &images) {
  for (const Shdr &sec : file.sections()) {
    if (sec.sh_type != ELF::SHT_SYMTAB)
      continue;
    auto syms = file.elf().symbols(&sec);
    auto strtab = file.elf().getStringTableForSymtab(sec);
    if (!syms || !strtab) {
      if (!syms) consumeError(syms.takeError());
      if (!strtab) consumeError(strtab.takeError());
      continue;
    }
    for (const Sym &s : *syms) {
      Expected<StringRef> n = s.getName(*strtab);
      if (!n) {
        consumeError(n.takeError());
        continue;
      }
      if (!n->starts_with(".omp_offloading.device_image") || n->ends_with("s") || s.st_size == 0 ||
          s.st_shndx == ELF::SHN_UNDEF || s.st_shndx >= ELF::SHN_LORESERVE)
        continue;
      Location loc{file.relocatable() ? unsigned(s.st_shndx) : 0u, s.st_value};
      Expected<ArrayRef<uint8_t>> bytes = file.bytesAt(loc);
      if (!bytes || bytes->size() < s.st_size) {
        if (!bytes) consumeError(bytes.takeError());
        return fail("device image symbol " + *n + " lies outside the file's contents");
      }
      StringRef image(reinterpret_cast<const char *>(bytes->data()), s.st_size);
      if (image.starts_with("\x10\xff\x10\xad"))
        continue; // an OffloadBinary: covered by .llvm.offloading
      DeviceImage img;
      img.index = unsigned(images.size());
      img.kind = contentKind(image, object::IMG_None);
      img.offloadKind = "openmp";
      img.triple = n->drop_front(strlen(".omp_offloading.device_image")).ltrim('.').str();
      img.size = s.st_size;
      readImageSymbols(image, img);
      images.push_back(std::move(img));
    }
  }
  return Error::success();
}

} // namespace

bool DeviceImage::defines(llvm::StringRef name) const {
  return std::binary_search(definedSymbols.begin(), definedSymbols.end(), name.str());
}

std::string OffloadEntry::role() const {
  if (flags & OMPSIM_ENTRY_INDIRECT_VTABLE)
    return "indirect-vtable";
  if (flags & OMPSIM_ENTRY_INDIRECT)
    return "indirect-function";
  if (flags & OMPSIM_ENTRY_REQUIRES)
    return "requires";
  if (flags & OMPSIM_ENTRY_LINK)
    return "link";
  if (size == 0) {
    // Function entries: the ctor/dtor bits mark static initializer kernels.
    if (flags & OMPSIM_ENTRY_CTOR)
      return "ctor";
    if (flags & OMPSIM_ENTRY_DTOR)
      return "dtor";
    return "kernel";
  }
  return (flags & OMPSIM_ENTRY_ENTER) ? "global-enter" : "global";
}

std::vector<std::string> OffloadEntry::flagNames() const {
  static const std::pair<uint32_t, const char *> kBits[] = {
      {OMPSIM_ENTRY_LINK, "link"},         {OMPSIM_ENTRY_ENTER, "enter/ctor"},
      {OMPSIM_ENTRY_DTOR, "dtor"},         {OMPSIM_ENTRY_INDIRECT, "indirect"},
      {OMPSIM_ENTRY_REQUIRES, "requires"}, {OMPSIM_ENTRY_INDIRECT_VTABLE, "indirect-vtable"},
  };
  std::vector<std::string> out;
  uint32_t known = 0;
  for (auto [bit, name] : kBits) {
    known |= bit;
    if (flags & bit)
      out.push_back(name);
  }
  if (uint32_t rest = flags & ~known)
    out.push_back("unknown:" + hex(rest));
  return out;
}

std::vector<std::string> requiresFlagNames(uint64_t data) {
  static const std::pair<uint64_t, const char *> kBits[] = {
      {OMPSIM_REQ_NONE, "none"},
      {OMPSIM_REQ_REVERSE_OFFLOAD, "reverse_offload"},
      {OMPSIM_REQ_UNIFIED_ADDRESS, "unified_address"},
      {OMPSIM_REQ_UNIFIED_SHARED_MEMORY, "unified_shared_memory"},
      {OMPSIM_REQ_DYNAMIC_ALLOCATORS, "dynamic_allocators"},
      {OMPSIM_REQ_AUTO_ZERO_COPY, "auto_zero_copy"},
  };
  std::vector<std::string> out;
  for (auto [bit, name] : kBits)
    if (data & bit)
      out.push_back(name);
  return out;
}

llvm::Expected<Report> inspectFile(llvm::StringRef path) {
  Expected<std::unique_ptr<HostFile>> file = HostFile::Create(path);
  if (!file)
    return file.takeError();
  HostFile &host = **file;
  Report report;
  report.path = path.str();
  report.elfType = host.elfType();
  report.machine = host.machine();

  const Shdr *imageSec = nullptr;
  for (const Shdr &s : host.sections())
    if (s.sh_type == ELF::SHT_LLVM_OFFLOADING || host.sectionName(s) == kImageSection) {
      imageSec = &s;
      if (Error e = readOffloadBinaries(host, s, report.images))
        return std::move(e);
    }
  if (!imageSec)
    if (Error e = readRawLegacyImages(host, report.images))
      return std::move(e);

  const Shdr *current = host.findSection(kCurrentEntrySection);
  const Shdr *legacy = host.findSection(kLegacyEntrySection);
  if (current && legacy)
    return fail("both " + kCurrentEntrySection + " and " + kLegacyEntrySection +
                " are present; mixed LLVM versions in one file are not supported");
  if (const Shdr *sec = current ? current : legacy) {
    report.format = current ? EntryFormat::Current : EntryFormat::Legacy;
    report.entrySection = host.sectionName(*sec).str();
    Expected<std::vector<OffloadEntry>> entries = readEntries(host, *sec, *report.format);
    if (!entries)
      return entries.takeError();
    report.entries = std::move(*entries);
  }
  if (!current && !legacy && report.images.empty())
    return fail("no offload section: neither " + kImageSection + " nor " + kCurrentEntrySection +
                " / " + kLegacyEntrySection + " (not built with -fopenmp-targets?)");

  for (const OffloadEntry &e : report.entries) {
    if (!(e.flags & (OMPSIM_ENTRY_INDIRECT | OMPSIM_ENTRY_INDIRECT_VTABLE)))
      continue;
    IndirectTarget t;
    t.entryIndex = e.index;
    t.isVtable = e.flags & OMPSIM_ENTRY_INDIRECT_VTABLE;
    t.host = e.address;
    t.entryName = e.name;
    t.deviceGlobal = e.name;
    t.slots = t.isVtable ? e.size / 8 : 1;
    for (const DeviceImage &img : report.images) {
      if (!img.symbolsKnown)
        continue;
      (img.defines(t.deviceGlobal) ? t.definedIn : t.missingIn).push_back(img.index);
    }
    report.indirect.push_back(std::move(t));
  }
  return std::move(report);
}

} // namespace ompsim::inspect

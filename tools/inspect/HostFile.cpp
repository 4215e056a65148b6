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

Error fail(const Twine &message) { return createStringError(inconvertibleErrorCode(), message); }

std::string errorsOf(Error a, Error b) { return toString(joinErrors(std::move(a), std::move(b))); }

std::string hex(uint64_t v) {
  std::string s;
  raw_string_ostream(s) << format_hex(v, 0);
  return s;
}

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

} // namespace ompsim::inspect

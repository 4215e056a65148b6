//===- ElfImageValidator.cpp - Checks on an untrusted ELF image -------------===//
//
// ImageLoad's validation: program headers, the dynamic section, the symbol,
// string and hash tables, .eh_frame, and ElfImageLoader::validate.
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

namespace {

/// libgcc's pointer encodings that need no base beyond the record itself:
/// absolute or pc-relative, in one of the fixed or LEB128 formats.
/// FDE addresses ('R') must be direct and present; a personality routine or
/// LSDA ('P', 'L') may be omitted or reached through a pointer.
bool plainPointerEncoding(uint8_t enc, bool forFdeAddresses) {
  if (enc == 0xff) // DW_EH_PE_omit
    return !forFdeAddresses;
  if ((enc & 0x80) && forFdeAddresses)
    return false;
  uint8_t format = enc & 0x0f, application = enc & 0x70;
  bool formatOk = format <= 0x04 || (format >= 0x09 && format <= 0x0c);
  return formatOk && (application == 0x00 || application == 0x10);
}

} // namespace

llvm::Error ImageLoad::readProgramHeaders(Elf *elf, uint64_t fileSize) {
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0 || phnum == 0)
    return fail("no program headers");
  phdrs_.resize(phnum);
  for (size_t i = 0; i < phnum; ++i) {
    if (!gelf_getphdr(elf, int(i), &phdrs_[i]))
      return fail("unreadable program header " + llvm::Twine(i));
    const GElf_Phdr &ph = phdrs_[i];
    if (ph.p_type == PT_LOAD) {
      if (ph.p_offset > fileSize || ph.p_filesz > fileSize - ph.p_offset)
        return fail("PT_LOAD segment " + llvm::Twine(i) + " lies outside the file");
      if (ph.p_filesz > ph.p_memsz)
        return fail("PT_LOAD segment " + llvm::Twine(i) + " has more file bytes (" + hex(ph.p_filesz) +
                    ") than memory bytes (" + hex(ph.p_memsz) + ")");
      if (ph.p_vaddr >= kMaxVaddr || ph.p_memsz > ElfImageLoader::kMaxImageSpan)
        return fail("PT_LOAD segment " + llvm::Twine(i) + " (" + hex(ph.p_memsz) + " bytes at " +
                    hex(ph.p_vaddr) + ") is not a plausible device image segment (at most " +
                    hex(ElfImageLoader::kMaxImageSpan) + " bytes below " + hex(kMaxVaddr) + ")");
      if (ph.p_memsz == 0)
        continue;
      segments_.push_back({ph.p_vaddr, ph.p_vaddr + ph.p_memsz, ph.p_flags});
      if (ph.p_flags & PF_X)
        executable_.add(ph.p_vaddr, ph.p_vaddr + ph.p_memsz);
      if (ph.p_flags & PF_W)
        writable_.add(ph.p_vaddr, ph.p_vaddr + ph.p_memsz);
      if (ph.p_flags & PF_R)
        readable_.add(ph.p_vaddr, ph.p_vaddr + ph.p_memsz);
      lo_ = std::min(lo_, pageDown(ph.p_vaddr));
      hi_ = std::max(hi_, pageUp(ph.p_vaddr + ph.p_memsz));
    } else if (ph.p_type == PT_DYNAMIC) {
      if (!dynamicPh_)
        dynamicPh_ = ph;
    } else if (ph.p_type == PT_GNU_RELRO) {
      relroPh_ = ph;
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      ehFrameHdrPh_ = ph;
    } else if (ph.p_type == PT_TLS && ph.p_memsz) {
      return fail("thread-local storage (PT_TLS) is not supported in device images");
    }
  }
  executable_.finish();
  writable_.finish();
  readable_.finish();
  if (segments_.empty())
    return fail("no PT_LOAD segments");
  if (hi_ - lo_ > ElfImageLoader::kMaxImageSpan)
    return fail("PT_LOAD segments span " + hex(hi_ - lo_) + " bytes ([" + hex(lo_) + ", " + hex(hi_) +
                ")), more than the loader's limit of " + hex(ElfImageLoader::kMaxImageSpan));
  if (!dynamicPh_)
    return fail("no PT_DYNAMIC segment");
  if (relroPh_ && !ImageSpan(0, lo_, hi_).contains(relroPh_->p_vaddr, relroPh_->p_memsz))
    return fail("PT_GNU_RELRO segment (" + hex(relroPh_->p_memsz) + " bytes at " + hex(relroPh_->p_vaddr) +
                ") lies outside the image [" + hex(lo_) + ", " + hex(hi_) + ")");
  return llvm::Error::success();
}

llvm::Error ImageLoad::readDynamic() {
  const ImageSpan &span = *span_;
  if (!span.contains(dynamicPh_->p_vaddr, dynamicPh_->p_memsz))
    return fail("PT_DYNAMIC segment (" + hex(dynamicPh_->p_memsz) + " bytes at " + hex(dynamicPh_->p_vaddr) +
                ") lies outside the loaded image " + span.describe());
  uint64_t ndyn = dynamicPh_->p_memsz / sizeof(Elf64_Dyn);
  bool terminated = false;
  for (uint64_t i = 0; i < ndyn; ++i) {
    auto d = span.read<Elf64_Dyn>(dynamicPh_->p_vaddr + i * sizeof(Elf64_Dyn));
    uint64_t v = d.d_un.d_val;
    if (d.d_tag == DT_NULL) {
      terminated = true;
      break;
    }
    switch (d.d_tag) {
    case DT_NEEDED:
      neededOffsets_.push_back(v);
      break;
    case DT_STRTAB:
      strtab_ = v;
      break;
    case DT_STRSZ:
      strsz_ = v;
      haveStrsz_ = true;
      break;
    case DT_SYMTAB:
      symtab_ = v;
      break;
    case DT_SYMENT:
      syment_ = v;
      break;
    case DT_HASH:
      hash_ = v;
      break;
    case DT_GNU_HASH:
      gnuHash_ = v;
      break;
    case DT_VERSYM:
      versym_ = v;
      break;
    case DT_RELA:
      rela_ = v;
      break;
    case DT_RELASZ:
      relasz_ = v;
      break;
    case DT_RELAENT:
      relaent_ = v;
      break;
    case DT_JMPREL:
      jmprel_ = v;
      break;
    case DT_PLTRELSZ:
      pltrelsz_ = v;
      break;
    case DT_INIT:
      init_ = v;
      break;
    case DT_INIT_ARRAY:
      initArray_ = v;
      break;
    case DT_INIT_ARRAYSZ:
      initArraySz_ = v;
      break;
    case DT_FINI:
      fini_ = v;
      break;
    case DT_FINI_ARRAY:
      finiArray_ = v;
      break;
    case DT_FINI_ARRAYSZ:
      finiArraySz_ = v;
      break;
    case DT_PLTREL:
      if (v != DT_RELA)
        return fail("PLT relocations are not RELA");
      break;
    case DT_REL:
      return fail("REL relocations are not used on x86-64");
    default:
      break;
    }
  }
  if (!terminated)
    return fail("the dynamic section has no DT_NULL terminator");
  if (!strtab_ || !symtab_)
    return fail("dynamic section lacks DT_STRTAB or DT_SYMTAB");
  return llvm::Error::success();
}

llvm::Error ImageLoad::checkTables(Elf *elf) {
  const ImageSpan &span = *span_;
  // Strings: without DT_STRSZ the table runs to the end of the image.
  if (!haveStrsz_)
    strsz_ = strtab_ < span.hi() ? span.hi() - strtab_ : 0;
  if (!span.contains(strtab_, strsz_))
    return fail("DT_STRTAB (" + hex(strsz_) + " bytes at " + hex(strtab_) + ") lies outside the image " +
                span.describe());
  // Symbols: the count is not in the dynamic section. Like the dynamic
  // linker, take it from the hash tables the dynamic section points to, so
  // an image without section headers (or with corrupt ones) loads; only an
  // image with neither table falls back to the SHT_DYNSYM section.
  if (syment_ && *syment_ != sizeof(Elf64_Sym))
    return fail("DT_SYMENT is " + llvm::Twine(*syment_) + ", not " + llvm::Twine(sizeof(Elf64_Sym)));
  if (hash_) {
    if (!span.contains(hash_, 8))
      return fail("DT_HASH at " + hex(hash_) + " lies outside the image " + span.describe());
    nsyms_ = span.read<uint32_t>(hash_ + 4); // nchain: one chain entry per symbol
  } else if (gnuHash_) {
    auto count = gnuHashSymbolCount();
    if (!count)
      return count.takeError();
    nsyms_ = *count;
    uint64_t next = span.hi();
    for (uint64_t t : {strtab_, versym_, gnuHash_, rela_, jmprel_, initArray_, finiArray_})
      if (t > symtab_ && t < next)
        next = t;
    symLimit_ = std::max(nsyms_, (next - std::min(next, symtab_)) / sizeof(Elf64_Sym));
  } else if (elf) {
    std::optional<GElf_Shdr> dynsym;
    for (Elf_Scn *scn = nullptr; (scn = elf_nextscn(elf, scn));) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNSYM && (!dynsym || sh.sh_addr == symtab_))
        dynsym = sh;
    }
    if (dynsym) {
      if (dynsym->sh_entsize != sizeof(Elf64_Sym))
        return fail("the .dynsym section's entry size is " + llvm::Twine(dynsym->sh_entsize) + ", not " +
                    llvm::Twine(sizeof(Elf64_Sym)));
      nsyms_ = dynsym->sh_size / sizeof(Elf64_Sym);
    }
  }
  symLimit_ = std::max(symLimit_, nsyms_);
  if (nsyms_ > span.hi() / sizeof(Elf64_Sym) || !span.contains(symtab_, nsyms_ * sizeof(Elf64_Sym)))
    return fail("DT_SYMTAB (" + llvm::Twine(nsyms_) + " symbols at " + hex(symtab_) +
                ") lies outside the image " + span.describe());
  // Relocation tables.
  if (relaent_ && *relaent_ != sizeof(Elf64_Rela))
    return fail("DT_RELAENT is " + llvm::Twine(*relaent_) + ", not " + llvm::Twine(sizeof(Elf64_Rela)));
  for (auto [table, bytes, what] : {std::tuple<uint64_t, uint64_t, const char *>{rela_, relasz_, "DT_RELA"},
                                    {jmprel_, pltrelsz_, "DT_JMPREL"}}) {
    if (bytes % sizeof(Elf64_Rela))
      return fail(llvm::Twine(what) + " table size " + hex(bytes) + " is not a whole number of " +
                  llvm::Twine(sizeof(Elf64_Rela)) + "-byte entries");
    if (bytes && !span.contains(table, bytes))
      return fail(llvm::Twine(what) + " table (" + hex(bytes) + " bytes at " + hex(table) +
                  ") lies outside the image " + span.describe());
  }
  // Initializer and finalizer arrays.
  for (auto [table, bytes, what] :
       {std::tuple<uint64_t, uint64_t, const char *>{initArray_, initArraySz_, "DT_INIT_ARRAY"},
        {finiArray_, finiArraySz_, "DT_FINI_ARRAY"}}) {
    if (bytes % 8)
      return fail(llvm::Twine(what) + " size " + hex(bytes) + " is not a multiple of 8");
    if (bytes && !span.contains(table, bytes))
      return fail(llvm::Twine(what) + " (" + hex(bytes) + " bytes at " + hex(table) +
                  ") lies outside the image " + span.describe());
    // Read after the protections are applied.
    if (bytes && !readable_.contains(table, bytes))
      return fail(llvm::Twine(what) + " (" + hex(bytes) + " bytes at " + hex(table) +
                  ") is not in a readable segment");
  }
  return llvm::Error::success();
}

llvm::Expected<uint64_t> ImageLoad::gnuHashSymbolCount() const {
  const ImageSpan &span = *span_;
  auto outside = [&](const llvm::Twine &what) {
    return fail("DT_GNU_HASH (at " + hex(gnuHash_) + ") " + what + " lies outside the image " +
                span.describe());
  };
  if (!span.contains(gnuHash_, 16))
    return outside("header");
  uint64_t nbuckets = span.read<uint32_t>(gnuHash_), symoffset = span.read<uint32_t>(gnuHash_ + 4),
           bloomWords = span.read<uint32_t>(gnuHash_ + 8);
  uint64_t buckets = gnuHash_ + 16 + bloomWords * 8;
  if (!span.contains(gnuHash_ + 16, bloomWords * 8) || !span.contains(buckets, nbuckets * 4))
    return outside("bloom filter or buckets");
  uint64_t last = 0;
  for (uint64_t i = 0; i < nbuckets; ++i)
    last = std::max<uint64_t>(last, span.read<uint32_t>(buckets + i * 4));
  if (last == 0)
    return symoffset; // no hashed symbols
  if (last < symoffset)
    return fail("DT_GNU_HASH bucket names symbol " + llvm::Twine(last) + ", below its first hashed symbol " +
                llvm::Twine(symoffset));
  uint64_t chains = buckets + nbuckets * 4;
  for (uint64_t index = last;; ++index) {
    uint64_t at = chains + (index - symoffset) * 4;
    if (index - symoffset > span.hi() / 4 || !span.contains(at, 4))
      return outside("chain of symbol " + llvm::Twine(last));
    if (span.read<uint32_t>(at) & 1) // the chain's last entry
      return index + 1;
  }
}

llvm::Expected<llvm::StringRef> ImageLoad::string(uint64_t offset, const llvm::Twine &what) const {
  if (offset >= strsz_)
    return fail(what + " name at string offset " + hex(offset) + " lies outside DT_STRTAB (" + hex(strsz_) +
                " bytes)");
  const char *s = span_->ptr(strtab_ + offset);
  size_t len = strnlen(s, strsz_ - offset);
  if (len == strsz_ - offset)
    return fail(what + " name at string offset " + hex(offset) + " is not NUL-terminated inside DT_STRTAB");
  return llvm::StringRef(s, len);
}

llvm::Error ImageLoad::checkEhFrame(uint64_t begin, uint64_t size) const {
  // libgcc walks these records on the first unwind anywhere in the process,
  // trusting their lengths, encodings and CIE pointers: check each one, and
  // that every FDE covers only this image's code.
  const ImageSpan &span = *span_;
  uint64_t end = begin + size;
  auto bad = [&](uint64_t at, const llvm::Twine &why) {
    return fail(".eh_frame record at " + hex(at) + " " + why);
  };
  struct Reader {
    const ImageSpan &span;
    uint64_t at, end;
    bool ok = true;
    uint64_t u(unsigned bytes) {
      if (bytes > end - at) {
        ok = false;
        return 0;
      }
      uint64_t v = 0;
      std::memcpy(&v, span.ptr(at), bytes);
      at += bytes;
      return v;
    }
    uint64_t leb(bool isSigned) {
      uint64_t v = 0;
      unsigned shift = 0;
      for (;;) {
        if (at >= end || shift > 63) {
          ok = false;
          return 0;
        }
        uint8_t b = uint8_t(*span.ptr(at++));
        v |= uint64_t(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) {
          if (isSigned && shift < 64 && (b & 0x40))
            v |= ~uint64_t(0) << shift;
          return v;
        }
      }
    }
    /// An encoded pointer's raw value (application not applied).
    uint64_t encoded(uint8_t enc) {
      switch (enc & 0x0f) {
      case 0x00:
        return u(8);
      case 0x01:
        return leb(false);
      case 0x02:
        return u(2);
      case 0x03:
        return u(4);
      case 0x04:
        return u(8);
      case 0x09:
        return leb(true);
      case 0x0a:
        return uint64_t(int64_t(int16_t(u(2))));
      case 0x0b:
        return uint64_t(int64_t(int32_t(u(4))));
      case 0x0c:
        return u(8);
      }
      ok = false;
      return 0;
    }
  };
  std::map<uint64_t, uint8_t> cieFdeEncoding; // CIE vaddr -> its 'R' encoding
  for (uint64_t at = begin;;) {
    if (end - at < 4)
      return bad(at, "runs past the end of the section (no zero terminator)");
    uint32_t length = span.read<uint32_t>(at);
    if (length == 0)
      return llvm::Error::success();
    if (length == 0xffffffffu)
      return bad(at, "has a 64-bit length, which is not supported");
    if (length < 4 || length > end - at - 4)
      return bad(at, "has length " + hex(length) + ", which does not fit the section");
    uint64_t recordEnd = at + 4 + length;
    Reader rd{span, at + 8, recordEnd};
    uint32_t id = span.read<uint32_t>(at + 4);
    if (id == 0) { // CIE
      uint64_t version = rd.u(1);
      if (version != 1 && version != 3)
        return bad(at, "is a CIE of version " + llvm::Twine(version) + " (1 or 3 expected)");
      uint64_t augBegin = rd.at;
      while (rd.at < recordEnd && *span.ptr(rd.at))
        ++rd.at;
      if (rd.at >= recordEnd)
        return bad(at, "has an unterminated augmentation string");
      llvm::StringRef aug(span.ptr(augBegin), rd.at - augBegin);
      ++rd.at;
      if (!aug.empty() && aug[0] != 'z')
        return bad(at, "has augmentation '" + aug + "', which libgcc cannot unwind safely");
      rd.leb(false);                                  // code alignment
      rd.leb(true);                                   // data alignment
      (void)(version == 1 ? rd.u(1) : rd.leb(false)); // return address register
      uint8_t fdeEncoding = 0;                        // DW_EH_PE_absptr
      if (!aug.empty()) {
        rd.leb(false); // augmentation data length
        for (char c : aug.drop_front()) {
          if (c == 'R' || c == 'L' || c == 'P') {
            uint8_t enc = uint8_t(rd.u(1));
            if (!plainPointerEncoding(enc, /*forFdeAddresses=*/c == 'R'))
              return bad(at, "has pointer encoding " + hex(enc) + " for '" + llvm::Twine(c) + "'");
            if (c == 'R')
              fdeEncoding = enc;
            if (c == 'P' && enc != 0xff)
              rd.encoded(enc);
          } else if (c != 'S') {
            return bad(at, "has unknown augmentation '" + aug + "'");
          }
        }
      }
      if (!rd.ok)
        return bad(at, "is a CIE cut short by its length");
      cieFdeEncoding[at] = fdeEncoding;
    } else { // FDE: id is the distance back to its CIE
      uint64_t cie = at + 4 - id;
      auto it = id <= at + 4 - begin ? cieFdeEncoding.find(cie) : cieFdeEncoding.end();
      if (it == cieFdeEncoding.end())
        return bad(at, "is an FDE whose CIE pointer does not lead to an earlier CIE");
      uint8_t enc = it->second;
      {
        uint64_t field = rd.at;
        uint64_t pcBegin = rd.encoded(enc);
        uint64_t pcRange = rd.encoded(enc & 0x0f);
        if (!rd.ok)
          return bad(at, "is an FDE cut short by its length");
        // libgcc skips FDEs whose raw start is 0 (discarded code).
        if (pcBegin != 0) {
          uint64_t start = (enc & 0x70) == 0x10 ? field + pcBegin : pcBegin - img_->base_;
          if (!executable_.contains(start, pcRange))
            return bad(at, "is an FDE for [" + hex(start) + ", +" + hex(pcRange) +
                               "), which is not code of this image");
        }
      }
    }
    at = recordEnd;
  }
}

llvm::Error ElfImageLoader::validate(llvm::ArrayRef<char> bytes, llvm::StringRef name) {
  // Private anonymous memory for the one image: untouched pages cost nothing,
  // so a plausible but huge span is cheap to check.
  size_t mapped = 0;
  ElfLoadEnvironment env;
  env.allocate = [&mapped](uint64_t size) -> llvm::Expected<uint8_t *> {
    void *p =
        ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "mmap failed");
    mapped = size;
    return static_cast<uint8_t *>(p);
  };
  env.release = [&mapped](uint8_t *base) { ::munmap(base, mapped); };
  auto checked = ImageLoad(name, env, /*checkOnly=*/true).run(bytes);
  if (!checked)
    return checked.takeError();
  return llvm::Error::success();
}

} // namespace ompsim::sim

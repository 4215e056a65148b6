#include "ElfImageLoader.h"

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

extern "C" void __register_frame(void *);
extern "C" void __deregister_frame(void *);

// The image is untrusted input (a fuzzer feeds it): every number it gives is
// an offset, size, index or address that is checked before it is used, all
// reads and writes of loaded memory go through ImageSpan (bounds-checked,
// memcpy so misaligned fields are fine), and nothing is called that does not
// lie in an executable PT_LOAD segment.

namespace ompsim::sim {
namespace {

constexpr uint64_t kPage = 4096;
/// No x86-64 user address is this high; a vaddr above it is corrupt, and sums
/// of two values below it cannot wrap.
constexpr uint64_t kMaxVaddr = 1ull << 47;

uint64_t pageDown(uint64_t x) { return x & ~(kPage - 1); }
uint64_t pageUp(uint64_t x) { return (x + kPage - 1) & ~(kPage - 1); }
std::string hex(uint64_t v) { return "0x" + llvm::utohexstr(v, /*LowerCase=*/true); }

bool skippedNeeded(llvm::StringRef soname) {
  // libomptarget is the host runtime: device code needs nothing from it. The
  // executor already has its own dynamic loader.
  return soname.starts_with("libomptarget.so") || soname.starts_with("ld-linux");
}

using InitFn = void (*)();

/// A PT_LOAD segment's vaddr range and p_flags.
struct Segment {
  uint64_t begin, end;
  uint32_t flags;
};

/// Address ranges [first, second), sorted and merged, for membership tests.
class RangeSet {
public:
  void add(uint64_t begin, uint64_t end) {
    if (begin < end)
      ranges_.emplace_back(begin, end);
  }
  void finish() {
    std::sort(ranges_.begin(), ranges_.end());
    std::vector<std::pair<uint64_t, uint64_t>> merged;
    for (auto r : ranges_)
      if (!merged.empty() && r.first <= merged.back().second)
        merged.back().second = std::max(merged.back().second, r.second);
      else
        merged.push_back(r);
    ranges_ = std::move(merged);
  }
  /// Whether [addr, addr + bytes) lies inside one range (bytes 0 counts as 1).
  bool contains(uint64_t addr, uint64_t bytes = 1) const {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                               [](uint64_t a, const auto &r) { return a < r.first; });
    if (it == ranges_.begin())
      return false;
    --it;
    return addr < it->second && std::max<uint64_t>(bytes, 1) <= it->second - addr;
  }

private:
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;
};

/// The loaded image's memory, addressed by vaddr: [lo, hi) at bias + vaddr.
class ImageSpan {
public:
  ImageSpan(uint64_t bias, uint64_t lo, uint64_t hi) : bias_(bias), lo_(lo), hi_(hi) {}
  /// Whether [vaddr, vaddr + bytes) lies inside the span.
  bool contains(uint64_t vaddr, uint64_t bytes) const {
    return vaddr >= lo_ && vaddr <= hi_ && bytes <= hi_ - vaddr;
  }
  /// Reads a T at vaddr; the caller has checked contains(vaddr, sizeof(T)).
  template <typename T> T read(uint64_t vaddr) const {
    T value;
    std::memcpy(&value, ptr(vaddr), sizeof value);
    return value;
  }
  /// Writes 8 bytes at vaddr; the caller has checked contains(vaddr, 8).
  void write64(uint64_t vaddr, uint64_t value) const { std::memcpy(ptr(vaddr), &value, 8); }
  char *ptr(uint64_t vaddr) const { return reinterpret_cast<char *>(bias_ + vaddr); }
  std::string describe() const { return "[" + hex(lo_) + ", " + hex(hi_) + ")"; }
  uint64_t lo() const { return lo_; }
  uint64_t hi() const { return hi_; }

private:
  uint64_t bias_, lo_, hi_;
};

/// Page protections of [lo, hi): each page gets the union of the flags of the
/// segments that touch it (minus PROT_WRITE inside RELRO, when given); pages no
/// segment touches get PROT_NONE. A sweep over segment edges, so the cost
/// depends on the number of segments, not on their size.
std::vector<std::tuple<uint64_t, uint64_t, int>>
protectionRanges(const std::vector<Segment> &segments, uint64_t lo, uint64_t hi,
                 std::optional<std::pair<uint64_t, uint64_t>> relro) {
  // Event kinds: 0..2 = R/W/X coverage count, 3 = RELRO.
  std::vector<std::tuple<uint64_t, int, int>> events; // address, kind, +1/-1
  for (const Segment &s : segments) {
    uint32_t bits[3] = {PF_R, PF_W, PF_X};
    for (int k = 0; k < 3; ++k)
      if (s.flags & bits[k]) {
        events.emplace_back(pageDown(s.begin), k, +1);
        events.emplace_back(pageUp(s.end), k, -1);
      }
  }
  if (relro && relro->first < relro->second) {
    events.emplace_back(relro->first, 3, +1);
    events.emplace_back(relro->second, 3, -1);
  }
  std::sort(events.begin(), events.end());
  std::vector<std::tuple<uint64_t, uint64_t, int>> out;
  int64_t count[4] = {0, 0, 0, 0};
  auto current = [&] {
    int prot = (count[0] ? PROT_READ : 0) | (count[1] ? PROT_WRITE : 0) | (count[2] ? PROT_EXEC : 0);
    return count[3] ? prot & ~PROT_WRITE : prot;
  };
  auto emit = [&](uint64_t from, uint64_t to, int prot) {
    from = std::max(from, lo);
    to = std::min(to, hi);
    if (from >= to)
      return;
    if (!out.empty() && std::get<1>(out.back()) == from && std::get<2>(out.back()) == prot)
      std::get<1>(out.back()) = to;
    else
      out.emplace_back(from, to, prot);
  };
  uint64_t at = lo;
  for (size_t i = 0; i < events.size();) {
    uint64_t addr = std::get<0>(events[i]);
    emit(at, addr, current());
    at = std::max(at, addr);
    for (; i < events.size() && std::get<0>(events[i]) == addr; ++i)
      count[std::get<1>(events[i])] += std::get<2>(events[i]);
  }
  emit(at, hi, current());
  return out;
}

} // namespace

/// One load in progress: the image's parsed tables and the checks on them.
class ImageLoad {
public:
  /// `checkOnly`: validate without running or registering anything (see
  /// ElfImageLoader::validate); `env` then provides only memory.
  ImageLoad(llvm::StringRef name, const ElfLoadEnvironment &env, bool checkOnly = false)
      : name_(name), env_(env), checkOnly_(checkOnly) {}

  llvm::Expected<std::unique_ptr<LoadedElfImage>> run(llvm::ArrayRef<char> bytes);

private:
  llvm::Error fail(const llvm::Twine &what) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "image " + name_ + ": " + what);
  }
  llvm::Error readProgramHeaders(Elf *elf, uint64_t fileSize);
  llvm::Error readDynamic();
  llvm::Error checkTables(Elf *elf);
  /// The number of dynamic symbols by DT_GNU_HASH: one past the last symbol
  /// of the longest-reaching hash chain (symbols below symoffset are unhashed).
  llvm::Expected<uint64_t> gnuHashSymbolCount() const;
  llvm::Expected<llvm::StringRef> string(uint64_t offset, const llvm::Twine &what) const;
  llvm::Error readSymbols();
  llvm::Expected<uint64_t> symbolValue(uint64_t index, uint64_t reloc, const char *table);
  llvm::Error relocate(uint64_t table, uint64_t bytes, const char *tableName);
  llvm::Error protect(bool withRelro);
  void applyIrelative();
  llvm::Error registerEhFrame(Elf *elf);
  llvm::Error checkEhFrame(uint64_t begin, uint64_t size) const;
  llvm::Error collectInitFini(std::vector<uint64_t> &init);
  bool executable(uint64_t vaddr) const { return executable_.contains(vaddr); }

  llvm::StringRef name_;
  const ElfLoadEnvironment &env_;
  bool checkOnly_ = false;
  std::vector<GElf_Phdr> phdrs_;
  std::vector<Segment> segments_;
  /// Vaddrs of segments with PF_X / PF_W / PF_R: their pages get at least that access.
  RangeSet executable_, writable_, readable_;
  std::optional<GElf_Phdr> dynamicPh_, relroPh_, ehFrameHdrPh_;
  uint64_t lo_ = UINT64_MAX, hi_ = 0;
  std::unique_ptr<LoadedElfImage> img_;
  std::optional<ImageSpan> span_;

  // Dynamic section.
  uint64_t strtab_ = 0, strsz_ = 0, symtab_ = 0, nsyms_ = 0, hash_ = 0, gnuHash_ = 0, versym_ = 0;
  /// Symbol indices a relocation may use: nsyms_, or with only DT_GNU_HASH
  /// (which counts just the hashed, defined symbols) every whole entry
  /// between DT_SYMTAB and the next table the dynamic section names.
  uint64_t symLimit_ = 0;
  std::optional<uint64_t> syment_, relaent_;
  uint64_t rela_ = 0, relasz_ = 0, jmprel_ = 0, pltrelsz_ = 0;
  uint64_t init_ = 0, initArray_ = 0, initArraySz_ = 0, fini_ = 0, finiArray_ = 0, finiArraySz_ = 0;
  bool haveStrsz_ = false;
  std::vector<uint64_t> neededOffsets_;
  /// IRELATIVE relocations (where, resolver vaddr), applied once code is executable.
  std::vector<std::pair<uint64_t, uint64_t>> irelative_;
};

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
    case DT_NEEDED: neededOffsets_.push_back(v); break;
    case DT_STRTAB: strtab_ = v; break;
    case DT_STRSZ: strsz_ = v; haveStrsz_ = true; break;
    case DT_SYMTAB: symtab_ = v; break;
    case DT_SYMENT: syment_ = v; break;
    case DT_HASH: hash_ = v; break;
    case DT_GNU_HASH: gnuHash_ = v; break;
    case DT_VERSYM: versym_ = v; break;
    case DT_RELA: rela_ = v; break;
    case DT_RELASZ: relasz_ = v; break;
    case DT_RELAENT: relaent_ = v; break;
    case DT_JMPREL: jmprel_ = v; break;
    case DT_PLTRELSZ: pltrelsz_ = v; break;
    case DT_INIT: init_ = v; break;
    case DT_INIT_ARRAY: initArray_ = v; break;
    case DT_INIT_ARRAYSZ: initArraySz_ = v; break;
    case DT_FINI: fini_ = v; break;
    case DT_FINI_ARRAY: finiArray_ = v; break;
    case DT_FINI_ARRAYSZ: finiArraySz_ = v; break;
    case DT_PLTREL:
      if (v != DT_RELA)
        return fail("PLT relocations are not RELA");
      break;
    case DT_REL:
      return fail("REL relocations are not used on x86-64");
    default: break;
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
    return fail("DT_GNU_HASH (at " + hex(gnuHash_) + ") " + what + " lies outside the image " + span.describe());
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
    if (s.st_shndx == SHN_ABS) {
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

llvm::Error ImageLoad::protect(bool withRelro) {
  std::optional<std::pair<uint64_t, uint64_t>> relro;
  if (withRelro && relroPh_)
    relro = {pageDown(relroPh_->p_vaddr), pageDown(relroPh_->p_vaddr + relroPh_->p_memsz)};
  for (auto [from, to, prot] : protectionRanges(segments_, lo_, hi_, relro))
    if (::mprotect(span_->ptr(from), to - from, prot) != 0)
      return fail("mprotect of [" + hex(from) + ", " + hex(to) + ") failed: " + std::strerror(errno));
  return llvm::Error::success();
}

void ImageLoad::applyIrelative() {
  for (auto [where, resolver] : irelative_) {
    // Checked in relocate(): the resolver is image code, the target writable.
    uint64_t value = reinterpret_cast<uint64_t (*)()>(img_->base_ + resolver)();
    span_->write64(where, value);
  }
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
      case 0x00: return u(8);
      case 0x01: return leb(false);
      case 0x02: return u(2);
      case 0x03: return u(4);
      case 0x04: return u(8);
      case 0x09: return leb(true);
      case 0x0a: return uint64_t(int64_t(int16_t(u(2))));
      case 0x0b: return uint64_t(int64_t(int32_t(u(4))));
      case 0x0c: return u(8);
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
      rd.leb(false);                         // code alignment
      rd.leb(true);                          // data alignment
      (void)(version == 1 ? rd.u(1) : rd.leb(false)); // return address register
      uint8_t fdeEncoding = 0;               // DW_EH_PE_absptr
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

llvm::Error ImageLoad::registerEhFrame(Elf *elf) {
  size_t shstrndx = 0;
  bool haveSections = elf_getshdrstrndx(elf, &shstrndx) == 0;
  bool found = false;
  for (Elf_Scn *scn = nullptr; haveSections && (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh))
      continue;
    const char *sn = elf_strptr(elf, shstrndx, sh.sh_name);
    if (!sn || llvm::StringRef(sn) != ".eh_frame" || !sh.sh_addr || !sh.sh_size)
      continue;
    if (!span_->contains(sh.sh_addr, sh.sh_size))
      return fail(".eh_frame (" + hex(sh.sh_size) + " bytes at " + hex(sh.sh_addr) +
                  ") lies outside the image " + span_->describe());
    // libgcc reads it for as long as it is registered.
    if (!readable_.contains(sh.sh_addr, sh.sh_size))
      return fail(".eh_frame (" + hex(sh.sh_size) + " bytes at " + hex(sh.sh_addr) +
                  ") is not in a readable segment");
    if (auto err = checkEhFrame(sh.sh_addr, sh.sh_size))
      return err;
    found = true;
    if (img_->ehFrame_ || checkOnly_) // one registration per image; none when only checking
      continue;
    img_->ehFrame_ = span_->ptr(sh.sh_addr);
    __register_frame(img_->ehFrame_);
  }
  if (found || !ehFrameHdrPh_)
    return llvm::Error::success();
  // No .eh_frame section (an image without section headers): find it as the
  // unwinder does, through PT_GNU_EH_FRAME's eh_frame_ptr, and let it run to
  // its zero terminator within its segment.
  uint64_t hdr = ehFrameHdrPh_->p_vaddr;
  if (!span_->contains(hdr, 8) || !readable_.contains(hdr, 8))
    return fail("PT_GNU_EH_FRAME (at " + hex(hdr) + ") lies outside the image's readable segments");
  uint8_t version = span_->read<uint8_t>(hdr), enc = span_->read<uint8_t>(hdr + 1);
  if (version != 1 || enc != 0x1b) // DW_EH_PE_pcrel | DW_EH_PE_sdata4, what linkers write
    return fail("PT_GNU_EH_FRAME (at " + hex(hdr) + ") has version " + llvm::Twine(version) +
                " and eh_frame_ptr encoding " + hex(enc) + " (expected 1 and 0x1b)");
  uint64_t begin = hdr + 4 + uint64_t(int64_t(span_->read<int32_t>(hdr + 4)));
  uint64_t end = 0;
  for (const Segment &seg : segments_)
    if ((seg.flags & PF_R) && seg.begin <= begin && begin < seg.end)
      end = seg.end;
  if (!end || !span_->contains(begin, end - begin))
    return fail(".eh_frame at " + hex(begin) + " (from PT_GNU_EH_FRAME) is not in a readable segment");
  if (auto err = checkEhFrame(begin, end - begin))
    return err;
  if (!checkOnly_) {
    img_->ehFrame_ = span_->ptr(begin);
    __register_frame(img_->ehFrame_);
  }
  return llvm::Error::success();
}

llvm::Error ImageLoad::collectInitFini(std::vector<uint64_t> &init) {
  // Everything is checked before the first initializer runs, so a bad entry
  // fails the load without having run any image code.
  uint64_t B = img_->base_;
  // Named by vaddr (address - base), as in the file.
  auto check = [&](uint64_t address, const llvm::Twine &what) -> llvm::Error {
    if (!executable(address - B))
      return fail(what + " " + hex(address - B) + " is not in an executable segment");
    return llvm::Error::success();
  };
  // An array slot of 0 or -1 is an empty placeholder, as in glibc.
  auto entries = [&](uint64_t table, uint64_t bytes, const char *what,
                     std::vector<uint64_t> &out) -> llvm::Error {
    for (uint64_t i = 0; i < bytes / 8; ++i) {
      uint64_t fn = span_->read<uint64_t>(table + i * 8);
      if (fn == 0 || fn == UINT64_MAX)
        continue;
      if (auto err = check(fn, llvm::Twine(what) + " entry " + llvm::Twine(i) + " at"))
        return err;
      out.push_back(fn);
    }
    return llvm::Error::success();
  };
  if (init_) {
    if (auto err = check(B + init_, "DT_INIT function at"))
      return err;
    init.push_back(B + init_);
  }
  if (auto err = entries(initArray_, initArraySz_, "DT_INIT_ARRAY", init))
    return err;
  std::vector<uint64_t> finiArray;
  if (auto err = entries(finiArray_, finiArraySz_, "DT_FINI_ARRAY", finiArray))
    return err;
  img_->fini_.assign(finiArray.rbegin(), finiArray.rend());
  if (fini_) {
    if (auto err = check(B + fini_, "DT_FINI function at"))
      return err;
    img_->fini_.push_back(B + fini_);
  }
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<LoadedElfImage>> ImageLoad::run(llvm::ArrayRef<char> bytes) {
  elf_version(EV_CURRENT);
  // libelf wants a mutable buffer; it must not see later changes of the caller's.
  std::vector<char> copy(bytes.begin(), bytes.end());
  Elf *elf = elf_memory(copy.data(), copy.size());
  if (!elf)
    return fail(llvm::Twine("not an ELF file: ") + elf_errmsg(-1));
  llvm::scope_exit closeElf([&] { elf_end(elf); });

  GElf_Ehdr eh;
  if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
    return fail("not an ELF file");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64)
    return fail("not an x86-64 ELF64 object");
  if (eh.e_type != ET_DYN)
    return fail("not a shared object (ET_DYN)");
  // libelf reads program headers at their own size whatever the header says;
  // the dynamic linker refuses any other entry size, and so does the loader.
  if (eh.e_phnum && eh.e_phentsize != sizeof(Elf64_Phdr))
    return fail("e_phentsize is " + llvm::Twine(eh.e_phentsize) + ", not " + llvm::Twine(sizeof(Elf64_Phdr)));
  if (auto err = readProgramHeaders(elf, copy.size()))
    return std::move(err);

  img_.reset(new LoadedElfImage());
  img_->name_ = name_.str();
  img_->size_ = hi_ - lo_;
  auto mem = env_.allocate(img_->size_);
  if (!mem)
    return fail("cannot allocate " + llvm::Twine(img_->size_) + " bytes of device memory: " +
                llvm::toString(mem.takeError()));
  // From here on img_'s destructor gives the memory back, on every error path.
  // Bias: vaddr v lives at base + v. The lowest segment starts at base + lo.
  img_->start_ = *mem;
  img_->base_ = reinterpret_cast<uint64_t>(*mem) - lo_;
  img_->release_ = env_.release;
  span_.emplace(img_->base_, lo_, hi_);
  if (!checkOnly_) // the checker's memory is fresh anonymous memory, zero already
    std::memset(*mem, 0, img_->size_);
  for (const GElf_Phdr &ph : phdrs_)
    if (ph.p_type == PT_LOAD && ph.p_filesz)
      std::memcpy(span_->ptr(ph.p_vaddr), copy.data() + ph.p_offset, ph.p_filesz);

  if (auto err = readDynamic())
    return std::move(err);
  if (auto err = checkTables(elf))
    return std::move(err);

  for (uint64_t off : neededOffsets_) {
    auto so = string(off, "DT_NEEDED");
    if (!so)
      return so.takeError();
    img_->needed_.push_back(so->str());
    if (skippedNeeded(*so) || checkOnly_)
      continue;
    if (auto err = env_.loadNeeded(*so))
      return fail("needed library " + *so + ": " + llvm::toString(std::move(err)));
  }
  if (auto err = readSymbols())
    return std::move(err);
  if (auto err = relocate(rela_, relasz_, "DT_RELA"))
    return std::move(err);
  if (auto err = relocate(jmprel_, pltrelsz_, "DT_JMPREL"))
    return std::move(err);

  if (checkOnly_) {
    // Everything that reads the image is checked; nothing of it runs.
    if (auto err = registerEhFrame(elf))
      return std::move(err);
    std::vector<uint64_t> init;
    if (auto err = collectInitFini(init))
      return std::move(err);
    return std::move(img_);
  }
  // IRELATIVE resolvers are image code: they run once the segments have their
  // protections, and before RELRO makes their targets read-only.
  if (!irelative_.empty()) {
    if (auto err = protect(/*withRelro=*/false))
      return std::move(err);
    applyIrelative();
  }
  if (auto err = protect(/*withRelro=*/true))
    return std::move(err);

  // Unwind info, so C++ exceptions thrown in device code can unwind.
  if (auto err = registerEhFrame(elf))
    return std::move(err);

  std::vector<uint64_t> init;
  if (auto err = collectInitFini(init))
    return std::move(err);
  for (uint64_t fn : init)
    reinterpret_cast<InitFn>(fn)();
  return std::move(img_);
}

std::string ElfImageLoader::relocationName(uint32_t type) {
  switch (type) {
#define OMPSIM_RELOC(n) case R_X86_64_##n: return "R_X86_64_" #n;
    OMPSIM_RELOC(NONE) OMPSIM_RELOC(64) OMPSIM_RELOC(PC32) OMPSIM_RELOC(GOT32)
    OMPSIM_RELOC(PLT32) OMPSIM_RELOC(COPY) OMPSIM_RELOC(GLOB_DAT) OMPSIM_RELOC(JUMP_SLOT)
    OMPSIM_RELOC(RELATIVE) OMPSIM_RELOC(GOTPCREL) OMPSIM_RELOC(32) OMPSIM_RELOC(32S)
    OMPSIM_RELOC(16) OMPSIM_RELOC(PC16) OMPSIM_RELOC(8) OMPSIM_RELOC(PC8)
    OMPSIM_RELOC(DTPMOD64) OMPSIM_RELOC(DTPOFF64) OMPSIM_RELOC(TPOFF64) OMPSIM_RELOC(TLSGD)
    OMPSIM_RELOC(TLSLD) OMPSIM_RELOC(DTPOFF32) OMPSIM_RELOC(GOTTPOFF) OMPSIM_RELOC(TPOFF32)
    OMPSIM_RELOC(PC64) OMPSIM_RELOC(GOTOFF64) OMPSIM_RELOC(GOTPC32) OMPSIM_RELOC(SIZE32)
    OMPSIM_RELOC(SIZE64) OMPSIM_RELOC(IRELATIVE)
#undef OMPSIM_RELOC
  default:
    return "relocation type " + std::to_string(type);
  }
}

LoadedElfImage::~LoadedElfImage() {
  if (ehFrame_)
    __deregister_frame(ehFrame_);
  if (release_ && start_) {
    // Leave the pages writable and clean for the next image that gets them.
    ::mprotect(start_, size_, PROT_READ | PROT_WRITE);
    release_(start_);
  }
}

uint64_t LoadedElfImage::lookup(llvm::StringRef symbol) const {
  auto it = symbols_.find(symbol);
  return it == symbols_.end() ? 0 : it->second;
}

void LoadedElfImage::runFini() {
  if (finiDone_)
    return;
  finiDone_ = true;
  for (uint64_t fn : fini_)
    reinterpret_cast<InitFn>(fn)();
}

llvm::Expected<std::unique_ptr<LoadedElfImage>>
ElfImageLoader::load(llvm::ArrayRef<char> bytes, llvm::StringRef name, const ElfLoadEnvironment &env) {
  return ImageLoad(name, env).run(bytes);
}

llvm::Error ElfImageLoader::validate(llvm::ArrayRef<char> bytes, llvm::StringRef name) {
  // Private anonymous memory for the one image: untouched pages cost nothing,
  // so a plausible but huge span is cheap to check.
  size_t mapped = 0;
  ElfLoadEnvironment env;
  env.allocate = [&mapped](uint64_t size) -> llvm::Expected<uint8_t *> {
    void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
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

#include "ElfImageLoader.h"
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

extern "C" void __register_frame(void *);
extern "C" void __deregister_frame(void *);

namespace ompsim::sim {
namespace {

bool skippedNeeded(llvm::StringRef soname) {
  // libomptarget is the host runtime: device code needs nothing from it. The
  // executor already has its own dynamic loader.
  return soname.starts_with("libomptarget.so") || soname.starts_with("ld-linux");
}

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

llvm::Error ImageLoad::protect(bool withRelro) {
  std::optional<std::pair<uint64_t, uint64_t>> relro;
  if (withRelro && relroPh_)
    relro = {pageDown(relroPh_->p_vaddr), pageDown(relroPh_->p_vaddr + relroPh_->p_memsz)};
  for (auto [from, to, prot] : protectionRanges(segments_, lo_, hi_, relro))
    if (::mprotect(span_->ptr(from), to - from, prot) != 0)
      return fail("mprotect of [" + hex(from) + ", " + hex(to) + ") failed: " + std::strerror(errno));
  return llvm::Error::success();
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

llvm::Expected<std::unique_ptr<LoadedElfImage>> ImageLoad::run(llvm::ArrayRef<char> bytes, bool inPlace) {
  elf_version(EV_CURRENT);
  // libelf wants a mutable buffer; it must not see later changes of the caller's.
  std::vector<char> owned;
  if (!inPlace)
    owned.assign(bytes.begin(), bytes.end());
  // In place, the buffer is the caller's to give away for the call (libelf
  // wants a mutable one).
  llvm::MutableArrayRef<char> copy(inPlace ? const_cast<char *>(bytes.data()) : owned.data(), bytes.size());
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
    return fail("cannot allocate " + llvm::Twine(img_->size_) +
                " bytes of device memory: " + llvm::toString(mem.takeError()));
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

llvm::Expected<std::unique_ptr<LoadedElfImage>> ElfImageLoader::load(llvm::ArrayRef<char> bytes,
                                                                     llvm::StringRef name,
                                                                     const ElfLoadEnvironment &env,
                                                                     bool exclusive) {
  return ImageLoad(name, env).run(bytes, exclusive);
}

} // namespace ompsim::sim

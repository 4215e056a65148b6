#include "elf_image_loader.hpp"

#include "llvm/ADT/ScopeExit.h"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

extern "C" void __register_frame(void *);
extern "C" void __deregister_frame(void *);

namespace ompsim::sim {
namespace {

constexpr uint64_t kPage = 4096;

uint64_t pageDown(uint64_t x) { return x & ~(kPage - 1); }
uint64_t pageUp(uint64_t x) { return (x + kPage - 1) & ~(kPage - 1); }

llvm::Error fail(llvm::StringRef image, const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "image " + image + ": " + what);
}

bool skippedNeeded(llvm::StringRef soname) {
  // libomptarget is the host runtime: device code needs nothing from it. The
  // executor already has its own dynamic loader.
  return soname.starts_with("libomptarget.so") || soname.starts_with("ld-linux");
}

using InitFn = void (*)();

} // namespace

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
  if (release_ && base_) {
    // Leave the pages writable and clean for the next image that gets them.
    ::mprotect(reinterpret_cast<void *>(base_), size_, PROT_READ | PROT_WRITE);
    release_(reinterpret_cast<uint8_t *>(base_));
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
ElfImageLoader::load(llvm::ArrayRef<char> bytes, llvm::StringRef name,
                     const ElfLoadEnvironment &env) {
  elf_version(EV_CURRENT);
  // libelf wants a mutable buffer; it must not see later changes of the caller's.
  std::vector<char> copy(bytes.begin(), bytes.end());
  Elf *elf = elf_memory(copy.data(), copy.size());
  if (!elf)
    return fail(name, llvm::Twine("not an ELF file: ") + elf_errmsg(-1));
  llvm::scope_exit closeElf([&] { elf_end(elf); });

  GElf_Ehdr eh;
  if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
    return fail(name, "not an ELF file");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64)
    return fail(name, "not an x86-64 ELF64 object");
  if (eh.e_type != ET_DYN)
    return fail(name, "not a shared object (ET_DYN)");

  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0 || phnum == 0)
    return fail(name, "no program headers");
  std::vector<GElf_Phdr> phdrs(phnum);
  uint64_t lo = UINT64_MAX, hi = 0;
  const GElf_Phdr *dynamicPh = nullptr, *relroPh = nullptr;
  for (size_t i = 0; i < phnum; ++i) {
    if (!gelf_getphdr(elf, int(i), &phdrs[i]))
      return fail(name, "unreadable program header " + llvm::Twine(i));
    const GElf_Phdr &ph = phdrs[i];
    if (ph.p_type == PT_LOAD) {
      if (ph.p_offset + ph.p_filesz > copy.size() || ph.p_filesz > ph.p_memsz)
        return fail(name, "PT_LOAD segment " + llvm::Twine(i) + " lies outside the file");
      lo = std::min(lo, pageDown(ph.p_vaddr));
      hi = std::max(hi, pageUp(ph.p_vaddr + ph.p_memsz));
    } else if (ph.p_type == PT_DYNAMIC) {
      dynamicPh = &ph;
    } else if (ph.p_type == PT_GNU_RELRO) {
      relroPh = &ph;
    } else if (ph.p_type == PT_TLS && ph.p_memsz) {
      return fail(name, "thread-local storage (PT_TLS) is not supported in device images");
    }
  }
  if (lo == UINT64_MAX)
    return fail(name, "no PT_LOAD segments");
  if (!dynamicPh)
    return fail(name, "no PT_DYNAMIC segment");

  std::unique_ptr<LoadedElfImage> img(new LoadedElfImage());
  img->name_ = name.str();
  img->size_ = hi - lo;
  auto mem = env.allocate(img->size_);
  if (!mem)
    return fail(name, "cannot allocate " + llvm::Twine(img->size_) + " bytes of device memory: " +
                          llvm::toString(mem.takeError()));
  // Bias: vaddr v lives at base + v. The lowest segment starts at base + lo.
  img->base_ = reinterpret_cast<uint64_t>(*mem) - lo;
  img->release_ = [rel = env.release, start = *mem](uint8_t *) { rel(start); };
  uint64_t B = img->base_;
  std::memset(*mem, 0, img->size_);
  for (const GElf_Phdr &ph : phdrs)
    if (ph.p_type == PT_LOAD)
      std::memcpy(reinterpret_cast<void *>(B + ph.p_vaddr), copy.data() + ph.p_offset, ph.p_filesz);

  // Dynamic section as loaded.
  auto *dyn = reinterpret_cast<const Elf64_Dyn *>(B + dynamicPh->p_vaddr);
  size_t ndyn = dynamicPh->p_memsz / sizeof(Elf64_Dyn);
  uint64_t strtab = 0, symtab = 0, rela = 0, relasz = 0, jmprel = 0, pltrelsz = 0;
  uint64_t init = 0, initArray = 0, initArraySz = 0, fini = 0, finiArray = 0, finiArraySz = 0;
  std::vector<uint64_t> neededOffsets;
  for (size_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; ++i) {
    uint64_t v = dyn[i].d_un.d_val;
    switch (dyn[i].d_tag) {
    case DT_NEEDED: neededOffsets.push_back(v); break;
    case DT_STRTAB: strtab = v; break;
    case DT_SYMTAB: symtab = v; break;
    case DT_RELA: rela = v; break;
    case DT_RELASZ: relasz = v; break;
    case DT_JMPREL: jmprel = v; break;
    case DT_PLTRELSZ: pltrelsz = v; break;
    case DT_INIT: init = v; break;
    case DT_INIT_ARRAY: initArray = v; break;
    case DT_INIT_ARRAYSZ: initArraySz = v; break;
    case DT_FINI: fini = v; break;
    case DT_FINI_ARRAY: finiArray = v; break;
    case DT_FINI_ARRAYSZ: finiArraySz = v; break;
    case DT_PLTREL:
      if (v != DT_RELA)
        return fail(name, "PLT relocations are not RELA");
      break;
    case DT_REL:
      return fail(name, "REL relocations are not used on x86-64");
    default: break;
    }
  }
  if (!strtab || !symtab)
    return fail(name, "dynamic section lacks DT_STRTAB or DT_SYMTAB");
  auto str = [&](uint64_t off) { return llvm::StringRef(reinterpret_cast<const char *>(B + strtab + off)); };
  auto *syms = reinterpret_cast<const Elf64_Sym *>(B + symtab);

  for (uint64_t off : neededOffsets) {
    llvm::StringRef so = str(off);
    img->needed_.push_back(so.str());
    if (skippedNeeded(so))
      continue;
    if (auto err = env.loadNeeded(so))
      return fail(name, "needed library " + so + ": " + llvm::toString(std::move(err)));
  }

  // Defined dynamic symbols, from the section table (the symbol count is not
  // in the dynamic section).
  for (Elf_Scn *scn = nullptr; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh))
      continue;
    if (sh.sh_type == SHT_DYNSYM && sh.sh_entsize) {
      for (uint64_t i = 1; i < sh.sh_size / sh.sh_entsize; ++i) {
        const Elf64_Sym &s = syms[i];
        if (s.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s.st_info) == STT_TLS)
          continue;
        img->symbols_[str(s.st_name)] = s.st_shndx == SHN_ABS ? s.st_value : B + s.st_value;
      }
    }
  }

  auto symbolValue = [&](uint32_t index) -> llvm::Expected<uint64_t> {
    const Elf64_Sym &s = syms[index];
    llvm::StringRef sname = str(s.st_name);
    if (s.st_shndx != SHN_UNDEF)
      return s.st_shndx == SHN_ABS ? s.st_value : B + s.st_value;
    if (void *p = env.resolve(sname))
      return reinterpret_cast<uint64_t>(p);
    if (ELF64_ST_BIND(s.st_info) == STB_WEAK)
      return 0;
    return fail(name, "undefined symbol '" + sname + "'");
  };

  auto applyRelocations = [&](uint64_t table, uint64_t bytes) -> llvm::Error {
    auto *r = reinterpret_cast<const Elf64_Rela *>(B + table);
    for (uint64_t i = 0; i < bytes / sizeof(Elf64_Rela); ++i) {
      uint32_t type = ELF64_R_TYPE(r[i].r_info), symIndex = ELF64_R_SYM(r[i].r_info);
      if (r[i].r_offset >= hi || r[i].r_offset < lo)
        return fail(name, "relocation at 0x" + llvm::Twine::utohexstr(r[i].r_offset) +
                              " lies outside the image");
      auto *where = reinterpret_cast<uint64_t *>(B + r[i].r_offset);
      int64_t A = r[i].r_addend;
      switch (type) {
      case R_X86_64_NONE:
        break;
      case R_X86_64_RELATIVE:
        *where = B + A;
        break;
      case R_X86_64_IRELATIVE:
        *where = reinterpret_cast<uint64_t (*)()>(B + A)();
        break;
      case R_X86_64_64:
      case R_X86_64_GLOB_DAT:
      case R_X86_64_JUMP_SLOT: {
        auto S = symbolValue(symIndex);
        if (!S)
          return S.takeError();
        *where = (type == R_X86_64_64 && *S) ? *S + A : *S;
        break;
      }
      default:
        return fail(name, "unsupported relocation " + relocationName(type) + " at offset 0x" +
                              llvm::Twine::utohexstr(r[i].r_offset));
      }
    }
    return llvm::Error::success();
  };
  if (auto err = applyRelocations(rela, relasz))
    return std::move(err);
  if (auto err = applyRelocations(jmprel, pltrelsz))
    return std::move(err);

  // Protections: a page shared by two segments gets the union of their flags.
  std::map<uint64_t, int> pageProt;
  for (const GElf_Phdr &ph : phdrs) {
    if (ph.p_type != PT_LOAD)
      continue;
    int prot = ((ph.p_flags & PF_R) ? PROT_READ : 0) | ((ph.p_flags & PF_W) ? PROT_WRITE : 0) |
               ((ph.p_flags & PF_X) ? PROT_EXEC : 0);
    for (uint64_t p = pageDown(ph.p_vaddr); p < pageUp(ph.p_vaddr + ph.p_memsz); p += kPage)
      pageProt[p] |= prot;
  }
  if (relroPh)
    for (uint64_t p = pageDown(relroPh->p_vaddr); p < pageDown(relroPh->p_vaddr + relroPh->p_memsz);
         p += kPage)
      pageProt[p] &= ~PROT_WRITE;
  for (uint64_t p = lo; p < hi; p += kPage) {
    auto it = pageProt.find(p);
    int prot = it == pageProt.end() ? PROT_NONE : it->second;
    if (::mprotect(reinterpret_cast<void *>(B + p), kPage, prot) != 0)
      return fail(name, "mprotect failed: " + llvm::Twine(std::strerror(errno)));
  }

  // Unwind info, so C++ exceptions thrown in device code can unwind.
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) == 0)
    for (Elf_Scn *scn = nullptr; (scn = elf_nextscn(elf, scn));) {
      GElf_Shdr sh;
      if (!gelf_getshdr(scn, &sh))
        continue;
      const char *sn = elf_strptr(elf, shstrndx, sh.sh_name);
      if (sn && llvm::StringRef(sn) == ".eh_frame" && sh.sh_addr && sh.sh_size) {
        img->ehFrame_ = reinterpret_cast<void *>(B + sh.sh_addr);
        __register_frame(img->ehFrame_);
      }
    }

  // Fini order is recorded before init runs so a partial init still unwinds.
  for (uint64_t i = finiArraySz / 8; i-- > 0;) {
    uint64_t fn = reinterpret_cast<uint64_t *>(B + finiArray)[i];
    if (fn && fn != UINT64_MAX)
      img->fini_.push_back(fn);
  }
  if (fini)
    img->fini_.push_back(B + fini);
  if (init)
    reinterpret_cast<InitFn>(B + init)();
  for (uint64_t i = 0; i < initArraySz / 8; ++i) {
    uint64_t fn = reinterpret_cast<uint64_t *>(B + initArray)[i];
    if (fn && fn != UINT64_MAX)
      reinterpret_cast<InitFn>(fn)();
  }
  return std::move(img);
}

} // namespace ompsim::sim

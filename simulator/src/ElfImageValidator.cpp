//===- ElfImageValidator.cpp - Checks on an untrusted ELF image -------------===//
//
// ImageLoad's validation: program headers, the dynamic section, the symbol,
// string and hash tables, and ElfImageLoader::validate. The .eh_frame
// records are checked in ElfEhFrameValidator.cpp.
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
#include <optional>
#include <tuple>

namespace ompsim::sim {

llvm::Error ImageLoad::readProgramHeaders(Elf *Elf, uint64_t FileSize) {
  size_t Phnum = 0;
  if (elf_getphdrnum(Elf, &Phnum) != 0 || Phnum == 0)
    return fail("no program headers");
  Phdrs.resize(Phnum);
  for (size_t I = 0; I < Phnum; ++I) {
    if (!gelf_getphdr(Elf, int(I), &Phdrs[I]))
      return fail("unreadable program header " + llvm::Twine(I));
    const GElf_Phdr &Ph = Phdrs[I];
    if (Ph.p_type == PT_LOAD) {
      if (Ph.p_offset > FileSize || Ph.p_filesz > FileSize - Ph.p_offset)
        return fail("PT_LOAD segment " + llvm::Twine(I) + " lies outside the file");
      if (Ph.p_filesz > Ph.p_memsz)
        return fail("PT_LOAD segment " + llvm::Twine(I) + " has more file bytes (" + hex(Ph.p_filesz) +
                    ") than memory bytes (" + hex(Ph.p_memsz) + ")");
      if (Ph.p_vaddr >= kMaxVaddr || Ph.p_memsz > ElfImageLoader::kMaxImageSpan)
        return fail("PT_LOAD segment " + llvm::Twine(I) + " (" + hex(Ph.p_memsz) + " bytes at " +
                    hex(Ph.p_vaddr) + ") is not a plausible device image segment (at most " +
                    hex(ElfImageLoader::kMaxImageSpan) + " bytes below " + hex(kMaxVaddr) + ")");
      if (Ph.p_memsz == 0)
        continue;
      Segments.push_back({Ph.p_vaddr, Ph.p_vaddr + Ph.p_memsz, Ph.p_flags});
      if (Ph.p_flags & PF_X)
        Executable.add(Ph.p_vaddr, Ph.p_vaddr + Ph.p_memsz);
      if (Ph.p_flags & PF_W)
        Writable.add(Ph.p_vaddr, Ph.p_vaddr + Ph.p_memsz);
      if (Ph.p_flags & PF_R)
        Readable.add(Ph.p_vaddr, Ph.p_vaddr + Ph.p_memsz);
      Lo = std::min(Lo, pageDown(Ph.p_vaddr));
      Hi = std::max(Hi, pageUp(Ph.p_vaddr + Ph.p_memsz));
    } else if (Ph.p_type == PT_DYNAMIC) {
      if (!DynamicPh)
        DynamicPh = Ph;
    } else if (Ph.p_type == PT_GNU_RELRO) {
      RelroPh = Ph;
    } else if (Ph.p_type == PT_GNU_EH_FRAME) {
      EhFrameHdrPh = Ph;
    } else if (Ph.p_type == PT_TLS && Ph.p_memsz) {
      return fail("thread-local storage (PT_TLS) is not supported in device images");
    }
  }
  Executable.finish();
  Writable.finish();
  Readable.finish();
  if (Segments.empty())
    return fail("no PT_LOAD segments");
  if (Hi - Lo > ElfImageLoader::kMaxImageSpan)
    return fail("PT_LOAD segments span " + hex(Hi - Lo) + " bytes ([" + hex(Lo) + ", " + hex(Hi) +
                ")), more than the loader's limit of " + hex(ElfImageLoader::kMaxImageSpan));
  if (!DynamicPh)
    return fail("no PT_DYNAMIC segment");
  if (RelroPh && !ImageSpan(0, Lo, Hi).contains(RelroPh->p_vaddr, RelroPh->p_memsz))
    return fail("PT_GNU_RELRO segment (" + hex(RelroPh->p_memsz) + " bytes at " + hex(RelroPh->p_vaddr) +
                ") lies outside the image [" + hex(Lo) + ", " + hex(Hi) + ")");
  if (RelroPh && RelroPh->p_memsz) {
    // RELRO is data made read-only once relocated: the dynamic linker turns
    // its pages (rounded down at both ends) to PROT_READ alone, so a range
    // over code takes execute permission from it.
    std::string Relro =
        "PT_GNU_RELRO segment (" + hex(RelroPh->p_memsz) + " bytes at " + hex(RelroPh->p_vaddr) + ")";
    uint64_t From = pageDown(RelroPh->p_vaddr), To = pageDown(RelroPh->p_vaddr + RelroPh->p_memsz);
    for (size_t I = 0; I < Phdrs.size(); ++I) {
      const GElf_Phdr &Ph = Phdrs[I];
      if (Ph.p_type == PT_LOAD && (Ph.p_flags & PF_X) && Ph.p_memsz && pageDown(Ph.p_vaddr) < To &&
          From < pageUp(Ph.p_vaddr + Ph.p_memsz))
        return fail(Relro + " makes the code of PT_LOAD segment " + llvm::Twine(I) + " read-only");
    }
  }
  return llvm::Error::success();
}

llvm::Error ImageLoad::readDynamic() {
  const ImageSpan &LoadedSpan = *Span;
  if (!LoadedSpan.contains(DynamicPh->p_vaddr, DynamicPh->p_memsz))
    return fail("PT_DYNAMIC segment (" + hex(DynamicPh->p_memsz) + " bytes at " + hex(DynamicPh->p_vaddr) +
                ") lies outside the loaded image " + LoadedSpan.describe());
  // glibc's dynamic linker relocates the entries of a PT_DYNAMIC marked
  // writable in place: its PT_LOAD segment must be writable too.
  if ((DynamicPh->p_flags & PF_W) && !Writable.contains(DynamicPh->p_vaddr, DynamicPh->p_memsz))
    return fail("PT_DYNAMIC segment (" + hex(DynamicPh->p_memsz) + " bytes at " + hex(DynamicPh->p_vaddr) +
                ") is marked writable, but the PT_LOAD segment that holds it is read-only");
  uint64_t Ndyn = DynamicPh->p_memsz / sizeof(Elf64_Dyn);
  bool Terminated = false;
  for (uint64_t I = 0; I < Ndyn; ++I) {
    auto D = LoadedSpan.read<Elf64_Dyn>(DynamicPh->p_vaddr + I * sizeof(Elf64_Dyn));
    uint64_t V = D.d_un.d_val;
    if (D.d_tag == DT_NULL) {
      Terminated = true;
      break;
    }
    switch (D.d_tag) {
    case DT_NEEDED:
      NeededOffsets.push_back(V);
      break;
    case DT_STRTAB:
      Strtab = V;
      break;
    case DT_STRSZ:
      Strsz = V;
      HaveStrsz = true;
      break;
    case DT_SYMTAB:
      Symtab = V;
      break;
    case DT_SYMENT:
      Syment = V;
      break;
    case DT_HASH:
      Hash = V;
      break;
    case DT_GNU_HASH:
      GnuHash = V;
      break;
    case DT_VERSYM:
      Versym = V;
      break;
    case DT_VERNEED:
      Verneed = V;
      break;
    case DT_VERNEEDNUM:
      Verneednum = V;
      break;
    case DT_VERDEF:
      Verdef = V;
      break;
    case DT_VERDEFNUM:
      Verdefnum = V;
      break;
    case DT_TEXTREL:
      TextRel = true;
      break;
    case DT_FLAGS:
      TextRel |= (V & DF_TEXTREL) != 0;
      break;
    case DT_RELA:
      Rela = V;
      break;
    case DT_RELASZ:
      Relasz = V;
      break;
    case DT_RELAENT:
      Relaent = V;
      break;
    case DT_JMPREL:
      Jmprel = V;
      break;
    case DT_PLTRELSZ:
      Pltrelsz = V;
      break;
    case DT_INIT:
      Init = V;
      break;
    case DT_INIT_ARRAY:
      InitArray = V;
      break;
    case DT_INIT_ARRAYSZ:
      InitArraySz = V;
      break;
    case DT_FINI:
      Fini = V;
      break;
    case DT_FINI_ARRAY:
      FiniArray = V;
      break;
    case DT_FINI_ARRAYSZ:
      FiniArraySz = V;
      break;
    case DT_PLTREL:
      if (V != DT_RELA)
        return fail("PLT relocations are not RELA");
      break;
    case DT_REL:
      return fail("REL relocations are not used on x86-64");
    default:
      break;
    }
  }
  if (!Terminated)
    return fail("the dynamic section has no DT_NULL terminator");
  if (!Strtab || !Symtab)
    return fail("dynamic section lacks DT_STRTAB or DT_SYMTAB");
  return llvm::Error::success();
}

llvm::Error ImageLoad::checkTables(Elf *Elf) {
  const ImageSpan &LoadedSpan = *Span;
  // Strings: without DT_STRSZ the table runs to the end of the image.
  if (!HaveStrsz)
    Strsz = Strtab < LoadedSpan.hi() ? LoadedSpan.hi() - Strtab : 0;
  if (!LoadedSpan.contains(Strtab, Strsz))
    return fail("DT_STRTAB (" + hex(Strsz) + " bytes at " + hex(Strtab) + ") lies outside the image " +
                LoadedSpan.describe());
  // Symbols: the count is not in the dynamic section. Like the dynamic
  // linker, take it from the hash tables the dynamic section points to, so
  // an image without section headers (or with corrupt ones) loads; only an
  // image with neither table falls back to the SHT_DYNSYM section.
  if (Syment && *Syment != sizeof(Elf64_Sym))
    return fail("DT_SYMENT is " + llvm::Twine(*Syment) + ", not " + llvm::Twine(sizeof(Elf64_Sym)));
  if (Hash) {
    if (!LoadedSpan.contains(Hash, 8))
      return fail("DT_HASH at " + hex(Hash) + " lies outside the image " + LoadedSpan.describe());
    Nsyms = LoadedSpan.read<uint32_t>(Hash + 4); // nchain: one chain entry per symbol
  } else if (GnuHash) {
    auto Count = gnuHashSymbolCount();
    if (!Count)
      return Count.takeError();
    Nsyms = *Count;
    uint64_t Next = LoadedSpan.hi();
    for (uint64_t T : {Strtab, Versym, GnuHash, Rela, Jmprel, InitArray, FiniArray})
      if (T > Symtab && T < Next)
        Next = T;
    SymLimit = std::max(Nsyms, (Next - std::min(Next, Symtab)) / sizeof(Elf64_Sym));
  } else if (Elf) {
    std::optional<GElf_Shdr> Dynsym;
    for (Elf_Scn *Scn = nullptr; (Scn = elf_nextscn(Elf, Scn));) {
      GElf_Shdr Sh;
      if (gelf_getshdr(Scn, &Sh) && Sh.sh_type == SHT_DYNSYM && (!Dynsym || Sh.sh_addr == Symtab))
        Dynsym = Sh;
    }
    if (Dynsym) {
      if (Dynsym->sh_entsize != sizeof(Elf64_Sym))
        return fail("the .dynsym section's entry size is " + llvm::Twine(Dynsym->sh_entsize) + ", not " +
                    llvm::Twine(sizeof(Elf64_Sym)));
      Nsyms = Dynsym->sh_size / sizeof(Elf64_Sym);
    }
  }
  SymLimit = std::max(SymLimit, Nsyms);
  if (Nsyms > LoadedSpan.hi() / sizeof(Elf64_Sym) || !LoadedSpan.contains(Symtab, Nsyms * sizeof(Elf64_Sym)))
    return fail("DT_SYMTAB (" + llvm::Twine(Nsyms) + " symbols at " + hex(Symtab) +
                ") lies outside the image " + LoadedSpan.describe());
  // Relocation tables.
  if (Relaent && *Relaent != sizeof(Elf64_Rela))
    return fail("DT_RELAENT is " + llvm::Twine(*Relaent) + ", not " + llvm::Twine(sizeof(Elf64_Rela)));
  for (auto [table, bytes, what] : {std::tuple<uint64_t, uint64_t, const char *>{Rela, Relasz, "DT_RELA"},
                                    {Jmprel, Pltrelsz, "DT_JMPREL"}}) {
    if (bytes % sizeof(Elf64_Rela))
      return fail(llvm::Twine(what) + " table size " + hex(bytes) + " is not a whole number of " +
                  llvm::Twine(sizeof(Elf64_Rela)) + "-byte entries");
    if (bytes && !LoadedSpan.contains(table, bytes))
      return fail(llvm::Twine(what) + " table (" + hex(bytes) + " bytes at " + hex(table) +
                  ") lies outside the image " + LoadedSpan.describe());
  }
  // Initializer and finalizer arrays.
  for (auto [table, bytes, what] :
       {std::tuple<uint64_t, uint64_t, const char *>{InitArray, InitArraySz, "DT_INIT_ARRAY"},
        {FiniArray, FiniArraySz, "DT_FINI_ARRAY"}}) {
    if (bytes % 8)
      return fail(llvm::Twine(what) + " size " + hex(bytes) + " is not a multiple of 8");
    if (bytes && !LoadedSpan.contains(table, bytes))
      return fail(llvm::Twine(what) + " (" + hex(bytes) + " bytes at " + hex(table) +
                  ") lies outside the image " + LoadedSpan.describe());
    // Read after the protections are applied.
    if (bytes && !Readable.contains(table, bytes))
      return fail(llvm::Twine(what) + " (" + hex(bytes) + " bytes at " + hex(table) +
                  ") is not in a readable segment");
  }
  return llvm::Error::success();
}

llvm::Error ImageLoad::checkVersionTables() {
  // The dynamic linker reads these as it maps the image (before any
  // relocation), trusting every offset: one version index per symbol, and
  // the chains of need and definition records, each with its name.
  const ImageSpan &LoadedSpan = *Span;
  auto InImage = [&](uint64_t At, uint64_t Bytes) {
    return LoadedSpan.contains(At, Bytes) && Readable.contains(At, Bytes);
  };
  if (Versym && (Nsyms > LoadedSpan.hi() || !InImage(Versym, Nsyms * 2)))
    return fail("DT_VERSYM (" + hex(Nsyms * 2) + " bytes at " + hex(Versym) +
                ") lies outside the image's readable segments " + LoadedSpan.describe());
  // Records follow their vn_next/vd_next offsets until one is 0, as glibc
  // does (DT_VERNEEDNUM/DT_VERDEFNUM are not what it stops at); offsets are
  // unsigned, so a walk ends at the latest when it leaves the image.
  for (bool Need : {true, false}) {
    uint64_t At = Need ? Verneed : Verdef;
    const char *What = Need ? "DT_VERNEED" : "DT_VERDEF";
    if (!At)
      continue;
    for (uint64_t I = 0;; ++I) {
      uint64_t Bytes = Need ? sizeof(Elf64_Verneed) : sizeof(Elf64_Verdef);
      if (!InImage(At, Bytes))
        return fail(llvm::Twine(What) + " record " + llvm::Twine(I) + " (at " + hex(At) +
                    ") lies outside the image's readable segments " + LoadedSpan.describe());
      uint64_t Version, Aux, Count, Next;
      if (Need) {
        auto R = LoadedSpan.read<Elf64_Verneed>(At);
        Version = R.vn_version, Aux = R.vn_aux, Count = R.vn_cnt, Next = R.vn_next;
        if (auto File = string(R.vn_file, llvm::Twine(What) + " record " + llvm::Twine(I) + " file"); !File)
          return File.takeError();
      } else {
        auto R = LoadedSpan.read<Elf64_Verdef>(At);
        Version = R.vd_version, Aux = R.vd_aux, Count = R.vd_cnt, Next = R.vd_next;
      }
      if (Version != 1)
        return fail(llvm::Twine(What) + " record " + llvm::Twine(I) + " (at " + hex(At) + ") has version " +
                    llvm::Twine(Version) + ", not 1");
      uint64_t AuxAt = At + Aux;
      for (uint64_t J = 0; J < Count; ++J) {
        uint64_t AuxBytes = Need ? sizeof(Elf64_Vernaux) : sizeof(Elf64_Verdaux);
        if (AuxAt >= kMaxVaddr || !InImage(AuxAt, AuxBytes))
          return fail(llvm::Twine(What) + " record " + llvm::Twine(I) + " has its entry " + llvm::Twine(J) +
                      " (at " + hex(AuxAt) + ") outside the image's readable segments " +
                      LoadedSpan.describe());
        uint64_t NameOffset, AuxNext;
        if (Need) {
          auto A = LoadedSpan.read<Elf64_Vernaux>(AuxAt);
          NameOffset = A.vna_name, AuxNext = A.vna_next;
        } else {
          auto A = LoadedSpan.read<Elf64_Verdaux>(AuxAt);
          NameOffset = A.vda_name, AuxNext = A.vda_next;
        }
        if (auto N = string(NameOffset, llvm::Twine(What) + " record " + llvm::Twine(I) + " version"); !N)
          return N.takeError();
        if (AuxNext == 0)
          break;
        AuxAt += AuxNext;
      }
      if (Next == 0)
        break;
      At += Next;
      if (At >= kMaxVaddr)
        return fail(llvm::Twine(What) + " record " + llvm::Twine(I + 1) + " (at " + hex(At) +
                    ") lies outside the image's readable segments " + LoadedSpan.describe());
    }
  }
  return llvm::Error::success();
}

const KernelSymbol *ImageLoad::kernelAt(uint64_t At) const {
  for (const KernelSymbol &K : Kernels)
    if (At == K.Vaddr || (At > K.Vaddr && At - K.Vaddr < K.Size))
      return &K;
  return nullptr;
}

llvm::Error ImageLoad::checkKernelStarts() const {
  // The host calls a kernel at its symbol's address, so that address must be
  // where the kernel's code starts. What the image can prove: clang gives
  // every function an FDE in .eh_frame that starts at its first instruction,
  // so a kernel inside an FDE's range but not at its start points into the
  // middle of a function (and likely of an instruction). Without unwind
  // records for that address nothing can be told and nothing is refused.
  for (const KernelSymbol &K : Kernels)
    for (auto [Start, End] : FdeRanges)
      if (Start < K.Vaddr && K.Vaddr < End)
        return fail("kernel '" + K.Name + "' at " + hex(K.Vaddr) +
                    " is not at the start of a function: it lies " + hex(K.Vaddr - Start) +
                    " bytes into the function at " + hex(Start) + " (.eh_frame FDE [" + hex(Start) + ", " +
                    hex(End) + "))");
  return llvm::Error::success();
}

llvm::Expected<uint64_t> ImageLoad::gnuHashSymbolCount() const {
  const ImageSpan &LoadedSpan = *Span;
  auto Outside = [&](const llvm::Twine &What) {
    return fail("DT_GNU_HASH (at " + hex(GnuHash) + ") " + What + " lies outside the image " +
                LoadedSpan.describe());
  };
  if (!LoadedSpan.contains(GnuHash, 16))
    return Outside("header");
  uint64_t Nbuckets = LoadedSpan.read<uint32_t>(GnuHash), Symoffset = LoadedSpan.read<uint32_t>(GnuHash + 4),
           BloomWords = LoadedSpan.read<uint32_t>(GnuHash + 8);
  uint64_t Buckets = GnuHash + 16 + BloomWords * 8;
  if (!LoadedSpan.contains(GnuHash + 16, BloomWords * 8) || !LoadedSpan.contains(Buckets, Nbuckets * 4))
    return Outside("bloom filter or buckets");
  uint64_t Last = 0;
  for (uint64_t I = 0; I < Nbuckets; ++I)
    Last = std::max<uint64_t>(Last, LoadedSpan.read<uint32_t>(Buckets + I * 4));
  if (Last == 0)
    return Symoffset; // no hashed symbols
  if (Last < Symoffset)
    return fail("DT_GNU_HASH bucket names symbol " + llvm::Twine(Last) + ", below its first hashed symbol " +
                llvm::Twine(Symoffset));
  uint64_t Chains = Buckets + Nbuckets * 4;
  for (uint64_t Index = Last;; ++Index) {
    uint64_t At = Chains + (Index - Symoffset) * 4;
    if (Index - Symoffset > LoadedSpan.hi() / 4 || !LoadedSpan.contains(At, 4))
      return Outside("chain of symbol " + llvm::Twine(Last));
    if (LoadedSpan.read<uint32_t>(At) & 1) // the chain's last entry
      return Index + 1;
  }
}

llvm::Expected<llvm::StringRef> ImageLoad::string(uint64_t Offset, const llvm::Twine &What) const {
  if (Offset >= Strsz)
    return fail(What + " name at string offset " + hex(Offset) + " lies outside DT_STRTAB (" + hex(Strsz) +
                " bytes)");
  const char *S = Span->ptr(Strtab + Offset);
  size_t Len = strnlen(S, Strsz - Offset);
  if (Len == Strsz - Offset)
    return fail(What + " name at string offset " + hex(Offset) + " is not NUL-terminated inside DT_STRTAB");
  return llvm::StringRef(S, Len);
}

llvm::Error ElfImageLoader::validate(llvm::ArrayRef<char> Bytes, llvm::StringRef Name) {
  // Private anonymous memory for the one image: untouched pages cost nothing,
  // so a plausible but huge span is cheap to check.
  size_t Mapped = 0;
  ElfLoadEnvironment Env;
  Env.Allocate = [&Mapped](uint64_t Size) -> llvm::Expected<uint8_t *> {
    void *P =
        ::mmap(nullptr, Size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (P == MAP_FAILED)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "mmap failed");
    Mapped = Size;
    return static_cast<uint8_t *>(P);
  };
  Env.Release = [&Mapped](uint8_t *Base) { ::munmap(Base, Mapped); };
  auto Checked = ImageLoad(Name, Env, /*checkOnly=*/true).run(Bytes);
  if (!Checked)
    return Checked.takeError();
  return llvm::Error::success();
}

} // namespace ompsim::sim

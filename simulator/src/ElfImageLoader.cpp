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

bool skippedNeeded(llvm::StringRef Soname) {
  // libomptarget is the host runtime: device code needs nothing from it. The
  // executor already has its own dynamic loader.
  return Soname.starts_with("libomptarget.so") || Soname.starts_with("ld-linux");
}

/// Page protections of [lo, hi): each page gets the union of the flags of the
/// segments that touch it (minus PROT_WRITE inside RELRO, when given); pages no
/// segment touches get PROT_NONE. A sweep over segment edges, so the cost
/// depends on the number of segments, not on their size.
std::vector<std::tuple<uint64_t, uint64_t, int>>
protectionRanges(const std::vector<Segment> &Segments, uint64_t Lo, uint64_t Hi,
                 std::optional<std::pair<uint64_t, uint64_t>> Relro) {
  // Event kinds: 0..2 = R/W/X coverage count, 3 = RELRO.
  std::vector<std::tuple<uint64_t, int, int>> Events; // address, kind, +1/-1
  for (const Segment &S : Segments) {
    uint32_t Bits[3] = {PF_R, PF_W, PF_X};
    for (int K = 0; K < 3; ++K)
      if (S.Flags & Bits[K]) {
        Events.emplace_back(pageDown(S.Begin), K, +1);
        Events.emplace_back(pageUp(S.End), K, -1);
      }
  }
  if (Relro && Relro->first < Relro->second) {
    Events.emplace_back(Relro->first, 3, +1);
    Events.emplace_back(Relro->second, 3, -1);
  }
  std::sort(Events.begin(), Events.end());
  std::vector<std::tuple<uint64_t, uint64_t, int>> Out;
  int64_t Count[4] = {0, 0, 0, 0};
  auto Current = [&] {
    int Prot = (Count[0] ? PROT_READ : 0) | (Count[1] ? PROT_WRITE : 0) | (Count[2] ? PROT_EXEC : 0);
    return Count[3] ? Prot & ~PROT_WRITE : Prot;
  };
  auto Emit = [&](uint64_t From, uint64_t To, int Prot) {
    From = std::max(From, Lo);
    To = std::min(To, Hi);
    if (From >= To)
      return;
    if (!Out.empty() && std::get<1>(Out.back()) == From && std::get<2>(Out.back()) == Prot)
      std::get<1>(Out.back()) = To;
    else
      Out.emplace_back(From, To, Prot);
  };
  uint64_t At = Lo;
  for (size_t I = 0; I < Events.size();) {
    uint64_t Addr = std::get<0>(Events[I]);
    Emit(At, Addr, Current());
    At = std::max(At, Addr);
    for (; I < Events.size() && std::get<0>(Events[I]) == Addr; ++I)
      Count[std::get<1>(Events[I])] += std::get<2>(Events[I]);
  }
  Emit(At, Hi, Current());
  return Out;
}

} // namespace

llvm::Error ImageLoad::protect(bool WithRelro) {
  std::optional<std::pair<uint64_t, uint64_t>> Relro;
  if (WithRelro && RelroPh)
    Relro = {pageDown(RelroPh->p_vaddr), pageDown(RelroPh->p_vaddr + RelroPh->p_memsz)};
  for (auto [from, to, prot] : protectionRanges(Segments, Lo, Hi, Relro))
    if (::mprotect(Span->ptr(from), to - from, prot) != 0)
      return fail("mprotect of [" + hex(from) + ", " + hex(to) + ") failed: " + std::strerror(errno));
  return llvm::Error::success();
}

llvm::Error ImageLoad::registerEhFrame(Elf *Elf) {
  size_t Shstrndx = 0;
  bool HaveSections = elf_getshdrstrndx(Elf, &Shstrndx) == 0;
  bool Found = false;
  for (Elf_Scn *Scn = nullptr; HaveSections && (Scn = elf_nextscn(Elf, Scn));) {
    GElf_Shdr Sh;
    if (!gelf_getshdr(Scn, &Sh))
      continue;
    const char *Sn = elf_strptr(Elf, Shstrndx, Sh.sh_name);
    if (!Sn || llvm::StringRef(Sn) != ".eh_frame" || !Sh.sh_addr || !Sh.sh_size)
      continue;
    if (!Span->contains(Sh.sh_addr, Sh.sh_size))
      return fail(".eh_frame (" + hex(Sh.sh_size) + " bytes at " + hex(Sh.sh_addr) +
                  ") lies outside the image " + Span->describe());
    // libgcc reads it for as long as it is registered.
    if (!Readable.contains(Sh.sh_addr, Sh.sh_size))
      return fail(".eh_frame (" + hex(Sh.sh_size) + " bytes at " + hex(Sh.sh_addr) +
                  ") is not in a readable segment");
    if (auto Err = checkEhFrame(Sh.sh_addr, Sh.sh_size))
      return Err;
    Found = true;
    if (Img->EhFrame || CheckOnly) // one registration per image; none when only checking
      continue;
    Img->EhFrame = Span->ptr(Sh.sh_addr);
    __register_frame(Img->EhFrame);
  }
  if (Found || !EhFrameHdrPh)
    return llvm::Error::success();
  // No .eh_frame section (an image without section headers): find it as the
  // unwinder does, through PT_GNU_EH_FRAME's eh_frame_ptr, and let it run to
  // its zero terminator within its segment.
  uint64_t Hdr = EhFrameHdrPh->p_vaddr;
  if (!Span->contains(Hdr, 8) || !Readable.contains(Hdr, 8))
    return fail("PT_GNU_EH_FRAME (at " + hex(Hdr) + ") lies outside the image's readable segments");
  uint8_t Version = Span->read<uint8_t>(Hdr), Enc = Span->read<uint8_t>(Hdr + 1);
  if (Version != 1 || Enc != 0x1b) // DW_EH_PE_pcrel | DW_EH_PE_sdata4, what linkers write
    return fail("PT_GNU_EH_FRAME (at " + hex(Hdr) + ") has version " + llvm::Twine(Version) +
                " and eh_frame_ptr encoding " + hex(Enc) + " (expected 1 and 0x1b)");
  uint64_t Begin = Hdr + 4 + uint64_t(int64_t(Span->read<int32_t>(Hdr + 4)));
  uint64_t End = 0;
  for (const Segment &Seg : Segments)
    if ((Seg.Flags & PF_R) && Seg.Begin <= Begin && Begin < Seg.End)
      End = Seg.End;
  if (!End || !Span->contains(Begin, End - Begin))
    return fail(".eh_frame at " + hex(Begin) + " (from PT_GNU_EH_FRAME) is not in a readable segment");
  if (auto Err = checkEhFrame(Begin, End - Begin))
    return Err;
  if (!CheckOnly) {
    Img->EhFrame = Span->ptr(Begin);
    __register_frame(Img->EhFrame);
  }
  return llvm::Error::success();
}

llvm::Error ImageLoad::collectInitFini(std::vector<uint64_t> &InitFns) {
  // Everything is checked before the first initializer runs, so a bad entry
  // fails the load without having run any image code.
  uint64_t B = Img->Base;
  // Named by vaddr (address - base), as in the file.
  auto Check = [&](uint64_t Address, const llvm::Twine &What) -> llvm::Error {
    if (!executable(Address - B))
      return fail(What + " " + hex(Address - B) + " is not in an executable segment");
    return llvm::Error::success();
  };
  // An array slot of 0 or -1 is an empty placeholder, as in glibc.
  // A kernel expects the host's launch arguments; run as an initializer it
  // would read whatever is in the registers.
  auto NotKernel = [&](uint64_t Address, const llvm::Twine &What) -> llvm::Error {
    if (const KernelSymbol *K = kernelAt(Address - B))
      return fail(What + " " + hex(Address - B) + " is kernel '" + K->Name +
                  "', which only the host may launch");
    return llvm::Error::success();
  };
  auto Entries = [&](uint64_t Table, uint64_t Bytes, const char *What,
                     std::vector<uint64_t> &Out) -> llvm::Error {
    for (uint64_t I = 0; I < Bytes / 8; ++I) {
      uint64_t Fn = Span->read<uint64_t>(Table + I * 8);
      if (Fn == 0 || Fn == UINT64_MAX)
        continue;
      if (auto Err = Check(Fn, llvm::Twine(What) + " entry " + llvm::Twine(I) + " at"))
        return Err;
      if (auto Err = NotKernel(Fn, llvm::Twine(What) + " entry " + llvm::Twine(I) + " at"))
        return Err;
      Out.push_back(Fn);
    }
    return llvm::Error::success();
  };
  if (Init) {
    if (auto Err = Check(B + Init, "DT_INIT function at"))
      return Err;
    if (auto Err = NotKernel(B + Init, "DT_INIT function at"))
      return Err;
    InitFns.push_back(B + Init);
  }
  if (auto Err = Entries(InitArray, InitArraySz, "DT_INIT_ARRAY", InitFns))
    return Err;
  std::vector<uint64_t> FiniFns;
  if (auto Err = Entries(FiniArray, FiniArraySz, "DT_FINI_ARRAY", FiniFns))
    return Err;
  Img->Fini.assign(FiniFns.rbegin(), FiniFns.rend());
  if (Fini) {
    if (auto Err = Check(B + Fini, "DT_FINI function at"))
      return Err;
    if (auto Err = NotKernel(B + Fini, "DT_FINI function at"))
      return Err;
    Img->Fini.push_back(B + Fini);
  }
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<LoadedElfImage>> ImageLoad::run(llvm::ArrayRef<char> Bytes, bool InPlace) {
  elf_version(EV_CURRENT);
  // libelf wants a mutable buffer; it must not see later changes of the caller's.
  std::vector<char> Owned;
  if (!InPlace)
    Owned.assign(Bytes.begin(), Bytes.end());
  // In place, the buffer is the caller's to give away for the call (libelf
  // wants a mutable one).
  llvm::MutableArrayRef<char> Copy(InPlace ? const_cast<char *>(Bytes.data()) : Owned.data(), Bytes.size());
  Elf *Elf = elf_memory(Copy.data(), Copy.size());
  if (!Elf)
    return fail(llvm::Twine("not an ELF file: ") + elf_errmsg(-1));
  llvm::scope_exit CloseElf([&] { elf_end(Elf); });

  GElf_Ehdr Eh;
  if (elf_kind(Elf) != ELF_K_ELF || !gelf_getehdr(Elf, &Eh))
    return fail("not an ELF file");
  if (Eh.e_ident[EI_CLASS] != ELFCLASS64 || Eh.e_ident[EI_DATA] != ELFDATA2LSB || Eh.e_machine != EM_X86_64)
    return fail("not an x86-64 ELF64 object");
  if (Eh.e_type != ET_DYN)
    return fail("not a shared object (ET_DYN)");
  // libelf reads program headers at their own size whatever the header says;
  // the dynamic linker refuses any other entry size, and so does the loader.
  if (Eh.e_phnum && Eh.e_phentsize != sizeof(Elf64_Phdr))
    return fail("e_phentsize is " + llvm::Twine(Eh.e_phentsize) + ", not " + llvm::Twine(sizeof(Elf64_Phdr)));
  if (auto Err = readProgramHeaders(Elf, Copy.size()))
    return std::move(Err);

  Img.reset(new LoadedElfImage());
  Img->Name = Name.str();
  Img->Size = Hi - Lo;
  auto Mem = Env.Allocate(Img->Size);
  if (!Mem)
    return fail("cannot allocate " + llvm::Twine(Img->Size) +
                " bytes of device memory: " + llvm::toString(Mem.takeError()));
  // From here on img_'s destructor gives the memory back, on every error path.
  // Bias: vaddr v lives at base + v. The lowest segment starts at base + lo.
  Img->Start = *Mem;
  Img->Base = reinterpret_cast<uint64_t>(*Mem) - Lo;
  Img->Release = Env.Release;
  Span.emplace(Img->Base, Lo, Hi);
  if (!CheckOnly) // the checker's memory is fresh anonymous memory, zero already
    std::memset(*Mem, 0, Img->Size);
  for (const GElf_Phdr &Ph : Phdrs)
    if (Ph.p_type == PT_LOAD && Ph.p_filesz)
      std::memcpy(Span->ptr(Ph.p_vaddr), Copy.data() + Ph.p_offset, Ph.p_filesz);

  if (auto Err = readDynamic())
    return std::move(Err);
  if (auto Err = checkTables(Elf))
    return std::move(Err);

  for (uint64_t Off : NeededOffsets) {
    auto So = string(Off, "DT_NEEDED");
    if (!So)
      return So.takeError();
    Img->Needed.push_back(So->str());
    if (skippedNeeded(*So) || CheckOnly)
      continue;
    if (auto Err = Env.LoadNeeded(*So))
      return fail("needed library " + *So + ": " + llvm::toString(std::move(Err)));
  }
  if (auto Err = checkVersionTables())
    return std::move(Err);
  if (auto Err = readSymbols())
    return std::move(Err);
  if (auto Err = relocate(Rela, Relasz, "DT_RELA"))
    return std::move(Err);
  if (auto Err = relocate(Jmprel, Pltrelsz, "DT_JMPREL"))
    return std::move(Err);

  if (CheckOnly) {
    // Everything that reads the image is checked; nothing of it runs.
    if (auto Err = registerEhFrame(Elf))
      return std::move(Err);
    if (auto Err = checkKernelStarts())
      return std::move(Err);
    std::vector<uint64_t> InitFns;
    if (auto Err = collectInitFini(InitFns))
      return std::move(Err);
    return std::move(Img);
  }
  // IRELATIVE resolvers are image code: they run once the segments have their
  // protections, and before RELRO makes their targets read-only.
  if (!Irelative.empty()) {
    if (auto Err = protect(/*withRelro=*/false))
      return std::move(Err);
    applyIrelative();
  }
  if (auto Err = protect(/*withRelro=*/true))
    return std::move(Err);

  // Unwind info, so C++ exceptions thrown in device code can unwind.
  if (auto Err = registerEhFrame(Elf))
    return std::move(Err);
  if (auto Err = checkKernelStarts())
    return std::move(Err);

  std::vector<uint64_t> InitFns;
  if (auto Err = collectInitFini(InitFns))
    return std::move(Err);
  for (uint64_t Fn : InitFns)
    reinterpret_cast<InitFn>(Fn)();
  return std::move(Img);
}

LoadedElfImage::~LoadedElfImage() {
  if (EhFrame)
    __deregister_frame(EhFrame);
  if (Release && Start) {
    // Leave the pages writable and clean for the next image that gets them.
    ::mprotect(Start, Size, PROT_READ | PROT_WRITE);
    Release(Start);
  }
}

uint64_t LoadedElfImage::lookup(llvm::StringRef Symbol) const {
  auto It = Symbols.find(Symbol);
  return It == Symbols.end() ? 0 : It->second;
}

void LoadedElfImage::runFini() {
  if (FiniDone)
    return;
  FiniDone = true;
  for (uint64_t Fn : Fini)
    reinterpret_cast<InitFn>(Fn)();
}

llvm::Expected<std::unique_ptr<LoadedElfImage>> ElfImageLoader::load(llvm::ArrayRef<char> Bytes,
                                                                     llvm::StringRef Name,
                                                                     const ElfLoadEnvironment &Env,
                                                                     bool Exclusive) {
  return ImageLoad(Name, Env).run(Bytes, Exclusive);
}

} // namespace ompsim::sim

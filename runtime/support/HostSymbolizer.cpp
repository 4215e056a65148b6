// Host address symbolization from ELF symbol tables (libelf), for traces and fault reports.
#include "ompsim/HostSymbolizer.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

namespace ompsim {
namespace {

struct Sym {
  uint64_t Begin, Size;
  std::string Name;
  bool Func;
};

struct Object {
  std::string Path;    // file to read
  std::string Display; // name shown to users
  uint64_t Base = 0;
  std::vector<HostRange> Ranges;
  std::vector<Sym> Syms; // sorted by begin (absolute addresses)
  std::vector<HostVtable> Vtables;
  bool VtablesRead = false;
  bool Loaded = false;
};

std::string demangle(const char *Name) {
  int Status = 0;
  char *D = abi::__cxa_demangle(Name, nullptr, nullptr, &Status);
  if (Status == 0 && D) {
    std::string Out(D);
    std::free(D);
    return Out;
  }
  return Name;
}

/// Calls `fn(address, size, type, name)` for every defined function or data
/// symbol in the object's file: from .symtab (which has local symbols such as
/// static functions) when it has any, else from .dynsym. With `OnlyObjects`
/// functions are skipped before their names are read (the file is mapped,
/// not read, so names never looked at cost nothing).
template <typename CallbackT> void forEachSymbol(const Object &O, CallbackT Fn, bool OnlyObjects = false) {
  int Fd = ::open(O.Path.c_str(), O_RDONLY | O_CLOEXEC);
  if (Fd < 0)
    return;
  elf_version(EV_CURRENT);
  Elf *E = elf_begin(Fd, ELF_C_READ_MMAP, nullptr);
  if (!E) {
    ::close(Fd);
    return;
  }
  GElf_Ehdr Eh;
  bool IsExecFixed = gelf_getehdr(E, &Eh) && Eh.e_type == ET_EXEC;
  uint64_t Bias = IsExecFixed ? 0 : O.Base;
  for (uint32_t Want : {uint32_t(SHT_SYMTAB), uint32_t(SHT_DYNSYM)}) {
    size_t Visited = 0;
    Elf_Scn *Scn = nullptr;
    while ((Scn = elf_nextscn(E, Scn))) {
      GElf_Shdr Sh;
      if (!gelf_getshdr(Scn, &Sh) || Sh.sh_type != Want)
        continue;
      Elf_Data *Data = elf_getdata(Scn, nullptr);
      if (!Data || Sh.sh_entsize == 0)
        continue;
      size_t N = Sh.sh_size / Sh.sh_entsize;
      for (size_t I = 0; I < N; ++I) {
        GElf_Sym S;
        if (!gelf_getsym(Data, int(I), &S) || S.st_value == 0 || S.st_shndx == SHN_UNDEF)
          continue;
        int Type = GELF_ST_TYPE(S.st_info);
        if (Type != STT_FUNC && Type != STT_OBJECT && Type != STT_GNU_IFUNC)
          continue;
        if (OnlyObjects && Type != STT_OBJECT) {
          Visited += S.st_name != 0; // named: this table has symbols
          continue;
        }
        const char *Nm = elf_strptr(E, Sh.sh_link, S.st_name);
        if (!Nm || !*Nm)
          continue;
        ++Visited;
        Fn(S.st_value + Bias, uint64_t(S.st_size), Type, Nm);
      }
    }
    if (Visited)
      break;
  }
  elf_end(E);
  ::close(Fd);
}

void readSymbols(Object &O) {
  O.Loaded = true;
  forEachSymbol(O, [&](uint64_t Addr, uint64_t Size, int Type, const char *Nm) {
    O.Syms.push_back({Addr, Size, demangle(Nm), Type != STT_OBJECT});
  });
  std::sort(O.Syms.begin(), O.Syms.end(), [](const Sym &A, const Sym &B) {
    return A.Begin != B.Begin ? A.Begin < B.Begin : A.Size > B.Size;
  });
}

/// Collects the object's vtables without reading (and demangling) every
/// symbol: a program with 100 Ki functions registers in milliseconds only if
/// image loading never demangles its whole symbol table.
void readVtables(Object &O) {
  O.VtablesRead = true;
  forEachSymbol(
      O,
      [&](uint64_t Addr, uint64_t Size, int Type, const char *Nm) {
        if (Type == STT_OBJECT && std::strncmp(Nm, "_ZTV", 4) == 0 && Size && Size % 8 == 0)
          O.Vtables.push_back({Nm, Addr, Size});
      },
      /*OnlyObjects=*/true);
}

struct State {
  std::mutex Mu;
  std::map<uint64_t, std::unique_ptr<Object>> Objects; // by base address + first range

  unsigned long long Adds = 0, Subs = 0; ///< loader counters at the last scan
  bool Scanned = false;

  /// Re-reads the loaded objects, but only when the dynamic loader has loaded
  /// or unloaded something since the last scan: a miss on a stack or heap
  /// address must not throw away the symbol tables already read.
  void rescan() {
    struct Counts {
      unsigned long long Adds = 0, Subs = 0;
    } Now;
    dl_iterate_phdr(
        [](dl_phdr_info *Info, size_t Size, void *P) -> int {
          auto *C = static_cast<Counts *>(P);
          if (Size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(Info->dlpi_subs)) {
            C->Adds = Info->dlpi_adds;
            C->Subs = Info->dlpi_subs;
          }
          return 1;
        },
        &Now);
    if (Scanned && Now.Adds == Adds && Now.Subs == Subs && (Now.Adds || Now.Subs))
      return;
    Adds = Now.Adds;
    Subs = Now.Subs;
    Scanned = true;
    Objects.clear();
    dl_iterate_phdr(
        [](dl_phdr_info *Info, size_t, void *Self) -> int {
          auto *St = static_cast<State *>(Self);
          std::string Name = Info->dlpi_name ? Info->dlpi_name : "";
          if (Name.find("linux-vdso") != std::string::npos)
            return 0;
          auto O = std::make_unique<Object>();
          O->Base = Info->dlpi_addr;
          if (Name.empty()) {
            O->Path = "/proc/self/exe";
            O->Display = program_invocation_name ? program_invocation_name : "main";
          } else {
            O->Path = Name;
            O->Display = Name;
          }
          uint64_t Page = uint64_t(sysconf(_SC_PAGESIZE));
          uint64_t Lo = ~0ULL, Hi = 0;
          for (int I = 0; I < Info->dlpi_phnum; ++I) {
            const ElfW(Phdr) &Ph = Info->dlpi_phdr[I];
            if (Ph.p_type != PT_LOAD)
              continue;
            Lo = std::min<uint64_t>(Lo, (Info->dlpi_addr + Ph.p_vaddr) & ~(Page - 1));
            Hi = std::max<uint64_t>(Hi, (Info->dlpi_addr + Ph.p_vaddr + Ph.p_memsz + Page - 1) & ~(Page - 1));
          }
          if (Lo >= Hi)
            return 0;
          O->Ranges.push_back({Lo, Hi, O->Display});
          uint64_t Key = Lo;
          St->Objects.emplace(Key, std::move(O));
          return 0;
        },
        this);
  }

  /// The object containing `Addr`, rescanning once when none does (it may
  /// have been loaded since the last scan).
  Object *findOrRescan(uint64_t Addr) {
    Object *O = find(Addr);
    if (!O) {
      rescan();
      O = find(Addr);
    }
    return O;
  }

  Object *find(uint64_t Addr) {
    auto It = Objects.upper_bound(Addr);
    if (It == Objects.begin())
      return nullptr;
    --It;
    for (const HostRange &R : It->second->Ranges)
      if (Addr >= R.Begin && Addr < R.End)
        return It->second.get();
    return nullptr;
  }
};

State &state() {
  static State *S = new State(); // never destroyed: used from atexit paths
  return *S;
}

} // namespace

HostSymbolizer &HostSymbolizer::get() {
  static HostSymbolizer H;
  return H;
}

std::optional<HostSymbol> HostSymbolizer::lookup(uint64_t Addr) {
  State &St = state();
  std::lock_guard<std::mutex> Lock(St.Mu);
  Object *O = St.findOrRescan(Addr);
  if (!O)
    return std::nullopt;
  if (!O->Loaded)
    readSymbols(*O);
  auto It = std::upper_bound(O->Syms.begin(), O->Syms.end(), Addr,
                             [](uint64_t A, const Sym &S) { return A < S.Begin; });
  // Walk back over symbols that start at or before addr; take the first that covers it.
  while (It != O->Syms.begin()) {
    --It;
    if (Addr < It->Begin + std::max<uint64_t>(It->Size, 1))
      return HostSymbol{It->Name, Addr - It->Begin, O->Display, It->Func};
    if (It->Size == 0 || Addr - It->Begin > (1u << 20))
      break;
  }
  return std::nullopt;
}

std::vector<HostRange> HostSymbolizer::loadedRanges() {
  State &St = state();
  std::lock_guard<std::mutex> Lock(St.Mu);
  St.rescan();
  std::vector<HostRange> Out;
  for (auto &[k, o] : St.Objects)
    Out.insert(Out.end(), o->Ranges.begin(), o->Ranges.end());
  return Out;
}

std::string HostSymbolizer::objectOf(uint64_t Addr) {
  State &St = state();
  std::lock_guard<std::mutex> Lock(St.Mu);
  Object *O = St.findOrRescan(Addr);
  return O ? O->Display : std::string();
}

std::vector<HostVtable> HostSymbolizer::vtablesOf(uint64_t Addr) {
  State &St = state();
  std::lock_guard<std::mutex> Lock(St.Mu);
  Object *O = St.findOrRescan(Addr);
  if (!O)
    return {};
  if (!O->VtablesRead)
    readVtables(*O);
  return O->Vtables;
}

} // namespace ompsim

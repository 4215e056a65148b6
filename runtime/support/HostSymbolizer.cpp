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
  uint64_t begin, size;
  std::string name;
  bool func;
};

struct Object {
  std::string path;    // file to read
  std::string display; // name shown to users
  uint64_t base = 0;
  std::vector<HostRange> ranges;
  std::vector<Sym> syms; // sorted by begin (absolute addresses)
  std::vector<HostVtable> vtables;
  bool vtablesRead = false;
  bool loaded = false;
};

std::string demangle(const char *name) {
  int status = 0;
  char *d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status == 0 && d) {
    std::string out(d);
    std::free(d);
    return out;
  }
  return name;
}

/// Calls `fn(address, size, type, name)` for every defined function or data
/// symbol in the object's file: from .symtab (which has local symbols such as
/// static functions) when it has any, else from .dynsym. With `onlyObjects`
/// functions are skipped before their names are read (the file is mapped,
/// not read, so names never looked at cost nothing).
template <typename Fn> void forEachSymbol(const Object &o, Fn fn, bool onlyObjects = false) {
  int fd = ::open(o.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  elf_version(EV_CURRENT);
  Elf *e = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (!e) {
    ::close(fd);
    return;
  }
  GElf_Ehdr eh;
  bool isExecFixed = gelf_getehdr(e, &eh) && eh.e_type == ET_EXEC;
  uint64_t bias = isExecFixed ? 0 : o.base;
  for (uint32_t want : {uint32_t(SHT_SYMTAB), uint32_t(SHT_DYNSYM)}) {
    size_t visited = 0;
    Elf_Scn *scn = nullptr;
    while ((scn = elf_nextscn(e, scn))) {
      GElf_Shdr sh;
      if (!gelf_getshdr(scn, &sh) || sh.sh_type != want)
        continue;
      Elf_Data *data = elf_getdata(scn, nullptr);
      if (!data || sh.sh_entsize == 0)
        continue;
      size_t n = sh.sh_size / sh.sh_entsize;
      for (size_t i = 0; i < n; ++i) {
        GElf_Sym s;
        if (!gelf_getsym(data, int(i), &s) || s.st_value == 0 || s.st_shndx == SHN_UNDEF)
          continue;
        int type = GELF_ST_TYPE(s.st_info);
        if (type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC)
          continue;
        if (onlyObjects && type != STT_OBJECT) {
          visited += s.st_name != 0; // named: this table has symbols
          continue;
        }
        const char *nm = elf_strptr(e, sh.sh_link, s.st_name);
        if (!nm || !*nm)
          continue;
        ++visited;
        fn(s.st_value + bias, uint64_t(s.st_size), type, nm);
      }
    }
    if (visited)
      break;
  }
  elf_end(e);
  ::close(fd);
}

void readSymbols(Object &o) {
  o.loaded = true;
  forEachSymbol(o, [&](uint64_t addr, uint64_t size, int type, const char *nm) {
    o.syms.push_back({addr, size, demangle(nm), type != STT_OBJECT});
  });
  std::sort(o.syms.begin(), o.syms.end(), [](const Sym &a, const Sym &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.size > b.size;
  });
}

/// Collects the object's vtables without reading (and demangling) every
/// symbol: a program with 100 Ki functions registers in milliseconds only if
/// image loading never demangles its whole symbol table.
void readVtables(Object &o) {
  o.vtablesRead = true;
  forEachSymbol(
      o,
      [&](uint64_t addr, uint64_t size, int type, const char *nm) {
        if (type == STT_OBJECT && std::strncmp(nm, "_ZTV", 4) == 0 && size && size % 8 == 0)
          o.vtables.push_back({nm, addr, size});
      },
      /*onlyObjects=*/true);
}

struct State {
  std::mutex mu;
  std::map<uint64_t, std::unique_ptr<Object>> objects; // by base address + first range

  unsigned long long adds = 0, subs = 0; ///< loader counters at the last scan
  bool scanned = false;

  /// Re-reads the loaded objects, but only when the dynamic loader has loaded
  /// or unloaded something since the last scan: a miss on a stack or heap
  /// address must not throw away the symbol tables already read.
  void rescan() {
    struct Counts {
      unsigned long long adds = 0, subs = 0;
    } now;
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t size, void *p) -> int {
          auto *c = static_cast<Counts *>(p);
          if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
            c->adds = info->dlpi_adds;
            c->subs = info->dlpi_subs;
          }
          return 1;
        },
        &now);
    if (scanned && now.adds == adds && now.subs == subs && (now.adds || now.subs))
      return;
    adds = now.adds;
    subs = now.subs;
    scanned = true;
    objects.clear();
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *self) -> int {
          auto *st = static_cast<State *>(self);
          std::string name = info->dlpi_name ? info->dlpi_name : "";
          if (name.find("linux-vdso") != std::string::npos)
            return 0;
          auto o = std::make_unique<Object>();
          o->base = info->dlpi_addr;
          if (name.empty()) {
            o->path = "/proc/self/exe";
            o->display = program_invocation_name ? program_invocation_name : "main";
          } else {
            o->path = name;
            o->display = name;
          }
          uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
          uint64_t lo = ~0ULL, hi = 0;
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr) &ph = info->dlpi_phdr[i];
            if (ph.p_type != PT_LOAD)
              continue;
            lo = std::min<uint64_t>(lo, (info->dlpi_addr + ph.p_vaddr) & ~(page - 1));
            hi = std::max<uint64_t>(hi, (info->dlpi_addr + ph.p_vaddr + ph.p_memsz + page - 1) & ~(page - 1));
          }
          if (lo >= hi)
            return 0;
          o->ranges.push_back({lo, hi, o->display});
          uint64_t key = lo;
          st->objects.emplace(key, std::move(o));
          return 0;
        },
        this);
  }

  /// The object containing `addr`, rescanning once when none does (it may
  /// have been loaded since the last scan).
  Object *findOrRescan(uint64_t addr) {
    Object *o = find(addr);
    if (!o) {
      rescan();
      o = find(addr);
    }
    return o;
  }

  Object *find(uint64_t addr) {
    auto it = objects.upper_bound(addr);
    if (it == objects.begin())
      return nullptr;
    --it;
    for (const HostRange &r : it->second->ranges)
      if (addr >= r.begin && addr < r.end)
        return it->second.get();
    return nullptr;
  }
};

State &state() {
  static State *s = new State(); // never destroyed: used from atexit paths
  return *s;
}

} // namespace

HostSymbolizer &HostSymbolizer::get() {
  static HostSymbolizer h;
  return h;
}

std::optional<HostSymbol> HostSymbolizer::lookup(uint64_t addr) {
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  Object *o = st.findOrRescan(addr);
  if (!o)
    return std::nullopt;
  if (!o->loaded)
    readSymbols(*o);
  auto it = std::upper_bound(o->syms.begin(), o->syms.end(), addr,
                             [](uint64_t a, const Sym &s) { return a < s.begin; });
  // Walk back over symbols that start at or before addr; take the first that covers it.
  while (it != o->syms.begin()) {
    --it;
    if (addr < it->begin + std::max<uint64_t>(it->size, 1))
      return HostSymbol{it->name, addr - it->begin, o->display, it->func};
    if (it->size == 0 || addr - it->begin > (1u << 20))
      break;
  }
  return std::nullopt;
}

std::vector<HostRange> HostSymbolizer::loadedRanges() {
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.rescan();
  std::vector<HostRange> out;
  for (auto &[k, o] : st.objects)
    out.insert(out.end(), o->ranges.begin(), o->ranges.end());
  return out;
}

std::string HostSymbolizer::objectOf(uint64_t addr) {
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  Object *o = st.findOrRescan(addr);
  return o ? o->display : std::string();
}

std::vector<HostVtable> HostSymbolizer::vtablesOf(uint64_t addr) {
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  Object *o = st.findOrRescan(addr);
  if (!o)
    return {};
  if (!o->vtablesRead)
    readVtables(*o);
  return o->vtables;
}

} // namespace ompsim

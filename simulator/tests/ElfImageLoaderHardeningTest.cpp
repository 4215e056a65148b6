// ElfImageLoader on corrupted images: a real clang-22 device image with one
// field broken per test. Each load must fail with one line naming the image
// and the problem, run no image code, and give its memory back.
#include "ElfImageLoader.h"
#include "LoaderTestSupport.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace ompsim::sim;
using namespace ompsim::sim::test;

namespace {

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

/// A device image's bytes with typed access to the fields the tests corrupt.
class PatchableImage {
public:
  explicit PatchableImage(std::vector<char> bytes) : bytes_(std::move(bytes)) {}
  std::vector<char> &bytes() { return bytes_; }

  template <typename T> T get(uint64_t off) const {
    T v;
    std::memcpy(&v, bytes_.data() + off, sizeof v);
    return v;
  }
  template <typename T> void set(uint64_t off, const T &v) { std::memcpy(bytes_.data() + off, &v, sizeof v); }
  /// Reads, changes and writes back the T at file offset `off`.
  template <typename T> void edit(uint64_t off, const std::function<void(T &)> &change) {
    T v = get<T>(off);
    change(v);
    set(off, v);
  }

  Elf64_Ehdr ehdr() const { return get<Elf64_Ehdr>(0); }
  uint64_t phdrOffset(size_t i) const { return ehdr().e_phoff + i * sizeof(Elf64_Phdr); }
  Elf64_Phdr phdr(size_t i) const { return get<Elf64_Phdr>(phdrOffset(i)); }
  /// Index of the first program header of `type` whose flags include `flags`.
  size_t phdrIndex(uint32_t type, uint32_t flags = 0) const {
    for (size_t i = 0; i < ehdr().e_phnum; ++i)
      if (phdr(i).p_type == type && (phdr(i).p_flags & flags) == flags)
        return i;
    ADD_FAILURE() << "no program header of type " << type;
    return 0;
  }
  /// File offset of `vaddr`, through the PT_LOAD segment holding it.
  uint64_t fileOffset(uint64_t vaddr) const {
    for (size_t i = 0; i < ehdr().e_phnum; ++i) {
      Elf64_Phdr ph = phdr(i);
      if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz)
        return ph.p_offset + (vaddr - ph.p_vaddr);
    }
    ADD_FAILURE() << "vaddr " << hex(vaddr) << " is not in the file";
    return 0;
  }
  /// File offset of the dynamic entry with `tag`.
  uint64_t dynOffset(int64_t tag) const {
    Elf64_Phdr dyn = phdr(phdrIndex(PT_DYNAMIC));
    for (uint64_t off = dyn.p_offset; off < dyn.p_offset + dyn.p_filesz; off += sizeof(Elf64_Dyn)) {
      auto d = get<Elf64_Dyn>(off);
      if (d.d_tag == tag)
        return off;
      if (d.d_tag == DT_NULL)
        break;
    }
    ADD_FAILURE() << "no dynamic entry with tag " << tag;
    return 0;
  }
  uint64_t dyn(int64_t tag) const { return get<Elf64_Dyn>(dynOffset(tag)).d_un.d_val; }
  void setDyn(int64_t tag, uint64_t value) {
    edit<Elf64_Dyn>(dynOffset(tag), [&](Elf64_Dyn &d) { d.d_un.d_val = value; });
  }
  /// File offset of the header of the section called `name`.
  uint64_t sectionHeaderOffset(const std::string &name) const {
    Elf64_Ehdr eh = ehdr();
    auto shstr = get<Elf64_Shdr>(eh.e_shoff + eh.e_shstrndx * sizeof(Elf64_Shdr));
    for (size_t i = 0; i < eh.e_shnum; ++i) {
      uint64_t off = eh.e_shoff + i * sizeof(Elf64_Shdr);
      if (name == bytes_.data() + shstr.sh_offset + get<Elf64_Shdr>(off).sh_name)
        return off;
    }
    ADD_FAILURE() << "no section " << name;
    return 0;
  }
  Elf64_Shdr section(const std::string &name) const { return get<Elf64_Shdr>(sectionHeaderOffset(name)); }
  /// File offset of entry `i` of the relocation table at DT_RELA or DT_JMPREL.
  uint64_t relaOffset(int64_t tableTag, uint64_t i) const {
    return fileOffset(dyn(tableTag)) + i * sizeof(Elf64_Rela);
  }
  /// Index in DT_RELA of the relocation that patches `vaddr`.
  uint64_t relaAt(uint64_t vaddr) const {
    for (uint64_t i = 0; i < dyn(DT_RELASZ) / sizeof(Elf64_Rela); ++i)
      if (get<Elf64_Rela>(relaOffset(DT_RELA, i)).r_offset == vaddr)
        return i;
    ADD_FAILURE() << "no relocation at " << hex(vaddr);
    return 0;
  }
  /// Index and file offset of the dynamic symbol called `name`.
  std::pair<uint64_t, uint64_t> dynamicSymbol(const std::string &name) const {
    Elf64_Shdr dynsym = section(".dynsym");
    uint64_t strtab = fileOffset(dyn(DT_STRTAB));
    for (uint64_t i = 1; i < dynsym.sh_size / sizeof(Elf64_Sym); ++i) {
      uint64_t off = dynsym.sh_offset + i * sizeof(Elf64_Sym);
      if (name == bytes_.data() + strtab + get<Elf64_Sym>(off).st_name)
        return {i, off};
    }
    ADD_FAILURE() << "no dynamic symbol " << name;
    return {0, 0};
  }
  uint64_t dynamicSymbolCount() const { return section(".dynsym").sh_size / sizeof(Elf64_Sym); }
  /// The loaded span "[lo, hi)" as the loader prints it.
  std::string span() const {
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < ehdr().e_phnum; ++i) {
      Elf64_Phdr ph = phdr(i);
      if (ph.p_type == PT_LOAD && ph.p_memsz) {
        lo = std::min<uint64_t>(lo, ph.p_vaddr & ~0xfffull);
        hi = std::max<uint64_t>(hi, (ph.p_vaddr + ph.p_memsz + 0xfff) & ~0xfffull);
      }
    }
    return "[" + hex(lo) + ", " + hex(hi) + ")";
  }
  /// A read-only, non-executable vaddr inside the image (.rodata).
  uint64_t dataAddress() const { return section(".rodata").sh_addr; }

private:
  std::vector<char> bytes_;
};

class HardenedLoaderTest : public LoaderTest {
protected:
  void SetUp() override {
    LoaderTest::SetUp();
    image_.emplace(readImage("loader_probe"));
  }
  PatchableImage &image() { return *image_; }

  /// Loads the (patched) image as "probe"; returns its error text, or
  /// "loaded" when it loaded. Checks that no memory stays allocated.
  std::string loadError() {
    auto img = ElfImageLoader::load(image_->bytes(), "probe", env_);
    std::string result = img ? "loaded" : llvm::toString(img.takeError());
    if (img)
      img->reset();
    EXPECT_EQ(alloc_.bytesInUse(), 0u) << "memory left allocated after: " << result;
    // ours-host runs the same checks before dlopen (check-only mode): it must
    // refuse exactly what the loader refuses, with the same words. Imports are
    // the dynamic linker's business there, so an undefined symbol passes, and
    // it has its own memory, so a full device arena does not matter.
    llvm::Error checked = ElfImageLoader::validate(image_->bytes(), "probe");
    std::string validated = checked ? llvm::toString(std::move(checked)) : "loaded";
    if (result.find("undefined symbol") == std::string::npos &&
        result.find("bytes of device memory") == std::string::npos)
      EXPECT_EQ(validated, result) << "ElfImageLoader::validate disagrees with load";
    return result;
  }

  std::optional<PatchableImage> image_;
};

} // namespace

TEST_F(HardenedLoaderTest, UntouchedImageLoads) { EXPECT_EQ(loadError(), "loaded"); }

TEST_F(HardenedLoaderTest, TruncatedSegmentIsOutsideTheFile) {
  size_t seg = image().phdrIndex(PT_LOAD, PF_W);
  image().bytes().resize(image().phdr(seg).p_offset + 16);
  EXPECT_EQ(loadError(), "image probe: PT_LOAD segment " + std::to_string(seg) + " lies outside the file");
}

TEST_F(HardenedLoaderTest, SegmentWrappingAroundIsRejected) {
  size_t seg = image().phdrIndex(PT_LOAD, PF_W);
  image().edit<Elf64_Phdr>(image().phdrOffset(seg), [](Elf64_Phdr &ph) { ph.p_vaddr = ~0ull - 0xfff; });
  EXPECT_EQ(loadError(), "image probe: PT_LOAD segment " + std::to_string(seg) + " (" +
                             hex(image().phdr(seg).p_memsz) +
                             " bytes at 0xfffffffffffff000) is not a plausible device image segment "
                             "(at most 0x40000000 bytes below 0x800000000000)");
}

TEST_F(HardenedLoaderTest, AbsurdSegmentSizeIsRejected) {
  size_t seg = image().phdrIndex(PT_LOAD, PF_W);
  image().edit<Elf64_Phdr>(image().phdrOffset(seg), [](Elf64_Phdr &ph) { ph.p_memsz = 1ull << 40; });
  EXPECT_EQ(loadError(), "image probe: PT_LOAD segment " + std::to_string(seg) + " (0x10000000000 bytes at " +
                             hex(image().phdr(seg).p_vaddr) +
                             ") is not a plausible device image segment "
                             "(at most 0x40000000 bytes below 0x800000000000)");
}

TEST_F(HardenedLoaderTest, SegmentsSpanningTooMuchAreRejected) {
  size_t seg = image().phdrIndex(PT_LOAD, PF_W);
  image().edit<Elf64_Phdr>(image().phdrOffset(seg), [](Elf64_Phdr &ph) { ph.p_vaddr += 1ull << 40; });
  Elf64_Phdr ph = image().phdr(seg);
  uint64_t hi = (ph.p_vaddr + ph.p_memsz + 0xfff) & ~0xfffull;
  EXPECT_EQ(loadError(), "image probe: PT_LOAD segments span " + hex(hi) + " bytes ([0x0, " + hex(hi) +
                             ")), more than the loader's limit of 0x40000000");
}

TEST_F(HardenedLoaderTest, LargeSegmentFailsInTheAllocatorQuickly) {
  // 768 MiB is within the loader's limit but not the 64 MiB test arena.
  size_t seg = image().phdrIndex(PT_LOAD, PF_W);
  image().edit<Elf64_Phdr>(image().phdrOffset(seg), [](Elf64_Phdr &ph) { ph.p_memsz = 768ull << 20; });
  Elf64_Phdr ph = image().phdr(seg);
  uint64_t hi = (ph.p_vaddr + ph.p_memsz + 0xfff) & ~0xfffull;
  EXPECT_EQ(loadError(), "image probe: cannot allocate " + std::to_string(hi) +
                             " bytes of device memory: test arena exhausted");
}

TEST_F(HardenedLoaderTest, DynamicSegmentOutsideTheImage) {
  size_t seg = image().phdrIndex(PT_DYNAMIC);
  image().edit<Elf64_Phdr>(image().phdrOffset(seg), [](Elf64_Phdr &ph) { ph.p_vaddr = 0x100000; });
  EXPECT_EQ(loadError(), "image probe: PT_DYNAMIC segment (" + hex(image().phdr(seg).p_memsz) +
                             " bytes at 0x100000) lies outside the loaded image " + image().span());
}

TEST_F(HardenedLoaderTest, DynamicSectionWithoutTerminator) {
  size_t seg = image().phdrIndex(PT_DYNAMIC);
  image().edit<Elf64_Phdr>(image().phdrOffset(seg), [](Elf64_Phdr &ph) { ph.p_memsz = sizeof(Elf64_Dyn); });
  EXPECT_EQ(loadError(), "image probe: the dynamic section has no DT_NULL terminator");
}

TEST_F(HardenedLoaderTest, StringTableOutsideTheImage) {
  image().setDyn(DT_STRTAB, 0x100000);
  EXPECT_EQ(loadError(), "image probe: DT_STRTAB (" + hex(image().dyn(DT_STRSZ)) +
                             " bytes at 0x100000) lies outside the image " + image().span());
}

TEST_F(HardenedLoaderTest, SymbolTableOutsideTheImage) {
  image().setDyn(DT_SYMTAB, 0x4ff0);
  EXPECT_EQ(loadError(), "image probe: DT_SYMTAB (" + std::to_string(image().dynamicSymbolCount()) +
                             " symbols at 0x4ff0) lies outside the image " + image().span());
}

TEST_F(HardenedLoaderTest, RelocationTablesOutsideTheImage) {
  uint64_t relasz = image().dyn(DT_RELASZ);
  image().setDyn(DT_RELA, 0x4ff0);
  EXPECT_EQ(loadError(), "image probe: DT_RELA table (" + hex(relasz) +
                             " bytes at 0x4ff0) lies outside the image " + image().span());
  image_.emplace(readImage("loader_probe"));
  image().setDyn(DT_PLTRELSZ, 24ull << 32);
  EXPECT_EQ(loadError(), "image probe: DT_JMPREL table (0x1800000000 bytes at " +
                             hex(image().dyn(DT_JMPREL)) + ") lies outside the image " + image().span());
  image_.emplace(readImage("loader_probe"));
  image().setDyn(DT_RELASZ, relasz - 1);
  EXPECT_EQ(loadError(), "image probe: DT_RELA table size " + hex(relasz - 1) +
                             " is not a whole number of 24-byte entries");
}

TEST_F(HardenedLoaderTest, InitAndFiniArraysOutsideTheImage) {
  image().setDyn(DT_INIT_ARRAYSZ, 0x100000);
  EXPECT_EQ(loadError(), "image probe: DT_INIT_ARRAY (0x100000 bytes at " + hex(image().dyn(DT_INIT_ARRAY)) +
                             ") lies outside the image " + image().span());
  image_.emplace(readImage("loader_probe"));
  image().setDyn(DT_FINI_ARRAY, ~0ull - 7);
  EXPECT_EQ(loadError(),
            "image probe: DT_FINI_ARRAY (0x8 bytes at 0xfffffffffffffff8) lies outside the image " +
                image().span());
}

TEST_F(HardenedLoaderTest, RelocationPastTheEndOfTheImage) {
  // An 8-byte store that starts inside the image but crosses its end.
  std::string span = image().span();
  uint64_t hi = std::stoull(span.substr(span.find(", ") + 2), nullptr, 16);
  image().edit<Elf64_Rela>(image().relaOffset(DT_RELA, 3), [&](Elf64_Rela &r) { r.r_offset = hi - 4; });
  EXPECT_EQ(loadError(),
            "image probe: relocation 3 (DT_RELA) at " + hex(hi - 4) + " lies outside the image " + span);
}

TEST_F(HardenedLoaderTest, RelocationSymbolIndexOutOfRange) {
  image().edit<Elf64_Rela>(image().relaOffset(DT_JMPREL, 1),
                           [](Elf64_Rela &r) { r.r_info = ELF64_R_INFO(999, ELF64_R_TYPE(r.r_info)); });
  EXPECT_EQ(loadError(), "image probe: relocation 1 (DT_JMPREL) refers to symbol 999, but the image has " +
                             std::to_string(image().dynamicSymbolCount()) + " dynamic symbols");
}

TEST_F(HardenedLoaderTest, SymbolNameOutsideTheStringTable) {
  auto [index, off] = image().dynamicSymbol("snprintf");
  image().edit<Elf64_Sym>(off, [](Elf64_Sym &s) { s.st_name = 0x100000; });
  EXPECT_EQ(loadError(), "image probe: dynamic symbol " + std::to_string(index) +
                             " name at string offset 0x100000 lies outside DT_STRTAB (" +
                             hex(image().dyn(DT_STRSZ)) + " bytes)");
}

TEST_F(HardenedLoaderTest, UnterminatedString) {
  // Cut the string table in the middle of the first DT_NEEDED name.
  uint64_t name = image().dyn(DT_NEEDED);
  image().setDyn(DT_STRSZ, name + 3);
  EXPECT_EQ(loadError(), "image probe: DT_NEEDED name at string offset " + hex(name) +
                             " is not NUL-terminated inside DT_STRTAB");
}

TEST_F(HardenedLoaderTest, DefinedSymbolOutsideTheImage) {
  auto [index, off] = image().dynamicSymbol("probe_global");
  image().edit<Elf64_Sym>(off, [](Elf64_Sym &s) { s.st_value = 0x7ffff000; });
  EXPECT_EQ(loadError(),
            "image probe: dynamic symbol 'probe_global' (0x4 bytes at 0x7ffff000) lies outside the image " +
                image().span());
}

TEST_F(HardenedLoaderTest, FunctionSymbolOutsideTheCode) {
  // The image's one defined function is its kernel: move it onto data.
  Elf64_Shdr dynsym = image().section(".dynsym");
  std::string kernel;
  for (uint64_t i = 1; i < dynsym.sh_size / sizeof(Elf64_Sym); ++i) {
    uint64_t symOff = dynsym.sh_offset + i * sizeof(Elf64_Sym);
    auto s = image().get<Elf64_Sym>(symOff);
    if (ELF64_ST_TYPE(s.st_info) == STT_FUNC && s.st_shndx != SHN_UNDEF) {
      kernel = image().bytes().data() + image().fileOffset(image().dyn(DT_STRTAB)) + s.st_name;
      image().edit<Elf64_Sym>(symOff, [&](Elf64_Sym &sym) { sym.st_value = image().dataAddress(); });
      break;
    }
  }
  ASSERT_FALSE(kernel.empty());
  EXPECT_EQ(loadError(), "image probe: function '" + kernel + "' at " + hex(image().dataAddress()) +
                             " is not in an executable segment");
}

TEST_F(HardenedLoaderTest, EhFrameOutsideTheImage) {
  uint64_t size = image().section(".eh_frame").sh_size;
  image().edit<Elf64_Shdr>(image().sectionHeaderOffset(".eh_frame"),
                           [](Elf64_Shdr &sh) { sh.sh_addr = 0x100000; });
  EXPECT_EQ(loadError(), "image probe: .eh_frame (" + hex(size) +
                             " bytes at 0x100000) lies outside the image " + image().span());
}

TEST_F(HardenedLoaderTest, EhFrameRecordLongerThanTheSection) {
  Elf64_Shdr eh = image().section(".eh_frame");
  image().set<uint32_t>(eh.sh_offset, 0x7fffff00);
  EXPECT_EQ(loadError(), "image probe: .eh_frame record at " + hex(eh.sh_addr) +
                             " has length 0x7fffff00, which does not fit the section");
}

TEST_F(HardenedLoaderTest, EhFrameWithoutTerminator) {
  // The section ends right after its first record (a CIE), before the zero terminator.
  Elf64_Shdr eh = image().section(".eh_frame");
  uint32_t cieLength = image().get<uint32_t>(eh.sh_offset);
  image().edit<Elf64_Shdr>(image().sectionHeaderOffset(".eh_frame"),
                           [&](Elf64_Shdr &sh) { sh.sh_size = 4 + cieLength; });
  EXPECT_EQ(loadError(), "image probe: .eh_frame record at " + hex(eh.sh_addr + 4 + cieLength) +
                             " runs past the end of the section (no zero terminator)");
}

TEST_F(HardenedLoaderTest, EhFrameDescribingCodeOutsideTheImage) {
  // The first FDE follows the first CIE; its pc-relative start moves far away.
  Elf64_Shdr eh = image().section(".eh_frame");
  uint64_t fde = eh.sh_offset + 4 + image().get<uint32_t>(eh.sh_offset);
  ASSERT_NE(image().get<uint32_t>(fde + 4), 0u) << "second record is not an FDE";
  image().set<int32_t>(fde + 8, 0x40000000);
  uint64_t fdeAddr = eh.sh_addr + (fde - eh.sh_offset);
  uint32_t range = image().get<uint32_t>(fde + 12);
  EXPECT_EQ(loadError(), "image probe: .eh_frame record at " + hex(fdeAddr) + " is an FDE for [" +
                             hex(fdeAddr + 8 + 0x40000000) + ", +" + hex(range) +
                             "), which is not code of this image");
}

TEST_F(HardenedLoaderTest, InitFunctionOutsideTheCode) {
  image().setDyn(DT_INIT, image().dataAddress());
  EXPECT_EQ(loadError(), "image probe: DT_INIT function at " + hex(image().dataAddress()) +
                             " is not in an executable segment");
}

TEST_F(HardenedLoaderTest, FiniFunctionOutsideTheCode) {
  image().setDyn(DT_FINI, 0x7fff0000);
  EXPECT_EQ(loadError(), "image probe: DT_FINI function at 0x7fff0000 is not in an executable segment");
}

TEST_F(HardenedLoaderTest, InitArrayEntryOutsideTheCode) {
  // The entry is filled by a RELATIVE relocation: point it at data.
  uint64_t reloc = image().relaAt(image().dyn(DT_INIT_ARRAY));
  image().edit<Elf64_Rela>(image().relaOffset(DT_RELA, reloc),
                           [&](Elf64_Rela &r) { r.r_addend = int64_t(image().dataAddress()); });
  EXPECT_EQ(loadError(), "image probe: DT_INIT_ARRAY entry 0 at " + hex(image().dataAddress()) +
                             " is not in an executable segment");
}

TEST_F(HardenedLoaderTest, FiniArrayEntryOutsideTheCode) {
  uint64_t reloc = image().relaAt(image().dyn(DT_FINI_ARRAY));
  image().edit<Elf64_Rela>(image().relaOffset(DT_RELA, reloc), [](Elf64_Rela &r) { r.r_addend = 0x123456; });
  EXPECT_EQ(loadError(), "image probe: DT_FINI_ARRAY entry 0 at 0x123456 is not in an executable segment");
}

TEST_F(HardenedLoaderTest, IrelativeResolverOutsideTheCode) {
  uint64_t reloc = image().relaAt(image().dyn(DT_INIT_ARRAY));
  image().edit<Elf64_Rela>(image().relaOffset(DT_RELA, reloc), [&](Elf64_Rela &r) {
    r.r_info = ELF64_R_INFO(0, R_X86_64_IRELATIVE);
    r.r_addend = int64_t(image().dataAddress());
  });
  EXPECT_EQ(loadError(), "image probe: relocation " + std::to_string(reloc) + " (DT_RELA) at " +
                             hex(image().dyn(DT_INIT_ARRAY)) + ": IRELATIVE resolver " +
                             hex(image().dataAddress()) + " is not in an executable segment");
}

TEST_F(HardenedLoaderTest, RelroOutsideTheImage) {
  size_t seg = image().phdrIndex(PT_GNU_RELRO);
  image().edit<Elf64_Phdr>(image().phdrOffset(seg), [](Elf64_Phdr &ph) { ph.p_memsz = 1ull << 30; });
  EXPECT_EQ(loadError(), "image probe: PT_GNU_RELRO segment (0x40000000 bytes at " +
                             hex(image().phdr(seg).p_vaddr) + ") lies outside the image " + image().span());
}

TEST_F(HardenedLoaderTest, InitArrayInAnUnreadableSegment) {
  // Found by fuzz_elf_image_loader: the array was read after its pages became PROT_NONE.
  size_t seg = image().phdrIndex(PT_LOAD, PF_W);
  image().edit<Elf64_Phdr>(image().phdrOffset(seg), [](Elf64_Phdr &ph) { ph.p_flags = PF_W; });
  EXPECT_EQ(loadError(), "image probe: DT_INIT_ARRAY (0x8 bytes at " + hex(image().dyn(DT_INIT_ARRAY)) +
                             ") is not in a readable segment");
}

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

std::string hex(uint64_t V) {
  char Buf[32];
  std::snprintf(Buf, sizeof Buf, "0x%llx", static_cast<unsigned long long>(V));
  return Buf;
}

/// A device image's bytes with typed access to the fields the tests corrupt.
class PatchableImage {
public:
  explicit PatchableImage(std::vector<char> Bytes) : Bytes(std::move(Bytes)) {}
  std::vector<char> &bytes() { return Bytes; }

  template <typename T> T get(uint64_t Off) const {
    T V;
    std::memcpy(&V, Bytes.data() + Off, sizeof V);
    return V;
  }
  template <typename T> void set(uint64_t Off, const T &V) { std::memcpy(Bytes.data() + Off, &V, sizeof V); }
  /// Reads, changes and writes back the T at file offset `off`.
  template <typename T> void edit(uint64_t Off, const std::function<void(T &)> &Change) {
    T V = get<T>(Off);
    Change(V);
    set(Off, V);
  }

  Elf64_Ehdr ehdr() const { return get<Elf64_Ehdr>(0); }
  uint64_t phdrOffset(size_t I) const { return ehdr().e_phoff + I * sizeof(Elf64_Phdr); }
  Elf64_Phdr phdr(size_t I) const { return get<Elf64_Phdr>(phdrOffset(I)); }
  /// Index of the first program header of `type` whose flags include `Flags`.
  size_t phdrIndex(uint32_t Type, uint32_t Flags = 0) const {
    for (size_t I = 0; I < ehdr().e_phnum; ++I)
      if (phdr(I).p_type == Type && (phdr(I).p_flags & Flags) == Flags)
        return I;
    ADD_FAILURE() << "no program header of type " << Type;
    return 0;
  }
  /// File offset of `vaddr`, through the PT_LOAD segment holding it.
  uint64_t fileOffset(uint64_t Vaddr) const {
    for (size_t I = 0; I < ehdr().e_phnum; ++I) {
      Elf64_Phdr Ph = phdr(I);
      if (Ph.p_type == PT_LOAD && Vaddr >= Ph.p_vaddr && Vaddr < Ph.p_vaddr + Ph.p_filesz)
        return Ph.p_offset + (Vaddr - Ph.p_vaddr);
    }
    ADD_FAILURE() << "vaddr " << hex(Vaddr) << " is not in the file";
    return 0;
  }
  /// File offset of the dynamic entry with `tag`.
  uint64_t dynOffset(int64_t Tag) const {
    Elf64_Phdr Dyn = phdr(phdrIndex(PT_DYNAMIC));
    for (uint64_t Off = Dyn.p_offset; Off < Dyn.p_offset + Dyn.p_filesz; Off += sizeof(Elf64_Dyn)) {
      auto D = get<Elf64_Dyn>(Off);
      if (D.d_tag == Tag)
        return Off;
      if (D.d_tag == DT_NULL)
        break;
    }
    ADD_FAILURE() << "no dynamic entry with tag " << Tag;
    return 0;
  }
  uint64_t dyn(int64_t Tag) const { return get<Elf64_Dyn>(dynOffset(Tag)).d_un.d_val; }
  void setDyn(int64_t Tag, uint64_t Value) {
    edit<Elf64_Dyn>(dynOffset(Tag), [&](Elf64_Dyn &D) { D.d_un.d_val = Value; });
  }
  /// File offset of the header of the section called `name`.
  uint64_t sectionHeaderOffset(const std::string &Name) const {
    Elf64_Ehdr Eh = ehdr();
    auto Shstr = get<Elf64_Shdr>(Eh.e_shoff + Eh.e_shstrndx * sizeof(Elf64_Shdr));
    for (size_t I = 0; I < Eh.e_shnum; ++I) {
      uint64_t Off = Eh.e_shoff + I * sizeof(Elf64_Shdr);
      if (Name == Bytes.data() + Shstr.sh_offset + get<Elf64_Shdr>(Off).sh_name)
        return Off;
    }
    ADD_FAILURE() << "no section " << Name;
    return 0;
  }
  Elf64_Shdr section(const std::string &Name) const { return get<Elf64_Shdr>(sectionHeaderOffset(Name)); }
  /// File offset of entry `I` of the relocation table at DT_RELA or DT_JMPREL.
  uint64_t relaOffset(int64_t TableTag, uint64_t I) const {
    return fileOffset(dyn(TableTag)) + I * sizeof(Elf64_Rela);
  }
  /// Index in DT_RELA of the relocation that patches `vaddr`.
  uint64_t relaAt(uint64_t Vaddr) const {
    for (uint64_t I = 0; I < dyn(DT_RELASZ) / sizeof(Elf64_Rela); ++I)
      if (get<Elf64_Rela>(relaOffset(DT_RELA, I)).r_offset == Vaddr)
        return I;
    ADD_FAILURE() << "no relocation at " << hex(Vaddr);
    return 0;
  }
  /// Index and file offset of the dynamic symbol called `name`.
  std::pair<uint64_t, uint64_t> dynamicSymbol(const std::string &Name) const {
    Elf64_Shdr Dynsym = section(".dynsym");
    uint64_t Strtab = fileOffset(dyn(DT_STRTAB));
    for (uint64_t I = 1; I < Dynsym.sh_size / sizeof(Elf64_Sym); ++I) {
      uint64_t Off = Dynsym.sh_offset + I * sizeof(Elf64_Sym);
      if (Name == Bytes.data() + Strtab + get<Elf64_Sym>(Off).st_name)
        return {I, Off};
    }
    ADD_FAILURE() << "no dynamic symbol " << Name;
    return {0, 0};
  }
  uint64_t dynamicSymbolCount() const { return section(".dynsym").sh_size / sizeof(Elf64_Sym); }
  /// The loaded span "[lo, hi)" as the loader prints it.
  std::string span() const {
    uint64_t Lo = UINT64_MAX, Hi = 0;
    for (size_t I = 0; I < ehdr().e_phnum; ++I) {
      Elf64_Phdr Ph = phdr(I);
      if (Ph.p_type == PT_LOAD && Ph.p_memsz) {
        Lo = std::min<uint64_t>(Lo, Ph.p_vaddr & ~0xfffull);
        Hi = std::max<uint64_t>(Hi, (Ph.p_vaddr + Ph.p_memsz + 0xfff) & ~0xfffull);
      }
    }
    return "[" + hex(Lo) + ", " + hex(Hi) + ")";
  }
  /// A read-only, non-executable vaddr inside the image (.rodata).
  uint64_t dataAddress() const { return section(".rodata").sh_addr; }

private:
  std::vector<char> Bytes;
};

class HardenedLoaderTest : public LoaderTest {
protected:
  void SetUp() override {
    LoaderTest::SetUp();
    Image.emplace(readImage("loader_probe"));
  }
  PatchableImage &image() { return *Image; }

  /// Loads the (patched) image as "probe"; returns its error text, or
  /// "loaded" when it loaded. Checks that no memory stays allocated.
  std::string loadError() {
    auto Img = ElfImageLoader::load(Image->bytes(), "probe", Env);
    std::string Result = Img ? "loaded" : llvm::toString(Img.takeError());
    if (Img)
      Img->reset();
    EXPECT_EQ(Alloc.bytesInUse(), 0u) << "memory left allocated after: " << Result;
    // ours-host runs the same checks before dlopen (check-only mode): it must
    // refuse exactly what the loader refuses, with the same words. Imports are
    // the dynamic linker's business there, so an undefined symbol passes, and
    // it has its own memory, so a full device arena does not matter.
    llvm::Error Checked = ElfImageLoader::validate(Image->bytes(), "probe");
    std::string Validated = Checked ? llvm::toString(std::move(Checked)) : "loaded";
    if (Result.find("undefined symbol") == std::string::npos &&
        Result.find("bytes of device memory") == std::string::npos)
      EXPECT_EQ(Validated, Result) << "ElfImageLoader::validate disagrees with load";
    return Result;
  }

  std::optional<PatchableImage> Image;
};

} // namespace

TEST_F(HardenedLoaderTest, UntouchedImageLoads) { EXPECT_EQ(loadError(), "loaded"); }

TEST_F(HardenedLoaderTest, TruncatedSegmentIsOutsideTheFile) {
  size_t Seg = image().phdrIndex(PT_LOAD, PF_W);
  image().bytes().resize(image().phdr(Seg).p_offset + 16);
  EXPECT_EQ(loadError(), "image probe: PT_LOAD segment " + std::to_string(Seg) + " lies outside the file");
}

TEST_F(HardenedLoaderTest, SegmentWrappingAroundIsRejected) {
  size_t Seg = image().phdrIndex(PT_LOAD, PF_W);
  image().edit<Elf64_Phdr>(image().phdrOffset(Seg), [](Elf64_Phdr &Ph) { Ph.p_vaddr = ~0ull - 0xfff; });
  EXPECT_EQ(loadError(), "image probe: PT_LOAD segment " + std::to_string(Seg) + " (" +
                             hex(image().phdr(Seg).p_memsz) +
                             " bytes at 0xfffffffffffff000) is not a plausible device image segment "
                             "(at most 0x40000000 bytes below 0x800000000000)");
}

TEST_F(HardenedLoaderTest, AbsurdSegmentSizeIsRejected) {
  size_t Seg = image().phdrIndex(PT_LOAD, PF_W);
  image().edit<Elf64_Phdr>(image().phdrOffset(Seg), [](Elf64_Phdr &Ph) { Ph.p_memsz = 1ull << 40; });
  EXPECT_EQ(loadError(), "image probe: PT_LOAD segment " + std::to_string(Seg) + " (0x10000000000 bytes at " +
                             hex(image().phdr(Seg).p_vaddr) +
                             ") is not a plausible device image segment "
                             "(at most 0x40000000 bytes below 0x800000000000)");
}

TEST_F(HardenedLoaderTest, SegmentsSpanningTooMuchAreRejected) {
  size_t Seg = image().phdrIndex(PT_LOAD, PF_W);
  image().edit<Elf64_Phdr>(image().phdrOffset(Seg), [](Elf64_Phdr &Ph) { Ph.p_vaddr += 1ull << 40; });
  Elf64_Phdr Ph = image().phdr(Seg);
  uint64_t Hi = (Ph.p_vaddr + Ph.p_memsz + 0xfff) & ~0xfffull;
  EXPECT_EQ(loadError(), "image probe: PT_LOAD segments span " + hex(Hi) + " bytes ([0x0, " + hex(Hi) +
                             ")), more than the loader's limit of 0x40000000");
}

TEST_F(HardenedLoaderTest, LargeSegmentFailsInTheAllocatorQuickly) {
  // 768 MiB is within the loader's limit but not the 64 MiB test arena.
  size_t Seg = image().phdrIndex(PT_LOAD, PF_W);
  image().edit<Elf64_Phdr>(image().phdrOffset(Seg), [](Elf64_Phdr &Ph) { Ph.p_memsz = 768ull << 20; });
  Elf64_Phdr Ph = image().phdr(Seg);
  uint64_t Hi = (Ph.p_vaddr + Ph.p_memsz + 0xfff) & ~0xfffull;
  EXPECT_EQ(loadError(), "image probe: cannot allocate " + std::to_string(Hi) +
                             " bytes of device memory: test arena exhausted");
}

TEST_F(HardenedLoaderTest, DynamicSegmentOutsideTheImage) {
  size_t Seg = image().phdrIndex(PT_DYNAMIC);
  image().edit<Elf64_Phdr>(image().phdrOffset(Seg), [](Elf64_Phdr &Ph) { Ph.p_vaddr = 0x100000; });
  EXPECT_EQ(loadError(), "image probe: PT_DYNAMIC segment (" + hex(image().phdr(Seg).p_memsz) +
                             " bytes at 0x100000) lies outside the loaded image " + image().span());
}

TEST_F(HardenedLoaderTest, DynamicSectionWithoutTerminator) {
  size_t Seg = image().phdrIndex(PT_DYNAMIC);
  image().edit<Elf64_Phdr>(image().phdrOffset(Seg), [](Elf64_Phdr &Ph) { Ph.p_memsz = sizeof(Elf64_Dyn); });
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
  uint64_t Relasz = image().dyn(DT_RELASZ);
  image().setDyn(DT_RELA, 0x4ff0);
  EXPECT_EQ(loadError(), "image probe: DT_RELA table (" + hex(Relasz) +
                             " bytes at 0x4ff0) lies outside the image " + image().span());
  Image.emplace(readImage("loader_probe"));
  image().setDyn(DT_PLTRELSZ, 24ull << 32);
  EXPECT_EQ(loadError(), "image probe: DT_JMPREL table (0x1800000000 bytes at " +
                             hex(image().dyn(DT_JMPREL)) + ") lies outside the image " + image().span());
  Image.emplace(readImage("loader_probe"));
  image().setDyn(DT_RELASZ, Relasz - 1);
  EXPECT_EQ(loadError(), "image probe: DT_RELA table size " + hex(Relasz - 1) +
                             " is not a whole number of 24-byte entries");
}

TEST_F(HardenedLoaderTest, InitAndFiniArraysOutsideTheImage) {
  image().setDyn(DT_INIT_ARRAYSZ, 0x100000);
  EXPECT_EQ(loadError(), "image probe: DT_INIT_ARRAY (0x100000 bytes at " + hex(image().dyn(DT_INIT_ARRAY)) +
                             ") lies outside the image " + image().span());
  Image.emplace(readImage("loader_probe"));
  image().setDyn(DT_FINI_ARRAY, ~0ull - 7);
  EXPECT_EQ(loadError(),
            "image probe: DT_FINI_ARRAY (0x8 bytes at 0xfffffffffffffff8) lies outside the image " +
                image().span());
}

TEST_F(HardenedLoaderTest, RelocationPastTheEndOfTheImage) {
  // An 8-byte store that starts inside the image but crosses its end.
  std::string Span = image().span();
  uint64_t Hi = std::stoull(Span.substr(Span.find(", ") + 2), nullptr, 16);
  image().edit<Elf64_Rela>(image().relaOffset(DT_RELA, 3), [&](Elf64_Rela &R) { R.r_offset = Hi - 4; });
  EXPECT_EQ(loadError(),
            "image probe: relocation 3 (DT_RELA) at " + hex(Hi - 4) + " lies outside the image " + Span);
}

TEST_F(HardenedLoaderTest, RelocationSymbolIndexOutOfRange) {
  image().edit<Elf64_Rela>(image().relaOffset(DT_JMPREL, 1),
                           [](Elf64_Rela &R) { R.r_info = ELF64_R_INFO(999, ELF64_R_TYPE(R.r_info)); });
  EXPECT_EQ(loadError(), "image probe: relocation 1 (DT_JMPREL) refers to symbol 999, but the image has " +
                             std::to_string(image().dynamicSymbolCount()) + " dynamic symbols");
}

TEST_F(HardenedLoaderTest, SymbolNameOutsideTheStringTable) {
  auto [index, off] = image().dynamicSymbol("snprintf");
  image().edit<Elf64_Sym>(off, [](Elf64_Sym &S) { S.st_name = 0x100000; });
  EXPECT_EQ(loadError(), "image probe: dynamic symbol " + std::to_string(index) +
                             " name at string offset 0x100000 lies outside DT_STRTAB (" +
                             hex(image().dyn(DT_STRSZ)) + " bytes)");
}

TEST_F(HardenedLoaderTest, UnterminatedString) {
  // Cut the string table in the middle of the first DT_NEEDED name.
  uint64_t Name = image().dyn(DT_NEEDED);
  image().setDyn(DT_STRSZ, Name + 3);
  EXPECT_EQ(loadError(), "image probe: DT_NEEDED name at string offset " + hex(Name) +
                             " is not NUL-terminated inside DT_STRTAB");
}

TEST_F(HardenedLoaderTest, DefinedSymbolOutsideTheImage) {
  auto [index, off] = image().dynamicSymbol("probe_global");
  image().edit<Elf64_Sym>(off, [](Elf64_Sym &S) { S.st_value = 0x7ffff000; });
  EXPECT_EQ(loadError(),
            "image probe: dynamic symbol 'probe_global' (0x4 bytes at 0x7ffff000) lies outside the image " +
                image().span());
}

TEST_F(HardenedLoaderTest, FunctionSymbolOutsideTheCode) {
  // The image's one defined function is its kernel: move it onto data.
  Elf64_Shdr Dynsym = image().section(".dynsym");
  std::string Kernel;
  for (uint64_t I = 1; I < Dynsym.sh_size / sizeof(Elf64_Sym); ++I) {
    uint64_t SymOff = Dynsym.sh_offset + I * sizeof(Elf64_Sym);
    auto S = image().get<Elf64_Sym>(SymOff);
    if (ELF64_ST_TYPE(S.st_info) == STT_FUNC && S.st_shndx != SHN_UNDEF) {
      Kernel = image().bytes().data() + image().fileOffset(image().dyn(DT_STRTAB)) + S.st_name;
      image().edit<Elf64_Sym>(SymOff, [&](Elf64_Sym &Sym) { Sym.st_value = image().dataAddress(); });
      break;
    }
  }
  ASSERT_FALSE(Kernel.empty());
  EXPECT_EQ(loadError(), "image probe: function '" + Kernel + "' at " + hex(image().dataAddress()) +
                             " is not in an executable segment");
}

TEST_F(HardenedLoaderTest, EhFrameOutsideTheImage) {
  uint64_t Size = image().section(".eh_frame").sh_size;
  image().edit<Elf64_Shdr>(image().sectionHeaderOffset(".eh_frame"),
                           [](Elf64_Shdr &Sh) { Sh.sh_addr = 0x100000; });
  EXPECT_EQ(loadError(), "image probe: .eh_frame (" + hex(Size) +
                             " bytes at 0x100000) lies outside the image " + image().span());
}

TEST_F(HardenedLoaderTest, EhFrameRecordLongerThanTheSection) {
  Elf64_Shdr Eh = image().section(".eh_frame");
  image().set<uint32_t>(Eh.sh_offset, 0x7fffff00);
  EXPECT_EQ(loadError(), "image probe: .eh_frame record at " + hex(Eh.sh_addr) +
                             " has length 0x7fffff00, which does not fit the section");
}

TEST_F(HardenedLoaderTest, EhFrameWithoutTerminator) {
  // The section ends right after its first record (a CIE), before the zero terminator.
  Elf64_Shdr Eh = image().section(".eh_frame");
  uint32_t CieLength = image().get<uint32_t>(Eh.sh_offset);
  image().edit<Elf64_Shdr>(image().sectionHeaderOffset(".eh_frame"),
                           [&](Elf64_Shdr &Sh) { Sh.sh_size = 4 + CieLength; });
  EXPECT_EQ(loadError(), "image probe: .eh_frame record at " + hex(Eh.sh_addr + 4 + CieLength) +
                             " runs past the end of the section (no zero terminator)");
}

TEST_F(HardenedLoaderTest, EhFrameDescribingCodeOutsideTheImage) {
  // The first FDE follows the first CIE; its pc-relative start moves far away.
  Elf64_Shdr Eh = image().section(".eh_frame");
  uint64_t Fde = Eh.sh_offset + 4 + image().get<uint32_t>(Eh.sh_offset);
  ASSERT_NE(image().get<uint32_t>(Fde + 4), 0u) << "second record is not an FDE";
  image().set<int32_t>(Fde + 8, 0x40000000);
  uint64_t FdeAddr = Eh.sh_addr + (Fde - Eh.sh_offset);
  uint32_t Range = image().get<uint32_t>(Fde + 12);
  EXPECT_EQ(loadError(), "image probe: .eh_frame record at " + hex(FdeAddr) + " is an FDE for [" +
                             hex(FdeAddr + 8 + 0x40000000) + ", +" + hex(Range) +
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
  uint64_t Reloc = image().relaAt(image().dyn(DT_INIT_ARRAY));
  image().edit<Elf64_Rela>(image().relaOffset(DT_RELA, Reloc),
                           [&](Elf64_Rela &R) { R.r_addend = int64_t(image().dataAddress()); });
  EXPECT_EQ(loadError(), "image probe: DT_INIT_ARRAY entry 0 at " + hex(image().dataAddress()) +
                             " is not in an executable segment");
}

TEST_F(HardenedLoaderTest, FiniArrayEntryOutsideTheCode) {
  uint64_t Reloc = image().relaAt(image().dyn(DT_FINI_ARRAY));
  image().edit<Elf64_Rela>(image().relaOffset(DT_RELA, Reloc), [](Elf64_Rela &R) { R.r_addend = 0x123456; });
  EXPECT_EQ(loadError(), "image probe: DT_FINI_ARRAY entry 0 at 0x123456 is not in an executable segment");
}

TEST_F(HardenedLoaderTest, IrelativeResolverOutsideTheCode) {
  uint64_t Reloc = image().relaAt(image().dyn(DT_INIT_ARRAY));
  image().edit<Elf64_Rela>(image().relaOffset(DT_RELA, Reloc), [&](Elf64_Rela &R) {
    R.r_info = ELF64_R_INFO(0, R_X86_64_IRELATIVE);
    R.r_addend = int64_t(image().dataAddress());
  });
  EXPECT_EQ(loadError(), "image probe: relocation " + std::to_string(Reloc) + " (DT_RELA) at " +
                             hex(image().dyn(DT_INIT_ARRAY)) + ": IRELATIVE resolver " +
                             hex(image().dataAddress()) + " is not in an executable segment");
}

TEST_F(HardenedLoaderTest, RelroOutsideTheImage) {
  size_t Seg = image().phdrIndex(PT_GNU_RELRO);
  image().edit<Elf64_Phdr>(image().phdrOffset(Seg), [](Elf64_Phdr &Ph) { Ph.p_memsz = 1ull << 30; });
  EXPECT_EQ(loadError(), "image probe: PT_GNU_RELRO segment (0x40000000 bytes at " +
                             hex(image().phdr(Seg).p_vaddr) + ") lies outside the image " + image().span());
}

TEST_F(HardenedLoaderTest, InitArrayInAnUnreadableSegment) {
  // Found by fuzz_elf_image_loader: the array was read after its pages became PROT_NONE.
  size_t Seg = image().phdrIndex(PT_LOAD, PF_W);
  image().edit<Elf64_Phdr>(image().phdrOffset(Seg), [](Elf64_Phdr &Ph) { Ph.p_flags = PF_W; });
  EXPECT_EQ(loadError(), "image probe: DT_INIT_ARRAY (0x8 bytes at " + hex(image().dyn(DT_INIT_ARRAY)) +
                             ") is not in a readable segment");
}

TEST_F(HardenedLoaderTest, RelocationIntoAReadOnlySegment) {
  // The data segment and PT_DYNAMIC both marked read-only: the dynamic linker
  // would write the first relocated word into a read-only page.
  size_t Seg = image().phdrIndex(PT_LOAD, PF_W);
  image().edit<Elf64_Phdr>(image().phdrOffset(Seg), [](Elf64_Phdr &Ph) { Ph.p_flags = PF_R; });
  size_t Dyn = image().phdrIndex(PT_DYNAMIC);
  image().edit<Elf64_Phdr>(image().phdrOffset(Dyn), [](Elf64_Phdr &Ph) { Ph.p_flags = PF_R; });
  std::string Error = loadError();
  EXPECT_TRUE(llvm::StringRef(Error).starts_with("image probe: relocation 0 (DT_RELA) at ")) << Error;
  EXPECT_TRUE(llvm::StringRef(Error).ends_with(" is not in a writable segment")) << Error;
}

TEST_F(HardenedLoaderTest, VerneedOfAnotherVersion) {
  uint64_t Verneed = image().dyn(DT_VERNEED);
  ASSERT_NE(Verneed, 0u) << "the probe image needs versioned symbols (glibc's)";
  image().edit<Elf64_Verneed>(image().fileOffset(Verneed), [](Elf64_Verneed &V) { V.vn_version = 2; });
  EXPECT_EQ(loadError(), "image probe: DT_VERNEED record 0 (at " + hex(Verneed) + ") has version 2, not 1");
}

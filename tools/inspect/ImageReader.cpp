// Device images inside a host file: OffloadBinary blobs (.llvm.offloading) and
// raw legacy images, classified by content, with the symbols each defines.
#include "HostFile.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Demangle/Demangle.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Object/ELF.h>
#include <llvm/Object/OffloadBinary.h>
#include <llvm/Support/Endian.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/MathExtras.h>
#include <llvm/Support/MemoryBuffer.h>

#include "ompsim/offload_abi.h"

#include <algorithm>
#include <cstring>
#include <optional>

using namespace llvm;

namespace ompsim::inspect {
namespace {

std::string contentKind(StringRef Image, object::ImageKind Declared) {
  if (Image.starts_with("\x7f"
                        "ELF") &&
      Image.size() >= sizeof(ELFT::Ehdr)) {
    uint16_t Type = support::endian::read16le(Image.data() + 16);
    switch (Type) {
    case ELF::ET_DYN:
      return "elf-shared-object";
    case ELF::ET_REL:
      return "elf-relocatable";
    case ELF::ET_EXEC:
      return "elf-executable";
    default:
      return "elf";
    }
  }
  if (Image.starts_with("BC\xc0\xde") || Image.starts_with("\xde\xc0\x17\x0b"))
    return "bitcode";
  StringRef Name = object::getImageKindName(Declared);
  return Name.empty() ? "unknown" : Name.str();
}

/// Reads the global symbols a device image defines, so indirect entries can be checked.
void readImageSymbols(StringRef Image, DeviceImage &Out) {
  if (Out.Kind.starts_with("elf")) {
    Expected<ElfFile> Elf = ElfFile::create(Image);
    if (!Elf || Image.size() < 6 || Image[4] != ELF::ELFCLASS64 || Image[5] != ELF::ELFDATA2LSB) {
      Out.SymbolsError = Elf ? "not a 64-bit little-endian ELF image" : toString(Elf.takeError());
      return;
    }
    Expected<ArrayRef<Shdr>> Secs = Elf->sections();
    if (!Secs) {
      Out.SymbolsError = toString(Secs.takeError());
      return;
    }
    // A linked image is found through its dynamic symbols; a relocatable one has only .symtab.
    unsigned Want = Elf->getHeader().e_type == ELF::ET_REL ? ELF::SHT_SYMTAB : ELF::SHT_DYNSYM;
    bool Found = false;
    for (const Shdr &Sec : *Secs) {
      if (Sec.sh_type != Want)
        continue;
      Found = true;
      Expected<typename ElfFile::Elf_Sym_Range> Syms = Elf->symbols(&Sec);
      Expected<StringRef> Strtab = Elf->getStringTableForSymtab(Sec);
      if (!Syms || !Strtab) {
        Out.SymbolsError = errorsOf(Syms.takeError(), Strtab.takeError());
        return;
      }
      for (const Sym &S : *Syms) {
        if (S.st_shndx == ELF::SHN_UNDEF || S.getBinding() == ELF::STB_LOCAL)
          continue;
        if (Expected<StringRef> N = S.getName(*Strtab); N && !N->empty())
          Out.DefinedSymbols.push_back(N->str());
        else if (!N)
          consumeError(N.takeError());
      }
    }
    if (!Found) {
      Out.SymbolsError =
          Want == ELF::SHT_DYNSYM ? "image has no dynamic symbol table" : "image has no symbol table";
      return;
    }
  } else if (Out.Kind == "bitcode") {
    LLVMContext Ctx;
    Expected<std::unique_ptr<Module>> Mod = getLazyBitcodeModule(MemoryBufferRef(Image, "device image"), Ctx);
    if (!Mod) {
      Out.SymbolsError = toString(Mod.takeError());
      return;
    }
    for (const GlobalValue &Gv : (*Mod)->global_values())
      if (!Gv.isDeclaration() && !Gv.hasLocalLinkage())
        Out.DefinedSymbols.push_back(Gv.getName().str());
  } else {
    return; // cubin, PTX, ...: nothing ompsim can check
  }
  std::sort(Out.DefinedSymbols.begin(), Out.DefinedSymbols.end());
  Out.SymbolsKnown = true;
}

} // namespace

Error readOffloadBinaries(const HostFile &File, const Shdr &Sec, std::vector<DeviceImage> &Images) {
  Expected<ArrayRef<uint8_t>> Bytes = File.contents(Sec);
  if (!Bytes)
    return fail("cannot read " + File.sectionName(Sec) + ": " + toString(Bytes.takeError()));
  StringRef All(reinterpret_cast<const char *>(Bytes->data()), Bytes->size());
  using Header = object::OffloadBinary::Header;
  uint64_t Pos = 0;
  while (Pos < All.size()) {
    StringRef Rest = All.drop_front(Pos);
    if (Rest.find_first_not_of('\0') == StringRef::npos)
      break; // alignment padding after the last blob
    if (Rest.size() < sizeof(Header))
      return fail("device image at offset " + hex(Pos) + " of " + kImageSection +
                  " is truncated: " + Twine(Rest.size()) + " bytes, header needs " + Twine(sizeof(Header)));
    if (!Rest.starts_with("\x10\xff\x10\xad"))
      return fail("device image at offset " + hex(Pos) + " of " + kImageSection +
                  " lacks the OffloadBinary magic 0x10FF10AD");
    uint64_t Size = support::endian::read64le(Rest.data() + offsetof(Header, Size));
    if (Size < sizeof(Header) || Size > Rest.size())
      return fail("device image at offset " + hex(Pos) + " of " + kImageSection + " claims " + Twine(Size) +
                  " bytes but " + Twine(Rest.size()) + " remain (truncated?)");
    // OffloadBinary wants an 8-byte aligned buffer; a copy guarantees it.
    std::unique_ptr<MemoryBuffer> Copy = MemoryBuffer::getMemBufferCopy(Rest.take_front(Size), "image");
    Expected<std::unique_ptr<object::OffloadBinary>> Bin = object::OffloadBinary::create(*Copy);
    if (!Bin)
      return fail("device image at offset " + hex(Pos) + " of " + kImageSection +
                  " is malformed: " + toString(Bin.takeError()));
    DeviceImage Img;
    Img.Index = unsigned(Images.size());
    StringRef Image = (*Bin)->getImage();
    Img.Kind = contentKind(Image, (*Bin)->getImageKind());
    StringRef Ok = object::getOffloadKindName((*Bin)->getOffloadKind());
    Img.OffloadKind = Ok.empty() ? "none" : Ok.str();
    Img.Triple = (*Bin)->getTriple().str();
    Img.Arch = (*Bin)->getArch().str();
    Img.Size = Image.size();
    Img.FileOffset = Sec.sh_offset + Pos + uint64_t(Image.data() - Copy->getBufferStart());
    readImageSymbols(Image, Img);
    Images.push_back(std::move(Img));
    Pos += alignTo(Size, object::OffloadBinary::getAlignment());
  }
  return Error::success();
}

/// Old wrappers (LLVM <= 16) embedded raw images under `.omp_offloading.device_image*` symbols.
Error readRawLegacyImages(const HostFile &File, std::vector<DeviceImage> &Images) {
  for (const Shdr &Sec : File.sections()) {
    if (Sec.sh_type != ELF::SHT_SYMTAB)
      continue;
    auto Syms = File.elf().symbols(&Sec);
    auto Strtab = File.elf().getStringTableForSymtab(Sec);
    if (!Syms || !Strtab) {
      if (!Syms)
        consumeError(Syms.takeError());
      if (!Strtab)
        consumeError(Strtab.takeError());
      continue;
    }
    for (const Sym &S : *Syms) {
      Expected<StringRef> N = S.getName(*Strtab);
      if (!N) {
        consumeError(N.takeError());
        continue;
      }
      if (!N->starts_with(".omp_offloading.device_image") || N->ends_with("s") || S.st_size == 0 ||
          S.st_shndx == ELF::SHN_UNDEF || S.st_shndx >= ELF::SHN_LORESERVE)
        continue;
      Location Loc{File.relocatable() ? unsigned(S.st_shndx) : 0u, S.st_value};
      Expected<ArrayRef<uint8_t>> Bytes = File.bytesAt(Loc);
      if (!Bytes || Bytes->size() < S.st_size) {
        if (!Bytes)
          consumeError(Bytes.takeError());
        return fail("device image symbol " + *N + " lies outside the file's contents");
      }
      StringRef Image(reinterpret_cast<const char *>(Bytes->data()), S.st_size);
      if (Image.starts_with("\x10\xff\x10\xad"))
        continue; // an OffloadBinary: covered by .llvm.offloading
      DeviceImage Img;
      Img.Index = unsigned(Images.size());
      Img.Kind = contentKind(Image, object::IMG_None);
      Img.OffloadKind = "openmp";
      Img.Triple = N->drop_front(strlen(".omp_offloading.device_image")).ltrim('.').str();
      Img.Size = S.st_size;
      readImageSymbols(Image, Img);
      Images.push_back(std::move(Img));
    }
  }
  return Error::success();
}

} // namespace ompsim::inspect

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

std::string contentKind(StringRef image, object::ImageKind declared) {
  if (image.starts_with("\x7f" "ELF") && image.size() >= sizeof(ELFT::Ehdr)) {
    uint16_t type = support::endian::read16le(image.data() + 16);
    switch (type) {
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
  if (image.starts_with("BC\xc0\xde") || image.starts_with("\xde\xc0\x17\x0b"))
    return "bitcode";
  StringRef name = object::getImageKindName(declared);
  return name.empty() ? "unknown" : name.str();
}

/// Reads the global symbols a device image defines, so indirect entries can be checked.
void readImageSymbols(StringRef image, DeviceImage &out) {
  if (out.kind.starts_with("elf")) {
    Expected<ElfFile> elf = ElfFile::create(image);
    if (!elf || image.size() < 6 || image[4] != ELF::ELFCLASS64 || image[5] != ELF::ELFDATA2LSB) {
      out.symbolsError = elf ? "not a 64-bit little-endian ELF image" : toString(elf.takeError());
      return;
    }
    Expected<ArrayRef<Shdr>> secs = elf->sections();
    if (!secs) {
      out.symbolsError = toString(secs.takeError());
      return;
    }
    // A linked image is found through its dynamic symbols; a relocatable one has only .symtab.
    unsigned want = elf->getHeader().e_type == ELF::ET_REL ? ELF::SHT_SYMTAB : ELF::SHT_DYNSYM;
    bool found = false;
    for (const Shdr &sec : *secs) {
      if (sec.sh_type != want)
        continue;
      found = true;
      Expected<typename ElfFile::Elf_Sym_Range> syms = elf->symbols(&sec);
      Expected<StringRef> strtab = elf->getStringTableForSymtab(sec);
      if (!syms || !strtab) {
        out.symbolsError = errorsOf(syms.takeError(), strtab.takeError());
        return;
      }
      for (const Sym &s : *syms) {
        if (s.st_shndx == ELF::SHN_UNDEF || s.getBinding() == ELF::STB_LOCAL)
          continue;
        if (Expected<StringRef> n = s.getName(*strtab); n && !n->empty())
          out.definedSymbols.push_back(n->str());
        else if (!n)
          consumeError(n.takeError());
      }
    }
    if (!found) {
      out.symbolsError = want == ELF::SHT_DYNSYM ? "image has no dynamic symbol table" : "image has no symbol table";
      return;
    }
  } else if (out.kind == "bitcode") {
    LLVMContext ctx;
    Expected<std::unique_ptr<Module>> mod =
        getLazyBitcodeModule(MemoryBufferRef(image, "device image"), ctx);
    if (!mod) {
      out.symbolsError = toString(mod.takeError());
      return;
    }
    for (const GlobalValue &gv : (*mod)->global_values())
      if (!gv.isDeclaration() && !gv.hasLocalLinkage())
        out.definedSymbols.push_back(gv.getName().str());
  } else {
    return; // cubin, PTX, ...: nothing ompsim can check
  }
  std::sort(out.definedSymbols.begin(), out.definedSymbols.end());
  out.symbolsKnown = true;
}

} // namespace

Error readOffloadBinaries(const HostFile &file, const Shdr &sec, std::vector<DeviceImage> &images) {
  Expected<ArrayRef<uint8_t>> bytes = file.contents(sec);
  if (!bytes)
    return fail("cannot read " + file.sectionName(sec) + ": " + toString(bytes.takeError()));
  StringRef all(reinterpret_cast<const char *>(bytes->data()), bytes->size());
  using Header = object::OffloadBinary::Header;
  uint64_t pos = 0;
  while (pos < all.size()) {
    StringRef rest = all.drop_front(pos);
    if (rest.find_first_not_of('\0') == StringRef::npos)
      break; // alignment padding after the last blob
    if (rest.size() < sizeof(Header))
      return fail("device image at offset " + hex(pos) + " of " + kImageSection +
                  " is truncated: " + Twine(rest.size()) + " bytes, header needs " + Twine(sizeof(Header)));
    if (!rest.starts_with("\x10\xff\x10\xad"))
      return fail("device image at offset " + hex(pos) + " of " + kImageSection +
                  " lacks the OffloadBinary magic 0x10FF10AD");
    uint64_t size = support::endian::read64le(rest.data() + offsetof(Header, Size));
    if (size < sizeof(Header) || size > rest.size())
      return fail("device image at offset " + hex(pos) + " of " + kImageSection + " claims " +
                  Twine(size) + " bytes but " + Twine(rest.size()) + " remain (truncated?)");
    // OffloadBinary wants an 8-byte aligned buffer; a copy guarantees it.
    std::unique_ptr<MemoryBuffer> copy = MemoryBuffer::getMemBufferCopy(rest.take_front(size), "image");
    Expected<std::unique_ptr<object::OffloadBinary>> bin = object::OffloadBinary::create(*copy);
    if (!bin)
      return fail("device image at offset " + hex(pos) + " of " + kImageSection +
                  " is malformed: " + toString(bin.takeError()));
    DeviceImage img;
    img.index = unsigned(images.size());
    StringRef image = (*bin)->getImage();
    img.kind = contentKind(image, (*bin)->getImageKind());
    StringRef ok = object::getOffloadKindName((*bin)->getOffloadKind());
    img.offloadKind = ok.empty() ? "none" : ok.str();
    img.triple = (*bin)->getTriple().str();
    img.arch = (*bin)->getArch().str();
    img.size = image.size();
    img.fileOffset = sec.sh_offset + pos + uint64_t(image.data() - copy->getBufferStart());
    readImageSymbols(image, img);
    images.push_back(std::move(img));
    pos += alignTo(size, object::OffloadBinary::getAlignment());
  }
  return Error::success();
}

/// Old wrappers (LLVM <= 16) embedded raw images under `.omp_offloading.device_image*` symbols.
Error readRawLegacyImages(const HostFile &file, std::vector<DeviceImage> &images) {
  for (const Shdr &sec : file.sections()) {
    if (sec.sh_type != ELF::SHT_SYMTAB)
      continue;
    auto syms = file.elf().symbols(&sec);
    auto strtab = file.elf().getStringTableForSymtab(sec);
    if (!syms || !strtab) {
      if (!syms) consumeError(syms.takeError());
      if (!strtab) consumeError(strtab.takeError());
      continue;
    }
    for (const Sym &s : *syms) {
      Expected<StringRef> n = s.getName(*strtab);
      if (!n) {
        consumeError(n.takeError());
        continue;
      }
      if (!n->starts_with(".omp_offloading.device_image") || n->ends_with("s") || s.st_size == 0 ||
          s.st_shndx == ELF::SHN_UNDEF || s.st_shndx >= ELF::SHN_LORESERVE)
        continue;
      Location loc{file.relocatable() ? unsigned(s.st_shndx) : 0u, s.st_value};
      Expected<ArrayRef<uint8_t>> bytes = file.bytesAt(loc);
      if (!bytes || bytes->size() < s.st_size) {
        if (!bytes) consumeError(bytes.takeError());
        return fail("device image symbol " + *n + " lies outside the file's contents");
      }
      StringRef image(reinterpret_cast<const char *>(bytes->data()), s.st_size);
      if (image.starts_with("\x10\xff\x10\xad"))
        continue; // an OffloadBinary: covered by .llvm.offloading
      DeviceImage img;
      img.index = unsigned(images.size());
      img.kind = contentKind(image, object::IMG_None);
      img.offloadKind = "openmp";
      img.triple = n->drop_front(strlen(".omp_offloading.device_image")).ltrim('.').str();
      img.size = s.st_size;
      readImageSymbols(image, img);
      images.push_back(std::move(img));
    }
  }
  return Error::success();
}

} // namespace ompsim::inspect

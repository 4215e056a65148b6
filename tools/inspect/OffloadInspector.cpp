// Decodes device images and offload entries from a host ELF file with LLVM Object
// (HostFile, EntryReader, ImageReader) into one Report.
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

bool DeviceImage::defines(llvm::StringRef Name) const {
  return std::binary_search(DefinedSymbols.begin(), DefinedSymbols.end(), Name.str());
}

std::string OffloadEntry::role() const {
  if (Flags & OMPSIM_ENTRY_INDIRECT_VTABLE)
    return "indirect-vtable";
  if (Flags & OMPSIM_ENTRY_INDIRECT)
    return "indirect-function";
  if (Flags & OMPSIM_ENTRY_REQUIRES)
    return "requires";
  if (Flags & OMPSIM_ENTRY_LINK)
    return "link";
  if (Size == 0) {
    // Function entries: the ctor/dtor bits mark static initializer kernels.
    if (Flags & OMPSIM_ENTRY_CTOR)
      return "ctor";
    if (Flags & OMPSIM_ENTRY_DTOR)
      return "dtor";
    return "kernel";
  }
  return (Flags & OMPSIM_ENTRY_ENTER) ? "global-enter" : "global";
}

std::vector<std::string> OffloadEntry::flagNames() const {
  static const std::pair<uint32_t, const char *> kBits[] = {
      {OMPSIM_ENTRY_LINK, "link"},         {OMPSIM_ENTRY_ENTER, "enter/ctor"},
      {OMPSIM_ENTRY_DTOR, "dtor"},         {OMPSIM_ENTRY_INDIRECT, "indirect"},
      {OMPSIM_ENTRY_REQUIRES, "requires"}, {OMPSIM_ENTRY_INDIRECT_VTABLE, "indirect-vtable"},
  };
  std::vector<std::string> Out;
  uint32_t Known = 0;
  for (auto [bit, name] : kBits) {
    Known |= bit;
    if (Flags & bit)
      Out.push_back(name);
  }
  if (uint32_t Rest = Flags & ~Known)
    Out.push_back("unknown:" + hex(Rest));
  return Out;
}

std::vector<std::string> requiresFlagNames(uint64_t Data) {
  static const std::pair<uint64_t, const char *> kBits[] = {
      {OMPSIM_REQ_NONE, "none"},
      {OMPSIM_REQ_REVERSE_OFFLOAD, "reverse_offload"},
      {OMPSIM_REQ_UNIFIED_ADDRESS, "unified_address"},
      {OMPSIM_REQ_UNIFIED_SHARED_MEMORY, "unified_shared_memory"},
      {OMPSIM_REQ_DYNAMIC_ALLOCATORS, "dynamic_allocators"},
      {OMPSIM_REQ_AUTO_ZERO_COPY, "auto_zero_copy"},
  };
  std::vector<std::string> Out;
  for (auto [bit, name] : kBits)
    if (Data & bit)
      Out.push_back(name);
  return Out;
}

llvm::Expected<Report> inspectFile(llvm::StringRef Path) {
  Expected<std::unique_ptr<HostFile>> File = HostFile::create(Path);
  if (!File)
    return File.takeError();
  HostFile &Host = **File;
  Report Report;
  Report.Path = Path.str();
  Report.ElfType = Host.elfType();
  Report.Machine = Host.machine();

  const Shdr *ImageSec = nullptr;
  for (const Shdr &S : Host.sections())
    if (S.sh_type == ELF::SHT_LLVM_OFFLOADING || Host.sectionName(S) == kImageSection) {
      ImageSec = &S;
      if (Error E = readOffloadBinaries(Host, S, Report.Images))
        return std::move(E);
    }
  if (!ImageSec)
    if (Error E = readRawLegacyImages(Host, Report.Images))
      return std::move(E);

  const Shdr *Current = Host.findSection(kCurrentEntrySection);
  const Shdr *Legacy = Host.findSection(kLegacyEntrySection);
  if (Current && Legacy)
    return fail("both " + kCurrentEntrySection + " and " + kLegacyEntrySection +
                " are present; mixed LLVM versions in one file are not supported");
  if (const Shdr *Sec = Current ? Current : Legacy) {
    Report.Format = Current ? EntryFormat::Current : EntryFormat::Legacy;
    Report.EntrySection = Host.sectionName(*Sec).str();
    Expected<std::vector<OffloadEntry>> Entries = readEntries(Host, *Sec, *Report.Format);
    if (!Entries)
      return Entries.takeError();
    Report.Entries = std::move(*Entries);
  }
  if (!Current && !Legacy && Report.Images.empty())
    return fail("no offload section: neither " + kImageSection + " nor " + kCurrentEntrySection + " / " +
                kLegacyEntrySection + " (not built with -fopenmp-targets?)");

  for (const OffloadEntry &E : Report.Entries) {
    if (!(E.Flags & (OMPSIM_ENTRY_INDIRECT | OMPSIM_ENTRY_INDIRECT_VTABLE)))
      continue;
    IndirectTarget T;
    T.EntryIndex = E.Index;
    T.IsVtable = E.Flags & OMPSIM_ENTRY_INDIRECT_VTABLE;
    T.Host = E.Address;
    T.EntryName = E.Name;
    T.DeviceGlobal = E.Name;
    T.Slots = T.IsVtable ? E.Size / 8 : 1;
    for (const DeviceImage &Img : Report.Images) {
      if (!Img.SymbolsKnown)
        continue;
      (Img.defines(T.DeviceGlobal) ? T.DefinedIn : T.MissingIn).push_back(Img.Index);
    }
    Report.Indirect.push_back(std::move(T));
  }
  return std::move(Report);
}

} // namespace ompsim::inspect

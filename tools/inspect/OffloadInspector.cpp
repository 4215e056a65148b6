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

bool DeviceImage::defines(llvm::StringRef name) const {
  return std::binary_search(definedSymbols.begin(), definedSymbols.end(), name.str());
}

std::string OffloadEntry::role() const {
  if (flags & OMPSIM_ENTRY_INDIRECT_VTABLE)
    return "indirect-vtable";
  if (flags & OMPSIM_ENTRY_INDIRECT)
    return "indirect-function";
  if (flags & OMPSIM_ENTRY_REQUIRES)
    return "requires";
  if (flags & OMPSIM_ENTRY_LINK)
    return "link";
  if (size == 0) {
    // Function entries: the ctor/dtor bits mark static initializer kernels.
    if (flags & OMPSIM_ENTRY_CTOR)
      return "ctor";
    if (flags & OMPSIM_ENTRY_DTOR)
      return "dtor";
    return "kernel";
  }
  return (flags & OMPSIM_ENTRY_ENTER) ? "global-enter" : "global";
}

std::vector<std::string> OffloadEntry::flagNames() const {
  static const std::pair<uint32_t, const char *> kBits[] = {
      {OMPSIM_ENTRY_LINK, "link"},         {OMPSIM_ENTRY_ENTER, "enter/ctor"},
      {OMPSIM_ENTRY_DTOR, "dtor"},         {OMPSIM_ENTRY_INDIRECT, "indirect"},
      {OMPSIM_ENTRY_REQUIRES, "requires"}, {OMPSIM_ENTRY_INDIRECT_VTABLE, "indirect-vtable"},
  };
  std::vector<std::string> out;
  uint32_t known = 0;
  for (auto [bit, name] : kBits) {
    known |= bit;
    if (flags & bit)
      out.push_back(name);
  }
  if (uint32_t rest = flags & ~known)
    out.push_back("unknown:" + hex(rest));
  return out;
}

std::vector<std::string> requiresFlagNames(uint64_t data) {
  static const std::pair<uint64_t, const char *> kBits[] = {
      {OMPSIM_REQ_NONE, "none"},
      {OMPSIM_REQ_REVERSE_OFFLOAD, "reverse_offload"},
      {OMPSIM_REQ_UNIFIED_ADDRESS, "unified_address"},
      {OMPSIM_REQ_UNIFIED_SHARED_MEMORY, "unified_shared_memory"},
      {OMPSIM_REQ_DYNAMIC_ALLOCATORS, "dynamic_allocators"},
      {OMPSIM_REQ_AUTO_ZERO_COPY, "auto_zero_copy"},
  };
  std::vector<std::string> out;
  for (auto [bit, name] : kBits)
    if (data & bit)
      out.push_back(name);
  return out;
}

llvm::Expected<Report> inspectFile(llvm::StringRef path) {
  Expected<std::unique_ptr<HostFile>> file = HostFile::Create(path);
  if (!file)
    return file.takeError();
  HostFile &host = **file;
  Report report;
  report.path = path.str();
  report.elfType = host.elfType();
  report.machine = host.machine();

  const Shdr *imageSec = nullptr;
  for (const Shdr &s : host.sections())
    if (s.sh_type == ELF::SHT_LLVM_OFFLOADING || host.sectionName(s) == kImageSection) {
      imageSec = &s;
      if (Error e = readOffloadBinaries(host, s, report.images))
        return std::move(e);
    }
  if (!imageSec)
    if (Error e = readRawLegacyImages(host, report.images))
      return std::move(e);

  const Shdr *current = host.findSection(kCurrentEntrySection);
  const Shdr *legacy = host.findSection(kLegacyEntrySection);
  if (current && legacy)
    return fail("both " + kCurrentEntrySection + " and " + kLegacyEntrySection +
                " are present; mixed LLVM versions in one file are not supported");
  if (const Shdr *sec = current ? current : legacy) {
    report.format = current ? EntryFormat::Current : EntryFormat::Legacy;
    report.entrySection = host.sectionName(*sec).str();
    Expected<std::vector<OffloadEntry>> entries = readEntries(host, *sec, *report.format);
    if (!entries)
      return entries.takeError();
    report.entries = std::move(*entries);
  }
  if (!current && !legacy && report.images.empty())
    return fail("no offload section: neither " + kImageSection + " nor " + kCurrentEntrySection +
                " / " + kLegacyEntrySection + " (not built with -fopenmp-targets?)");

  for (const OffloadEntry &e : report.entries) {
    if (!(e.flags & (OMPSIM_ENTRY_INDIRECT | OMPSIM_ENTRY_INDIRECT_VTABLE)))
      continue;
    IndirectTarget t;
    t.entryIndex = e.index;
    t.isVtable = e.flags & OMPSIM_ENTRY_INDIRECT_VTABLE;
    t.host = e.address;
    t.entryName = e.name;
    t.deviceGlobal = e.name;
    t.slots = t.isVtable ? e.size / 8 : 1;
    for (const DeviceImage &img : report.images) {
      if (!img.symbolsKnown)
        continue;
      (img.defines(t.deviceGlobal) ? t.definedIn : t.missingIn).push_back(img.index);
    }
    report.indirect.push_back(std::move(t));
  }
  return std::move(report);
}

} // namespace ompsim::inspect

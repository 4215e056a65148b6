// ompsim-inspect: reads the offloading metadata that clang embeds in a host ELF file.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ompsim::inspect {

/// One device image found in the host file (an OffloadBinary blob or a raw legacy image).
struct DeviceImage {
  unsigned index = 0;
  /// What the image holds: "elf-shared-object", "elf-relocatable", "elf-executable",
  /// "bitcode", or the OffloadBinary kind name for anything else ("cubin", "ptx", ...).
  std::string kind;
  std::string offloadKind; ///< producer: "openmp", "cuda", "hip", "sycl" or "none"
  std::string triple;
  std::string arch;        ///< may be empty (host-offload targets carry no arch)
  uint64_t size = 0;       ///< bytes of the image itself (without the OffloadBinary header)
  uint64_t fileOffset = 0; ///< where the image starts in the host file
  /// Whether the symbols an image defines could be read (ELF dynamic symbols or bitcode globals).
  bool symbolsKnown = false;
  /// Names of the global symbols the image defines (sorted), when `symbolsKnown`.
  std::vector<std::string> definedSymbols;
  /// Why the symbols could not be read, when `!symbolsKnown` and reading was attempted.
  std::string symbolsError;

  /// True when the image defines `name` (only meaningful when `symbolsKnown`).
  bool defines(llvm::StringRef name) const;
};

/// A host address named from the host file's symbol tables.
struct HostLocation {
  uint64_t address = 0;     ///< link-time address (file value after relocation)
  std::string symbol;       ///< demangled; empty when no symbol covers the address
  std::string mangled;      ///< the symbol as stored in the file
  uint64_t offset = 0;      ///< address - symbol start
  bool undefined = false;   ///< the address is an undefined symbol's (resolved at load time)
  std::string section;      ///< relocatable files only: the section `address` is relative to
};

/// Which entry layout a file uses.
enum class EntryFormat {
  Current, ///< LLVM 20+: `llvm_offload_entries`, 56-byte __tgt_offload_entry
  Legacy,  ///< LLVM <= 19: `omp_offloading_entries`, 32-byte __tgt_offload_entry_legacy
};

/// One host offload entry, with its relocated fields.
struct OffloadEntry {
  unsigned index = 0;
  EntryFormat format = EntryFormat::Current;
  uint16_t version = 0; ///< Current format only
  uint16_t kind = 0;    ///< Current format only: 1 OpenMP, 2 CUDA, 4 HIP
  uint32_t flags = 0;
  HostLocation address;
  std::string name;     ///< the device symbol name
  uint64_t size = 0;
  uint64_t data = 0;    ///< Current format only (requires flags for a requires entry)

  /// What the entry registers: "kernel", "global", "link", "indirect-function",
  /// "indirect-vtable", "requires", "ctor", "dtor".
  std::string role() const;
  /// The set flag bits by name ("indirect", "link", ...); empty for flags 0.
  std::vector<std::string> flagNames() const;
};

/// An indirect function or vtable: what the runtime must translate for device calls.
struct IndirectTarget {
  unsigned entryIndex = 0;
  bool isVtable = false;
  HostLocation host;
  std::string entryName;
  std::string deviceGlobal; ///< the device global holding the device address(es)
  uint64_t slots = 0;       ///< 8-byte slots (1 for a function, Size/8 for a vtable)
  std::vector<unsigned> definedIn; ///< images whose symbols include `deviceGlobal`
  std::vector<unsigned> missingIn; ///< images with known symbols that lack it
};

/// Everything ompsim-inspect reports about one host file.
struct Report {
  std::string path;
  std::string elfType; ///< "executable", "pie-executable", "shared-library", "relocatable"
  std::string machine; ///< "x86_64", "aarch64", ...
  std::string entrySection;          ///< section the entries came from; empty if none
  std::optional<EntryFormat> format; ///< set when an entry section exists
  std::vector<DeviceImage> images;
  std::vector<OffloadEntry> entries;
  std::vector<IndirectTarget> indirect;
};

/// Reads `path` and decodes its device images and offload entries.
///
/// Fails (with a message naming the problem, not the file) when the file is not a
/// 64-bit little-endian ELF, is truncated or malformed, or has neither device
/// images nor an offload entry section.
llvm::Expected<Report> inspectFile(llvm::StringRef path);

/// Names of the requires-flag bits of a requires entry's `Data` ("unified_shared_memory", ...).
std::vector<std::string> requiresFlagNames(uint64_t data);

} // namespace ompsim::inspect

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
  unsigned Index = 0;
  /// What the image holds: "elf-shared-object", "elf-relocatable", "elf-executable",
  /// "bitcode", or the OffloadBinary kind name for anything else ("cubin", "ptx", ...).
  std::string Kind;
  std::string OffloadKind; ///< producer: "openmp", "cuda", "hip", "sycl" or "none"
  std::string Triple;
  std::string Arch;        ///< may be empty (host-offload targets carry no arch)
  uint64_t Size = 0;       ///< bytes of the image itself (without the OffloadBinary header)
  uint64_t FileOffset = 0; ///< where the image starts in the host file
  /// Whether the symbols an image defines could be read (ELF dynamic symbols or bitcode globals).
  bool SymbolsKnown = false;
  /// Names of the global symbols the image defines (sorted), when `SymbolsKnown`.
  std::vector<std::string> DefinedSymbols;
  /// Why the symbols could not be read, when `!symbolsKnown` and reading was attempted.
  std::string SymbolsError;

  /// True when the image defines `Name` (only meaningful when `SymbolsKnown`).
  bool defines(llvm::StringRef Name) const;
};

/// A host address named from the host file's symbol tables.
struct HostLocation {
  uint64_t Address = 0;   ///< link-time address (file value after relocation)
  std::string Symbol;     ///< demangled; empty when no symbol covers the address
  std::string Mangled;    ///< the symbol as stored in the file
  uint64_t Offset = 0;    ///< address - symbol start
  bool Undefined = false; ///< the address is an undefined symbol's (resolved at load time)
  std::string Section;    ///< relocatable files only: the section `Address` is relative to
};

/// Which entry layout a file uses.
enum class EntryFormat {
  Current, ///< LLVM 20+: `llvm_offload_entries`, 56-byte __tgt_offload_entry
  Legacy,  ///< LLVM <= 19: `omp_offloading_entries`, 32-byte __tgt_offload_entry_legacy
};

/// One host offload entry, with its relocated fields.
struct OffloadEntry {
  unsigned Index = 0;
  EntryFormat Format = EntryFormat::Current;
  uint16_t Version = 0; ///< Current format only
  uint16_t Kind = 0;    ///< Current format only: 1 OpenMP, 2 CUDA, 4 HIP
  uint32_t Flags = 0;
  HostLocation Address;
  std::string Name; ///< the device symbol name
  uint64_t Size = 0;
  uint64_t Data = 0; ///< Current format only (requires flags for a requires entry)

  /// What the entry registers: "kernel", "global", "link", "indirect-function",
  /// "indirect-vtable", "requires", "ctor", "dtor".
  std::string role() const;
  /// The set flag bits by name ("indirect", "link", ...); empty for flags 0.
  std::vector<std::string> flagNames() const;
};

/// An indirect function or vtable: what the runtime must translate for device calls.
struct IndirectTarget {
  unsigned EntryIndex = 0;
  bool IsVtable = false;
  HostLocation Host;
  std::string EntryName;
  std::string DeviceGlobal;        ///< the device global holding the device address(es)
  uint64_t Slots = 0;              ///< 8-byte slots (1 for a function, Size/8 for a vtable)
  std::vector<unsigned> DefinedIn; ///< images whose symbols include `DeviceGlobal`
  std::vector<unsigned> MissingIn; ///< images with known symbols that lack it
};

/// Everything ompsim-inspect reports about one host file.
struct Report {
  std::string Path;
  std::string ElfType;               ///< "executable", "pie-executable", "shared-library", "relocatable"
  std::string Machine;               ///< "x86_64", "aarch64", ...
  std::string EntrySection;          ///< section the entries came from; empty if none
  std::optional<EntryFormat> Format; ///< set when an entry section exists
  std::vector<DeviceImage> Images;
  std::vector<OffloadEntry> Entries;
  std::vector<IndirectTarget> Indirect;
};

/// Reads `Path` and decodes its device images and offload entries.
///
/// Fails (with a message naming the problem, not the file) when the file is not a
/// 64-bit little-endian ELF, is truncated or malformed, or has neither device
/// images nor an offload entry section.
llvm::Expected<Report> inspectFile(llvm::StringRef Path);

/// Names of the requires-flag bits of a requires entry's `Data` ("unified_shared_memory", ...).
std::vector<std::string> requiresFlagNames(uint64_t Data);

} // namespace ompsim::inspect

// ompsim runtime: offload entry tables in both compiler formats, normalized.
#pragma once

#include "ompsim/offload_abi.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ompsim::host {

/// What an offload entry describes, decoded from its flags and size.
enum class EntryKind { Kernel, Global, Link, Indirect, IndirectVtable, Requires };

/// One offload entry, independent of the format the compiler used.
struct OffloadEntry {
  EntryKind Kind = EntryKind::Kernel;
  uint32_t Flags = 0;
  void *Address = nullptr; ///< host address (kernel stub, global, function or vtable)
  std::string Name;        ///< device symbol name
  uint64_t Size = 0;
  uint64_t Data = 0; ///< requires flags for Requires entries
};

/// The entry formats clang has emitted.
enum class EntryFormat {
  Current, ///< LLVM 20+ `__tgt_offload_entry` (first word 0)
  Legacy,  ///< LLVM <= 19 five-field entry (first word = address)
};

/// Parses the entry table [begin, end) of one device image or descriptor.
///
/// The format is told apart by the first word of the first entry, as upstream
/// does: 0 means the LLVM 20+ format. `What` names the table's owner in
/// messages ("image 0 of descriptor 0x..."). Fails naming the entry when an
/// entry has a null address or name, an unknown version, or the range is not
/// a whole number of entries. An empty table is valid.
llvm::Expected<std::vector<OffloadEntry>> parseEntryTable(const void *Begin, const void *End,
                                                          const std::string &What);

/// Largest device image (its bytes in the binary) the runtime accepts; the
/// sim loader's span limit is the same. Larger claims are corrupt pointers,
/// refused before anything probes or copies that much memory.
constexpr size_t kMaxDeviceImageBytes = size_t(1) << 30;
/// Largest entry table accepted (about a million entries).
constexpr size_t kMaxEntryTableBytes = size_t(64) << 20;

/// The first address in [begin, begin + bytes) that this process cannot
/// read (unmapped or PROT_NONE), or nullopt when all of it is readable.
///
/// Pointers and sizes taken from a binary (image bytes, entry tables) are
/// checked with this before anything reads them, so a corrupt descriptor is
/// an error instead of a crash. Probes one byte per page through
/// process_vm_readv; where that is refused (seccomp) the range is trusted.
std::optional<uintptr_t> firstUnreadable(const void *Begin, size_t Bytes);

/// Which format the table [begin, end) uses (Current for an empty table).
EntryFormat detectEntryFormat(const void *Begin, const void *End);

/// Name of an entry kind for traces ("kernel", "indirect", ...).
const char *entryKindName(EntryKind Kind);

} // namespace ompsim::host

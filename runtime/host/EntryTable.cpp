// Decodes both offload entry formats into OffloadEntry.
#include "EntryTable.h"

#include "ompsim/Trace.h"

#include <algorithm>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <sys/uio.h>
#include <unistd.h>

namespace ompsim::host {
namespace {

llvm::Error entryError(const std::string &What, size_t Index, const std::string &Problem) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s",
                                 fmt::format("bad offload entry {} of {}: {}", Index, What, Problem).c_str());
}

EntryKind classify(uint32_t Flags, uint64_t Size) {
  // Requires and indirect bits dominate; the plain kinds come from size.
  if (Flags & OMPSIM_ENTRY_REQUIRES)
    return EntryKind::Requires;
  if (Flags & OMPSIM_ENTRY_INDIRECT_VTABLE)
    return EntryKind::IndirectVtable;
  if (Flags & OMPSIM_ENTRY_INDIRECT)
    return EntryKind::Indirect;
  if (Flags & OMPSIM_ENTRY_LINK)
    return EntryKind::Link;
  return Size == 0 ? EntryKind::Kernel : EntryKind::Global;
}

/// Longest symbol name accepted; clang's entry names (mangled C++ included)
/// stay far below it.
constexpr size_t kMaxSymbolName = 4096;

/// Reads the NUL-terminated name at `name` without trusting the pointer: an
/// unreadable pointer or a name with no NUL within kMaxSymbolName bytes is an
/// error instead of a crash (a corrupt table, or a table of the other format
/// whose pointer fields are really other fields).
llvm::Expected<std::string> readSymbolName(const char *Name, const std::string &What, size_t Index) {
  std::string Out;
  auto Addr = reinterpret_cast<uintptr_t>(Name);
  constexpr uintptr_t kPageSize = 4096;
  // Entry names are short: read 256 bytes at a time (never across a page, as
  // the name may end just before an unmapped one), so a table of 100 Ki
  // entries does not copy a page per name.
  constexpr uintptr_t kChunk = 256;
  static const pid_t Self = getpid();
  while (Out.size() <= kMaxSymbolName) {
    size_t Chunk = std::min(kChunk, kPageSize - (Addr % kPageSize));
    char Buf[kPageSize];
    struct iovec Local = {Buf, Chunk}, Remote = {reinterpret_cast<void *>(Addr), Chunk};
    ssize_t Got = process_vm_readv(Self, &Local, 1, &Remote, 1, 0);
    if (Got < 0 && errno == EPERM) {
      // Reading our own memory is refused (seccomp): trust the pointer.
      size_t Len = strnlen(reinterpret_cast<const char *>(Addr), Chunk);
      std::memcpy(Buf, reinterpret_cast<const char *>(Addr), Len);
      Got = static_cast<ssize_t>(Len == Chunk ? Chunk : Len + 1);
      if (Len < Chunk)
        Buf[Len] = 0;
    }
    if (Got <= 0)
      return entryError(What, Index,
                        Out.empty()
                            ? fmt::format("symbol name at {} is unreadable", static_cast<const void *>(Name))
                            : fmt::format("symbol name at {} is unterminated: it runs into "
                                          "unreadable memory at {:#x} (starts '{}')",
                                          static_cast<const void *>(Name), Addr, Out.substr(0, 32)));
    const char *Nul = static_cast<const char *>(std::memchr(Buf, 0, static_cast<size_t>(Got)));
    Out.append(Buf, Nul ? static_cast<size_t>(Nul - Buf) : static_cast<size_t>(Got));
    if (Nul)
      break;
    Addr += static_cast<size_t>(Got);
  }
  if (Out.size() > kMaxSymbolName)
    return entryError(What, Index,
                      fmt::format("symbol name at {} is unterminated or longer than {} bytes "
                                  "(starts '{}')",
                                  static_cast<const void *>(Name), kMaxSymbolName, Out.substr(0, 32)));
  return Out;
}

} // namespace

std::optional<uintptr_t> firstUnreadable(const void *Begin, size_t Bytes) {
  constexpr uintptr_t kPageSize = 4096;
  constexpr size_t kBatch = 512; // pages probed per system call
  static const pid_t Self = getpid();
  auto Start = reinterpret_cast<uintptr_t>(Begin);
  if (Bytes == 0)
    return std::nullopt;
  if (Start + Bytes < Start)
    return Start; // the range wraps around the address space
  uintptr_t Last = Start + Bytes - 1;
  // One byte at `start`, then one at the start of every later page.
  uintptr_t At = Start;
  while (At <= Last) {
    struct iovec Remote[kBatch];
    char Sink[kBatch];
    size_t N = 0;
    for (uintptr_t P = At; N < kBatch && P <= Last; P = (P & ~(kPageSize - 1)) + kPageSize) {
      Remote[N++] = {reinterpret_cast<void *>(P), 1};
      if ((P & ~(kPageSize - 1)) + kPageSize < P) // the last page of the address space
        break;
    }
    struct iovec Local = {Sink, N};
    ssize_t Got = process_vm_readv(Self, &Local, 1, Remote, N, 0);
    if (Got < 0 && errno == EPERM)
      return std::nullopt; // cannot probe here: trust the range, as before
    size_t Ok = Got < 0 ? 0 : static_cast<size_t>(Got);
    if (Ok < N)
      return reinterpret_cast<uintptr_t>(Remote[Ok].iov_base);
    uintptr_t Next = (reinterpret_cast<uintptr_t>(Remote[N - 1].iov_base) & ~(kPageSize - 1)) + kPageSize;
    if (Next <= At)
      break;
    At = Next;
  }
  return std::nullopt;
}

namespace {

/// Address range holding every entry name of a table, checked readable as a
/// whole: clang puts the names of one binary next to each other, so one probe
/// of their pages replaces a system call per name.
struct NameSpan {
  uintptr_t Begin = 0, End = 0; ///< readable whole pages; empty when not probed

  /// The name at `name` when it lies in the span and ends (within
  /// kMaxSymbolName bytes) before the span does; nullopt sends the caller to
  /// readSymbolName, which checks the name on its own and says what is wrong.
  std::optional<std::string_view> read(const char *Name) const {
    auto At = reinterpret_cast<uintptr_t>(Name);
    if (At < Begin || At >= End)
      return std::nullopt;
    size_t Limit = std::min<size_t>(End - At, kMaxSymbolName + 1);
    const void *Nul = std::memchr(Name, 0, Limit);
    if (!Nul || static_cast<size_t>(static_cast<const char *>(Nul) - Name) > kMaxSymbolName)
      return std::nullopt;
    return std::string_view(Name, static_cast<size_t>(static_cast<const char *>(Nul) - Name));
  }
};

/// Largest span of names probed at once; names spread wider (or a table with
/// corrupt pointers) are read one at a time.
constexpr uintptr_t kMaxNameSpan = uintptr_t(256) << 20;

/// Probes the pages from the lowest to the highest of the `Count` names
/// nameAt(i) gives; an empty span when they are too far apart or any page
/// between them is unreadable.
template <typename NameFnT> NameSpan probeNames(size_t Count, NameFnT NameAt) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
  // Under AddressSanitizer every read of a name is checked against its shadow
  // first, and a corrupt name pointer into ASan's own shadow region has no
  // shadow of its own: the check itself faults although the kernel says the
  // page is readable. The per-name read (process_vm_readv into our buffer)
  // never touches the name directly.
  return {};
#endif
#endif
  constexpr uintptr_t kPageSize = 4096;
  uintptr_t Lo = UINTPTR_MAX, Hi = 0;
  for (size_t I = 0; I < Count; ++I)
    if (auto At = reinterpret_cast<uintptr_t>(NameAt(I))) {
      Lo = std::min(Lo, At);
      Hi = std::max(Hi, At);
    }
  // Too few names to pay for a probe, or too far apart to trust one.
  if (Count < 8 || Lo > Hi || Hi - Lo > kMaxNameSpan)
    return {};
  uintptr_t Begin = Lo & ~(kPageSize - 1), End = (Hi & ~(kPageSize - 1)) + kPageSize;
  if (End < Begin || firstUnreadable(reinterpret_cast<const void *>(Begin), End - Begin))
    return {};
  return {Begin, End};
}

/// Checks the fields every entry must have, whatever its format.
llvm::Error validate(const OffloadEntry &E, const char *RawName, const std::string &What, size_t Index) {
  if (E.Kind == EntryKind::Requires)
    return llvm::Error::success(); // requires entries carry no address
  if (!RawName)
    return entryError(What, Index, "null symbol name");
  if (!E.Address)
    return entryError(What, Index, fmt::format("'{}' has a null address", E.Name));
  return llvm::Error::success();
}

} // namespace

EntryFormat detectEntryFormat(const void *Begin, const void *End) {
  if (Begin == End)
    return EntryFormat::Current;
  uint64_t First;
  std::memcpy(&First, Begin, sizeof(First));
  return First == 0 ? EntryFormat::Current : EntryFormat::Legacy;
}

const char *entryKindName(EntryKind Kind) {
  switch (Kind) {
  case EntryKind::Kernel:
    return "kernel";
  case EntryKind::Global:
    return "global";
  case EntryKind::Link:
    return "link";
  case EntryKind::Indirect:
    return "indirect";
  case EntryKind::IndirectVtable:
    return "indirect_vtable";
  case EntryKind::Requires:
    return "requires";
  }
  return "?";
}

llvm::Expected<std::vector<OffloadEntry>> parseEntryTable(const void *Begin, const void *End,
                                                          const std::string &What) {
  std::vector<OffloadEntry> Out;
  if (Begin == End)
    return Out;
  if (!Begin || !End || End < Begin)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s",
                                   fmt::format("malformed entry range of {}", What).c_str());
  // Compilers align entry tables; a misaligned one is corrupt, and reading
  // its pointer fields in place would be undefined behaviour.
  if (reinterpret_cast<uintptr_t>(Begin) % alignof(__tgt_offload_entry) != 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s",
                                   fmt::format("malformed entry table of {}: start {} is not {}-byte aligned",
                                               What, Begin, alignof(__tgt_offload_entry))
                                       .c_str());
  auto Bytes = static_cast<size_t>(static_cast<const char *>(End) - static_cast<const char *>(Begin));
  if (Bytes > kMaxEntryTableBytes)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(), "%s",
        fmt::format("malformed entry table of {}: entries [{}, {}) span {} bytes, more than an entry table "
                    "may hold ({} MiB)",
                    What, Begin, End, Bytes, kMaxEntryTableBytes >> 20)
            .c_str());
  if (auto Bad = firstUnreadable(Begin, Bytes))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(), "%s",
        fmt::format("malformed entry table of {}: entries [{}, {}) are not readable host memory "
                    "(nothing readable at {:#x})",
                    What, Begin, End, *Bad)
            .c_str());
  EntryFormat Format = detectEntryFormat(Begin, End);
  size_t Stride =
      Format == EntryFormat::Current ? sizeof(__tgt_offload_entry) : sizeof(__tgt_offload_entry_legacy);
  if (Bytes % Stride != 0)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(), "%s",
        fmt::format("malformed entry table of {}: {} bytes is not a whole number of {}-byte entries{}", What,
                    Bytes, Stride,
                    Format == EntryFormat::Legacy
                        ? " (the first entry is in the LLVM <= 19 format; formats mixed?)"
                        : "")
            .c_str());
  size_t Count = Bytes / Stride;
  Out.reserve(Count);
  auto NameAt = [&](size_t I) -> const char * {
    if (Format == EntryFormat::Current)
      return static_cast<const __tgt_offload_entry *>(Begin)[I].SymbolName;
    return static_cast<const __tgt_offload_entry_legacy *>(Begin)[I].name;
  };
  NameSpan Names = probeNames(Count, NameAt);
  for (size_t I = 0; I < Count; ++I) {
    OffloadEntry E;
    const char *RawName;
    if (Format == EntryFormat::Current) {
      const auto &Raw = static_cast<const __tgt_offload_entry *>(Begin)[I];
      if (Raw.Reserved != 0)
        return entryError(What, I, "non-zero reserved word in an LLVM 20+ entry table");
      if (Raw.Version != 1)
        return entryError(What, I, fmt::format("unsupported entry version {}", Raw.Version));
      E.Flags = Raw.Flags;
      E.Address = Raw.Address;
      RawName = Raw.SymbolName;
      E.Size = Raw.Size;
      E.Data = Raw.Data;
    } else {
      const auto &Raw = static_cast<const __tgt_offload_entry_legacy *>(Begin)[I];
      if (Raw.reserved != 0)
        return entryError(What, I,
                          "non-zero reserved field in an LLVM <= 19 entry table (entries of the "
                          "two formats mixed?)");
      E.Flags = static_cast<uint32_t>(Raw.flags);
      E.Address = Raw.addr;
      RawName = Raw.name;
      E.Size = Raw.size;
      // The five-field format has no data word; a requires entry kept its
      // requirement bits in `size`.
      E.Data = Raw.size;
    }
    E.Kind = classify(E.Flags, E.Size);
    if (RawName) {
      if (std::optional<std::string_view> Known = Names.read(RawName)) {
        E.Name = *Known;
      } else {
        auto Name = readSymbolName(RawName, What, I);
        if (!Name)
          return Name.takeError();
        E.Name = std::move(*Name);
      }
    }
    if (auto Err = validate(E, RawName, What, I))
      return std::move(Err);
    OMPSIM_TRACE_EVENT(Cat::Entry, "parse")
        .str("owner", What)
        .num("index", static_cast<int64_t>(I))
        .str("kind", entryKindName(E.Kind))
        .str("name", E.Name)
        .host("address", reinterpret_cast<uint64_t>(E.Address))
        .num("size", static_cast<int64_t>(E.Size))
        .hex("flags", E.Flags);
    Out.push_back(std::move(E));
  }
  return Out;
}

} // namespace ompsim::host

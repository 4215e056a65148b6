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

llvm::Error entryError(const std::string &what, size_t index, const std::string &problem) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s",
                                 fmt::format("bad offload entry {} of {}: {}", index, what, problem).c_str());
}

EntryKind classify(uint32_t flags, uint64_t size) {
  // Requires and indirect bits dominate; the plain kinds come from size.
  if (flags & OMPSIM_ENTRY_REQUIRES)
    return EntryKind::Requires;
  if (flags & OMPSIM_ENTRY_INDIRECT_VTABLE)
    return EntryKind::IndirectVtable;
  if (flags & OMPSIM_ENTRY_INDIRECT)
    return EntryKind::Indirect;
  if (flags & OMPSIM_ENTRY_LINK)
    return EntryKind::Link;
  return size == 0 ? EntryKind::Kernel : EntryKind::Global;
}

/// Longest symbol name accepted; clang's entry names (mangled C++ included)
/// stay far below it.
constexpr size_t kMaxSymbolName = 4096;

/// Reads the NUL-terminated name at `name` without trusting the pointer: an
/// unreadable pointer or a name with no NUL within kMaxSymbolName bytes is an
/// error instead of a crash (a corrupt table, or a table of the other format
/// whose pointer fields are really other fields).
llvm::Expected<std::string> readSymbolName(const char *name, const std::string &what, size_t index) {
  std::string out;
  auto addr = reinterpret_cast<uintptr_t>(name);
  constexpr uintptr_t kPageSize = 4096;
  // Entry names are short: read 256 bytes at a time (never across a page, as
  // the name may end just before an unmapped one), so a table of 100 Ki
  // entries does not copy a page per name.
  constexpr uintptr_t kChunk = 256;
  static const pid_t self = getpid();
  while (out.size() <= kMaxSymbolName) {
    size_t chunk = std::min(kChunk, kPageSize - (addr % kPageSize));
    char buf[kPageSize];
    struct iovec local = {buf, chunk}, remote = {reinterpret_cast<void *>(addr), chunk};
    ssize_t got = process_vm_readv(self, &local, 1, &remote, 1, 0);
    if (got < 0 && errno == EPERM) {
      // Reading our own memory is refused (seccomp): trust the pointer.
      size_t len = strnlen(reinterpret_cast<const char *>(addr), chunk);
      std::memcpy(buf, reinterpret_cast<const char *>(addr), len);
      got = static_cast<ssize_t>(len == chunk ? chunk : len + 1);
      if (len < chunk)
        buf[len] = 0;
    }
    if (got <= 0)
      return entryError(what, index,
                        out.empty()
                            ? fmt::format("symbol name at {} is unreadable", static_cast<const void *>(name))
                            : fmt::format("symbol name at {} is unterminated: it runs into "
                                          "unreadable memory at {:#x} (starts '{}')",
                                          static_cast<const void *>(name), addr, out.substr(0, 32)));
    const char *nul = static_cast<const char *>(std::memchr(buf, 0, static_cast<size_t>(got)));
    out.append(buf, nul ? static_cast<size_t>(nul - buf) : static_cast<size_t>(got));
    if (nul)
      break;
    addr += static_cast<size_t>(got);
  }
  if (out.size() > kMaxSymbolName)
    return entryError(what, index,
                      fmt::format("symbol name at {} is unterminated or longer than {} bytes "
                                  "(starts '{}')",
                                  static_cast<const void *>(name), kMaxSymbolName, out.substr(0, 32)));
  return out;
}

} // namespace

std::optional<uintptr_t> firstUnreadable(const void *begin, size_t bytes) {
  constexpr uintptr_t kPageSize = 4096;
  constexpr size_t kBatch = 512; // pages probed per system call
  static const pid_t self = getpid();
  auto start = reinterpret_cast<uintptr_t>(begin);
  if (bytes == 0)
    return std::nullopt;
  if (start + bytes < start)
    return start; // the range wraps around the address space
  uintptr_t last = start + bytes - 1;
  // One byte at `start`, then one at the start of every later page.
  uintptr_t at = start;
  while (at <= last) {
    struct iovec remote[kBatch];
    char sink[kBatch];
    size_t n = 0;
    for (uintptr_t p = at; n < kBatch && p <= last; p = (p & ~(kPageSize - 1)) + kPageSize) {
      remote[n++] = {reinterpret_cast<void *>(p), 1};
      if ((p & ~(kPageSize - 1)) + kPageSize < p) // the last page of the address space
        break;
    }
    struct iovec local = {sink, n};
    ssize_t got = process_vm_readv(self, &local, 1, remote, n, 0);
    if (got < 0 && errno == EPERM)
      return std::nullopt; // cannot probe here: trust the range, as before
    size_t ok = got < 0 ? 0 : static_cast<size_t>(got);
    if (ok < n)
      return reinterpret_cast<uintptr_t>(remote[ok].iov_base);
    uintptr_t next = (reinterpret_cast<uintptr_t>(remote[n - 1].iov_base) & ~(kPageSize - 1)) + kPageSize;
    if (next <= at)
      break;
    at = next;
  }
  return std::nullopt;
}

namespace {

/// Address range holding every entry name of a table, checked readable as a
/// whole: clang puts the names of one binary next to each other, so one probe
/// of their pages replaces a system call per name.
struct NameSpan {
  uintptr_t begin = 0, end = 0; ///< readable whole pages; empty when not probed

  /// The name at `name` when it lies in the span and ends (within
  /// kMaxSymbolName bytes) before the span does; nullopt sends the caller to
  /// readSymbolName, which checks the name on its own and says what is wrong.
  std::optional<std::string_view> read(const char *name) const {
    auto at = reinterpret_cast<uintptr_t>(name);
    if (at < begin || at >= end)
      return std::nullopt;
    size_t limit = std::min<size_t>(end - at, kMaxSymbolName + 1);
    const void *nul = std::memchr(name, 0, limit);
    if (!nul || static_cast<size_t>(static_cast<const char *>(nul) - name) > kMaxSymbolName)
      return std::nullopt;
    return std::string_view(name, static_cast<size_t>(static_cast<const char *>(nul) - name));
  }
};

/// Largest span of names probed at once; names spread wider (or a table with
/// corrupt pointers) are read one at a time.
constexpr uintptr_t kMaxNameSpan = uintptr_t(256) << 20;

/// Probes the pages from the lowest to the highest of the `count` names
/// nameAt(i) gives; an empty span when they are too far apart or any page
/// between them is unreadable.
template <typename NameAt> NameSpan probeNames(size_t count, NameAt nameAt) {
  constexpr uintptr_t kPageSize = 4096;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (size_t i = 0; i < count; ++i)
    if (auto at = reinterpret_cast<uintptr_t>(nameAt(i))) {
      lo = std::min(lo, at);
      hi = std::max(hi, at);
    }
  // Too few names to pay for a probe, or too far apart to trust one.
  if (count < 8 || lo > hi || hi - lo > kMaxNameSpan)
    return {};
  uintptr_t begin = lo & ~(kPageSize - 1), end = (hi & ~(kPageSize - 1)) + kPageSize;
  if (end < begin || firstUnreadable(reinterpret_cast<const void *>(begin), end - begin))
    return {};
  return {begin, end};
}

/// Checks the fields every entry must have, whatever its format.
llvm::Error validate(const OffloadEntry &e, const char *rawName, const std::string &what, size_t index) {
  if (e.kind == EntryKind::Requires)
    return llvm::Error::success(); // requires entries carry no address
  if (!rawName)
    return entryError(what, index, "null symbol name");
  if (!e.address)
    return entryError(what, index, fmt::format("'{}' has a null address", e.name));
  return llvm::Error::success();
}

} // namespace

EntryFormat detectEntryFormat(const void *begin, const void *end) {
  if (begin == end)
    return EntryFormat::Current;
  uint64_t first;
  std::memcpy(&first, begin, sizeof(first));
  return first == 0 ? EntryFormat::Current : EntryFormat::Legacy;
}

const char *entryKindName(EntryKind kind) {
  switch (kind) {
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

llvm::Expected<std::vector<OffloadEntry>> parseEntryTable(const void *begin, const void *end,
                                                          const std::string &what) {
  std::vector<OffloadEntry> out;
  if (begin == end)
    return out;
  if (!begin || !end || end < begin)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s",
                                   fmt::format("malformed entry range of {}", what).c_str());
  // Compilers align entry tables; a misaligned one is corrupt, and reading
  // its pointer fields in place would be undefined behaviour.
  if (reinterpret_cast<uintptr_t>(begin) % alignof(__tgt_offload_entry) != 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s",
                                   fmt::format("malformed entry table of {}: start {} is not {}-byte aligned",
                                               what, begin, alignof(__tgt_offload_entry))
                                       .c_str());
  auto bytes = static_cast<size_t>(static_cast<const char *>(end) - static_cast<const char *>(begin));
  if (bytes > kMaxEntryTableBytes)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(), "%s",
        fmt::format("malformed entry table of {}: entries [{}, {}) span {} bytes, more than an entry table "
                    "may hold ({} MiB)",
                    what, begin, end, bytes, kMaxEntryTableBytes >> 20)
            .c_str());
  if (auto bad = firstUnreadable(begin, bytes))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(), "%s",
        fmt::format("malformed entry table of {}: entries [{}, {}) are not readable host memory "
                    "(nothing readable at {:#x})",
                    what, begin, end, *bad)
            .c_str());
  EntryFormat format = detectEntryFormat(begin, end);
  size_t stride =
      format == EntryFormat::Current ? sizeof(__tgt_offload_entry) : sizeof(__tgt_offload_entry_legacy);
  if (bytes % stride != 0)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(), "%s",
        fmt::format("malformed entry table of {}: {} bytes is not a whole number of {}-byte entries{}", what,
                    bytes, stride,
                    format == EntryFormat::Legacy
                        ? " (the first entry is in the LLVM <= 19 format; formats mixed?)"
                        : "")
            .c_str());
  size_t count = bytes / stride;
  out.reserve(count);
  auto nameAt = [&](size_t i) -> const char * {
    if (format == EntryFormat::Current)
      return static_cast<const __tgt_offload_entry *>(begin)[i].SymbolName;
    return static_cast<const __tgt_offload_entry_legacy *>(begin)[i].name;
  };
  NameSpan names = probeNames(count, nameAt);
  for (size_t i = 0; i < count; ++i) {
    OffloadEntry e;
    const char *rawName;
    if (format == EntryFormat::Current) {
      const auto &raw = static_cast<const __tgt_offload_entry *>(begin)[i];
      if (raw.Reserved != 0)
        return entryError(what, i, "non-zero reserved word in an LLVM 20+ entry table");
      if (raw.Version != 1)
        return entryError(what, i, fmt::format("unsupported entry version {}", raw.Version));
      e.flags = raw.Flags;
      e.address = raw.Address;
      rawName = raw.SymbolName;
      e.size = raw.Size;
      e.data = raw.Data;
    } else {
      const auto &raw = static_cast<const __tgt_offload_entry_legacy *>(begin)[i];
      if (raw.reserved != 0)
        return entryError(what, i,
                          "non-zero reserved field in an LLVM <= 19 entry table (entries of the "
                          "two formats mixed?)");
      e.flags = static_cast<uint32_t>(raw.flags);
      e.address = raw.addr;
      rawName = raw.name;
      e.size = raw.size;
      // The five-field format has no data word; a requires entry kept its
      // requirement bits in `size`.
      e.data = raw.size;
    }
    e.kind = classify(e.flags, e.size);
    if (rawName) {
      if (std::optional<std::string_view> known = names.read(rawName)) {
        e.name = *known;
      } else {
        auto name = readSymbolName(rawName, what, i);
        if (!name)
          return name.takeError();
        e.name = std::move(*name);
      }
    }
    if (auto err = validate(e, rawName, what, i))
      return std::move(err);
    OMPSIM_TRACE_EVENT(Cat::Entry, "parse")
        .str("owner", what)
        .num("index", static_cast<int64_t>(i))
        .str("kind", entryKindName(e.kind))
        .str("name", e.name)
        .host("address", reinterpret_cast<uint64_t>(e.address))
        .num("size", static_cast<int64_t>(e.size))
        .hex("flags", e.flags);
    out.push_back(std::move(e));
  }
  return out;
}

} // namespace ompsim::host

// libFuzzer target: the host runtime's offload entry-table parser.
//
// An entry table holds pointers, which the parser dereferences (names) by
// contract, so raw fuzzer bytes cannot be handed over as a table. The input
// is read as a compact description instead:
//   byte 0: misalignment (0..7) of the table start, bit 7: legacy format;
//   then per entry 24 bytes: flags(4) size(8) address(8) version(2) name(1) reserved(1).
// `name` picks one of a few harness-owned strings (or null, 255). The
// address is taken as given (the parser never dereferences it).
#include "EntryTable.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char *const kNames[] = {"__omp_offloading_fe00_1_add1_l4", "", "x",
                              "__omp_offloading_fe00_1__ZTV3Der_l8addr", "__omp_offloading_fe00_1_main_l11"};

template <typename T> T take(const uint8_t *&p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  p += sizeof(T);
  return v;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  unsigned misalign = data[0] & 7;
  bool legacy = data[0] & 0x80;
  const uint8_t *p = data + 1;
  size_t n = (size - 1) / 24;
  size_t stride = legacy ? sizeof(__tgt_offload_entry_legacy) : sizeof(__tgt_offload_entry);
  // A trailing partial entry gives a table that is not a whole number of entries.
  size_t tail = (size - 1) % 24 ? (size - 1) % 24 % stride : 0;
  std::vector<unsigned char> storage(n * stride + tail + 16);
  unsigned char *table =
      storage.data() + ((8 - reinterpret_cast<uintptr_t>(storage.data()) % 8) % 8) + misalign;
  for (size_t i = 0; i < n; ++i) {
    auto flags = take<uint32_t>(p);
    auto esize = take<uint64_t>(p);
    auto addr = take<uint64_t>(p);
    auto version = take<uint16_t>(p);
    uint8_t nameIndex = *p++;
    uint8_t reserved = *p++;
    const char *name = nameIndex == 255 ? nullptr : kNames[nameIndex % (sizeof(kNames) / sizeof(*kNames))];
    if (legacy) {
      __tgt_offload_entry_legacy e{};
      e.addr = reinterpret_cast<void *>(addr);
      e.name = const_cast<char *>(name);
      e.size = esize;
      e.flags = static_cast<int32_t>(flags);
      std::memcpy(table + i * stride, &e, stride);
    } else {
      __tgt_offload_entry e{};
      e.Reserved = reserved == 0xAA ? 1 : 0;
      e.Version = version == 0xFFFF ? 2 : 1;
      e.Kind = 1;
      e.Flags = flags;
      e.Address = reinterpret_cast<void *>(addr);
      e.SymbolName = const_cast<char *>(name);
      e.Size = esize;
      std::memcpy(table + i * stride, &e, stride);
    }
  }
  std::memset(table + n * stride, 0x11, tail);
  auto parsed = ompsim::host::parseEntryTable(table, table + n * stride + tail, "fuzz table");
  if (!parsed) {
    std::string message = llvm::toString(parsed.takeError());
    // Errors name the table.
    if (message.find("fuzz table") == std::string::npos)
      __builtin_trap();
    return 0;
  }
  // A table that parses is whole entries, each with a kind name.
  for (const auto &e : *parsed)
    if (!ompsim::host::entryKindName(e.kind)[0])
      __builtin_trap();
  return 0;
}

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

template <typename T> T take(const uint8_t *&P) {
  T V;
  std::memcpy(&V, P, sizeof(T));
  P += sizeof(T);
  return V;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  if (Size < 1)
    return 0;
  unsigned Misalign = Data[0] & 7;
  bool Legacy = Data[0] & 0x80;
  const uint8_t *P = Data + 1;
  size_t N = (Size - 1) / 24;
  size_t Stride = Legacy ? sizeof(__tgt_offload_entry_legacy) : sizeof(__tgt_offload_entry);
  // A trailing partial entry gives a table that is not a whole number of entries.
  size_t Tail = (Size - 1) % 24 ? (Size - 1) % 24 % Stride : 0;
  std::vector<unsigned char> Storage(N * Stride + Tail + 16);
  unsigned char *Table =
      Storage.data() + ((8 - reinterpret_cast<uintptr_t>(Storage.data()) % 8) % 8) + Misalign;
  for (size_t I = 0; I < N; ++I) {
    auto Flags = take<uint32_t>(P);
    auto Esize = take<uint64_t>(P);
    auto Addr = take<uint64_t>(P);
    auto Version = take<uint16_t>(P);
    uint8_t NameIndex = *P++;
    uint8_t Reserved = *P++;
    const char *Name = NameIndex == 255 ? nullptr : kNames[NameIndex % (sizeof(kNames) / sizeof(*kNames))];
    if (Legacy) {
      __tgt_offload_entry_legacy E{};
      E.addr = reinterpret_cast<void *>(Addr);
      E.name = const_cast<char *>(Name);
      E.size = Esize;
      E.flags = static_cast<int32_t>(Flags);
      std::memcpy(Table + I * Stride, &E, Stride);
    } else {
      __tgt_offload_entry E{};
      E.Reserved = Reserved == 0xAA ? 1 : 0;
      E.Version = Version == 0xFFFF ? 2 : 1;
      E.Kind = 1;
      E.Flags = Flags;
      E.Address = reinterpret_cast<void *>(Addr);
      E.SymbolName = const_cast<char *>(Name);
      E.Size = Esize;
      std::memcpy(Table + I * Stride, &E, Stride);
    }
  }
  std::memset(Table + N * Stride, 0x11, Tail);
  auto Parsed = ompsim::host::parseEntryTable(Table, Table + N * Stride + Tail, "fuzz table");
  if (!Parsed) {
    std::string Message = llvm::toString(Parsed.takeError());
    // Errors name the table.
    if (Message.find("fuzz table") == std::string::npos)
      __builtin_trap();
    return 0;
  }
  // A table that parses is whole entries, each with a kind name.
  for (const auto &E : *Parsed)
    if (!ompsim::host::entryKindName(E.Kind)[0])
      __builtin_trap();
  return 0;
}

// libFuzzer target: what the in-process host plugin ("ours-host") does with a
// __tgt_device_image before the dynamic linker may see it.
//
// The input is a descriptor and the bytes it points at: the first 24 bytes
// place ImageStart, ImageEnd and the entry table relative to (or far from) a
// buffer holding the rest, which sits between PROT_NONE guard pages. The
// harness then runs the checks of the runtime and of ours-host in their
// order: the pointers against this process's mappings (firstUnreadable), the
// entry table (parseEntryTable), and the image bytes (ElfImageLoader::validate,
// the validator ours-host shares with the sim loader). No input may make any
// of them read outside what it was given or crash: every such read lands in a
// guard page (SIGSEGV) or is an ASan report.
#include "ElfImageLoader.h"
#include "EntryTable.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace {

constexpr size_t kMaxValidated = 64ull << 20;

/// Signed distance from the buffer start, decoded so that small in-buffer
/// offsets, just-outside offsets and far-away (unmapped) addresses are all
/// common.
int64_t delta(uint64_t Raw, size_t Size) {
  switch (Raw & 3) {
  case 0:
    return int64_t((Raw >> 2) % (Size + 1)); // inside, or one past the end
  case 1:
    return int64_t(Size) + int64_t((Raw >> 2) % 8192); // into the guard and beyond
  case 2:
    return -int64_t((Raw >> 2) % 8192); // before the start
  default:
    return int64_t(uint64_t(Raw >> 2) << 12); // anywhere at all
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  if (Size < 24)
    return 0;
  uint64_t RawStart, RawEnd, RawEntries;
  std::memcpy(&RawStart, Data, 8);
  std::memcpy(&RawEnd, Data + 8, 8);
  std::memcpy(&RawEntries, Data + 16, 8);
  Data += 24;
  Size -= 24;

  // [guard][bytes, rounded up to pages][guard]: the bytes end flush against
  // the second guard so a read one past them faults.
  const size_t Page = size_t(::sysconf(_SC_PAGESIZE));
  size_t Span = (Size + Page - 1) / Page * Page;
  size_t Total = Span + 2 * Page;
  auto *Map = static_cast<char *>(::mmap(nullptr, Total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (Map == MAP_FAILED)
    return 0;
  char *Buf = Map + Page + (Span - Size);
  if (Span)
    ::mprotect(Map + Page, Span, PROT_READ | PROT_WRITE);
  if (Size)
    std::memcpy(Buf, Data, Size);

  // The descriptor's pointers, as a corrupt binary might hold them (address
  // arithmetic in integers: they may point anywhere).
  auto At = [&](int64_t D) { return reinterpret_cast<uintptr_t>(Buf) + uint64_t(D); };
  uintptr_t Start = At(delta(RawStart, Size));
  uintptr_t End = (RawEnd & 4) ? Start + uint64_t(delta(RawEnd >> 3, Size)) : At(delta(RawEnd >> 3, Size));
  uintptr_t Entries = At(delta(RawEntries, Size)) & ~uintptr_t(7);

  using namespace ompsim;
  auto Near = [&](uintptr_t P) {
    return P >= reinterpret_cast<uintptr_t>(Map) && P <= reinterpret_cast<uintptr_t>(Map) + Total;
  };
  // The runtime: empty or inverted ranges are refused before anything else.
  if (Start && End > Start && End - Start <= host::kMaxDeviceImageBytes) {
    size_t Bytes = size_t(End - Start);
    // Readable: ours-host validates before dlopen. Only bytes inside the
    // harness's own mapping go on to the validator: elsewhere "readable" may
    // be ASan's shadow, which instrumented code must not read (a real host
    // has no shadow), and the copy the validator makes stays bounded.
    bool InBuffer = Near(Start) && Near(End);
    // Far from the buffer one page is probed: a probe of gigabytes through
    // ASan's shadow (readable here, absent on a real host) commits its pages
    // until the run is out of memory.
    size_t Probed = InBuffer ? Bytes : std::min(Bytes, Page);
    if (!host::firstUnreadable(reinterpret_cast<const void *>(Start), Probed) && InBuffer &&
        Bytes <= kMaxValidated) {
      llvm::consumeError(sim::ElfImageLoader::validate(
          llvm::ArrayRef<char>(reinterpret_cast<const char *>(Start), Bytes), "fuzz"));
    }
  }
  // The entry table the image points at, up to the end of the buffer. One
  // that starts below the buffer spans its guard page, and the parser refuses
  // it, but its probe of the range would first walk gigabytes of ASan's shadow
  // (readable here, absent on a real host), committing pages until the run is
  // out of memory: such a table is parsed where its first page is unreadable,
  // where the probe stops at once.
  bool Below = Entries < reinterpret_cast<uintptr_t>(Map);
  if (Below && !host::firstUnreadable(reinterpret_cast<const void *>(Entries), 1)) {
    ::munmap(Map, Total);
    return 0;
  }
  auto Parsed = host::parseEntryTable(reinterpret_cast<const void *>(Entries), Buf + Size, "fuzzed image");
  if (!Parsed)
    llvm::consumeError(Parsed.takeError());
  ::munmap(Map, Total);
  return 0;
}

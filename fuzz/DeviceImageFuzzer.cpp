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

#include <cstdint>
#include <cstring>

namespace {

constexpr size_t kMaxValidated = 64ull << 20;

/// Signed distance from the buffer start, decoded so that small in-buffer
/// offsets, just-outside offsets and far-away (unmapped) addresses are all
/// common.
int64_t delta(uint64_t raw, size_t size) {
  switch (raw & 3) {
  case 0:
    return int64_t((raw >> 2) % (size + 1)); // inside, or one past the end
  case 1:
    return int64_t(size) + int64_t((raw >> 2) % 8192); // into the guard and beyond
  case 2:
    return -int64_t((raw >> 2) % 8192); // before the start
  default:
    return int64_t(uint64_t(raw >> 2) << 12); // anywhere at all
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 24)
    return 0;
  uint64_t rawStart, rawEnd, rawEntries;
  std::memcpy(&rawStart, data, 8);
  std::memcpy(&rawEnd, data + 8, 8);
  std::memcpy(&rawEntries, data + 16, 8);
  data += 24;
  size -= 24;

  // [guard][bytes, rounded up to pages][guard]: the bytes end flush against
  // the second guard so a read one past them faults.
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  size_t span = (size + page - 1) / page * page;
  size_t total = span + 2 * page;
  auto *map = static_cast<char *>(::mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (map == MAP_FAILED)
    return 0;
  char *buf = map + page + (span - size);
  if (span)
    ::mprotect(map + page, span, PROT_READ | PROT_WRITE);
  if (size)
    std::memcpy(buf, data, size);

  // The descriptor's pointers, as a corrupt binary might hold them (address
  // arithmetic in integers: they may point anywhere).
  auto at = [&](int64_t d) { return reinterpret_cast<uintptr_t>(buf) + uint64_t(d); };
  uintptr_t start = at(delta(rawStart, size));
  uintptr_t end = (rawEnd & 4) ? start + uint64_t(delta(rawEnd >> 3, size)) : at(delta(rawEnd >> 3, size));
  uintptr_t entries = at(delta(rawEntries, size)) & ~uintptr_t(7);

  using namespace ompsim;
  // The runtime: empty or inverted ranges are refused before anything else.
  if (start && end > start && end - start <= host::kMaxDeviceImageBytes) {
    size_t bytes = size_t(end - start);
    // Readable: ours-host validates before dlopen. Only bytes inside the
    // harness's own mapping go on to the validator: elsewhere "readable" may
    // be ASan's shadow, which instrumented code must not read (a real host
    // has no shadow), and the copy the validator makes stays bounded.
    bool inBuffer =
        start >= reinterpret_cast<uintptr_t>(map) && end <= reinterpret_cast<uintptr_t>(map) + total;
    if (!host::firstUnreadable(reinterpret_cast<const void *>(start), bytes) && inBuffer &&
        bytes <= kMaxValidated) {
      llvm::consumeError(sim::ElfImageLoader::validate(
          llvm::ArrayRef<char>(reinterpret_cast<const char *>(start), bytes), "fuzz"));
    }
  }
  // The entry table the image points at, up to the end of the buffer.
  auto parsed = host::parseEntryTable(reinterpret_cast<const void *>(entries), buf + size, "fuzzed image");
  if (!parsed)
    llvm::consumeError(parsed.takeError());
  ::munmap(map, total);
  return 0;
}

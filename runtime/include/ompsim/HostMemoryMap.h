// ompsim: what a host address is: a loaded object, the heap, a thread's stack.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ompsim {

/// The kind of host memory an address lies in.
enum class HostMemoryKind {
  Object,      ///< a PT_LOAD segment of a loaded program or library (code, globals)
  Heap,        ///< the brk heap ("[heap]")
  Stack,       ///< the main thread's stack, or the calling thread's
  ThreadStack, ///< another thread's stack (anonymous memory right above a guard page)
  Anonymous,   ///< other anonymous memory (large malloc blocks, other threads' malloc arenas)
  File,        ///< a mapped file that is no loaded object
};

/// One mapping of the host process, from /proc/self/maps.
struct HostMemoryRegion {
  HostMemoryKind Kind = HostMemoryKind::Anonymous;
  uint64_t Begin = 0, End = 0; ///< [Begin, End)
  std::string Path;            ///< the file of an Object or File mapping
  bool Readable = false;       ///< mapped with read permission
};

/// The host mapping holding `Addr`, read from /proc/self/maps at the call;
/// std::nullopt when nothing is mapped there. The calling thread's stack is
/// told apart from other anonymous memory by its pthread attributes.
std::optional<HostMemoryRegion> hostMemoryRegion(uint64_t Addr);

/// The function whose frame on the calling thread's stack holds `Addr`
/// ("main", "fill(int*)"), found by unwinding that stack and naming the
/// frame's code with the host symbol tables; "" when no active frame of
/// this thread holds it.
std::string hostStackFrameOf(uint64_t Addr);

/// The best name for host data at `Addr` without the program's map names:
/// the global symbol ("table", "table+0x8"), "<stack of 'fn'>" for the
/// calling thread's frame of `fn`, "<host heap>", or "" when nothing is known.
/// Reads /proc/self/maps: for diagnostics and traces, not for hot paths.
std::string hostDataName(uint64_t Addr);

/// "host stack", "host heap", ... as diagnostics name a HostMemoryKind.
const char *hostMemoryKindName(HostMemoryKind Kind);

} // namespace ompsim

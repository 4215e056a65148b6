//===- HostMemoryMap.cpp - What a host address is -------------------------===//
//
// Reads /proc/self/maps to tell a loaded object, the heap, a stack and other
// anonymous memory apart, and unwinds the calling thread to name the frame
// that holds a stack address.
//
//===----------------------------------------------------------------------===//

#include "ompsim/HostMemoryMap.h"
#include "ompsim/HostSymbolizer.h"

#include <pthread.h>
#include <unwind.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

namespace ompsim {

namespace {

/// The calling thread's stack [Low, High), or {0, 0}.
std::pair<uint64_t, uint64_t> callingThreadStack() {
  pthread_attr_t Attr;
  if (pthread_getattr_np(pthread_self(), &Attr) != 0)
    return {0, 0};
  void *Low = nullptr;
  size_t Size = 0;
  int Rc = pthread_attr_getstack(&Attr, &Low, &Size);
  pthread_attr_destroy(&Attr);
  if (Rc != 0)
    return {0, 0};
  auto L = reinterpret_cast<uint64_t>(Low);
  return {L, L + Size};
}

/// One frame of the calling thread: the unwinder's CFA and code address.
struct Frame {
  uint64_t Cfa = 0, Ip = 0;
};

_Unwind_Reason_Code collectFrame(struct _Unwind_Context *Ctx, void *Arg) {
  auto &Frames = *static_cast<std::vector<Frame> *>(Arg);
  Frames.push_back({uint64_t(_Unwind_GetCFA(Ctx)), uint64_t(_Unwind_GetIP(Ctx))});
  return Frames.size() < 512 ? _URC_NO_REASON : _URC_END_OF_STACK;
}

} // namespace

std::optional<HostMemoryRegion> hostMemoryRegion(uint64_t Addr) {
  FILE *F = std::fopen("/proc/self/maps", "re");
  if (!F)
    return std::nullopt;
  std::optional<HostMemoryRegion> Found;
  char Line[4096];
  // A thread's stack that pthread made sits right above its PROT_NONE guard
  // (a malloc arena's reserve lies above its memory instead).
  uint64_t PrevEnd = 0;
  bool PrevGuard = false;
  while (std::fgets(Line, sizeof Line, F)) {
    uint64_t Begin = 0, End = 0, Inode = 0;
    char Perms[8] = {0};
    int PathAt = 0;
    if (std::sscanf(Line, "%" SCNx64 "-%" SCNx64 " %7s %*s %*s %" SCNu64 " %n", &Begin, &End, Perms, &Inode,
                    &PathAt) < 4)
      continue;
    bool AboveGuard = PrevGuard && PrevEnd == Begin;
    PrevEnd = End;
    PrevGuard = std::strncmp(Perms, "---p", 4) == 0;
    if (Addr < Begin || Addr >= End)
      continue;
    std::string Path = PathAt > 0 ? std::string(Line + PathAt) : std::string();
    while (!Path.empty() && (Path.back() == '\n' || Path.back() == ' '))
      Path.pop_back();
    HostMemoryRegion R;
    R.Begin = Begin;
    R.End = End;
    R.Readable = Perms[0] == 'r';
    if (Path == "[heap]")
      R.Kind = HostMemoryKind::Heap;
    else if (Path.rfind("[stack", 0) == 0)
      R.Kind = HostMemoryKind::Stack;
    else if (!Path.empty() && Path[0] == '/') {
      R.Path = Path;
      R.Kind = HostSymbolizer::get().objectOf(Addr).empty() ? HostMemoryKind::File : HostMemoryKind::Object;
    } else
      R.Kind = AboveGuard && R.Readable ? HostMemoryKind::ThreadStack : HostMemoryKind::Anonymous;
    Found = R;
    break;
  }
  std::fclose(F);
  if (Found && (Found->Kind == HostMemoryKind::Anonymous || Found->Kind == HostMemoryKind::ThreadStack)) {
    auto [Low, High] = callingThreadStack();
    if (Addr >= Low && Addr < High)
      Found->Kind = HostMemoryKind::Stack;
  }
  return Found;
}

std::string hostStackFrameOf(uint64_t Addr) {
  std::vector<Frame> Frames;
  _Unwind_Backtrace(collectFrame, &Frames);
  // The unwinder pairs a frame's code address with its stack pointer at the
  // call (its callee's CFA), so a frame's locals lie from there up to the
  // next frame's.
  for (size_t I = 0; I + 1 < Frames.size(); ++I) {
    if (Addr < Frames[I].Cfa || Addr >= Frames[I + 1].Cfa)
      continue;
    // The return address may be one past the call: name the call instruction.
    auto Sym = HostSymbolizer::get().lookup(Frames[I].Ip - 1);
    if (!Sym || !Sym->IsFunction)
      return "";
    return Sym->Name;
  }
  return "";
}

std::string hostDataName(uint64_t Addr) {
  if (auto Sym = HostSymbolizer::get().lookup(Addr); Sym && !Sym->IsFunction) {
    if (!Sym->Offset)
      return Sym->Name;
    char Off[32];
    std::snprintf(Off, sizeof Off, "+0x%" PRIx64, Sym->Offset);
    return Sym->Name + Off;
  }
  std::optional<HostMemoryRegion> R = hostMemoryRegion(Addr);
  if (!R)
    return "";
  switch (R->Kind) {
  case HostMemoryKind::Stack: {
    std::string Fn = hostStackFrameOf(Addr);
    return Fn.empty() ? "<host stack>" : "<stack of '" + Fn + "'>";
  }
  case HostMemoryKind::Heap:
  case HostMemoryKind::Anonymous:
    return "<host heap>";
  case HostMemoryKind::ThreadStack:
    return "<host stack of another thread>";
  default:
    return "";
  }
}

const char *hostMemoryKindName(HostMemoryKind Kind) {
  switch (Kind) {
  case HostMemoryKind::Object:
    return "host data";
  case HostMemoryKind::Heap:
    return "host heap";
  case HostMemoryKind::Stack:
    return "host stack";
  case HostMemoryKind::Anonymous:
    return "host heap";
  case HostMemoryKind::ThreadStack:
    return "host stack of another thread";
  case HostMemoryKind::File:
    return "a host file mapping";
  }
  return "host memory";
}

} // namespace ompsim

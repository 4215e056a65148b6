//===- BarrierReport.cpp - where a block's threads wait -------------------===//
#include "BarrierReport.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ompsim::vgpu {
namespace {

/// An ident's flag for an implicit barrier (a worksharing construct's end,
/// kmp's KMP_IDENT_BARRIER_IMPL).
constexpr uint32_t IdentBarrierImplicit = 0x40;

/// The fields of an ident's psource, ";file;function;line;column;;".
struct SourceLocation {
  const char *File = nullptr;
  size_t FileLength = 0;
  unsigned Line = 0;
  unsigned Column = 0;
};

/// The location `Source` names; false without one (no -g: "unknown", 0).
bool parseSource(const char *Source, SourceLocation &Loc) {
  if (!Source || *Source != ';')
    return false;
  const char *File = Source + 1;
  const char *FileEnd = std::strchr(File, ';');
  if (!FileEnd)
    return false;
  const char *Function = FileEnd + 1;
  const char *FunctionEnd = std::strchr(Function, ';');
  if (!FunctionEnd)
    return false;
  char *End = nullptr;
  unsigned long Line = std::strtoul(FunctionEnd + 1, &End, 10);
  unsigned long Column = *End == ';' ? std::strtoul(End + 1, nullptr, 10) : 0;
  Loc.File = File;
  Loc.FileLength = size_t(FileEnd - File);
  Loc.Line = unsigned(Line);
  Loc.Column = unsigned(Column);
  return Loc.FileLength && Line && !(Loc.FileLength == 7 && !std::strncmp(File, "unknown", 7));
}

} // namespace

bool sameBarrier(const BarrierSite &A, const BarrierSite &B) {
  if (&A == &B)
    return true;
  if (A.Kind != B.Kind)
    return false;
  if (A.Code == B.Code)
    return true;
  SourceLocation LocA, LocB;
  return parseSource(A.Source, LocA) && parseSource(B.Source, LocB) && !std::strcmp(A.Source, B.Source);
}

void BarrierReport::treatAsWaiting(uint32_t T, WaitTy Wait) {
  if (T < Threads && !Fibers[T].Done) {
    Override = T;
    OverrideWait = Wait;
  }
}

void BarrierReport::add(uint32_t T) {
  const Fiber &F = Fibers[T];
  WaitTy Wait = T == Override ? OverrideWait : F.Wait;
  Group Probe{};
  if (F.Done)
    Probe.Where = Group::Finished;
  else if (Wait == Fiber::AtBlock)
    Probe.Where = Group::AtBlock;
  else if (Wait == Fiber::AtWarp)
    Probe.Where = Group::AtWarp;
  else if (Wait == Fiber::AtGroup)
    Probe.Where = Group::AtGroup;
  else
    Probe.Where = Group::Spinning;
  if (Probe.Where == Group::AtBlock || Probe.Where == Group::AtGroup)
    Probe.Site = F.Site;
  Group *G = nullptr;
  for (uint32_t I = 0; I < GroupsUsed && !G; ++I) {
    Group &C = Groups[I];
    if (C.Where == Probe.Where &&
        (C.Site == Probe.Site || (C.Site && Probe.Site && sameBarrier(*C.Site, *Probe.Site))))
      G = &C;
  }
  if (!G) {
    if (GroupsUsed == kMaxGroups) {
      ++Elsewhere;
      return;
    }
    G = &Groups[GroupsUsed++];
    *G = Probe;
  }
  ++G->Threads;
  if (G->RangeCount && G->Ranges[G->RangeCount - 1][1] + 1 == T)
    G->Ranges[G->RangeCount - 1][1] = T;
  else if (G->RangeCount < kMaxRanges) {
    G->Ranges[G->RangeCount][0] = G->Ranges[G->RangeCount][1] = T;
    ++G->RangeCount;
  } else
    ++G->Unlisted;
}

void BarrierReport::append(const char *Format, ...) {
  if (Used + 1 >= sizeof Text)
    return;
  va_list Args;
  va_start(Args, Format);
  int N = std::vsnprintf(Text + Used, sizeof Text - Used, Format, Args);
  va_end(Args);
  if (N > 0)
    Used = Used + size_t(N) < sizeof Text ? Used + size_t(N) : sizeof Text - 1;
}

void BarrierReport::appendThreads(const Group &G) {
  bool One = G.Threads == 1;
  append(One ? "thread " : "threads ");
  for (uint32_t I = 0; I < G.RangeCount; ++I) {
    if (I)
      append(", ");
    if (G.Ranges[I][0] == G.Ranges[I][1])
      append("%u", G.Ranges[I][0]);
    else
      append("%u-%u", G.Ranges[I][0], G.Ranges[I][1]);
  }
  if (G.Unlisted)
    append(" and %u more", G.Unlisted);
}

void BarrierReport::appendSite(const BarrierSite *Site) {
  if (!Site) {
    append("a barrier of the GPU device runtime");
    return;
  }
  switch (Site->Kind) {
  case BarrierSite::Construct:
    append(Site->IdentFlags & IdentBarrierImplicit ? "the implicit barrier" : "the barrier");
    break;
  case BarrierSite::RegionEnd:
    append("the end of the parallel region");
    break;
  case BarrierSite::BlockBarrier:
    append("ompx_sync_block");
    break;
  }
  SourceLocation Loc;
  if (parseSource(Site->Source, Loc))
    append(" at %.*s:%u:%u", int(Loc.FileLength), Loc.File, Loc.Line, Loc.Column);
  else
    append(" called from 0x%llx%s", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(Site->Code)),
           Site->Kind == BarrierSite::BlockBarrier ? "" : " (build with -g to name its line)");
}

const char *BarrierReport::whereThreadsAre(uint32_t GroupCount) {
  GroupsUsed = Elsewhere = 0;
  Used = 0;
  Text[0] = 0;
  for (uint32_t T = 0; T < Threads; ++T)
    add(T);
  for (uint32_t I = 0; I < GroupsUsed; ++I) {
    const Group &G = Groups[I];
    if (I)
      append("; ");
    appendThreads(G);
    bool One = G.Threads == 1;
    switch (G.Where) {
    case Group::Finished:
      append(One ? " has finished" : " have finished");
      break;
    case Group::Spinning:
      append(One ? " spins" : " spin");
      break;
    case Group::AtWarp:
      append(" wait%s at a warp barrier", One ? "s" : "");
      break;
    case Group::AtBlock:
      append(" wait%s at ", One ? "s" : "");
      appendSite(G.Site);
      break;
    case Group::AtGroup:
      append(" wait%s at ", One ? "s" : "");
      appendSite(G.Site);
      append(" (a barrier of %u threads)", GroupCount);
      break;
    }
  }
  if (Elsewhere)
    append("; %u threads elsewhere", Elsewhere);
  return Text;
}

} // namespace ompsim::vgpu

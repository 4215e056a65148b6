//===- TeamSharedGuards.cpp - team-shared globals between guard pages -----===//
//
// The JIT's layout puts each global's end at a page boundary and leaves the
// next page to the guard. A device thread protects the guard pages once per
// layout and block memory it runs blocks with (the protections stay while
// both do), and fills each global's pages with 0x7f in every block, as the
// virtual GPU's unchecked team-shared memory is filled.
//
//===----------------------------------------------------------------------===//
#include "TeamSharedGuards.h"
#include "TeamSharedAccesses.h"

#include "../DeviceStop.h"
#include "../vgpu/Block.h"
#include "../vgpu/BlockRunner.h"
#include "ompsim/device_runtime.h"

#include <sys/mman.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("default")))

namespace ompsim::device {
namespace {

/// The page of the JIT's layout (GuardPageBytes there).
constexpr uint64_t Page = 4096;

uint64_t guardOf(const ompsim_team_shared_var &V) { return (V.offset + V.size + Page - 1) / Page * Page; }

void protect(uint64_t Base, uint64_t Bytes, const ompsim_team_shared_var *Vars, uint64_t Count) {
  if (uint64_t(::sysconf(_SC_PAGESIZE)) != Page)
    stopDevice("team-shared guard pages under OMPSIM_CHECK need pages of %" PRIu64 " bytes", Page);
  bool Failed = ::mprotect(reinterpret_cast<void *>(Base), Bytes, PROT_READ | PROT_WRITE) != 0;
  for (uint64_t I = 0; I < Count && !Failed; ++I)
    Failed = ::mprotect(reinterpret_cast<void *>(Base + guardOf(Vars[I])), Page, PROT_NONE) != 0;
  if (Failed)
    stopDevice("team-shared guard pages under OMPSIM_CHECK: mprotect failed (too many mappings?)");
  TTeamShared = {Base, Bytes, Vars, Count};
}

} // namespace

/// The layout the calling device thread's block memory is protected for.
__attribute__((tls_model("initial-exec"))) thread_local TeamSharedLayout TTeamShared;

const ompsim_team_shared_var *teamSharedVarAt(const TeamSharedLayout &L, uint64_t Offset) {
  for (uint64_t I = 0; I < L.Count; ++I)
    if (Offset >= L.Vars[I].offset && Offset - L.Vars[I].offset < L.Vars[I].size)
      return &L.Vars[I];
  return nullptr;
}

int teamSharedVarText(char *Out, size_t Size, const ompsim_team_shared_var &V) {
  if (V.element_size && V.element_size < V.size)
    return std::snprintf(Out, Size, "'%s' (%" PRIu64 " elements of %" PRIu64 " bytes)", V.name,
                         V.size / V.element_size, V.element_size);
  return std::snprintf(Out, Size, "'%s' (%" PRIu64 " bytes)", V.name, V.size);
}

bool describeTeamSharedAddress(uint64_t Addr, char *What, size_t WhatSize, char *Note, size_t NoteSize) {
  const TeamSharedLayout &G = TTeamShared;
  if (!G.Vars || Addr < G.Base || Addr - G.Base >= G.Bytes)
    return false;
  uint64_t Offset = Addr - G.Base;
  for (uint64_t I = 0; I < G.Count; ++I) {
    const ompsim_team_shared_var &V = G.Vars[I];
    uint64_t Guard = guardOf(V);
    if (Offset < Guard || Offset >= Guard + Page)
      continue;
    char Var[512];
    uint64_t Past = Offset - (V.offset + V.size);
    // The next global's start may be nearer: an index below zero.
    if (I + 1 < G.Count && G.Vars[I + 1].offset > Offset && G.Vars[I + 1].offset - Offset < Past) {
      const ompsim_team_shared_var &Next = G.Vars[I + 1];
      teamSharedVarText(Var, sizeof Var, Next);
      std::snprintf(What, WhatSize,
                    "team-shared memory at 0x%" PRIx64 " (%" PRIu64
                    " bytes before the start of %s; block %u, thread %u)",
                    Addr, Next.offset - Offset, Var, vgpu::linearBlock(), vgpu::linearThread());
      std::snprintf(
          Note, NoteSize,
          "note: a thread indexes a team-shared variable below its start: keep the index at 0 or above");
      return true;
    }
    teamSharedVarText(Var, sizeof Var, V);
    uint64_t Unit = V.element_size && V.element_size < V.size ? V.element_size : 0;
    char Element[64] = "";
    if (Unit)
      std::snprintf(Element, sizeof Element, "element %" PRIu64 ", ", (Offset - V.offset) / Unit);
    std::snprintf(What, WhatSize,
                  "team-shared memory at 0x%" PRIx64 " (%s%" PRIu64
                  " bytes past the end of %s; block %u, thread %u)",
                  Addr, Element, Past, Var, vgpu::linearBlock(), vgpu::linearThread());
    std::snprintf(Note, NoteSize,
                  "note: a thread indexes past the end of a team-shared variable, which on a GPU writes the "
                  "next one: size it for the block's threads, or keep the index below its length");
    return true;
  }
  return false;
}

bool describeDynamicSharedAddress(uint64_t Addr, char *What, size_t WhatSize, char *Note, size_t NoteSize) {
  const vgpu::BlockRunner *R = vgpu::BlockRunner::TRunner;
  if (!R || !R->dynamicSharedGuard() || Addr < R->dynamicSharedGuard() ||
      Addr - R->dynamicSharedGuard() >= Page)
    return false;
  uint64_t Bytes = R->grid().DynamicSharedBytes;
  uint64_t End = R->dynamicSharedStart() + Bytes;
  std::snprintf(What, WhatSize,
                "dynamic shared memory at 0x%" PRIx64 " (%" PRIu64
                " bytes past the end of the block's dynamic shared memory (%" PRIu64
                " bytes); block %u, thread %u)",
                Addr, Addr - End, Bytes, vgpu::linearBlock(), vgpu::linearThread());
  std::snprintf(Note, NoteSize,
                "note: a thread indexes past the end of the dynamic shared memory the launch asks for "
                "(ompx_dyn_cgroup_mem): ask for more, or keep the index below its size");
  return true;
}

} // namespace ompsim::device

using namespace ompsim::device;

OMPSIM_DEVICE_API void *__ompsim_gpu_team_shared_checked(uint64_t Bytes, const ompsim_team_shared_var *Vars,
                                                         uint64_t Count) {
  bool Fresh = false;
  void *Memory = ompsim::vgpu::blockSharedPages(Bytes, Fresh);
  if (!Memory)
    stopDevice("team-shared memory under OMPSIM_CHECK outside a block of the virtual GPU");
  if (!Fresh)
    return Memory;
  uint64_t Base = reinterpret_cast<uint64_t>(Memory);
  const TeamSharedLayout &G = TTeamShared;
  if (G.Base != Base || G.Vars != Vars || G.Bytes != Bytes)
    protect(Base, Bytes, Vars, Count);
  // A new block: no thread of it has touched its team-shared memory yet.
  beginTeamSharedAccesses();
  // Each global's pages hold nothing to count on, in every block.
  for (uint64_t I = 0; I < Count; ++I) {
    uint64_t Begin = Vars[I].offset / Page * Page;
    std::memset(reinterpret_cast<void *>(Base + Begin), ompsim::vgpu::UnwrittenSharedByte,
                guardOf(Vars[I]) - Begin);
  }
  return Memory;
}

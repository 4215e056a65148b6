// OpenMP 5.1 map semantics as stock libomptarget 22 applies them: reference
// counts, present/always/delete, deferred pointer attachment with shadow
// pointers, struct members and declare mappers. `target update` lives in
// MapClauseUpdates.cpp, a region's kernel arguments in
// MapClauseKernelArguments.cpp. What the rules do is said as map events
// (events/OffloadEvents.h); the INFO lines, the trace and the map checker
// are their listeners (runtime/listeners).
#include "MapClauseProcessor.h"
#include "MapFlags.h"
#include "MapItemText.h"
#include "StockMessages.h"

#include "../events/OffloadEvents.h"

#include "ompsim/Errors.h"
#include "ompsim/offload_abi.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace ompsim::host {
namespace {

using mapflag::has;
using mapflag::memberOf;
namespace flag = mapflag;

/// The program whose map clauses are processed, for messages.
const char *programName() {
  return program_invocation_name && *program_invocation_name ? program_invocation_name : "the program";
}

} // namespace

std::vector<MapArg> makeMapArgs(int32_t N, void **Bases, void **Begins, const int64_t *Sizes,
                                const int64_t *Types, void **Names, void **Mappers) {
  std::vector<MapArg> Args(N > 0 ? N : 0);
  for (int32_t I = 0; I < N; ++I) {
    Args[I].Base = Bases ? Bases[I] : nullptr;
    Args[I].Begin = Begins ? Begins[I] : nullptr;
    Args[I].Size = Sizes ? Sizes[I] : 0;
    Args[I].Type = Types ? Types[I] : 0;
    Args[I].Name = Names ? Names[I] : nullptr;
    Args[I].Mapper = Mappers ? Mappers[I] : nullptr;
  }
  return Args;
}

std::vector<MapArg> MapClauseProcessor::runMapper(const MapArg &Arg) {
  MapperComponents Handle;
  reinterpret_cast<MapperFunction>(Arg.Mapper)(&Handle, Arg.Base, Arg.Begin, Arg.Size, Arg.Type, Arg.Name);
  if (events::observed())
    for (const MapArg &C : Handle.Components)
      events::emit(
          events::MapperComponent{eventItem(Arg), eventItem(C), reinterpret_cast<uintptr_t>(C.Base)});
  return std::move(Handle.Components);
}

llvm::Error MapClauseProcessor::missingPresent(const MapArg &Arg, const char *When) {
  // Stock's lines: the message names the item; a map-entering construct adds
  // getTargetPointer's report (exits and updates return at once).
  auto Addr = reinterpret_cast<uint64_t>(Arg.Begin);
  std::vector<std::string> Lines;
  if (std::string_view(When) == "updated") {
    Lines.push_back(stock::presentMotionMissing(Addr, Arg.Size));
  } else {
    Lines.push_back(stock::presentMissing(Addr, Arg.Size));
    if (std::string_view(When) == "mapped")
      Lines.push_back(stock::nullTargetPointer(/*Present=*/true));
  }
  return stock::makeError(std::move(Lines),
                          fmt::format("{} is not present on device {} ({} with the present modifier)",
                                      describeMapItem(Arg), Memory.deviceNumber(), When));
}

llvm::Error MapClauseProcessor::checkMapTypes(const std::vector<MapArg> &Args, const char *Construct,
                                              bool AllowNonContig) {
  for (const MapArg &Arg : Args) {
    auto Type = static_cast<uint64_t>(Arg.Type);
    uint64_t Unknown = Type & ~flag::Implemented;
    if (!AllowNonContig)
      Unknown |= Type & flag::NonContig;
    std::string Var = mapArgVariable(Arg.Name);
    // A pointer initialized privately from its pointee (PRIVATE with
    // ATTACH) is a form clang-22 does not emit; refuse it rather than pass
    // a wrong pointer.
    if ((Type & flag::Attach) && (Type & flag::Private))
      return makeError(
          fmt::format("map type {:#x} of {} on {} in {} combines {} with {} (a privately initialized "
                      "pointer), which ompsim's runtime does not implement",
                      Type, Var.empty() ? std::string("an unnamed item") : "'" + Var + "'", Construct,
                      programName(), flag::bitName(flag::Private), flag::bitName(flag::Attach)));
    if (!Unknown)
      continue;
    uint64_t Bit = Unknown & (~Unknown + 1);
    return makeError(fmt::format("map type {:#x} of {} on {} in {} has bit {}, which ompsim's "
                                 "runtime does not implement",
                                 Type, Var.empty() ? std::string("an unnamed item") : "'" + Var + "'",
                                 Construct, programName(), flag::bitName(Bit)));
  }
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::copyToDevice(MapEntry &Entry, uintptr_t Begin, uint64_t Size) {
  if (Size == 0)
    return llvm::Error::success();
  if (auto Err = Memory.submit(Entry.translate(Begin), reinterpret_cast<void *>(Begin), Size, Entry.InfoName))
    return Err;
  events::emitIfObserved(
      [&] { return events::MapCopied{Entry, Memory, /*ToDevice=*/true, Begin, Size, nullptr}; });
  // The host copy holds host pointers; re-point attached device pointers.
  for (auto It = Entry.Shadows.lower_bound(Begin); It != Entry.Shadows.end() && It->first < Begin + Size;
       ++It) {
    uint64_t Value = It->second.TgtValue;
    if (auto Err = Memory.submit(Entry.translate(It->first), &Value, sizeof(Value), Entry.InfoName))
      return Err;
  }
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::copyFromDevice(MapEntry &Entry, uintptr_t Begin, uint64_t Size,
                                               const void *MapName) {
  if (Size == 0)
    return llvm::Error::success();
  if (auto Err =
          Memory.retrieve(reinterpret_cast<void *>(Begin), Entry.translate(Begin), Size, Entry.InfoName))
    return Err;
  // Attached pointers came back as device addresses; restore the host values.
  for (auto It = Entry.Shadows.lower_bound(Begin); It != Entry.Shadows.end() && It->first < Begin + Size;
       ++It)
    std::memcpy(reinterpret_cast<void *>(It->first), &It->second.HostValue, sizeof(uintptr_t));
  events::emitIfObserved(
      [&] { return events::MapCopied{Entry, Memory, /*ToDevice=*/false, Begin, Size, MapName}; });
  return llvm::Error::success();
}

bool MapClauseProcessor::hasShadowIn(const MapEntry &Entry, uintptr_t Begin, uint64_t Size) {
  auto It = Entry.Shadows.lower_bound(Begin);
  return It != Entry.Shadows.end() && It->first < Begin + Size;
}

bool MapClauseProcessor::isNewAllocation(uintptr_t Addr) const {
  for (const auto &[begin, size] : NewAllocations)
    if (Addr >= begin && Addr < begin + size)
      return true;
  return false;
}

void MapClauseProcessor::lookedUp(uintptr_t Hst, int64_t Size, const MapEntry &Entry) const {
  events::emitIfObserved([&] { return events::MapLookedUp{Entry, Memory, Hst, Size}; });
}

llvm::Expected<MapClauseProcessor::Mapped>
MapClauseProcessor::mapOne(const MapArg &Arg, bool UpdateRef, bool CopyTo, bool PresentUse, bool Unnamed) {
  auto Begin = reinterpret_cast<uintptr_t>(Arg.Begin);
  auto Size = static_cast<uint64_t>(Arg.Size);
  bool Hold = has(Arg.Type, flag::OmpxHold);
  MapLookup Found = Table.lookup(Begin, Size);
  // An implicit item that overlaps a mapped block uses that block (a
  // variable captured in a region whose mapped part is a section of it).
  if (Found.Extends && !has(Arg.Type, flag::Implicit)) {
    bool Present = has(Arg.Type, flag::Present);
    std::vector<std::string> Lines{
        stock::explicitExtension(Begin, Arg.Size, Found.Entry->HstBegin, Found.Entry->size())};
    if (Present)
      Lines.push_back(stock::presentMissing(Begin, Arg.Size));
    Lines.push_back(stock::nullTargetPointer(Present));
    return stock::makeError(
        std::move(Lines),
        fmt::format("{} extends the mapped block at host address {} ({} bytes) on device {}; OpenMP does not "
                    "allow a mapped section to grow",
                    describeMapItem(Arg), hostAddressForMessage(Found.Entry->HstBegin), Found.Entry->size(),
                    Memory.deviceNumber()));
  }
  Mapped Out;
  if (Found.Entry) {
    MapEntry &E = *Found.Entry;
    // The hold count is kept even beside an infinite dynamic count (an
    // associated pointer), so omp_target_disassociate_ptr can refuse it.
    if (UpdateRef && (Hold || !E.isInfinite()))
      ++(Hold ? E.HoldRef : E.DynamicRef);
    Out.Entry = &E;
    Out.TgtBegin = E.translate(Begin);
    auto FoundEvent = [&](events::Endpoint Point) {
      return events::MapFound{Point, E, Memory, eventItem(Arg, Unnamed), Out.TgtBegin, UpdateRef};
    };
    events::emitIfObserved([&] { return FoundEvent(events::Endpoint::Begin); });
    bool Always = has(Arg.Type, flag::Always);
    // New means allocated by this construct (a member allocated with its
    // parent included); data that was present before is not copied again.
    bool IsNew = Fresh.count(&E) != 0;
    // Stock also takes an item it does not count (a member, a mapper's first
    // component) for new when its block's total count is 1: a block a mapper
    // left mapped, never released, is copied again by every construct that
    // maps it through the mapper. Like stock, not over an attached pointer.
    if (!UpdateRef && !IsNew && E.totalRef() == 1 && !E.isInfinite() && !hasShadowIn(E, Begin, Size))
      IsNew = true;
    // `always` moves a block whatever its count, as stock: a declare-target
    // global's (an image's permanent entry) and memory given by
    // omp_target_associate_ptr too.
    if (CopyTo && (Always || IsNew) && Found.Contained) {
      if (auto Err = copyToDevice(E, Begin, Size))
        return std::move(Err);
    } else if (PresentUse && KernelLaunch && !IsNew) {
      events::emitIfObserved([&] { return events::MapPresentUse{E, Begin, Size, Arg.Name}; });
    }
    events::emitIfObserved([&] { return FoundEvent(events::Endpoint::End); });
    return Out;
  }
  if (UnifiedShared && !has(Arg.Type, flag::Close)) {
    Out.TgtBegin = Begin; // the host's memory is the device's
    Out.HostPointer = Size != 0;
    return Out;
  }
  if (has(Arg.Type, flag::Present))
    return missingPresent(Arg, "mapped");
  if (Size == 0)
    return Out; // a zero-length section that is not mapped stays unmapped
  auto Tgt = Memory.allocate(Size, Arg.Begin);
  if (!Tgt)
    return Tgt.takeError();
  MapEntry E;
  E.HstBegin = Begin;
  E.HstEnd = Begin + Size;
  E.HstBase = reinterpret_cast<uintptr_t>(Arg.Base);
  E.TgtBegin = *Tgt;
  (Hold ? E.HoldRef : E.DynamicRef) = 1;
  E.OwnsDeviceMemory = true;
  E.Name = mapArgVariable(Arg.Name);
  if (!Unnamed) {
    E.InfoName = mapArgName(Arg.Name);
    E.MapName = Arg.Name;
  }
  E.MappedBy = Site;
  MapEntry &Inserted = Table.insert(std::move(E));
  Fresh.insert(&Inserted);
  NewAllocations.emplace_back(Begin, Size);
  events::emitIfObserved(
      [&] { return events::MapCreated{Inserted, Memory, eventItem(Arg, Unnamed), /*CopiedWhole=*/CopyTo}; });
  Out.Entry = &Inserted;
  Out.TgtBegin = Inserted.TgtBegin;
  if (CopyTo)
    if (auto Err = copyToDevice(Inserted, Begin, Size))
      return std::move(Err);
  return Out;
}

llvm::Error MapClauseProcessor::attachPointer(uintptr_t PointerLoc, uintptr_t PointeeBegin,
                                              MapEntry &PointerEntry, uint64_t PointeeTgt) {
  uintptr_t HostValue;
  std::memcpy(&HostValue, reinterpret_cast<const void *>(PointerLoc), sizeof(HostValue));
  // The device pointer points where the host pointer does, relative to the
  // mapped section (the section need not start at the pointee).
  uint64_t TgtValue = PointeeTgt - (PointeeBegin - HostValue);
  auto It = PointerEntry.Shadows.find(PointerLoc);
  if (It != PointerEntry.Shadows.end() && It->second.TgtValue == TgtValue)
    return llvm::Error::success();
  if (auto Err = Memory.submit(PointerEntry.translate(PointerLoc), &TgtValue, sizeof(TgtValue),
                               PointerEntry.InfoName))
    return Err;
  PointerEntry.Shadows[PointerLoc] = ShadowPointer{HostValue, TgtValue};
  events::emitIfObserved([&] {
    return events::MapPointerAttached{Memory, PointerLoc, PointerEntry.translate(PointerLoc), TgtValue};
  });
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::enter(const std::vector<MapArg> &Args, void **ArgsBase) {
  NewAllocations.clear();
  Attachments.clear();
  if (auto Err = enterList(Args, ArgsBase, /*fromMapper=*/false))
    return Err;
  // ATTACH items apply after every item of the construct is mapped.
  return processAttachments();
}

llvm::Error MapClauseProcessor::enterList(const std::vector<MapArg> &Args, void **ArgsBase, bool FromMapper) {
  if (auto Err = checkMapTypes(Args, "a map-entering construct", /*allowNonContig=*/false))
    return Err;
  for (size_t I = 0; I < Args.size(); ++I) {
    const MapArg &Arg = Args[I];
    if (has(Arg.Type, flag::Literal) || has(Arg.Type, flag::Private))
      continue; // passed by value at launch
    if (Arg.Mapper) {
      if (auto Err = enterList(runMapper(Arg), nullptr, /*fromMapper=*/true))
        return stock::addLine(std::move(Err), stock::mapperFailed("targetDataBegin"));
      continue;
    }
    if (has(Arg.Type, flag::Attach)) {
      Attachments.push_back(Arg);
      continue;
    }
    bool Member = memberOf(Arg.Type) != 0;
    // The first component a mapper pushes stands for the item the caller
    // mapped: stock counts it with its parent rather than on its own.
    bool FirstOfMapper = FromMapper && I == 0;
    bool UpdateRef = !Member && !FirstOfMapper;
    MapEntry *PointerEntry = nullptr;
    if (has(Arg.Type, flag::PtrAndObj)) {
      // The pointer itself: part of a mapped parent for members, else mapped
      // here with the object's reference kind.
      MapArg Pointer{Arg.Base,
                     Arg.Base,
                     static_cast<int64_t>(sizeof(void *)),
                     static_cast<int64_t>(static_cast<uint64_t>(Arg.Type) &
                                          (flag::OmpxHold | flag::Present | flag::Implicit)),
                     Arg.Name,
                     nullptr};
      auto Mapped = mapOne(Pointer, UpdateRef, /*copyTo=*/false, /*presentUse=*/false, /*unnamed=*/true);
      if (!Mapped)
        return Mapped.takeError();
      PointerEntry = Mapped->Entry;
      // The pointee has its own count even when the pointer is a member.
      UpdateRef = !FirstOfMapper;
    }
    // From here on the pointee's base is the pointer's value (stock), so a
    // zero-length lookup between the pointer and its pointee finds nothing.
    MapArg Object = Arg;
    if (PointerEntry)
      std::memcpy(&Object.Base, Arg.Base, sizeof(void *));
    auto Mapped = mapOne(Object, UpdateRef, has(Arg.Type, flag::To), /*presentUse=*/has(Arg.Type, flag::To));
    if (!Mapped)
      return Mapped.takeError();
    if (FirstOfMapper && Mapped->Entry && Fresh.count(Mapped->Entry))
      events::emitIfObserved([&] { return events::MapLeftByMapper{*Mapped->Entry}; });
    if (has(Arg.Type, flag::ReturnParam) && ArgsBase && Mapped->Entry) {
      uintptr_t Delta = reinterpret_cast<uintptr_t>(Object.Begin) - reinterpret_cast<uintptr_t>(Object.Base);
      ArgsBase[I] = reinterpret_cast<void *>(Mapped->TgtBegin - Delta);
    }
    if (PointerEntry && Mapped->Entry) {
      uintptr_t PointerLoc = reinterpret_cast<uintptr_t>(Arg.Base);
      if (auto Err = attachPointer(PointerLoc, reinterpret_cast<uintptr_t>(Arg.Begin), *PointerEntry,
                                   Mapped->TgtBegin))
        return Err;
    }
    // Stock names an explicit item left with nothing on the device (a
    // zero-length section of unmapped data).
    if (Arg.Type != 0 && !Member && !has(Arg.Type, flag::Implicit) && !Mapped->Entry && !Mapped->HostPointer)
      events::emitIfObserved([&] { return events::MapNothingMapped{Memory, Arg.Name}; });
  }
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::processAttachments() {
  for (const MapArg &Arg : Attachments) {
    auto PointerLoc = reinterpret_cast<uintptr_t>(Arg.Base);
    auto PointeeBegin = reinterpret_cast<uintptr_t>(Arg.Begin);
    auto PointerSize = static_cast<uint64_t>(Arg.Size);
    // Attach only when the pointer or its pointee was allocated by this
    // construct (or `Always`): an existing attachment stays as it is.
    if (!has(Arg.Type, flag::Always) && !isNewAllocation(PointeeBegin) && !isNewAllocation(PointerLoc))
      continue;
    // Stock looks the pointee up, then the pointer.
    MapLookup Pointee = Table.lookup(PointeeBegin, 0);
    if (!Pointee.Entry || !Pointee.Contained)
      continue; // nothing on the device to point at
    lookedUp(PointeeBegin, 0, *Pointee.Entry);
    MapLookup Pointer = Table.lookup(PointerLoc, PointerSize);
    if (!Pointer.Entry || !Pointer.Contained)
      continue; // the pointer is not on the device: the kernel gets its own copy
    lookedUp(PointerLoc, static_cast<int64_t>(PointerSize), *Pointer.Entry);
    if (Pointee.Entry->isInfinite())
      continue;
    if (PointerSize < sizeof(void *))
      return makeError(fmt::format("attach entry of {} has a {}-byte pointer; a pointer is {} bytes",
                                   describeMapItem(Arg), PointerSize, sizeof(void *)));
    if (auto Err =
            attachPointer(PointerLoc, PointeeBegin, *Pointer.Entry, Pointee.Entry->translate(PointeeBegin)))
      return Err;
  }
  Attachments.clear();
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::removeIfUnused(MapEntry &Entry, int64_t Size) {
  if (Entry.isInfinite() || Entry.totalRef() != 0)
    return llvm::Error::success();
  events::emitIfObserved([&] { return events::MapRemoved{Entry, Memory, Size}; });
  uint64_t Tgt = Entry.TgtBegin;
  bool Owns = Entry.OwnsDeviceMemory;
  Fresh.erase(&Entry);
  Table.recordEnded(Entry, Site);
  Table.erase(Entry);
  return Owns ? Memory.release(Tgt) : llvm::Error::success();
}

llvm::Error MapClauseProcessor::exit(const std::vector<MapArg> &Args) {
  Released.clear();
  if (auto Err = exitList(Args, /*fromMapper=*/false))
    return Err;
  // Blocks go once every item of the construct was released (a member's
  // copy-back needs its parent's block).
  std::vector<std::pair<MapEntry *, int64_t>> Candidates;
  Candidates.swap(Released);
  for (size_t I = 0; I < Candidates.size(); ++I) {
    MapEntry *E = Candidates[I].first;
    if (std::any_of(Candidates.begin(), Candidates.begin() + I, [&](const auto &C) { return C.first == E; }))
      continue;
    if (auto Err = removeIfUnused(*E, Candidates[I].second))
      return Err;
  }
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::exitList(const std::vector<MapArg> &Args, bool FromMapper) {
  if (auto Err = checkMapTypes(Args, "a map-exiting construct", /*allowNonContig=*/false))
    return Err;
  for (size_t K = Args.size(); K-- > 0;) {
    const MapArg &Arg = Args[K];
    if (has(Arg.Type, flag::Literal) || has(Arg.Type, flag::Private))
      continue;
    if (has(Arg.Type, flag::Attach))
      continue; // attachment happens on entry only
    if (Arg.Mapper) {
      if (auto Err = exitList(runMapper(Arg), /*fromMapper=*/true))
        return stock::addLine(std::move(Err), stock::mapperFailed("targetDataEnd"));
      continue;
    }
    auto Begin = reinterpret_cast<uintptr_t>(Arg.Begin);
    auto Size = static_cast<uint64_t>(Arg.Size);
    bool Implicit = has(Arg.Type, flag::Implicit);
    MapLookup Found = Table.lookup(Begin, Size);
    bool Present = Found.Entry && (Found.Contained || (Implicit && Found.Extends));
    if (!Present) {
      if (has(Arg.Type, flag::Present) && (Size != 0 || !Found.Entry) && !UnifiedShared)
        return missingPresent(Arg, "released");
      continue; // nothing to release (zero-length or never mapped)
    }
    MapEntry &E = *Found.Entry;
    bool Hold = has(Arg.Type, flag::OmpxHold);
    bool Del = has(Arg.Type, flag::Delete);
    bool Pointee = has(Arg.Type, flag::PtrAndObj);
    bool UpdateRef = (memberOf(Arg.Type) == 0 || Pointee) && !(FromMapper && K == 0);
    // Would one release of this kind (after `Delete` resets it) remove the block?
    bool Last = false;
    if (!E.isInfinite()) {
      uint64_t &Mine = Hold ? E.HoldRef : E.DynamicRef;
      uint64_t Other = Hold ? E.DynamicRef : E.HoldRef;
      Last = Other == 0 && (Del || Mine == 1);
      if (Del)
        Mine = 1; // `Delete` resets the count so the release below drops it
      if (UpdateRef && Mine > 0)
        --Mine;
    } else if (Hold && UpdateRef && E.HoldRef > 0) {
      --E.HoldRef;
    }
    auto ReleaseEvent = [&](events::Endpoint Point) {
      return events::MapReleased{Point, E, Memory, eventItem(Arg), UpdateRef, Last, Del};
    };
    events::emitIfObserved([&] { return ReleaseEvent(events::Endpoint::Begin); });
    // A block of an infinite count is never the last release's; `always`
    // moves it back all the same (stock).
    if (has(Arg.Type, flag::From) && (Last || has(Arg.Type, flag::Always)) && Found.Contained)
      if (auto Err = copyFromDevice(E, Begin, Size, Arg.Name))
        return Err;
    events::emitIfObserved([&] { return ReleaseEvent(events::Endpoint::End); });
    // Plain members never remove their parent's block.
    if (memberOf(Arg.Type) == 0 || Pointee)
      Released.emplace_back(&E, Arg.Size);
  }
  return llvm::Error::success();
}

std::string mapflag::bitName(uint64_t Bit) {
  static constexpr std::pair<uint64_t, const char *> Names[] = {
      {To, "OMP_MAP_TO"},
      {From, "OMP_MAP_FROM"},
      {Always, "OMP_MAP_ALWAYS"},
      {Delete, "OMP_MAP_DELETE"},
      {PtrAndObj, "OMP_MAP_PTR_AND_OBJ"},
      {TargetParam, "OMP_MAP_TARGET_PARAM"},
      {ReturnParam, "OMP_MAP_RETURN_PARAM"},
      {Private, "OMP_MAP_PRIVATE"},
      {Literal, "OMP_MAP_LITERAL"},
      {Implicit, "OMP_MAP_IMPLICIT"},
      {Close, "OMP_MAP_CLOSE"},
      {Present, "OMP_MAP_PRESENT"},
      {OmpxHold, "OMP_MAP_OMPX_HOLD"},
      {Attach, "OMP_MAP_ATTACH"},
      {NonContig, "OMP_MAP_NON_CONTIG"},
  };
  for (const auto &[value, name] : Names)
    if (value == Bit)
      return fmt::format("{} ({:#x})", name, Bit);
  return fmt::format("{:#x} (no OpenMPOffloadMappingFlags name)", Bit);
}

} // namespace ompsim::host

// Device: plugin calls, image registration flow and table publication.
#include "Device.h"
#include "StockMessages.h"

#include "../events/OffloadEvents.h"

#include "ompsim/Config.h"
#include "ompsim/Errors.h"
#include "ompsim/HostSymbolizer.h"
#include "ompsim/ProfileWriter.h"
#include "ompsim/Trace.h"

#include "llvm/ADT/ScopeExit.h"

#include <algorithm>

#include <cstdio>

#include <fmt/format.h>

namespace ompsim::host {
namespace {

/// Whether a stock OFFLOAD_TRACK_* variable is set: the device then keeps its
/// last launches, and a failed launch reports as stock's GPU plugins do.
bool tracking(const Config &C) { return C.TrackAllocationTraces || C.TrackKernelLaunchTraces >= 0; }

/// An entry of a permanent batch that overlaps an earlier entry of the batch.
struct BatchConflict {
  size_t Index;          ///< the later entry, in `Batch`
  std::string OtherName; ///< the earlier entry it overlaps
  uint64_t OtherTgt;     ///< where the earlier entry maps the later one's host address
};

/// Settles one image's batch of permanent entries (in entry-table order) as
/// adding them one at a time would: an entry that repeats an earlier one
/// (inside it, at the same device address: one definition seen twice) is
/// dropped, and the first that overlaps an earlier one otherwise is returned.
std::optional<BatchConflict> settleBatch(std::vector<MapEntry> &Batch) {
  // Usual case: entries in ascending address order and disjoint.
  bool Disjoint = true;
  for (size_t I = 1; I < Batch.size() && Disjoint; ++I)
    Disjoint = Batch[I - 1].HstBegin < Batch[I].HstBegin && Batch[I - 1].HstEnd <= Batch[I].HstBegin;
  if (Disjoint)
    return std::nullopt;
  std::vector<std::pair<uintptr_t, uintptr_t>> Ranges;
  Ranges.reserve(Batch.size());
  for (const MapEntry &M : Batch)
    Ranges.emplace_back(M.HstBegin, M.HstEnd);
  std::sort(Ranges.begin(), Ranges.end());
  Disjoint = true;
  for (size_t I = 1; I < Ranges.size() && Disjoint; ++I)
    Disjoint = Ranges[I - 1].first < Ranges[I].first && Ranges[I - 1].second <= Ranges[I].first;
  if (Disjoint)
    return std::nullopt;
  // Rare: replay the batch in order against a table of the entries kept.
  MappingTable Kept;
  std::vector<MapEntry> Out;
  Out.reserve(Batch.size());
  for (size_t I = 0; I < Batch.size(); ++I) {
    MapEntry &M = Batch[I];
    MapLookup Found = Kept.lookup(M.HstBegin, M.size());
    if (Found.Entry) {
      if (Found.Contained && Found.Entry->translate(M.HstBegin) == M.TgtBegin)
        continue;
      return BatchConflict{I, Found.Entry->Name, Found.Entry->translate(M.HstBegin)};
    }
    Kept.insert(M);
    Out.push_back(M); // copied: `Batch` stays whole when a conflict follows
  }
  Batch = std::move(Out);
  return std::nullopt;
}

} // namespace

llvm::Error Device::pluginError(const std::string &Fallback) const {
  const char *Msg = Plugin.fn().last_error(LocalId);
  if (Msg && *Msg)
    return makeError(Msg);
  return makeError(Fallback);
}

llvm::Error Device::ensureInitialized() {
  std::call_once(InitOnce, [&] {
    events::DeviceInitialize Init{events::Endpoint::Begin, Number, Plugin.name().c_str(), LocalId};
    events::emitIfObserved([&] { return Init; });
    llvm::scope_exit Ended([&] {
      Init.Point = events::Endpoint::End;
      Init.Succeeded = Initialized;
      events::emitIfObserved([&] { return Init; });
    });
    if (Plugin.fn().init_device(LocalId) != OMPSIM_OFFLOAD_SUCCESS) {
      const char *Msg = Plugin.fn().last_error(LocalId);
      InitError = (Msg && *Msg) ? Msg
                                : fmt::format("cannot initialize device {} (plugin '{}', local id {})",
                                              Number, Plugin.name(), LocalId);
      return;
    }
    Initialized = true;
  });
  return Initialized ? llvm::Error::success() : makeError(InitError);
}

llvm::Expected<uint64_t> Device::dataAlloc(uint64_t Size, const void *HostHint, int32_t Kind) {
  events::DataOpScope Op(events::DataOpKind::Alloc, HostHint, events::HostDevice, nullptr, Number, Size);
  void *P = Plugin.fn().data_alloc(LocalId, static_cast<int64_t>(Size ? Size : 1),
                                   const_cast<void *>(HostHint), Kind);
  if (!P)
    return pluginError(fmt::format("cannot allocate {} bytes on device {}", Size, Number));
  Op.setDestination(P);
  if (config().TrackAllocationTraces)
    AllocationTraces.allocated(reinterpret_cast<uint64_t>(P), Size, HostHint, Kind);
  return reinterpret_cast<uint64_t>(P);
}

llvm::Error Device::dataDelete(uint64_t Tgt, int32_t Kind) {
  // Stock checks the free against its traces before the plugin frees.
  if (config().TrackAllocationTraces)
    if (std::optional<std::string> Report = AllocationTraces.deallocating(Tgt, Kind))
      stock::abortWithReport(*Report);
  events::DataOpScope Op(events::DataOpKind::Delete, reinterpret_cast<void *>(Tgt), Number, nullptr,
                         events::NoDevice, 0);
  if (Plugin.fn().data_delete(LocalId, reinterpret_cast<void *>(Tgt), Kind) != OMPSIM_OFFLOAD_SUCCESS)
    return pluginError(fmt::format("cannot free device address {:#x} on device {}", Tgt, Number));
  return llvm::Error::success();
}

llvm::Error Device::addTrackedReport(llvm::Error Err, std::optional<uint64_t> FaultAddr) {
  const Config &C = config();
  if (!tracking(C))
    return Err;
  std::string Kernels;
  llvm::raw_string_ostream KernelsOS(Kernels);
  LaunchTraces.print(KernelsOS, uint32_t(std::max(C.TrackKernelLaunchTraces, 0)));
  std::fflush(stdout);
  std::fputs(Kernels.c_str(), stderr);
  std::fflush(stderr);
  if (!FaultAddr)
    return Err;
  std::string Allocations;
  llvm::raw_string_ostream OS(Allocations);
  if (C.TrackAllocationTraces)
    AllocationTraces.describeAddress(OS, *FaultAddr);
  else
    tracking::printTrackingHint(OS);
  return makeError(llvm::toString(std::move(Err)) + "\n" + llvm::StringRef(Allocations).rtrim().str());
}

llvm::Error Device::submit(uint64_t Tgt, const void *Hst, uint64_t Size, llvm::StringRef Name) {
  events::DataOpScope Op(events::DataOpKind::TransferToDevice, Hst, events::HostDevice,
                         reinterpret_cast<void *>(Tgt), Number, Size, Name);
  if (Plugin.fn().data_submit(LocalId, reinterpret_cast<void *>(Tgt), Hst, static_cast<int64_t>(Size)) !=
      OMPSIM_OFFLOAD_SUCCESS)
    return pluginError(
        fmt::format("cannot copy {} bytes to device address {:#x} on device {}", Size, Tgt, Number));
  return llvm::Error::success();
}

llvm::Error Device::retrieve(void *Hst, uint64_t Tgt, uint64_t Size, llvm::StringRef Name) {
  events::DataOpScope Op(events::DataOpKind::TransferFromDevice, reinterpret_cast<void *>(Tgt), Number, Hst,
                         events::HostDevice, Size, Name);
  if (Plugin.fn().data_retrieve(LocalId, Hst, reinterpret_cast<const void *>(Tgt),
                                static_cast<int64_t>(Size)) != OMPSIM_OFFLOAD_SUCCESS)
    return pluginError(
        fmt::format("cannot copy {} bytes from device address {:#x} on device {}", Size, Tgt, Number));
  return llvm::Error::success();
}

bool Device::namesCopies() const { return stock::infoOn(stock::info::DataTransfer); }

std::string Device::symbolize(uint64_t Tgt) {
  if (!Plugin.fn().symbolize || !trace::enabled(trace::Cat::Map))
    return {};
  char Buf[256];
  if (Plugin.fn().symbolize(LocalId, Tgt, Buf, sizeof(Buf)) != 1)
    return {};
  std::string_view S(Buf);
  if (S.starts_with("dev:"))
    S.remove_prefix(4); // Event::dev adds the prefix itself
  return std::string(S);
}

llvm::Expected<std::optional<std::vector<void *>>> Device::findGlobals(LoadedImage &Image,
                                                                       const std::vector<const char *> &Names,
                                                                       const std::vector<uint64_t> &Sizes) {
  if (!Plugin.fn().get_globals)
    return std::nullopt;
  std::vector<void *> Found(Names.size(), nullptr);
  if (!Names.empty() && Plugin.fn().get_globals(LocalId, Image.Binary, Names.size(), Names.data(),
                                                Sizes.data(), Found.data()) != OMPSIM_OFFLOAD_SUCCESS)
    return pluginError(fmt::format("cannot look up the {} device globals of {} on device {}", Names.size(),
                                   Image.Name, Number));
  return std::optional<std::vector<void *>>(std::move(Found));
}

llvm::Expected<uint64_t> Device::readAddressGlobal(LoadedImage &Image, const std::string &Name,
                                                   std::optional<void *> Known) {
  void *Global = Known.value_or(nullptr);
  if ((!Known && Plugin.fn().get_global(LocalId, Image.Binary, sizeof(void *), Name.c_str(), &Global) !=
                     OMPSIM_OFFLOAD_SUCCESS) ||
      !Global)
    return makeError(fmt::format("indirect entry '{}' of {} has no device global of that name on "
                                 "device {}",
                                 Name, Image.Name, Number));
  // The host never dereferences device addresses: read the stored address
  // through the plugin's data API.
  uint64_t Value = 0;
  if (auto Err = retrieve(&Value, reinterpret_cast<uint64_t>(Global), sizeof(Value)))
    return std::move(Err);
  return Value;
}

void Device::mapPermanently(std::vector<MapEntry> &Batch, uintptr_t Host, uint64_t Size, uint64_t Tgt,
                            const std::string &Name) {
  MapEntry &M = Batch.emplace_back();
  M.HstBegin = Host;
  M.HstEnd = Host + Size;
  M.TgtBegin = Tgt;
  M.DynamicRef = MapEntry::Infinite;
  M.Name = Name;
  M.InfoName = Name;
}

void Device::addVtablesByName(LoadedImage &Image, std::vector<IndirectTarget> &Indirect,
                              std::vector<MapEntry> &Mapped) {
  // clang-22 registers (0x20 entries) only the vtables of classes whose
  // variables it sees mapped; an object reached through an array section
  // leaves its class out, and the translated vtable pointer would miss. A
  // host vtable holding an indirect function pairs with the device image's
  // vtable of the same mangled name, as the host and device compilations of
  // one translation unit name them alike.
  auto FirstFunction =
      std::find_if(Indirect.begin(), Indirect.end(), [](const IndirectTarget &T) { return !T.IsVtable; });
  if (FirstFunction == Indirect.end())
    return;
  std::vector<HostVtable> Vtables = HostSymbolizer::get().vtablesOf(FirstFunction->HostPtr);
  if (Vtables.empty())
    return; // C programs: nothing to pair, nothing more to build
  std::vector<uint64_t> Functions;
  for (const IndirectTarget &T : Indirect)
    if (!T.IsVtable)
      Functions.push_back(T.HostPtr);
  std::sort(Functions.begin(), Functions.end());
  auto IsFunction = [&](uint64_t Slot) {
    return std::binary_search(Functions.begin(), Functions.end(), Slot);
  };
  std::lock_guard<std::recursive_mutex> Lock(MappingTable.mutex());
  std::vector<const HostVtable *> Candidates;
  for (const HostVtable &Vt : Vtables) {
    // Registered already (a 0x20 entry, or another image of the same object).
    if (MappingTable.lookup(Vt.Address, Vt.Size).Entry)
      continue;
    const auto *Slots = reinterpret_cast<const uint64_t *>(Vt.Address);
    if (std::none_of(Slots, Slots + Vt.Size / 8, IsFunction))
      continue;
    Candidates.push_back(&Vt);
  }
  std::vector<const char *> Names;
  std::vector<uint64_t> Sizes;
  for (const HostVtable *Vt : Candidates) {
    Names.push_back(Vt->MangledName.c_str());
    Sizes.push_back(Vt->Size);
  }
  auto Batch = findGlobals(Image, Names, Sizes);
  if (!Batch) {
    llvm::consumeError(Batch.takeError()); // as if absent: these pairs are a best effort
    Batch = std::optional<std::vector<void *>>(std::vector<void *>(Candidates.size(), nullptr));
  }
  for (size_t I = 0; I < Candidates.size(); ++I) {
    const HostVtable &Vt = *Candidates[I];
    void *Global = nullptr;
    if (*Batch)
      Global = (**Batch)[I];
    else if (Plugin.fn().get_global(LocalId, Image.Binary, Vt.Size, Vt.MangledName.c_str(), &Global) !=
             OMPSIM_OFFLOAD_SUCCESS)
      Global = nullptr;
    if (!Global)
      continue; // the device image has no copy: the class never reaches device code
    auto Tgt = reinterpret_cast<uint64_t>(Global);
    mapPermanently(Mapped, Vt.Address, Vt.Size, Tgt, Vt.MangledName);
    Indirect.push_back({Vt.MangledName, Vt.Address, Tgt, Vt.Size, /*isVtable=*/true});
    OMPSIM_TRACE_EVENT(Cat::Entry, "indirect_vtable")
        .str("name", Vt.MangledName)
        .host("host", Vt.Address)
        .dev("device", Tgt, symbolize(Tgt))
        .num("size", static_cast<int64_t>(Vt.Size))
        .str("source", "symbol");
  }
  // Best effort: a vtable overlapping another one found here is left out.
  while (std::optional<BatchConflict> Conflict = settleBatch(Mapped))
    Mapped.erase(Mapped.begin() + static_cast<ptrdiff_t>(Conflict->Index));
}

llvm::Error Device::loadImage(const __tgt_device_image *Image, const std::string &Name,
                              const std::vector<OffloadEntry> &Entries) {
  if (Images.count(Image))
    return llvm::Error::success();
  if (auto Err = ensureInitialized())
    return Err;
  profile::Section Profiled("Image load", [&] { return fmt::format("Device={};Image={}", Number, Name); });
  int64_t RequiredFeatures = 0;
  for (const OffloadEntry &E : Entries)
    if (E.Kind == EntryKind::Requires)
      RequiredFeatures |= static_cast<int64_t>(E.Data);
  if (RequiredFeatures && Plugin.fn().init_requires &&
      Plugin.fn().init_requires(RequiredFeatures) != OMPSIM_OFFLOAD_SUCCESS) {
    const char *Why = Plugin.fn().last_error(-1);
    return makeError(fmt::format("{} cannot run on device {} ({}): {}", Name, Number, Plugin.name(),
                                 Why && *Why ? Why : "unsupported requires clause"));
  }
  LoadedImage Loaded;
  Loaded.Name = Name;
  if (Plugin.fn().load_binary(LocalId, Image, &Loaded.Binary) != OMPSIM_OFFLOAD_SUCCESS)
    return pluginError(fmt::format("cannot load {} on device {}", Name, Number));
  events::emit(events::DeviceLoad{Number, Image->ImageStart,
                                  static_cast<uint64_t>(static_cast<const char *>(Image->ImageEnd) -
                                                        static_cast<const char *>(Image->ImageStart))});
  OMPSIM_TRACE_EVENT(Cat::Image, "load")
      .str("image", Name)
      .num("device", Number)
      .str("plugin", Plugin.name())
      .num("entries", static_cast<int64_t>(Entries.size()));

  std::lock_guard<std::recursive_mutex> Lock(MappingTable.mutex());
  auto AlreadyMapped = [&](const std::string &EntryName, uintptr_t Host, uint64_t Tgt, uint64_t OtherTgt,
                           const std::string &OtherName) {
    return makeError(fmt::format("entry '{}' of {} maps host address {} to {:#x}, but it is "
                                 "already mapped to {:#x} ('{}')",
                                 EntryName, Name, trace::hostAddress(Host), Tgt, OtherTgt, OtherName));
  };
  // The image's permanent entries, added to the table in one batch.
  std::vector<MapEntry> Permanent;
  auto AddPermanent = [&](const OffloadEntry &E, uint64_t Tgt, uint64_t Size) -> llvm::Error {
    auto Host = reinterpret_cast<uintptr_t>(E.Address);
    MapLookup Found = MappingTable.lookup(Host, Size);
    if (Found.Entry) {
      // Two libraries can carry the same entry (one definition seen twice).
      if (Found.Contained && Found.Entry->translate(Host) == Tgt)
        return llvm::Error::success();
      return AlreadyMapped(E.Name, Host, Tgt, Found.Entry->translate(Host), Found.Entry->Name);
    }
    mapPermanently(Permanent, Host, Size, Tgt, E.Name);
    return llvm::Error::success();
  };

  // Every device global the entries name, in one plugin request where the
  // plugin offers one (a round trip per entry is what registration on an
  // out-of-process device costs otherwise).
  std::vector<const char *> GlobalNames;
  std::vector<uint64_t> GlobalSizes;
  std::vector<size_t> GlobalIndex(Entries.size(), SIZE_MAX);
  for (size_t I = 0; I < Entries.size(); ++I) {
    const OffloadEntry &E = Entries[I];
    bool IndirectEntry = E.Kind == EntryKind::Indirect || E.Kind == EntryKind::IndirectVtable;
    if (!IndirectEntry && E.Kind != EntryKind::Global && E.Kind != EntryKind::Link)
      continue;
    GlobalIndex[I] = GlobalNames.size();
    GlobalNames.push_back(E.Name.c_str());
    GlobalSizes.push_back(IndirectEntry ? sizeof(void *) : E.Size);
  }
  auto Batch = findGlobals(Loaded, GlobalNames, GlobalSizes);
  if (!Batch)
    return Batch.takeError();
  auto Known = [&](size_t I) -> std::optional<void *> {
    if (!*Batch)
      return std::nullopt;
    return (**Batch)[GlobalIndex[I]];
  };

  std::vector<IndirectTarget> Indirect;
  Permanent.reserve(GlobalNames.size());
  for (size_t I = 0; I < Entries.size(); ++I) {
    const OffloadEntry &E = Entries[I];
    switch (E.Kind) {
    case EntryKind::Requires:
      break;
    case EntryKind::Kernel: {
      void *Kernel = nullptr;
      if (Plugin.fn().get_function(LocalId, Loaded.Binary, E.Name.c_str(), &Kernel) != OMPSIM_OFFLOAD_SUCCESS)
        return pluginError(fmt::format("kernel '{}' of {} is missing on device {}", E.Name, Name, Number));
      Loaded.Kernels[E.Address] = Kernel;
      Loaded.KernelNames[E.Address] = E.Name;
      break;
    }
    case EntryKind::Global:
    case EntryKind::Link: {
      void *Global = nullptr;
      std::string Missing = fmt::format("global '{}' of {} is missing on device {}", E.Name, Name, Number);
      if (std::optional<void *> Found = Known(I)) {
        if (!(Global = *Found))
          return makeError(Missing);
      } else if (Plugin.fn().get_global(LocalId, Loaded.Binary, E.Size, E.Name.c_str(), &Global) !=
                 OMPSIM_OFFLOAD_SUCCESS) {
        return pluginError(Missing);
      }
      if (auto Err = AddPermanent(E, reinterpret_cast<uint64_t>(Global), E.Size))
        return Err;
      // Under unified shared memory clang makes the device global a reference
      // to the host's (`<name>_decl_tgt_ref_ptr`): stock writes the host
      // variable's bytes, the host address, into it, without an info line.
      if ((RequiredFeatures & (OMPSIM_REQ_UNIFIED_SHARED_MEMORY | OMPSIM_REQ_AUTO_ZERO_COPY)) &&
          Plugin.fn().data_submit(LocalId, Global, E.Address, static_cast<int64_t>(E.Size)) !=
              OMPSIM_OFFLOAD_SUCCESS)
        return pluginError(fmt::format("cannot write the host address of global '{}' of {} into device {} "
                                       "(unified shared memory)",
                                       E.Name, Name, Number));
      OMPSIM_TRACE_EVENT(Cat::Entry, "global")
          .str("name", E.Name)
          .host("host", reinterpret_cast<uint64_t>(E.Address))
          .dev("device", reinterpret_cast<uint64_t>(Global), symbolize(reinterpret_cast<uint64_t>(Global)))
          .num("size", static_cast<int64_t>(E.Size));
      break;
    }
    case EntryKind::Indirect:
    case EntryKind::IndirectVtable: {
      bool Vtable = E.Kind == EntryKind::IndirectVtable;
      auto Tgt = readAddressGlobal(Loaded, E.Name, Known(I));
      if (!Tgt)
        return Tgt.takeError();
      uint64_t Size = Vtable ? E.Size : sizeof(void *);
      if (Vtable && (Size == 0 || Size % 8 != 0))
        return makeError(fmt::format("indirect vtable entry '{}' of {} has size {}, which is not "
                                     "a non-zero multiple of 8",
                                     E.Name, Name, E.Size));
      if (auto Err = AddPermanent(E, *Tgt, Size))
        return Err;
      Indirect.push_back({E.Name, reinterpret_cast<uint64_t>(E.Address), *Tgt, Size, Vtable});
      OMPSIM_TRACE_EVENT(Cat::Entry, Vtable ? "indirect_vtable" : "indirect")
          .str("name", E.Name)
          .host("host", reinterpret_cast<uint64_t>(E.Address))
          .dev("device", *Tgt, symbolize(*Tgt))
          .num("size", static_cast<int64_t>(Size));
      break;
    }
    }
  }
  if (std::optional<BatchConflict> Conflict = settleBatch(Permanent)) {
    const MapEntry &M = Permanent[Conflict->Index];
    return AlreadyMapped(M.Name, M.HstBegin, M.TgtBegin, Conflict->OtherTgt, Conflict->OtherName);
  }
  auto Owner = reinterpret_cast<uint64_t>(Image);
  MappingTable.insertPermanent(Owner, std::move(Permanent));
  std::vector<MapEntry> Vtables;
  addVtablesByName(Loaded, Indirect, Vtables);
  MappingTable.insertPermanent(Owner, std::move(Vtables));
  if (auto Err = FptrTable.addImage(reinterpret_cast<uint64_t>(Image), Name, std::move(Indirect))) {
    MappingTable.erasePermanent(Owner);
    return Err;
  }
  Images.emplace(Image, std::move(Loaded));
  return llvm::Error::success();
}

llvm::Error Device::unloadImage(const __tgt_device_image *Image) {
  auto It = Images.find(Image);
  if (It == Images.end())
    return llvm::Error::success();
  {
    std::lock_guard<std::recursive_mutex> Lock(MappingTable.mutex());
    MappingTable.erasePermanent(reinterpret_cast<uint64_t>(Image));
  }
  FptrTable.removeImage(reinterpret_cast<uint64_t>(Image));
  OMPSIM_TRACE_EVENT(Cat::Image, "unload").str("image", It->second.Name).num("device", Number);
  ompsim_binary_handle Binary = It->second.Binary;
  std::string Name = It->second.Name;
  Images.erase(It);
  if (Plugin.fn().unload_binary && Plugin.fn().unload_binary(LocalId, Binary) != OMPSIM_OFFLOAD_SUCCESS)
    return pluginError(fmt::format("cannot unload {} from device {}", Name, Number));
  return llvm::Error::success();
}

llvm::Error Device::publishFunctionPointerTable() {
  auto Table = FptrTable.build();
  if (!Table)
    return Table.takeError();
  uint64_t N = Table->size();
  if (trace::enabled(trace::Cat::Table))
    for (const auto &Pair : *Table)
      trace::Event(trace::Cat::Table, "pair")
          .num("device", Number)
          .host("host", Pair.host_ptr)
          .dev("device_ptr", Pair.tgt_ptr, symbolize(Pair.tgt_ptr));
  if (Plugin.fn().set_function_ptr_map) {
    OMPSIM_TRACE_EVENT(Cat::Table, "publish")
        .num("device", Number)
        .num("n", static_cast<int64_t>(N))
        .str("via", "set_function_ptr_map");
    if (Plugin.fn().set_function_ptr_map(LocalId, N, Table->data()) != OMPSIM_OFFLOAD_SUCCESS)
      return pluginError(fmt::format("cannot publish the function-pointer table ({} pairs) on "
                                     "device {}",
                                     N, Number));
    return llvm::Error::success();
  }
  // Generic path: the table lives in device memory and the images that
  // define the two globals are told where.
  uint64_t Block = 0;
  if (N) {
    auto Allocated = allocate(N * sizeof(__omp_offloading_fptr_map_ty), Table->data());
    if (!Allocated)
      return Allocated.takeError();
    Block = *Allocated;
    if (auto Err = submit(Block, Table->data(), N * sizeof(__omp_offloading_fptr_map_ty)))
      return Err;
  }
  for (auto &[key, loaded] : Images) {
    void *PointerGlobal = nullptr, *SizeGlobal = nullptr;
    if (Plugin.fn().get_global(LocalId, loaded.Binary, sizeof(void *), "__omp_offloading_fptr_map_p",
                               &PointerGlobal) != OMPSIM_OFFLOAD_SUCCESS ||
        Plugin.fn().get_global(LocalId, loaded.Binary, sizeof(uint64_t), "__omp_offloading_fptr_map_size",
                               &SizeGlobal) != OMPSIM_OFFLOAD_SUCCESS)
      continue; // the image does not look the table up itself
    if (auto Err = submit(reinterpret_cast<uint64_t>(PointerGlobal), &Block, sizeof(Block)))
      return Err;
    if (auto Err = submit(reinterpret_cast<uint64_t>(SizeGlobal), &N, sizeof(N)))
      return Err;
  }
  if (PublishedTable)
    if (auto Err = release(PublishedTable))
      return Err;
  PublishedTable = Block;
  OMPSIM_TRACE_EVENT(Cat::Table, "publish")
      .num("device", Number)
      .num("n", static_cast<int64_t>(N))
      .str("via", "device_globals");
  return llvm::Error::success();
}

void *Device::findKernel(void *RegionId, const std::string **Name) {
  for (auto &[key, loaded] : Images) {
    auto It = loaded.Kernels.find(RegionId);
    if (It != loaded.Kernels.end()) {
      if (Name)
        *Name = &loaded.KernelNames[RegionId];
      return It->second;
    }
  }
  return nullptr;
}

llvm::Error Device::launchKernel(void *Kernel, std::vector<uint64_t> &Args,
                                 const ompsim_launch_config &Config, uint32_t RequestedTeams) {
  if (tracking(config()))
    LaunchTraces.launched(Config.kernel_name ? Config.kernel_name : "?",
                          config().TrackKernelLaunchTraces > 0);
  events::SubmitScope Submitted(events::Submit{events::Endpoint::Begin, Number, RequestedTeams,
                                               Config.kernel_name, Args.size(), Config.num_teams,
                                               Config.thread_limit, Config.tripcount});
  if (Plugin.fn().run_target_region(LocalId, Kernel, reinterpret_cast<void **>(Args.data()),
                                    static_cast<int32_t>(Args.size()), &Config) != OMPSIM_OFFLOAD_SUCCESS)
    return pluginError(fmt::format("kernel '{}' failed on device {}",
                                   Config.kernel_name ? Config.kernel_name : "?", Number));
  Submitted.succeeded();
  return llvm::Error::success();
}

} // namespace ompsim::host

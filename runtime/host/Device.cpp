// Device: plugin calls, image registration flow and table publication.
#include "Device.h"
#include "InfoLevel.h"

#include "ompsim/Config.h"
#include "ompsim/HostSymbolizer.h"
#include "ompsim/Trace.h"

#include <algorithm>

#include <cstdio>

#include <fmt/format.h>

namespace ompsim::host {
namespace {

/// LIBOMPTARGET_INFO bits this runtime honours (upstream's values).
enum : uint32_t { InfoKernelArgs = 0x1, InfoDataTransfer = 0x20 };

/// One upstream-style info line on stderr, for tools that read LIBOMPTARGET_INFO
/// output; ompsim's own diagnostics go through the trace facility instead.
template <typename... Args>
void infoLine(uint32_t bit, int32_t device, fmt::format_string<Args...> f, Args &&...args) {
  if (!(infoLevel() & bit))
    return;
  std::string line =
      fmt::format("omptarget device {} info: {}\n", device, fmt::format(f, std::forward<Args>(args)...));
  std::fputs(line.c_str(), stderr);
}

llvm::Error makeError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

/// An entry of a permanent batch that overlaps an earlier entry of the batch.
struct BatchConflict {
  size_t index;          ///< the later entry, in `batch`
  std::string otherName; ///< the earlier entry it overlaps
  uint64_t otherTgt;     ///< where the earlier entry maps the later one's host address
};

/// Settles one image's batch of permanent entries (in entry-table order) as
/// adding them one at a time would: an entry that repeats an earlier one
/// (inside it, at the same device address: one definition seen twice) is
/// dropped, and the first that overlaps an earlier one otherwise is returned.
std::optional<BatchConflict> settleBatch(std::vector<MapEntry> &batch) {
  // Usual case: entries in ascending address order and disjoint.
  bool disjoint = true;
  for (size_t i = 1; i < batch.size() && disjoint; ++i)
    disjoint = batch[i - 1].hstBegin < batch[i].hstBegin && batch[i - 1].hstEnd <= batch[i].hstBegin;
  if (disjoint)
    return std::nullopt;
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  ranges.reserve(batch.size());
  for (const MapEntry &m : batch)
    ranges.emplace_back(m.hstBegin, m.hstEnd);
  std::sort(ranges.begin(), ranges.end());
  disjoint = true;
  for (size_t i = 1; i < ranges.size() && disjoint; ++i)
    disjoint = ranges[i - 1].first < ranges[i].first && ranges[i - 1].second <= ranges[i].first;
  if (disjoint)
    return std::nullopt;
  // Rare: replay the batch in order against a table of the entries kept.
  MappingTable kept;
  std::vector<MapEntry> out;
  out.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    MapEntry &m = batch[i];
    MapLookup found = kept.lookup(m.hstBegin, m.size());
    if (found.entry) {
      if (found.contained && found.entry->translate(m.hstBegin) == m.tgtBegin)
        continue;
      return BatchConflict{i, found.entry->name, found.entry->translate(m.hstBegin)};
    }
    kept.insert(m);
    out.push_back(m); // copied: `batch` stays whole when a conflict follows
  }
  batch = std::move(out);
  return std::nullopt;
}

} // namespace

llvm::Error Device::pluginError(const std::string &fallback) const {
  const char *msg = plugin_.fn().last_error(localId_);
  if (msg && *msg)
    return makeError(msg);
  return makeError(fallback);
}

llvm::Error Device::ensureInitialized() {
  std::call_once(initOnce_, [&] {
    if (plugin_.fn().init_device(localId_) != OMPSIM_OFFLOAD_SUCCESS) {
      const char *msg = plugin_.fn().last_error(localId_);
      initError_ = (msg && *msg) ? msg
                                 : fmt::format("cannot initialize device {} (plugin '{}', local id {})",
                                               number_, plugin_.name(), localId_);
      return;
    }
    initialized_ = true;
    OMPSIM_TRACE_EVENT(Cat::Image, "device_init")
        .num("device", number_)
        .str("plugin", plugin_.name())
        .num("local_id", localId_);
  });
  return initialized_ ? llvm::Error::success() : makeError(initError_);
}

llvm::Expected<uint64_t> Device::allocate(uint64_t size, const void *hostHint) {
  void *p = plugin_.fn().data_alloc(localId_, static_cast<int64_t>(size ? size : 1),
                                    const_cast<void *>(hostHint), OMPSIM_ALLOC_DEFAULT);
  if (!p)
    return pluginError(fmt::format("cannot allocate {} bytes on device {}", size, number_));
  OMPSIM_TRACE_EVENT(Cat::Alloc, "alloc")
      .num("device", number_)
      .num("size", static_cast<int64_t>(size))
      .dev("ptr", reinterpret_cast<uint64_t>(p), "");
  return reinterpret_cast<uint64_t>(p);
}

llvm::Error Device::release(uint64_t tgt) {
  OMPSIM_TRACE_EVENT(Cat::Alloc, "free").num("device", number_).dev("ptr", tgt, "");
  if (plugin_.fn().data_delete(localId_, reinterpret_cast<void *>(tgt), OMPSIM_ALLOC_DEFAULT) !=
      OMPSIM_OFFLOAD_SUCCESS)
    return pluginError(fmt::format("cannot free device address {:#x} on device {}", tgt, number_));
  return llvm::Error::success();
}

llvm::Error Device::submit(uint64_t tgt, const void *hst, uint64_t size) {
  infoLine(InfoDataTransfer, number_, "Copying data from host to device, HstPtr={}, TgtPtr={:#x}, Size={}",
           hst, tgt, size);
  OMPSIM_TRACE_EVENT(Cat::Transfer, "to_device")
      .num("device", number_)
      .host("host", reinterpret_cast<uint64_t>(hst))
      .dev("ptr", tgt, "")
      .num("size", static_cast<int64_t>(size));
  if (plugin_.fn().data_submit(localId_, reinterpret_cast<void *>(tgt), hst, static_cast<int64_t>(size)) !=
      OMPSIM_OFFLOAD_SUCCESS)
    return pluginError(
        fmt::format("cannot copy {} bytes to device address {:#x} on device {}", size, tgt, number_));
  return llvm::Error::success();
}

llvm::Error Device::retrieve(void *hst, uint64_t tgt, uint64_t size) {
  infoLine(InfoDataTransfer, number_, "Copying data from device to host, TgtPtr={:#x}, HstPtr={}, Size={}",
           tgt, static_cast<const void *>(hst), size);
  OMPSIM_TRACE_EVENT(Cat::Transfer, "from_device")
      .num("device", number_)
      .host("host", reinterpret_cast<uint64_t>(hst))
      .dev("ptr", tgt, "")
      .num("size", static_cast<int64_t>(size));
  if (plugin_.fn().data_retrieve(localId_, hst, reinterpret_cast<const void *>(tgt),
                                 static_cast<int64_t>(size)) != OMPSIM_OFFLOAD_SUCCESS)
    return pluginError(
        fmt::format("cannot copy {} bytes from device address {:#x} on device {}", size, tgt, number_));
  return llvm::Error::success();
}

std::string Device::symbolize(uint64_t tgt) {
  if (!plugin_.fn().symbolize || !trace::enabled(trace::Cat::Map))
    return {};
  char buf[256];
  if (plugin_.fn().symbolize(localId_, tgt, buf, sizeof(buf)) != 1)
    return {};
  std::string_view s(buf);
  if (s.starts_with("dev:"))
    s.remove_prefix(4); // Event::dev adds the prefix itself
  return std::string(s);
}

llvm::Expected<std::optional<std::vector<void *>>> Device::findGlobals(LoadedImage &image,
                                                                       const std::vector<const char *> &names,
                                                                       const std::vector<uint64_t> &sizes) {
  if (!plugin_.fn().get_globals)
    return std::nullopt;
  std::vector<void *> found(names.size(), nullptr);
  if (!names.empty() && plugin_.fn().get_globals(localId_, image.binary, names.size(), names.data(),
                                                 sizes.data(), found.data()) != OMPSIM_OFFLOAD_SUCCESS)
    return pluginError(fmt::format("cannot look up the {} device globals of {} on device {}", names.size(),
                                   image.name, number_));
  return std::optional<std::vector<void *>>(std::move(found));
}

llvm::Expected<uint64_t> Device::readAddressGlobal(LoadedImage &image, const std::string &name,
                                                   std::optional<void *> known) {
  void *global = known.value_or(nullptr);
  if ((!known && plugin_.fn().get_global(localId_, image.binary, sizeof(void *), name.c_str(), &global) !=
                     OMPSIM_OFFLOAD_SUCCESS) ||
      !global)
    return makeError(fmt::format("indirect entry '{}' of {} has no device global of that name on "
                                 "device {}",
                                 name, image.name, number_));
  // The host never dereferences device addresses: read the stored address
  // through the plugin's data API.
  uint64_t value = 0;
  if (auto err = retrieve(&value, reinterpret_cast<uint64_t>(global), sizeof(value)))
    return std::move(err);
  return value;
}

void Device::mapPermanently(std::vector<MapEntry> &batch, uintptr_t host, uint64_t size, uint64_t tgt,
                            const std::string &name) {
  MapEntry &m = batch.emplace_back();
  m.hstBegin = host;
  m.hstEnd = host + size;
  m.tgtBegin = tgt;
  m.dynamicRef = MapEntry::Infinite;
  m.name = name;
}

void Device::addVtablesByName(LoadedImage &image, std::vector<IndirectTarget> &indirect,
                              std::vector<MapEntry> &mapped) {
  // clang-22 registers (0x20 entries) only the vtables of classes whose
  // variables it sees mapped; an object reached through an array section
  // leaves its class out, and the translated vtable pointer would miss. A
  // host vtable holding an indirect function pairs with the device image's
  // vtable of the same mangled name, as the host and device compilations of
  // one translation unit name them alike.
  auto firstFunction =
      std::find_if(indirect.begin(), indirect.end(), [](const IndirectTarget &t) { return !t.isVtable; });
  if (firstFunction == indirect.end())
    return;
  std::vector<HostVtable> vtables = HostSymbolizer::get().vtablesOf(firstFunction->hostPtr);
  if (vtables.empty())
    return; // C programs: nothing to pair, nothing more to build
  std::vector<uint64_t> functions;
  for (const IndirectTarget &t : indirect)
    if (!t.isVtable)
      functions.push_back(t.hostPtr);
  std::sort(functions.begin(), functions.end());
  auto isFunction = [&](uint64_t slot) {
    return std::binary_search(functions.begin(), functions.end(), slot);
  };
  std::lock_guard<std::recursive_mutex> lock(mappingTable_.mutex());
  std::vector<const HostVtable *> candidates;
  for (const HostVtable &vt : vtables) {
    // Registered already (a 0x20 entry, or another image of the same object).
    if (mappingTable_.lookup(vt.Address, vt.Size).entry)
      continue;
    const auto *slots = reinterpret_cast<const uint64_t *>(vt.Address);
    if (std::none_of(slots, slots + vt.Size / 8, isFunction))
      continue;
    candidates.push_back(&vt);
  }
  std::vector<const char *> names;
  std::vector<uint64_t> sizes;
  for (const HostVtable *vt : candidates) {
    names.push_back(vt->MangledName.c_str());
    sizes.push_back(vt->Size);
  }
  auto batch = findGlobals(image, names, sizes);
  if (!batch) {
    llvm::consumeError(batch.takeError()); // as if absent: these pairs are a best effort
    batch = std::optional<std::vector<void *>>(std::vector<void *>(candidates.size(), nullptr));
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    const HostVtable &vt = *candidates[i];
    void *global = nullptr;
    if (*batch)
      global = (**batch)[i];
    else if (plugin_.fn().get_global(localId_, image.binary, vt.Size, vt.MangledName.c_str(), &global) !=
             OMPSIM_OFFLOAD_SUCCESS)
      global = nullptr;
    if (!global)
      continue; // the device image has no copy: the class never reaches device code
    auto tgt = reinterpret_cast<uint64_t>(global);
    mapPermanently(mapped, vt.Address, vt.Size, tgt, vt.MangledName);
    indirect.push_back({vt.MangledName, vt.Address, tgt, vt.Size, /*isVtable=*/true});
    OMPSIM_TRACE_EVENT(Cat::Entry, "indirect_vtable")
        .str("name", vt.MangledName)
        .host("host", vt.Address)
        .dev("device", tgt, symbolize(tgt))
        .num("size", static_cast<int64_t>(vt.Size))
        .str("source", "symbol");
  }
  // Best effort: a vtable overlapping another one found here is left out.
  while (std::optional<BatchConflict> conflict = settleBatch(mapped))
    mapped.erase(mapped.begin() + static_cast<ptrdiff_t>(conflict->index));
}

llvm::Error Device::loadImage(const __tgt_device_image *image, const std::string &name,
                              const std::vector<OffloadEntry> &entries) {
  if (images_.count(image))
    return llvm::Error::success();
  if (auto err = ensureInitialized())
    return err;
  int64_t requiredFeatures = 0;
  for (const OffloadEntry &e : entries)
    if (e.kind == EntryKind::Requires)
      requiredFeatures |= static_cast<int64_t>(e.data);
  if (requiredFeatures && plugin_.fn().init_requires &&
      plugin_.fn().init_requires(requiredFeatures) != OMPSIM_OFFLOAD_SUCCESS) {
    const char *why = plugin_.fn().last_error(-1);
    return makeError(fmt::format("{} cannot run on device {} ({}): {}", name, number_, plugin_.name(),
                                 why && *why ? why : "unsupported requires clause"));
  }
  LoadedImage loaded;
  loaded.name = name;
  if (plugin_.fn().load_binary(localId_, image, &loaded.binary) != OMPSIM_OFFLOAD_SUCCESS)
    return pluginError(fmt::format("cannot load {} on device {}", name, number_));
  OMPSIM_TRACE_EVENT(Cat::Image, "load")
      .str("image", name)
      .num("device", number_)
      .str("plugin", plugin_.name())
      .num("entries", static_cast<int64_t>(entries.size()));

  std::lock_guard<std::recursive_mutex> lock(mappingTable_.mutex());
  auto alreadyMapped = [&](const std::string &entryName, uintptr_t host, uint64_t tgt, uint64_t otherTgt,
                           const std::string &otherName) {
    return makeError(fmt::format("entry '{}' of {} maps host address {} to {:#x}, but it is "
                                 "already mapped to {:#x} ('{}')",
                                 entryName, name, trace::hostAddress(host), tgt, otherTgt, otherName));
  };
  // The image's permanent entries, added to the table in one batch.
  std::vector<MapEntry> permanent;
  auto addPermanent = [&](const OffloadEntry &e, uint64_t tgt, uint64_t size) -> llvm::Error {
    auto host = reinterpret_cast<uintptr_t>(e.address);
    MapLookup found = mappingTable_.lookup(host, size);
    if (found.entry) {
      // Two libraries can carry the same entry (one definition seen twice).
      if (found.contained && found.entry->translate(host) == tgt)
        return llvm::Error::success();
      return alreadyMapped(e.name, host, tgt, found.entry->translate(host), found.entry->name);
    }
    mapPermanently(permanent, host, size, tgt, e.name);
    return llvm::Error::success();
  };

  // Every device global the entries name, in one plugin request where the
  // plugin offers one (a round trip per entry is what registration on an
  // out-of-process device costs otherwise).
  std::vector<const char *> globalNames;
  std::vector<uint64_t> globalSizes;
  std::vector<size_t> globalIndex(entries.size(), SIZE_MAX);
  for (size_t i = 0; i < entries.size(); ++i) {
    const OffloadEntry &e = entries[i];
    bool indirectEntry = e.kind == EntryKind::Indirect || e.kind == EntryKind::IndirectVtable;
    if (!indirectEntry && e.kind != EntryKind::Global && e.kind != EntryKind::Link)
      continue;
    globalIndex[i] = globalNames.size();
    globalNames.push_back(e.name.c_str());
    globalSizes.push_back(indirectEntry ? sizeof(void *) : e.size);
  }
  auto batch = findGlobals(loaded, globalNames, globalSizes);
  if (!batch)
    return batch.takeError();
  auto known = [&](size_t i) -> std::optional<void *> {
    if (!*batch)
      return std::nullopt;
    return (**batch)[globalIndex[i]];
  };

  std::vector<IndirectTarget> indirect;
  permanent.reserve(globalNames.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const OffloadEntry &e = entries[i];
    switch (e.kind) {
    case EntryKind::Requires:
      break;
    case EntryKind::Kernel: {
      void *kernel = nullptr;
      if (plugin_.fn().get_function(localId_, loaded.binary, e.name.c_str(), &kernel) !=
          OMPSIM_OFFLOAD_SUCCESS)
        return pluginError(fmt::format("kernel '{}' of {} is missing on device {}", e.name, name, number_));
      loaded.kernels[e.address] = kernel;
      loaded.kernelNames[e.address] = e.name;
      break;
    }
    case EntryKind::Global:
    case EntryKind::Link: {
      void *global = nullptr;
      std::string missing = fmt::format("global '{}' of {} is missing on device {}", e.name, name, number_);
      if (std::optional<void *> found = known(i)) {
        if (!(global = *found))
          return makeError(missing);
      } else if (plugin_.fn().get_global(localId_, loaded.binary, e.size, e.name.c_str(), &global) !=
                 OMPSIM_OFFLOAD_SUCCESS) {
        return pluginError(missing);
      }
      if (auto err = addPermanent(e, reinterpret_cast<uint64_t>(global), e.size))
        return err;
      OMPSIM_TRACE_EVENT(Cat::Entry, "global")
          .str("name", e.name)
          .host("host", reinterpret_cast<uint64_t>(e.address))
          .dev("device", reinterpret_cast<uint64_t>(global), symbolize(reinterpret_cast<uint64_t>(global)))
          .num("size", static_cast<int64_t>(e.size));
      break;
    }
    case EntryKind::Indirect:
    case EntryKind::IndirectVtable: {
      bool vtable = e.kind == EntryKind::IndirectVtable;
      auto tgt = readAddressGlobal(loaded, e.name, known(i));
      if (!tgt)
        return tgt.takeError();
      uint64_t size = vtable ? e.size : sizeof(void *);
      if (vtable && (size == 0 || size % 8 != 0))
        return makeError(fmt::format("indirect vtable entry '{}' of {} has size {}, which is not "
                                     "a non-zero multiple of 8",
                                     e.name, name, e.size));
      if (auto err = addPermanent(e, *tgt, size))
        return err;
      indirect.push_back({e.name, reinterpret_cast<uint64_t>(e.address), *tgt, size, vtable});
      OMPSIM_TRACE_EVENT(Cat::Entry, vtable ? "indirect_vtable" : "indirect")
          .str("name", e.name)
          .host("host", reinterpret_cast<uint64_t>(e.address))
          .dev("device", *tgt, symbolize(*tgt))
          .num("size", static_cast<int64_t>(size));
      break;
    }
    }
  }
  if (std::optional<BatchConflict> conflict = settleBatch(permanent)) {
    const MapEntry &m = permanent[conflict->index];
    return alreadyMapped(m.name, m.hstBegin, m.tgtBegin, conflict->otherTgt, conflict->otherName);
  }
  auto owner = reinterpret_cast<uint64_t>(image);
  mappingTable_.insertPermanent(owner, std::move(permanent));
  std::vector<MapEntry> vtables;
  addVtablesByName(loaded, indirect, vtables);
  mappingTable_.insertPermanent(owner, std::move(vtables));
  if (auto err = fptrTable_.addImage(reinterpret_cast<uint64_t>(image), name, std::move(indirect))) {
    mappingTable_.erasePermanent(owner);
    return err;
  }
  images_.emplace(image, std::move(loaded));
  return llvm::Error::success();
}

llvm::Error Device::unloadImage(const __tgt_device_image *image) {
  auto it = images_.find(image);
  if (it == images_.end())
    return llvm::Error::success();
  {
    std::lock_guard<std::recursive_mutex> lock(mappingTable_.mutex());
    mappingTable_.erasePermanent(reinterpret_cast<uint64_t>(image));
  }
  fptrTable_.removeImage(reinterpret_cast<uint64_t>(image));
  OMPSIM_TRACE_EVENT(Cat::Image, "unload").str("image", it->second.name).num("device", number_);
  ompsim_binary_handle binary = it->second.binary;
  std::string name = it->second.name;
  images_.erase(it);
  if (plugin_.fn().unload_binary && plugin_.fn().unload_binary(localId_, binary) != OMPSIM_OFFLOAD_SUCCESS)
    return pluginError(fmt::format("cannot unload {} from device {}", name, number_));
  return llvm::Error::success();
}

llvm::Error Device::publishFunctionPointerTable() {
  auto table = fptrTable_.build();
  if (!table)
    return table.takeError();
  uint64_t n = table->size();
  if (trace::enabled(trace::Cat::Table))
    for (const auto &pair : *table)
      trace::Event(trace::Cat::Table, "pair")
          .num("device", number_)
          .host("host", pair.host_ptr)
          .dev("device_ptr", pair.tgt_ptr, symbolize(pair.tgt_ptr));
  if (plugin_.fn().set_function_ptr_map) {
    OMPSIM_TRACE_EVENT(Cat::Table, "publish")
        .num("device", number_)
        .num("n", static_cast<int64_t>(n))
        .str("via", "set_function_ptr_map");
    if (plugin_.fn().set_function_ptr_map(localId_, n, table->data()) != OMPSIM_OFFLOAD_SUCCESS)
      return pluginError(fmt::format("cannot publish the function-pointer table ({} pairs) on "
                                     "device {}",
                                     n, number_));
    return llvm::Error::success();
  }
  // Generic path: the table lives in device memory and the images that
  // define the two globals are told where.
  uint64_t block = 0;
  if (n) {
    auto allocated = allocate(n * sizeof(__omp_offloading_fptr_map_ty), table->data());
    if (!allocated)
      return allocated.takeError();
    block = *allocated;
    if (auto err = submit(block, table->data(), n * sizeof(__omp_offloading_fptr_map_ty)))
      return err;
  }
  for (auto &[key, loaded] : images_) {
    void *pointerGlobal = nullptr, *sizeGlobal = nullptr;
    if (plugin_.fn().get_global(localId_, loaded.binary, sizeof(void *), "__omp_offloading_fptr_map_p",
                                &pointerGlobal) != OMPSIM_OFFLOAD_SUCCESS ||
        plugin_.fn().get_global(localId_, loaded.binary, sizeof(uint64_t), "__omp_offloading_fptr_map_size",
                                &sizeGlobal) != OMPSIM_OFFLOAD_SUCCESS)
      continue; // the image does not look the table up itself
    if (auto err = submit(reinterpret_cast<uint64_t>(pointerGlobal), &block, sizeof(block)))
      return err;
    if (auto err = submit(reinterpret_cast<uint64_t>(sizeGlobal), &n, sizeof(n)))
      return err;
  }
  if (publishedTable_)
    if (auto err = release(publishedTable_))
      return err;
  publishedTable_ = block;
  OMPSIM_TRACE_EVENT(Cat::Table, "publish")
      .num("device", number_)
      .num("n", static_cast<int64_t>(n))
      .str("via", "device_globals");
  return llvm::Error::success();
}

void *Device::findKernel(void *regionId, std::string *name) {
  for (auto &[key, loaded] : images_) {
    auto it = loaded.kernels.find(regionId);
    if (it != loaded.kernels.end()) {
      if (name)
        *name = loaded.kernelNames[regionId];
      return it->second;
    }
  }
  return nullptr;
}

llvm::Error Device::launch(void *kernel, std::vector<uint64_t> &args, const ompsim_launch_config &config) {
  infoLine(InfoKernelArgs, number_, "Launching kernel {} with {} arguments, {} teams, thread limit {}",
           config.kernel_name ? config.kernel_name : "?", args.size(), config.num_teams, config.thread_limit);
  OMPSIM_TRACE_EVENT(Cat::Launch, "launch")
      .num("device", number_)
      .str("kernel", config.kernel_name ? config.kernel_name : "")
      .num("args", static_cast<int64_t>(args.size()))
      .num("teams", config.num_teams)
      .num("thread_limit", config.thread_limit);
  if (plugin_.fn().run_target_region(localId_, kernel, reinterpret_cast<void **>(args.data()),
                                     static_cast<int32_t>(args.size()), &config) != OMPSIM_OFFLOAD_SUCCESS)
    return pluginError(fmt::format("kernel '{}' failed on device {}",
                                   config.kernel_name ? config.kernel_name : "?", number_));
  OMPSIM_TRACE_EVENT(Cat::Launch, "done")
      .num("device", number_)
      .str("kernel", config.kernel_name ? config.kernel_name : "");
  return llvm::Error::success();
}

} // namespace ompsim::host

// OpenMP 5.1 map semantics: reference counts, present/always/delete, pointer
// attachment with shadow pointers, struct members and declare mappers.
#include "MapClauseProcessor.h"

#include "ompsim/host_symbolizer.hpp"
#include "ompsim/offload_abi.h"
#include "ompsim/trace.hpp"

#include <fmt/format.h>

#include <cstring>

namespace ompsim::host {
namespace {

llvm::Error makeError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

bool has(int64_t type, uint64_t bit) { return (static_cast<uint64_t>(type) & bit) != 0; }

/// 1-based index of the parent item of a MEMBER_OF item, 0 when not a member.
uint64_t memberOf(int64_t type) {
  return (static_cast<uint64_t>(type) & OMPSIM_MAP_MEMBER_OF) >> 48;
}

/// A host address for messages: symbolized when it is inside a named object
/// (a global), else the raw value (stack and heap).
std::string hostAddressForMessage(uint64_t addr) {
  if (HostSymbolizer::get().lookup(addr))
    return trace::hostAddress(addr);
  return fmt::format("{:#x}", addr);
}

std::string describe(const MapArg &arg) {
  std::string var = mapArgName(arg.name);
  std::string addr = hostAddressForMessage(reinterpret_cast<uint64_t>(arg.begin));
  if (var.empty())
    return fmt::format("host address {} ({} bytes)", addr, arg.size);
  return fmt::format("'{}' at host address {} ({} bytes)", var, addr, arg.size);
}

} // namespace

std::vector<MapArg> makeMapArgs(int32_t n, void **bases, void **begins, const int64_t *sizes,
                                const int64_t *types, void **names, void **mappers) {
  std::vector<MapArg> args(n > 0 ? n : 0);
  for (int32_t i = 0; i < n; ++i) {
    args[i].base = bases ? bases[i] : nullptr;
    args[i].begin = begins ? begins[i] : nullptr;
    args[i].size = sizes ? sizes[i] : 0;
    args[i].type = types ? types[i] : 0;
    args[i].name = names ? names[i] : nullptr;
    args[i].mapper = mappers ? mappers[i] : nullptr;
  }
  return args;
}

std::string mapArgName(const void *name) {
  // clang's map names read ";variable;file;line;col;;".
  if (!name)
    return {};
  std::string_view s(static_cast<const char *>(name));
  if (s.empty() || s[0] != ';')
    return std::string(s);
  size_t varEnd = s.find(';', 1);
  return std::string(s.substr(1, varEnd == std::string_view::npos ? std::string_view::npos : varEnd - 1));
}

std::vector<MapArg> MapClauseProcessor::runMapper(const MapArg &arg) {
  MapperComponents handle;
  reinterpret_cast<MapperFunction>(arg.mapper)(&handle, arg.base, arg.begin, arg.size, arg.type,
                                               arg.name);
  if (trace::enabled(trace::Cat::Map))
    for (const MapArg &c : handle.components)
      trace::Event(trace::Cat::Map, "mapper_component")
          .str("name", mapArgName(arg.name))
          .host("base", reinterpret_cast<uint64_t>(c.base))
          .host("begin", reinterpret_cast<uint64_t>(c.begin))
          .num("size", c.size)
          .hex("type", static_cast<uint64_t>(c.type))
          .hex("caller_type", static_cast<uint64_t>(arg.type));
  return std::move(handle.components);
}

llvm::Error MapClauseProcessor::missingPresent(const MapArg &arg, const char *when) {
  return makeError(fmt::format("{} is not present on device {} ({} with the present modifier)",
                               describe(arg), memory_.deviceNumber(), when));
}

llvm::Error MapClauseProcessor::copyToDevice(MapEntry &entry, uintptr_t begin, uint64_t size) {
  if (size == 0)
    return llvm::Error::success();
  if (auto err = memory_.submit(entry.translate(begin), reinterpret_cast<void *>(begin), size))
    return err;
  // The host copy holds host pointers; re-point attached device pointers.
  for (auto it = entry.shadows.lower_bound(begin); it != entry.shadows.end() && it->first < begin + size;
       ++it) {
    uint64_t value = it->second.tgtValue;
    if (auto err = memory_.submit(entry.translate(it->first), &value, sizeof(value)))
      return err;
  }
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::copyFromDevice(MapEntry &entry, uintptr_t begin, uint64_t size) {
  if (size == 0)
    return llvm::Error::success();
  if (auto err = memory_.retrieve(reinterpret_cast<void *>(begin), entry.translate(begin), size))
    return err;
  // Attached pointers came back as device addresses; restore the host values.
  for (auto it = entry.shadows.lower_bound(begin); it != entry.shadows.end() && it->first < begin + size;
       ++it)
    std::memcpy(reinterpret_cast<void *>(it->first), &it->second.hostValue, sizeof(uintptr_t));
  return llvm::Error::success();
}

llvm::Expected<MapClauseProcessor::Mapped> MapClauseProcessor::mapOne(const MapArg &arg, bool updateRef,
                                                                      bool copyTo) {
  auto begin = reinterpret_cast<uintptr_t>(arg.begin);
  auto size = static_cast<uint64_t>(arg.size);
  bool hold = has(arg.type, OMPSIM_MAP_OMPX_HOLD);
  MapLookup found = table_.lookup(begin, size);
  if (found.extends)
    return makeError(fmt::format(
        "{} extends the mapped block at host address {} ({} bytes) on device {}; OpenMP does not "
        "allow a mapped section to grow",
        describe(arg), hostAddressForMessage(found.entry->hstBegin), found.entry->size(),
        memory_.deviceNumber()));
  Mapped out;
  if (found.entry) {
    MapEntry &e = *found.entry;
    if (updateRef && !e.isInfinite())
      ++(hold ? e.holdRef : e.dynamicRef);
    out.entry = &e;
    out.tgtBegin = e.translate(begin);
    bool always = has(arg.type, OMPSIM_MAP_ALWAYS);
    if (copyTo && (always || fresh_.count(&e)) && !e.isInfinite())
      if (auto err = copyToDevice(e, begin, size))
        return std::move(err);
    OMPSIM_TRACE_EVENT(Cat::Map, "enter")
        .str("name", mapArgName(arg.name))
        .host("host", begin)
        .dev("device", out.tgtBegin, memory_.symbolize(out.tgtBegin))
        .num("size", static_cast<int64_t>(size))
        .hex("type", static_cast<uint64_t>(arg.type))
        .str("refcount", e.isInfinite() ? std::string("inf") : std::to_string(e.totalRef()))
        .num("new", 0);
    return out;
  }
  if (has(arg.type, OMPSIM_MAP_PRESENT))
    return missingPresent(arg, "mapped");
  if (size == 0)
    return out; // a zero-length section that is not mapped stays unmapped
  auto tgt = memory_.allocate(size, arg.begin);
  if (!tgt)
    return tgt.takeError();
  MapEntry e;
  e.hstBegin = begin;
  e.hstEnd = begin + size;
  e.tgtBegin = *tgt;
  (hold ? e.holdRef : e.dynamicRef) = 1;
  e.ownsDeviceMemory = true;
  e.name = mapArgName(arg.name);
  MapEntry &inserted = table_.insert(std::move(e));
  fresh_.insert(&inserted);
  out.entry = &inserted;
  out.tgtBegin = inserted.tgtBegin;
  OMPSIM_TRACE_EVENT(Cat::Map, "enter")
      .str("name", inserted.name)
      .host("host", begin)
      .dev("device", out.tgtBegin, memory_.symbolize(out.tgtBegin))
      .num("size", static_cast<int64_t>(size))
      .hex("type", static_cast<uint64_t>(arg.type))
      .str("refcount", "1")
      .num("new", 1);
  if (copyTo)
    if (auto err = copyToDevice(inserted, begin, size))
      return std::move(err);
  return out;
}

llvm::Error MapClauseProcessor::attachPointer(const MapArg &arg, MapEntry &pointerEntry,
                                              uint64_t objTgt) {
  auto pointerLoc = reinterpret_cast<uintptr_t>(arg.base);
  uintptr_t hostValue;
  std::memcpy(&hostValue, arg.base, sizeof(hostValue));
  // The device pointer points where the host pointer does, relative to the
  // mapped section (the section need not start at the pointee).
  uint64_t tgtValue = objTgt - (reinterpret_cast<uintptr_t>(arg.begin) - hostValue);
  auto it = pointerEntry.shadows.find(pointerLoc);
  if (it != pointerEntry.shadows.end() && it->second.tgtValue == tgtValue)
    return llvm::Error::success();
  if (auto err = memory_.submit(pointerEntry.translate(pointerLoc), &tgtValue, sizeof(tgtValue)))
    return err;
  pointerEntry.shadows[pointerLoc] = ShadowPointer{hostValue, tgtValue};
  OMPSIM_TRACE_EVENT(Cat::Map, "attach")
      .host("pointer", pointerLoc)
      .dev("device_pointer", pointerEntry.translate(pointerLoc), "")
      .dev("value", tgtValue, memory_.symbolize(tgtValue));
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::enter(const std::vector<MapArg> &args, void **argsBase) {
  for (size_t i = 0; i < args.size(); ++i) {
    const MapArg &arg = args[i];
    if (arg.mapper) {
      if (auto err = enter(runMapper(arg), nullptr))
        return err;
      continue;
    }
    if (has(arg.type, OMPSIM_MAP_LITERAL) || has(arg.type, OMPSIM_MAP_PRIVATE))
      continue; // passed by value at launch
    bool member = memberOf(arg.type) != 0;
    MapEntry *pointerEntry = nullptr;
    if (has(arg.type, OMPSIM_MAP_PTR_AND_OBJ)) {
      // The pointer itself: part of a mapped parent for members, else mapped
      // here with the object's reference kind (released again in exit()).
      MapArg pointer{arg.base, arg.base, static_cast<int64_t>(sizeof(void *)),
                     static_cast<int64_t>(arg.type & OMPSIM_MAP_OMPX_HOLD), arg.name,
                     nullptr};
      auto mapped = mapOne(pointer, /*updateRef=*/!member, /*copyTo=*/false);
      if (!mapped)
        return mapped.takeError();
      pointerEntry = mapped->entry;
    }
    // A pointee is its own block with its own count even when the pointer is
    // a struct member; plain members share the parent's count.
    bool ownCount = !member || pointerEntry;
    auto mapped = mapOne(arg, ownCount, has(arg.type, OMPSIM_MAP_TO));
    if (!mapped)
      return mapped.takeError();
    if (pointerEntry && mapped->entry)
      if (auto err = attachPointer(arg, *pointerEntry, mapped->tgtBegin))
        return err;
    if (has(arg.type, OMPSIM_MAP_RETURN_PARAM) && argsBase && mapped->entry) {
      uintptr_t delta = reinterpret_cast<uintptr_t>(arg.begin) - reinterpret_cast<uintptr_t>(arg.base);
      argsBase[i] = reinterpret_cast<void *>(mapped->tgtBegin - delta);
    }
  }
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::releaseRef(MapEntry &entry, bool hold, bool forceDelete,
                                           bool &wasLast) {
  wasLast = false;
  if (entry.isInfinite())
    return llvm::Error::success();
  uint64_t before = entry.totalRef();
  if (forceDelete)
    entry.dynamicRef = 0; // `delete` drops the dynamic count; ompx_hold still holds
  else if (hold ? entry.holdRef : entry.dynamicRef)
    --(hold ? entry.holdRef : entry.dynamicRef);
  wasLast = before > 0 && entry.totalRef() == 0;
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::removeIfUnused(MapEntry &entry) {
  if (entry.isInfinite() || entry.totalRef() != 0)
    return llvm::Error::success();
  OMPSIM_TRACE_EVENT(Cat::Map, "remove")
      .str("name", entry.name)
      .host("host", entry.hstBegin)
      .dev("device", entry.tgtBegin, memory_.symbolize(entry.tgtBegin))
      .num("size", static_cast<int64_t>(entry.size()));
  uint64_t tgt = entry.tgtBegin;
  bool owns = entry.ownsDeviceMemory;
  fresh_.erase(&entry);
  table_.erase(entry);
  return owns ? memory_.release(tgt) : llvm::Error::success();
}

llvm::Error MapClauseProcessor::exit(const std::vector<MapArg> &args) {
  for (size_t k = args.size(); k-- > 0;) {
    const MapArg &arg = args[k];
    if (arg.mapper) {
      if (auto err = exit(runMapper(arg)))
        return err;
      continue;
    }
    if (has(arg.type, OMPSIM_MAP_LITERAL) || has(arg.type, OMPSIM_MAP_PRIVATE))
      continue;
    auto begin = reinterpret_cast<uintptr_t>(arg.begin);
    auto size = static_cast<uint64_t>(arg.size);
    MapLookup found = table_.lookup(begin, size);
    if (!found.entry || found.extends) {
      if (has(arg.type, OMPSIM_MAP_PRESENT))
        return missingPresent(arg, "released");
      continue; // nothing to release (zero-length or never mapped)
    }
    MapEntry &e = *found.entry;
    bool hold = has(arg.type, OMPSIM_MAP_OMPX_HOLD);
    bool del = has(arg.type, OMPSIM_MAP_DELETE);
    bool pointee = has(arg.type, OMPSIM_MAP_PTR_AND_OBJ);
    uint64_t parent = pointee ? 0 : memberOf(arg.type);
    bool last = false;
    if (parent != 0) {
      // Members share the parent's count; they are last when the parent's
      // release (processed after them) will drop it to zero.
      int64_t parentType = parent <= args.size() ? args[parent - 1].type : 0;
      bool parentHold = has(parentType, OMPSIM_MAP_OMPX_HOLD);
      if (!e.isInfinite()) {
        if (has(parentType, OMPSIM_MAP_DELETE))
          last = e.holdRef == 0;
        else
          last = e.totalRef() == 1 && (parentHold ? e.holdRef : e.dynamicRef) == 1;
      }
    } else if (auto err = releaseRef(e, hold, del, last)) {
      return err;
    }
    if (has(arg.type, OMPSIM_MAP_FROM) && (last || has(arg.type, OMPSIM_MAP_ALWAYS)) &&
        !e.isInfinite())
      if (auto err = copyFromDevice(e, begin, size))
        return err;
    OMPSIM_TRACE_EVENT(Cat::Map, "exit")
        .str("name", mapArgName(arg.name))
        .host("host", begin)
        .num("size", static_cast<int64_t>(size))
        .hex("type", static_cast<uint64_t>(arg.type))
        .str("refcount", e.isInfinite() ? std::string("inf") : std::to_string(e.totalRef()));
    if (parent == 0)
      if (auto err = removeIfUnused(e))
        return err;
    if (pointee && memberOf(arg.type) == 0) {
      MapLookup pointer = table_.lookup(reinterpret_cast<uintptr_t>(arg.base), sizeof(void *));
      if (pointer.entry && pointer.contained) {
        bool pointerLast = false;
        if (auto err = releaseRef(*pointer.entry, hold, del, pointerLast))
          return err;
        if (auto err = removeIfUnused(*pointer.entry))
          return err;
      }
    }
  }
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::update(const std::vector<MapArg> &args) {
  for (const MapArg &arg : args) {
    if (arg.mapper) {
      if (auto err = update(runMapper(arg)))
        return err;
      continue;
    }
    auto begin = reinterpret_cast<uintptr_t>(arg.begin);
    auto size = static_cast<uint64_t>(arg.size);
    MapLookup found = table_.lookup(begin, size);
    if (!found.entry || !found.contained) {
      if (has(arg.type, OMPSIM_MAP_PRESENT))
        return missingPresent(arg, "updated");
      continue; // OpenMP 5.1: updating an absent item does nothing
    }
    OMPSIM_TRACE_EVENT(Cat::Map, "update")
        .str("name", mapArgName(arg.name))
        .host("host", begin)
        .num("size", static_cast<int64_t>(size))
        .str("direction", has(arg.type, OMPSIM_MAP_TO) ? "to" : "from");
    if (has(arg.type, OMPSIM_MAP_TO))
      if (auto err = copyToDevice(*found.entry, begin, size))
        return err;
    if (has(arg.type, OMPSIM_MAP_FROM))
      if (auto err = copyFromDevice(*found.entry, begin, size))
        return err;
  }
  return llvm::Error::success();
}

llvm::Expected<uint64_t> MapClauseProcessor::kernelArgument(const MapArg &arg,
                                                            std::vector<uint64_t> &privateBlocks) {
  auto base = reinterpret_cast<uintptr_t>(arg.base);
  auto begin = reinterpret_cast<uintptr_t>(arg.begin);
  if (has(arg.type, OMPSIM_MAP_LITERAL))
    return static_cast<uint64_t>(base);
  if (has(arg.type, OMPSIM_MAP_PRIVATE)) {
    // firstprivate: a device copy private to this launch.
    auto size = static_cast<uint64_t>(arg.size);
    auto block = memory_.allocate(size, arg.begin);
    if (!block)
      return block.takeError();
    privateBlocks.push_back(*block);
    if (auto err = memory_.submit(*block, arg.begin, size))
      return std::move(err);
    return *block - (begin - base);
  }
  MapLookup found = table_.lookup(begin, static_cast<uint64_t>(arg.size));
  if (!found.entry || !found.contained)
    return static_cast<uint64_t>(base); // unmapped zero-length section: keeps its host value
  return found.entry->translate(begin) - (begin - base);
}

} // namespace ompsim::host

// OpenMP 5.1 map semantics as stock libomptarget 22 applies them: reference
// counts, present/always/delete, deferred pointer attachment with shadow
// pointers, struct members, declare mappers and non-contiguous updates.
#include "MapClauseProcessor.h"
#include "MapFlags.h"

#include "ompsim/HostSymbolizer.h"
#include "ompsim/Trace.h"
#include "ompsim/offload_abi.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <optional>

namespace ompsim::host {
namespace {

llvm::Error makeError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

using mapflag::has;
using mapflag::memberOf;
namespace flag = mapflag;

/// The program whose map clauses are processed, for messages.
const char *programName() {
  return program_invocation_name && *program_invocation_name ? program_invocation_name : "the program";
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
  reinterpret_cast<MapperFunction>(arg.mapper)(&handle, arg.base, arg.begin, arg.size, arg.type, arg.name);
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
  return makeError(fmt::format("{} is not present on device {} ({} with the present modifier)", describe(arg),
                               memory_.deviceNumber(), when));
}

llvm::Error MapClauseProcessor::checkMapTypes(const std::vector<MapArg> &args, const char *construct,
                                              bool allowNonContig) {
  for (const MapArg &arg : args) {
    auto type = static_cast<uint64_t>(arg.type);
    uint64_t unknown = type & ~flag::Implemented;
    if (!allowNonContig)
      unknown |= type & flag::NonContig;
    std::string var = mapArgName(arg.name);
    // A pointer initialized privately from its pointee (PRIVATE with
    // ATTACH) is a form clang-22 does not emit; refuse it rather than pass
    // a wrong pointer.
    if ((type & flag::Attach) && (type & flag::Private))
      return makeError(
          fmt::format("map type {:#x} of {} on {} in {} combines {} with {} (a privately initialized "
                      "pointer), which ompsim's runtime does not implement",
                      type, var.empty() ? std::string("an unnamed item") : "'" + var + "'", construct,
                      programName(), flag::bitName(flag::Private), flag::bitName(flag::Attach)));
    if (!unknown)
      continue;
    uint64_t bit = unknown & (~unknown + 1);
    return makeError(fmt::format("map type {:#x} of {} on {} in {} has bit {}, which ompsim's "
                                 "runtime does not implement",
                                 type, var.empty() ? std::string("an unnamed item") : "'" + var + "'",
                                 construct, programName(), flag::bitName(bit)));
  }
  return llvm::Error::success();
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

bool MapClauseProcessor::isNewAllocation(uintptr_t addr) const {
  for (const auto &[begin, size] : newAllocations_)
    if (addr >= begin && addr < begin + size)
      return true;
  return false;
}

llvm::Expected<MapClauseProcessor::Mapped> MapClauseProcessor::mapOne(const MapArg &arg, bool updateRef,
                                                                      bool copyTo) {
  auto begin = reinterpret_cast<uintptr_t>(arg.begin);
  auto size = static_cast<uint64_t>(arg.size);
  bool hold = has(arg.type, flag::OmpxHold);
  MapLookup found = table_.lookup(begin, size);
  // An implicit item that overlaps a mapped block uses that block (a
  // variable captured in a region whose mapped part is a section of it).
  if (found.extends && !has(arg.type, flag::Implicit))
    return makeError(
        fmt::format("{} extends the mapped block at host address {} ({} bytes) on device {}; OpenMP does not "
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
    bool always = has(arg.type, flag::Always);
    // New means allocated by this construct (a member allocated with its
    // parent included); data that was present before is not copied again.
    bool isNew = fresh_.count(&e) != 0;
    if (copyTo && (always || isNew) && !e.isInfinite() && found.contained)
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
  if (has(arg.type, flag::Present))
    return missingPresent(arg, "mapped");
  if (size == 0)
    return out; // a zero-length section that is not mapped stays unmapped
  auto tgt = memory_.allocate(size, arg.begin);
  if (!tgt)
    return tgt.takeError();
  MapEntry e;
  e.hstBegin = begin;
  e.hstEnd = begin + size;
  e.hstBase = reinterpret_cast<uintptr_t>(arg.base);
  e.tgtBegin = *tgt;
  (hold ? e.holdRef : e.dynamicRef) = 1;
  e.ownsDeviceMemory = true;
  e.name = mapArgName(arg.name);
  MapEntry &inserted = table_.insert(std::move(e));
  fresh_.insert(&inserted);
  newAllocations_.emplace_back(begin, size);
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

llvm::Error MapClauseProcessor::attachPointer(uintptr_t pointerLoc, uintptr_t pointeeBegin,
                                              MapEntry &pointerEntry, uint64_t pointeeTgt) {
  uintptr_t hostValue;
  std::memcpy(&hostValue, reinterpret_cast<const void *>(pointerLoc), sizeof(hostValue));
  // The device pointer points where the host pointer does, relative to the
  // mapped section (the section need not start at the pointee).
  uint64_t tgtValue = pointeeTgt - (pointeeBegin - hostValue);
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
  newAllocations_.clear();
  attachments_.clear();
  if (auto err = enterList(args, argsBase, /*fromMapper=*/false))
    return err;
  // ATTACH items apply after every item of the construct is mapped.
  return processAttachments();
}

llvm::Error MapClauseProcessor::enterList(const std::vector<MapArg> &args, void **argsBase, bool fromMapper) {
  if (auto err = checkMapTypes(args, "a map-entering construct", /*allowNonContig=*/false))
    return err;
  for (size_t i = 0; i < args.size(); ++i) {
    const MapArg &arg = args[i];
    if (has(arg.type, flag::Literal) || has(arg.type, flag::Private))
      continue; // passed by value at launch
    if (arg.mapper) {
      if (auto err = enterList(runMapper(arg), nullptr, /*fromMapper=*/true))
        return err;
      continue;
    }
    if (has(arg.type, flag::Attach)) {
      attachments_.push_back(arg);
      continue;
    }
    bool member = memberOf(arg.type) != 0;
    // The first component a mapper pushes stands for the item the caller
    // mapped: stock counts it with its parent rather than on its own.
    bool firstOfMapper = fromMapper && i == 0;
    bool updateRef = !member && !firstOfMapper;
    MapEntry *pointerEntry = nullptr;
    if (has(arg.type, flag::PtrAndObj)) {
      // The pointer itself: part of a mapped parent for members, else mapped
      // here with the object's reference kind.
      MapArg pointer{arg.base,
                     arg.base,
                     static_cast<int64_t>(sizeof(void *)),
                     static_cast<int64_t>(static_cast<uint64_t>(arg.type) &
                                          (flag::OmpxHold | flag::Present | flag::Implicit)),
                     arg.name,
                     nullptr};
      auto mapped = mapOne(pointer, updateRef, /*copyTo=*/false);
      if (!mapped)
        return mapped.takeError();
      pointerEntry = mapped->entry;
      // The pointee has its own count even when the pointer is a member.
      updateRef = !firstOfMapper;
    }
    // From here on the pointee's base is the pointer's value (stock), so a
    // zero-length lookup between the pointer and its pointee finds nothing.
    MapArg object = arg;
    if (pointerEntry)
      std::memcpy(&object.base, arg.base, sizeof(void *));
    auto mapped = mapOne(object, updateRef, has(arg.type, flag::To));
    if (!mapped)
      return mapped.takeError();
    if (has(arg.type, flag::ReturnParam) && argsBase && mapped->entry) {
      uintptr_t delta = reinterpret_cast<uintptr_t>(object.begin) - reinterpret_cast<uintptr_t>(object.base);
      argsBase[i] = reinterpret_cast<void *>(mapped->tgtBegin - delta);
    }
    if (pointerEntry && mapped->entry) {
      uintptr_t pointerLoc = reinterpret_cast<uintptr_t>(arg.base);
      if (auto err = attachPointer(pointerLoc, reinterpret_cast<uintptr_t>(arg.begin), *pointerEntry,
                                   mapped->tgtBegin))
        return err;
    }
  }
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::processAttachments() {
  for (const MapArg &arg : attachments_) {
    auto pointerLoc = reinterpret_cast<uintptr_t>(arg.base);
    auto pointeeBegin = reinterpret_cast<uintptr_t>(arg.begin);
    auto pointerSize = static_cast<uint64_t>(arg.size);
    // Attach only when the pointer or its pointee was allocated by this
    // construct (or `always`): an existing attachment stays as it is.
    if (!has(arg.type, flag::Always) && !isNewAllocation(pointeeBegin) && !isNewAllocation(pointerLoc))
      continue;
    MapLookup pointee = table_.lookup(pointeeBegin, 0);
    if (!pointee.entry || !pointee.contained || pointee.entry->isInfinite())
      continue; // nothing on the device to point at
    MapLookup pointer = table_.lookup(pointerLoc, pointerSize);
    if (!pointer.entry || !pointer.contained)
      continue; // the pointer is not on the device: the kernel gets its own copy
    if (pointerSize < sizeof(void *))
      return makeError(fmt::format("attach entry of {} has a {}-byte pointer; a pointer is {} bytes",
                                   describe(arg), pointerSize, sizeof(void *)));
    if (auto err =
            attachPointer(pointerLoc, pointeeBegin, *pointer.entry, pointee.entry->translate(pointeeBegin)))
      return err;
  }
  attachments_.clear();
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
  released_.clear();
  if (auto err = exitList(args, /*fromMapper=*/false))
    return err;
  // Blocks go once every item of the construct was released (a member's
  // copy-back needs its parent's block).
  std::vector<MapEntry *> candidates;
  candidates.swap(released_);
  for (size_t i = 0; i < candidates.size(); ++i) {
    MapEntry *e = candidates[i];
    if (std::find(candidates.begin(), candidates.begin() + i, e) != candidates.begin() + i)
      continue;
    if (auto err = removeIfUnused(*e))
      return err;
  }
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::exitList(const std::vector<MapArg> &args, bool fromMapper) {
  if (auto err = checkMapTypes(args, "a map-exiting construct", /*allowNonContig=*/false))
    return err;
  for (size_t k = args.size(); k-- > 0;) {
    const MapArg &arg = args[k];
    if (has(arg.type, flag::Literal) || has(arg.type, flag::Private))
      continue;
    if (has(arg.type, flag::Attach))
      continue; // attachment happens on entry only
    if (arg.mapper) {
      if (auto err = exitList(runMapper(arg), /*fromMapper=*/true))
        return err;
      continue;
    }
    auto begin = reinterpret_cast<uintptr_t>(arg.begin);
    auto size = static_cast<uint64_t>(arg.size);
    bool implicit = has(arg.type, flag::Implicit);
    MapLookup found = table_.lookup(begin, size);
    bool present = found.entry && (found.contained || (implicit && found.extends));
    if (!present) {
      if (has(arg.type, flag::Present) && (size != 0 || !found.entry))
        return missingPresent(arg, "released");
      continue; // nothing to release (zero-length or never mapped)
    }
    MapEntry &e = *found.entry;
    bool hold = has(arg.type, flag::OmpxHold);
    bool del = has(arg.type, flag::Delete);
    bool pointee = has(arg.type, flag::PtrAndObj);
    bool updateRef = (memberOf(arg.type) == 0 || pointee) && !(fromMapper && k == 0);
    // Would one release of this kind (after `delete` resets it) remove the block?
    bool last = false;
    if (!e.isInfinite()) {
      uint64_t &mine = hold ? e.holdRef : e.dynamicRef;
      uint64_t other = hold ? e.dynamicRef : e.holdRef;
      last = other == 0 && (del || mine == 1);
      if (del)
        mine = 1; // `delete` resets the count so the release below drops it
      if (updateRef && mine > 0)
        --mine;
    }
    if (has(arg.type, flag::From) && (last || has(arg.type, flag::Always)) && !e.isInfinite() &&
        found.contained)
      if (auto err = copyFromDevice(e, begin, size))
        return err;
    OMPSIM_TRACE_EVENT(Cat::Map, "exit")
        .str("name", mapArgName(arg.name))
        .host("host", begin)
        .num("size", static_cast<int64_t>(size))
        .hex("type", static_cast<uint64_t>(arg.type))
        .str("refcount", e.isInfinite() ? std::string("inf") : std::to_string(e.totalRef()));
    // Plain members never remove their parent's block.
    if (memberOf(arg.type) == 0 || pointee)
      released_.push_back(&e);
  }
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::update(const std::vector<MapArg> &args) { return updateList(args); }

llvm::Error MapClauseProcessor::updateList(const std::vector<MapArg> &args) {
  if (auto err = checkMapTypes(args, "target update", /*allowNonContig=*/true))
    return err;
  for (const MapArg &arg : args) {
    if (has(arg.type, flag::Literal) || has(arg.type, flag::Private))
      continue;
    if (arg.mapper && !has(arg.type, flag::NonContig)) {
      if (auto err = updateList(runMapper(arg)))
        return err;
      continue;
    }
    if (has(arg.type, flag::NonContig)) {
      if (auto err = updateNonContiguous(arg))
        return err;
      continue;
    }
    if (auto err =
            updateContiguous(arg, reinterpret_cast<uintptr_t>(arg.begin), static_cast<uint64_t>(arg.size)))
      return err;
  }
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::updateContiguous(const MapArg &arg, uintptr_t begin, uint64_t size) {
  MapLookup found = table_.lookup(begin, size);
  if (!found.entry || !found.contained) {
    if (has(arg.type, flag::Present)) {
      MapArg piece = arg;
      piece.begin = reinterpret_cast<void *>(begin);
      piece.size = static_cast<int64_t>(size);
      return missingPresent(piece, "updated");
    }
    return llvm::Error::success(); // OpenMP 5.1: updating an absent item does nothing
  }
  OMPSIM_TRACE_EVENT(Cat::Map, "update")
      .str("name", mapArgName(arg.name))
      .host("host", begin)
      .num("size", static_cast<int64_t>(size))
      .str("direction", has(arg.type, flag::To) ? "to" : "from");
  if (has(arg.type, flag::To))
    if (auto err = copyToDevice(*found.entry, begin, size))
      return err;
  if (has(arg.type, flag::From))
    if (auto err = copyFromDevice(*found.entry, begin, size))
      return err;
  return llvm::Error::success();
}

llvm::Error MapClauseProcessor::updateNonContiguous(const MapArg &arg) {
  // clang passes the descriptor array as the item's begin and the number of
  // dimensions as its size. Each dimension's offset is the section's lower
  // bound (in elements of that dimension) and its stride the byte distance
  // between the section's elements; clang ends the list with a
  // {0, 1, element size} dimension.
  if (arg.size <= 0 || arg.size > 64 || !arg.begin)
    return makeError(fmt::format("non-contiguous update of {} has {} dimensions", describe(arg), arg.size));
  std::vector<NonContigDim> dims(static_cast<size_t>(arg.size));
  std::memcpy(dims.data(), arg.begin, dims.size() * sizeof(NonContigDim));
  uint64_t elementSize = dims.back().stride;
  if (dims.size() > 1 && dims.back().offset == 0 && dims.back().count == 1)
    dims.pop_back();
  for (const NonContigDim &d : dims)
    if (d.count == 0)
      return llvm::Error::success();
  // The lower bound of the innermost dimension counts elements; an outer
  // dimension's counts its own (unstrided) rows, whose size is its stride.
  auto unit = [&](size_t d) { return d + 1 == dims.size() ? elementSize : dims[d].stride; };
  uintptr_t start = reinterpret_cast<uintptr_t>(arg.base);
  for (size_t d = 0; d < dims.size(); ++d)
    start += dims[d].offset * unit(d);

  // A strided section of structs with a declare mapper: the mapper names
  // what of each element moves.
  bool perElement = arg.mapper != nullptr;
  MapArg element = arg;
  element.type = static_cast<int64_t>(static_cast<uint64_t>(arg.type) & ~flag::NonContig);
  element.size = static_cast<int64_t>(elementSize);

  // Walk the elements in order and merge the ones that touch into runs, so
  // a section with contiguous rows moves in one transfer per row (or one).
  uintptr_t runBegin = 0;
  uint64_t runSize = 0;
  std::vector<uintptr_t> runElements;
  auto flush = [&]() -> llvm::Error {
    if (runSize == 0)
      return llvm::Error::success();
    MapLookup found = table_.lookup(runBegin, runSize);
    llvm::Error err = llvm::Error::success();
    if (found.entry && found.contained) {
      err = updateContiguous(arg, runBegin, runSize);
    } else {
      // The run spans blocks (or misses them): each element on its own.
      for (uintptr_t e : runElements)
        if ((err = updateContiguous(arg, e, elementSize)))
          break;
    }
    runSize = 0;
    runElements.clear();
    return err;
  };
  std::vector<uint64_t> index(dims.size(), 0);
  while (true) {
    uintptr_t addr = start;
    for (size_t d = 0; d < dims.size(); ++d)
      addr += index[d] * dims[d].stride;
    if (runSize != 0 && addr == runBegin + runSize) {
      runSize += elementSize;
    } else {
      if (auto err = flush())
        return err;
      runBegin = addr;
      runSize = elementSize;
    }
    runElements.push_back(addr);
    if (perElement) {
      runSize = 0;
      runElements.clear();
      element.begin = reinterpret_cast<void *>(addr);
      if (auto err = updateList(runMapper(element)))
        return err;
    }
    size_t d = dims.size();
    while (d-- > 0) {
      if (++index[d] < dims[d].count)
        break;
      index[d] = 0;
    }
    if (d == static_cast<size_t>(-1))
      break;
  }
  return flush();
}

llvm::Expected<uint64_t> MapClauseProcessor::kernelArgument(const MapArg &arg,
                                                            std::vector<uint64_t> &privateBlocks) {
  auto base = reinterpret_cast<uintptr_t>(arg.base);
  auto begin = reinterpret_cast<uintptr_t>(arg.begin);
  if (has(arg.type, flag::PtrAndObj) && !has(arg.type, flag::Literal | flag::Private))
    std::memcpy(&base, arg.base, sizeof(base)); // the pointee's base is the pointer's value
  if (has(arg.type, flag::Literal))
    return static_cast<uint64_t>(base);
  if (has(arg.type, flag::Private)) {
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
  if (!found.entry)
    return static_cast<uint64_t>(base); // unmapped zero-length section: keeps its host value
  // A block the item only overlaps still gives its device address (stock).
  return found.entry->translate(begin) - (begin - base);
}

llvm::Expected<std::vector<uint64_t>>
MapClauseProcessor::kernelArguments(const std::vector<MapArg> &args, std::vector<uint64_t> &privateBlocks) {
  std::vector<uint64_t> values;
  // The device base address of each TARGET_PARAM item, by item index.
  std::vector<std::optional<uint64_t>> byItem(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (!has(args[i].type, flag::TargetParam))
      continue;
    auto value = kernelArgument(args[i], privateBlocks);
    if (!value)
      return value.takeError();
    values.push_back(*value);
    byItem[i] = *value;
  }
  constexpr uint64_t lambdaCapture = flag::PtrAndObj | flag::Literal | flag::Implicit;
  for (size_t i = 0; i < args.size(); ++i) {
    const MapArg &arg = args[i];
    if ((static_cast<uint64_t>(arg.type) & lambdaCapture) != lambdaCapture)
      continue;
    uint64_t parent = memberOf(arg.type);
    if (parent == 0 || parent > args.size() || !byItem[parent - 1])
      return makeError(fmt::format("lambda capture {} has no lambda kernel argument to live in "
                                   "(parent item {})",
                                   describe(arg), parent));
    // base: the capture field in the host lambda; begin: the captured variable.
    auto field = reinterpret_cast<uintptr_t>(arg.base);
    auto lambdaBegin = reinterpret_cast<uintptr_t>(args[parent - 1].begin);
    uint64_t tgtField = *byItem[parent - 1] + (field - lambdaBegin);
    auto captured = reinterpret_cast<uintptr_t>(arg.begin);
    MapLookup found = table_.lookup(captured, static_cast<uint64_t>(arg.size));
    if (!found.entry)
      continue; // not mapped: the lambda keeps the host address, as with stock
    uint64_t tgtCaptured = found.entry->translate(captured);
    if (auto err = memory_.submit(tgtField, &tgtCaptured, sizeof(tgtCaptured)))
      return std::move(err);
    OMPSIM_TRACE_EVENT(Cat::Map, "lambda_capture")
        .str("name", mapArgName(arg.name))
        .host("captured", captured)
        .dev("field", tgtField, "")
        .dev("value", tgtCaptured, memory_.symbolize(tgtCaptured));
  }
  return values;
}

std::string mapflag::bitName(uint64_t bit) {
  static constexpr std::pair<uint64_t, const char *> names[] = {
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
  for (const auto &[value, name] : names)
    if (value == bit)
      return fmt::format("{} ({:#x})", name, bit);
  return fmt::format("{:#x} (no OpenMPOffloadMappingFlags name)", bit);
}

} // namespace ompsim::host

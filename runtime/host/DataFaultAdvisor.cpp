//===- DataFaultAdvisor.cpp - What a faulting data address is -------------===//
//
// The runtime's half of a device fault's diagnosis: the plugin says where
// the device read or wrote; the mapping table, the host's memory map and the
// region's map items say what is there and which pointer carried it.
//
//===----------------------------------------------------------------------===//

#include "DataFaultAdvisor.h"
#include "MapFlags.h"
#include "StockMessages.h"

#include "ompsim/HostMemoryMap.h"
#include "ompsim/HostSymbolizer.h"
#include "ompsim/Trace.h"

#include "llvm/ADT/StringExtras.h"

#include <fmt/format.h>

#include <cstring>

namespace ompsim::host {
namespace {

namespace flag = mapflag;

/// Addresses below this are a null pointer plus an offset.
constexpr uint64_t kNullReach = 64 * 1024;
/// How far past a device copy's end an access still names that copy.
constexpr uint64_t kPastEndReach = 1 << 20;
/// A map item's host bytes are searched for the carrying pointer up to this size.
constexpr int64_t kHolderScanBytes = 1 << 20;

/// 'x' for a name the map clause spells; a symbolizer's guess ("<stack of
/// 'f'>") stays as it is.
std::string quoted(const std::string &Name) {
  return !Name.empty() && Name[0] == '<' ? Name : "'" + Name + "'";
}

/// "'x'" or "a mapped block" for an entry without a name (built without -g).
std::string entryName(const std::string &Name, const char *Unnamed) {
  return Name.empty() ? std::string(Unnamed) : quoted(Name);
}

/// "the data construct at f.c:12"; without debug info "kernel K" or "a
/// data construct"; "" when unknown.
std::string constructText(const ConstructSite &Site) {
  if (!Site.Kind)
    return "";
  std::string Line = stock::sourceLine(Site.Loc);
  if (!Line.empty())
    return fmt::format("the {} at {}", Site.Kind, Line);
  if (Site.Kernel)
    return "kernel " + *Site.Kernel;
  return fmt::format("a {}", Site.Kind);
}

/// " by the data construct at f.c:12", or "" when the construct is unknown.
std::string byConstruct(const ConstructSite &Site) {
  std::string Text = constructText(Site);
  return Text.empty() ? Text : " by " + Text;
}

/// The array a section names: "a[0:64]" -> "a", "s.p[:n]" -> "s.p".
std::string sectionBase(const std::string &Name) {
  size_t Bracket = Name.find('[');
  return Bracket == std::string::npos ? Name : Name.substr(0, Bracket);
}

} // namespace

std::optional<DataFaultAdvisor::Holder> DataFaultAdvisor::findHolder(uint64_t Begin, uint64_t End) const {
  // A pointer passed by value first (firstprivate, is_device_ptr: a literal
  // kernel argument).
  std::optional<Holder> Best;
  for (const MapArg &Arg : RegionArgs) {
    auto Value = reinterpret_cast<uint64_t>(Arg.Begin);
    if (flag::has(Arg.Type, flag::Literal) && Value >= Begin && Value < End) {
      std::string Name = mapArgVariable(Arg.Name);
      return Holder{Name.empty() ? "a pointer passed by value"
                                 : quoted(Name) + " (firstprivate or is_device_ptr)",
                    Name, Holder::Kind::Firstprivate};
    }
  }
  // A pointer the region maps as a zero-length section (what clang makes of
  // a pointer a region uses without a map clause): it is translated only
  // when its pointee is mapped.
  for (const MapArg &Arg : RegionArgs) {
    auto Value = reinterpret_cast<uint64_t>(Arg.Begin);
    if (!flag::has(Arg.Type, flag::Literal) && Arg.Size == 0 && Value >= Begin && Value < End) {
      std::string Name = mapArgVariable(Arg.Name);
      return Holder{Name.empty() ? "a pointer mapped as a zero-length section"
                                 : quoted(Name) + " (mapped as a zero-length section)",
                    Name, Holder::Kind::ZeroLength};
    }
  }
  // Then a pointer inside an item the region maps (a struct's member).
  for (const MapArg &Arg : RegionArgs) {
    if (flag::has(Arg.Type, flag::Literal) || !Arg.Begin || Arg.Size < int64_t(sizeof(uint64_t)) ||
        Arg.Size > kHolderScanBytes)
      continue;
    auto First = reinterpret_cast<uint64_t>(Arg.Begin);
    if (First + Arg.Size > Begin && First < End)
      continue; // the pointee itself
    // Read only host memory that is there (an item may name device memory).
    std::optional<HostMemoryRegion> Where = hostMemoryRegion(First);
    if (!Where || !Where->Readable || First + uint64_t(Arg.Size) > Where->End)
      continue;
    MapLookup Item = Table.lookup(First, uint64_t(Arg.Size));
    uint64_t Aligned = (First + 7) & ~uint64_t(7);
    for (uint64_t At = Aligned; At + 8 <= First + uint64_t(Arg.Size); At += 8) {
      uint64_t Word;
      std::memcpy(&Word, reinterpret_cast<const void *>(At), sizeof Word);
      if (Word < Begin || Word >= End)
        continue;
      if (Item.Entry && Item.Entry->Shadows.count(At))
        continue; // attached: the device copy holds a device address
      std::string Name = mapArgVariable(Arg.Name);
      std::string Shown = Name.empty() ? hostDataName(First) : Name;
      bool Private = flag::has(Arg.Type, flag::Private);
      return Holder{fmt::format("the pointer at byte {} of {}{}", At - First,
                                Shown.empty() ? std::string("a mapped item") : quoted(Shown),
                                Private ? " (firstprivate)" : ""),
                    Shown, Private ? Holder::Kind::PrivateMember : Holder::Kind::Member};
    }
  }
  return Best;
}

std::string DataFaultAdvisor::describeHost(const DataFaultSite &F, std::string &Because,
                                           std::string &Note) const {
  std::optional<HostMemoryRegion> Region = hostMemoryRegion(F.Addr);
  std::string Kind = "host memory";
  std::vector<std::string> Parts;
  std::string Symbol; // a global's name, for the note
  if (Region) {
    switch (Region->Kind) {
    case HostMemoryKind::Object: {
      Kind = "host data";
      HostSymbolizer &Hs = HostSymbolizer::get();
      std::string Object = Hs.objectOf(F.Addr);
      if (auto Sym = Hs.lookup(F.Addr)) {
        Symbol = Sym->Name;
        std::string N = Sym->Offset ? fmt::format("{}+0x{:x}", Sym->Name, Sym->Offset) : Sym->Name;
        Parts.push_back(fmt::format("host symbol '{}' in {}", N, Sym->Object.empty() ? Object : Sym->Object));
      } else {
        Parts.push_back("in " + Object);
      }
      break;
    }
    case HostMemoryKind::Stack: {
      Kind = "host stack memory";
      std::string Fn = hostStackFrameOf(F.Addr);
      if (!Fn.empty())
        Parts.push_back(fmt::format("in the frame of '{}'", Fn));
      break;
    }
    case HostMemoryKind::ThreadStack:
      Kind = "host stack memory of another thread";
      break;
    case HostMemoryKind::Heap:
    case HostMemoryKind::Anonymous:
      Kind = "host heap memory";
      break;
    case HostMemoryKind::File:
      Kind = "host memory";
      Parts.push_back("mapped from " + Region->Path);
      break;
    }
  }

  MapLookup Mapped = Table.lookup(F.Addr, 1);
  bool IsMapped = Mapped.Entry && Mapped.Contained;
  std::optional<Holder> Carrier;
  if (IsMapped) {
    const MapEntry &E = *Mapped.Entry;
    std::string Pointee = E.Name;
    if (Pointee.empty() && Region && Region->Kind != HostMemoryKind::Heap &&
        Region->Kind != HostMemoryKind::Anonymous)
      Pointee = hostDataName(E.HstBegin);
    std::string By = E.isInfinite() ? " (declare target)" : byConstruct(E.MappedBy);
    std::string Offset = F.Addr == E.HstBegin ? std::string("the start of")
                                              : fmt::format("{} bytes into", F.Addr - E.HstBegin);
    Parts.push_back(fmt::format("{} the host copy of {} ({} bytes), mapped on device {} at dev:0x{:x}{}",
                                Offset, entryName(Pointee, "a mapped block"), E.size(), F.Device,
                                E.translate(F.Addr), By));
    Carrier = findHolder(std::min<uint64_t>(E.HstBase ? E.HstBase : E.HstBegin, E.HstBegin), E.HstEnd);
    std::string PointeeText = Pointee.empty() ? std::string("the pointee's array section") : quoted(Pointee);
    if (Carrier && Carrier->Kind == Holder::Kind::Firstprivate) {
      std::string P = Carrier->Name.empty() ? std::string("the pointer") : Carrier->Name;
      Note = fmt::format("note: {} is passed by value, so the region got its host value: map it instead "
                         "('map({}[:0])' finds the device copy of {} and passes its device address)",
                         quoted(P), P, PointeeText);
    } else if (Carrier && Carrier->Kind == Holder::Kind::PrivateMember) {
      std::string S = Carrier->Name.empty() ? std::string("the struct") : Carrier->Name;
      Note = fmt::format(
          "note: a firstprivate copy keeps the host value of its pointers: map {} with its pointee "
          "({}) so that the pointer is attached",
          quoted(S),
          E.Name.empty() || Carrier->Name.empty() || S[0] == '<'
              ? std::string("both in one map clause")
              : fmt::format("'map(to: {}, {})'", S, E.Name));
    } else if (Carrier && Carrier->Kind == Holder::Kind::Member) {
      Note = E.Name.empty() ? std::string("note: attach the pointer: map its pointee's array section in this "
                                          "region too (the block is present, so nothing is copied)")
                            : fmt::format("note: attach the pointer: map its pointee in this region too (add "
                                          "'map({})'; the block is present, so nothing is copied)",
                                          E.Name);
    } else {
      Note = "note: the region got the host address of mapped data: map the pointer with its pointee in "
             "this region so that it is attached, or pass the device address ('use_device_ptr', "
             "omp_get_mapped_ptr, 'is_device_ptr')";
    }
  } else {
    Carrier = findHolder(F.Addr >= kHolderScanBytes ? F.Addr - kHolderScanBytes : 0, F.Addr + 1);
    if (!Symbol.empty()) {
      Note = fmt::format("note: '{0}' is host data the device cannot reach: map it ('map({1}: {0})') or "
                         "make it device data ('#pragma omp declare target to({0})')",
                         Symbol, F.Write ? "tofrom" : "to");
    } else {
      std::string P = Carrier && !Carrier->Name.empty() ? Carrier->Name : std::string("p");
      Note = fmt::format("note: the device cannot reach host memory: map what the pointer points to "
                         "('map({}: {}[0:n])') so that the region gets its device address",
                         F.Write ? "tofrom" : "to", P);
    }
  }
  std::string Text = fmt::format("{} at host:0x{:x}", Kind, F.Addr);
  if (!Parts.empty())
    Text += fmt::format(" ({})", fmt::join(Parts, ", "));
  if (Carrier && Carrier->Kind == Holder::Kind::Member && IsMapped)
    Because = fmt::format("{} holds that address: {} is mapped in this region, but the pointer was not "
                          "attached in it",
                          Carrier->What, entryName(Carrier->Name, "the item"));
  else if (Carrier)
    Because = fmt::format("{} holds that address", Carrier->What);
  return Text;
}

const MapEntry *DataFaultAdvisor::deviceCopyHolding(uint64_t Addr) const {
  const MapEntry *Inside = nullptr;
  Table.forEach([&](MapEntry &E) {
    if (Addr >= E.TgtBegin && Addr < E.TgtBegin + E.size())
      Inside = &E;
  });
  return Inside;
}

std::string DataFaultAdvisor::intoDeviceCopy(const MapEntry &E, uint64_t Addr) {
  return fmt::format("{} bytes into the device copy of {} ({} bytes)", Addr - E.TgtBegin,
                     entryName(E.Name, "a mapped block"), E.size());
}

std::string DataFaultAdvisor::describeDevice(const DataFaultSite &F, std::string &Note) const {
  if (const MapEntry *Inside = deviceCopyHolding(F.Addr)) {
    Note = "note: the device copy is live, so the access itself is refused (a protected page)";
    return fmt::format("device memory at dev:0x{:x} ({})", F.Addr, intoDeviceCopy(*Inside, F.Addr));
  }
  const MapEntry *Below = nullptr;
  Table.forEach([&](MapEntry &E) {
    uint64_t End = E.TgtBegin + E.size();
    if (End <= F.Addr && F.Addr - End < kPastEndReach && (!Below || End > Below->TgtBegin + Below->size()))
      Below = &E;
  });
  if (const EndedMapping *Ended = Table.findEnded(F.Addr)) {
    std::string Name = entryName(Ended->Name, "a mapped block");
    Note = fmt::format("note: a device pointer outlived its mapping: keep {} mapped while device code uses "
                       "its device address ('target enter data' with the matching 'exit data' after the "
                       "last region, or a longer 'target data')",
                       Name);
    std::string MappedBy = constructText(Ended->MappedBy), EndedBy = constructText(Ended->EndedBy);
    std::string Mapped = MappedBy.empty() ? std::string() : ", mapped by " + MappedBy;
    std::string Freed = EndedBy.empty() ? std::string("freed when its mapping ended")
                                        : "freed when " + EndedBy + " ended its mapping";
    return fmt::format("freed device memory at dev:0x{:x} ({} bytes into the old device copy of {} ({} "
                       "bytes){}; {})",
                       F.Addr, F.Addr - Ended->TgtBegin, Name, Ended->size(), Mapped, Freed);
  }
  if (Below) {
    uint64_t End = Below->TgtBegin + Below->size();
    std::string Base = Below->Name.empty() ? std::string("the array") : quoted(sectionBase(Below->Name));
    Note = fmt::format("note: the kernel indexes past the mapped section: map a longer array section of {}",
                       Base);
    return fmt::format("device memory at dev:0x{:x} ({} bytes past the end of the device copy of {} ({} "
                       "bytes at dev:0x{:x}))",
                       F.Addr, F.Addr - End, entryName(Below->Name, "a mapped block"), Below->size(),
                       Below->TgtBegin);
  }
  Note = fmt::format("note: no mapping of device {} holds this address: the pointer was computed or kept "
                     "from memory that is gone",
                     F.Device);
  return fmt::format("device memory at dev:0x{:x} that no mapping holds", F.Addr);
}

std::string DataFaultAdvisor::nameDeviceMemory(std::string Line) const {
  static constexpr llvm::StringLiteral Prefix("device memory at dev:0x");
  size_t At = Line.find(Prefix.data());
  if (At == std::string::npos)
    return Line;
  size_t Begin = At + Prefix.size(), End = Begin;
  while (End < Line.size() && llvm::isHexDigit(Line[End]))
    ++End;
  uint64_t Addr = 0;
  if (llvm::StringRef(Line).slice(Begin, End).getAsInteger(16, Addr))
    return Line;
  const MapEntry *Inside = deviceCopyHolding(Addr);
  return Inside ? Line.insert(End, " (" + intoDeviceCopy(*Inside, Addr) + ")") : Line;
}

std::string DataFaultAdvisor::describe(const DataFaultSite &F) const {
  std::string Note, What, Because;
  if (F.Addr < kNullReach) {
    What = fmt::format("a null pointer (address 0x{:x})", F.Addr);
    Note = "note: a pointer the kernel dereferences is null on the device: map its pointee "
           "('map(to: p[0:n])') or set it before the region";
  } else if (!F.DeviceWhat.empty()) {
    What = F.DeviceWhat;
    Note = F.DeviceNote;
  } else if (F.OwnerDevice == F.Device) {
    What = describeDevice(F, Note);
  } else if (F.OwnerDevice >= 0) {
    What = fmt::format("device {}'s memory at dev:0x{:x}", F.OwnerDevice, F.Addr);
    Note = fmt::format("note: device {} cannot reach the memory of device {}: run the region on device {} "
                       "or copy the data (omp_target_memcpy)",
                       F.Device, F.OwnerDevice, F.OwnerDevice);
  } else if (hostMemoryRegion(F.Addr)) {
    What = describeHost(F, Because, Note);
  } else {
    What = fmt::format("unmapped address 0x{:x} (neither host nor device memory)", F.Addr);
    Note = "note: the pointer holds a wild value (uninitialized, or computed out of bounds)";
  }
  if (!F.Library.empty()) {
    // The kernel's own code did not fault: a library function it called
    // did, with a pointer the kernel passed it. What the map clauses lack is
    // not known, so no clause is suggested.
    std::string Function = F.LibraryFunction.empty()
                               ? "a function of " + F.Library
                               : fmt::format("the library function '{}' ({})", F.LibraryFunction, F.Library);
    Note = fmt::format("note: the fault is inside {}, which the kernel called: a pointer the kernel passes "
                       "it (an out-pointer, a buffer) does not hold device memory of the size the function "
                       "uses",
                       Function);
  }
  return fmt::format("device {}: {} {} {} from {}; {}{}", F.Device, F.Context, F.Write ? "wrote" : "read",
                     What, F.Instruction, Because.empty() ? "" : Because + "; ", Note);
}

} // namespace ompsim::host

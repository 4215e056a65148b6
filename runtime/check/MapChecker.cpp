// The map checker: shadows of mapped blocks, and the reports made from them
// (stale device copy, dropped device writes, uninitialized copy-back, leaks).
#include "MapChecker.h"

#include "DeviceMemory.h"
#include "MapClauseProcessor.h"
#include "MappingTable.h"

#include "ompsim/Config.h"
#include "ompsim/HostMemoryMap.h"
#include "ompsim/Trace.h"

#include "llvm/ADT/ScopeExit.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

namespace ompsim::check {
namespace {

/// The poison pattern of fresh device memory, by offset from the block's
/// start (blocks are at least 16-byte aligned, so the pattern is too).
constexpr uint8_t kPoison[8] = {0xde, 0xad, 0xbe, 0xef, 0xfe, 0xed, 0xfa, 0xce};
/// Shortest run of poison bytes taken as never written: shorter runs are
/// struct padding or a written value that happens to match.
constexpr uint64_t kMinPoisonRun = 8;

uint8_t poisonAt(uint64_t Offset) { return kPoison[Offset % sizeof(kPoison)]; }

/// The construct the current thread processes.
struct Construct {
  std::string Kind = "construct";
  std::string Location;
  std::string Kernel;
  uint64_t Serial = 0;
};
/// Never destroyed: the leak report runs in an exit handler, after the main
/// thread's thread_local objects are gone.
Construct &currentConstruct() {
  thread_local Construct *C = new Construct();
  return *C;
}
/// The kinds the ABI layer names (runtime/host/Api.cpp).
constexpr std::string_view kRegion = "target region";
constexpr std::string_view kExiting = "map-exiting construct";
constexpr std::string_view kUpdate = "target update";
std::atomic<uint64_t> NextSerial{1};

/// Blocks from omp_target_alloc, by (device, address).
std::mutex TargetBlocksLock;
std::map<std::pair<int32_t, uint64_t>, std::pair<uint64_t, BlockShadow>> TargetBlocks;

std::atomic<uint64_t> Reports{0};
std::mutex ReportedLock;
std::set<std::string> Reported; ///< reports already printed (a loop reports once)

/// "the target region main_l15 at f.c:15:1".
std::string region() {
  std::string Text = "the " + currentConstruct().Kind;
  if (!currentConstruct().Kernel.empty())
    Text += " " + currentConstruct().Kernel;
  if (!currentConstruct().Location.empty())
    Text += " at " + currentConstruct().Location;
  return Text;
}

/// "'a' (400 bytes at host 0x7ffc...)"; without a map name (no -g), `HostName`:
/// what the host symbolizer told of the block when it was mapped ("<stack of
/// 'main'>", a global), or "an unnamed item".
std::string describe(const std::string &Name, uintptr_t Host, uint64_t Size, const std::string &HostName) {
  std::string What = "'" + Name + "'";
  if (Name.empty())
    What = HostName.empty()     ? std::string("an unnamed item")
           : HostName[0] == '<' ? HostName
                                : "'" + HostName + "'";
  return fmt::format("{} ({} bytes at host {:#x})", What, Size, Host);
}

/// BlockShadow::HostName of `Entry`, or "".
const std::string &hostNameOf(const host::MapEntry &Entry) {
  static const std::string None;
  return Entry.Check ? Entry.Check->HostName : None;
}

/// The name to put in a suggested clause ("a", or "x" when unknown).
std::string clauseName(const std::string &Name) { return Name.empty() ? std::string("x") : Name; }

void report(std::string_view Kind, const std::string &Name, uintptr_t Host, const std::string &Message) {
  std::string Key = fmt::format("{}|{}|{:#x}|{}", Kind, Name, Host, region());
  {
    std::lock_guard<std::mutex> Guard(ReportedLock);
    if (!Reported.insert(Key).second)
      return;
  }
  Reports.fetch_add(1);
  std::string Line = fmt::format("ompsim: check: {}: {}", Kind, Message);
  std::fflush(stdout);
  std::fprintf(stderr, "%s\n", Line.c_str());
  OMPSIM_TRACE_EVENT(Cat::Check, "report")
      .str("check", Kind)
      .str("name", Name)
      .host("host", Host)
      .str("region", region())
      .str("message", Line.substr(std::strlen("ompsim: check: ")));
}

/// 1 for each byte of `Entry` that an attached pointer occupies (its device
/// copy holds a device address, its host copy a host one); empty when none.
std::vector<uint8_t> shadowPointerMask(const host::MapEntry &Entry) {
  std::vector<uint8_t> Mask;
  if (Entry.Shadows.empty())
    return Mask;
  Mask.assign(Entry.size(), 0);
  for (const auto &[Loc, Shadow] : Entry.Shadows) {
    (void)Shadow;
    for (uint64_t I = 0; I < sizeof(void *); ++I)
      if (Loc + I >= Entry.HstBegin && Loc + I < Entry.HstEnd)
        Mask[Loc + I - Entry.HstBegin] = 1;
  }
  return Mask;
}

/// Clamps [Begin, Begin+Size) to `Entry`; false when nothing is left.
bool clamp(const host::MapEntry &Entry, uintptr_t &Begin, uint64_t &Size) {
  uintptr_t End = std::min<uintptr_t>(Begin + Size, Entry.HstEnd);
  Begin = std::max<uintptr_t>(Begin, Entry.HstBegin);
  if (End <= Begin)
    return false;
  Size = End - Begin;
  return true;
}

/// Calls F(begin, end) for each known range of `Shadow` inside [From, To), in order.
template <typename CallbackT>
void forEachKnown(const BlockShadow &Shadow, uint64_t From, uint64_t To, CallbackT &&F) {
  auto It = Shadow.Known.upper_bound(From);
  if (It != Shadow.Known.begin())
    --It;
  for (; It != Shadow.Known.end() && It->first < To; ++It) {
    uint64_t B = std::max(It->first, From), E = std::min(It->second, To);
    if (B < E)
      F(B, E);
  }
}

/// The first byte offset in [From, To) of the block where the known shadow
/// differs from `Now` (indexed from `From`), skipping attached pointers; or -1.
int64_t firstDifference(const BlockShadow &Shadow, const std::vector<uint8_t> &Skip, uint64_t From,
                        uint64_t To, const uint8_t *Now) {
  int64_t First = -1;
  forEachKnown(Shadow, From, To, [&](uint64_t B, uint64_t E) {
    if (First >= 0 || std::memcmp(Shadow.Synced.get() + B, Now + (B - From), E - B) == 0)
      return;
    for (uint64_t I = B; I < E && First < 0; ++I)
      if ((Skip.empty() || !Skip[I]) && Shadow.Synced[I] != Now[I - From])
        First = static_cast<int64_t>(I);
  });
  return First;
}

} // namespace

bool enabled() { return config().Check != 0; }

void BlockShadow::markKnown(uint64_t From, uint64_t To) {
  if (From >= To)
    return;
  // Merge with every range that overlaps or touches [From, To).
  auto It = Known.upper_bound(From);
  if (It != Known.begin() && std::prev(It)->second >= From)
    --It;
  while (It != Known.end() && It->first <= To) {
    From = std::min(From, It->first);
    To = std::max(To, It->second);
    It = Known.erase(It);
  }
  Known.emplace(From, To);
}

void BlockShadow::forget(uint64_t From, uint64_t To) {
  if (From >= To)
    return;
  auto It = Known.upper_bound(From);
  if (It != Known.begin() && std::prev(It)->second > From)
    --It;
  while (It != Known.end() && It->first < To) {
    auto [B, E] = *It;
    It = Known.erase(It);
    if (B < From)
      Known.emplace(B, From);
    if (E > To)
      It = Known.emplace(To, E).first;
  }
}

ConstructScope::ConstructScope(std::string Kind, std::string Location)
    : SavedKind(std::move(currentConstruct().Kind)), SavedLocation(std::move(currentConstruct().Location)),
      SavedSerial(currentConstruct().Serial) {
  currentConstruct().Kind = std::move(Kind);
  currentConstruct().Location = std::move(Location);
  currentConstruct().Kernel.clear();
  currentConstruct().Serial = NextSerial.fetch_add(1);
}

ConstructScope::~ConstructScope() {
  currentConstruct().Kind = std::move(SavedKind);
  currentConstruct().Location = std::move(SavedLocation);
  currentConstruct().Kernel.clear();
  currentConstruct().Serial = SavedSerial;
}

void setRegionKernel(std::string_view KernelName) {
  // "__omp_offloading_<dev>_<file>_main_l15" -> "main_l15".
  constexpr std::string_view Prefix = "__omp_offloading_";
  std::string_view S = KernelName;
  if (S.substr(0, Prefix.size()) == Prefix) {
    S.remove_prefix(Prefix.size());
    for (int Field = 0; Field < 2; ++Field) {
      size_t Us = S.find('_');
      if (Us == std::string_view::npos)
        break;
      S.remove_prefix(Us + 1);
    }
  }
  currentConstruct().Kernel = std::string(S);
}

std::string itemName(const void *MapName, const host::MapEntry &Entry) {
  std::string Name = host::mapArgVariable(MapName);
  return Name.empty() ? Entry.Name : Name;
}

void onCreate(host::MapEntry &Entry, host::DeviceMemory &Memory, bool Poison, bool MovesData) {
  if (!enabled())
    return;
  auto Shadow = std::make_shared<BlockShadow>();
  uint64_t Size = Entry.size();
  // Not zeroed: only the known ranges are read, after a transfer wrote them.
  Shadow->Synced.reset(new uint8_t[Size ? Size : 1]);
  Shadow->CreatedIn = currentConstruct().Serial;
  Shadow->CreatedBy = region();
  Shadow->ByRegion = currentConstruct().Kind == kRegion;
  Shadow->MovesData = MovesData;
  // Named now: a stack block's frame is gone by the time a leak is reported.
  if (Entry.Name.empty())
    Shadow->HostName = hostDataName(Entry.HstBegin);
  if (Poison && Size) {
    Shadow->Original.resize(Size);
    if (auto Err = Memory.retrieve(Shadow->Original.data(), Entry.TgtBegin, Size)) {
      llvm::consumeError(std::move(Err));
      Shadow->Original.clear();
    } else {
      std::vector<uint8_t> Pattern(Size);
      for (uint64_t I = 0; I < Size; ++I)
        Pattern[I] = poisonAt(I);
      if (auto Err = Memory.submit(Entry.TgtBegin, Pattern.data(), Size)) {
        llvm::consumeError(std::move(Err));
        Shadow->Original.clear();
      }
    }
  }
  Entry.Check = std::move(Shadow);
}

void markLeftByMapper(host::MapEntry &Entry) {
  if (Entry.Check)
    Entry.Check->LeftByMapper = true;
}

void onCopiedTo(host::MapEntry &Entry, uintptr_t Begin, uint64_t Size) {
  if (!Entry.Check || !clamp(Entry, Begin, Size))
    return;
  BlockShadow &Shadow = *Entry.Check;
  uint64_t Off = Begin - Entry.HstBegin;
  std::memcpy(Shadow.Synced.get() + Off, reinterpret_cast<const void *>(Begin), Size);
  Shadow.markKnown(Off, Off + Size);
}

void onCopiedFrom(host::MapEntry &Entry, host::DeviceMemory &Memory, uintptr_t Begin, uint64_t Size,
                  const void *MapName) {
  if (!Entry.Check || !clamp(Entry, Begin, Size))
    return;
  BlockShadow &Shadow = *Entry.Check;
  uint64_t From = Begin - Entry.HstBegin, To = From + Size;
  auto *Host = reinterpret_cast<uint8_t *>(Begin);
  // Runs of bytes that hold the poison still were never written by the
  // device (bytes a transfer made known are the host's or the device's).
  std::vector<std::pair<uint64_t, uint64_t>> Runs;
  auto ScanGap = [&](uint64_t GapBegin, uint64_t GapEnd) {
    for (uint64_t I = GapBegin; I < GapEnd;) {
      if (Host[I - From] != poisonAt(I)) {
        ++I;
        continue;
      }
      uint64_t J = I;
      while (J < GapEnd && Host[J - From] == poisonAt(J))
        ++J;
      if (J - I >= kMinPoisonRun)
        Runs.emplace_back(I, J);
      I = J;
    }
  };
  if (!Shadow.Original.empty()) {
    // Only bytes no transfer made known can still hold the poison.
    uint64_t Next = From;
    forEachKnown(Shadow, From, To, [&](uint64_t B, uint64_t E) {
      ScanGap(Next, B);
      Next = E;
    });
    ScanGap(Next, To);
  }
  uint64_t Bytes = 0;
  for (auto [RunBegin, RunEnd] : Runs) {
    std::memcpy(Host + (RunBegin - From), Shadow.Original.data() + RunBegin, RunEnd - RunBegin);
    Bytes += RunEnd - RunBegin;
  }
  if (!Runs.empty()) {
    std::string Name = itemName(MapName, Entry);
    std::string Range = fmt::format("bytes [{}, {})", Runs[0].first, Runs[0].second);
    if (Runs.size() > 1)
      Range += fmt::format(" and {} more range{} ({} bytes in all)", Runs.size() - 1,
                           Runs.size() == 2 ? "" : "s", Bytes);
    report("uninitialized copy-back", Name, Entry.HstBegin,
           fmt::format("{} of {} were never written on device {} when {} copied them back; fix: map only "
                       "the section the device writes, write every byte there, or map '{}' 'tofrom' so "
                       "the device starts from the host's values",
                       Range, describe(Name, Entry.HstBegin, Entry.size(), hostNameOf(Entry)),
                       Memory.deviceNumber(), region(), clauseName(Name)));
  }
  std::memcpy(Shadow.Synced.get() + From, Host, Size);
  // The runs restored above hold the host's old bytes here and the poison on
  // the device: they stay unknown (a later copy-back finds them again, and
  // neither a dropped-writes nor a stale check compares them).
  uint64_t Next = From;
  for (auto [RunBegin, RunEnd] : Runs) {
    Shadow.markKnown(Next, RunBegin);
    Next = RunEnd;
  }
  Shadow.markKnown(Next, To);
  if (currentConstruct().Kind == kUpdate)
    Shadow.UpdatedFrom = true;
}

void onPresentUse(host::MapEntry &Entry, uintptr_t Begin, uint64_t Size, const void *MapName) {
  if (!Entry.Check || !clamp(Entry, Begin, Size))
    return;
  BlockShadow &Shadow = *Entry.Check;
  uint64_t From = Begin - Entry.HstBegin;
  std::vector<uint8_t> Skip = shadowPointerMask(Entry);
  int64_t At = firstDifference(Shadow, Skip, From, From + Size, reinterpret_cast<const uint8_t *>(Begin));
  if (At < 0)
    return;
  std::string Name = itemName(MapName, Entry);
  std::string Mapper = Shadow.LeftByMapper
                           ? fmt::format(" (a declare mapper's first component left it mapped in {}: stock "
                                         "never releases it, so this region does not copy it again)",
                                         Shadow.CreatedBy)
                           : std::string();
  report("stale device copy", Name, Entry.HstBegin,
         fmt::format("{} changed on the host (first at byte {}) after it was last copied to the device, and "
                     "{} uses the present device copy without copying it{}; fix: 'target update to({})' "
                     "before the region, or 'map(always, to: {})'",
                     describe(Name, Entry.HstBegin, Entry.size(), hostNameOf(Entry)), At, region(), Mapper,
                     clauseName(Name), clauseName(Name)));
  // Synced keeps the device's value: the mapping's end compares with it. A
  // loop over this region reports once (report() drops repeats).
}

void onRemove(host::MapEntry &Entry, host::DeviceMemory &Memory) {
  if (!Entry.Check)
    return;
  BlockShadow &Shadow = *Entry.Check;
  // The shadow moves into the table's record of ended mappings
  // (MappingTable::recordEnded), which names a use after unmap; it keeps
  // only what that report says.
  Shadow.EndedBy = region();
  llvm::scope_exit Shrink([&Shadow] {
    Shadow.Synced.reset();
    Shadow.Known.clear();
    std::vector<uint8_t>().swap(Shadow.Original);
  });
  // A block mapped and unmapped by one construct (map(to:) on a target
  // region) says by its own map type that the device's writes are scratch.
  if (Shadow.CreatedIn == currentConstruct().Serial || Shadow.UpdatedFrom)
    return;
  if (Shadow.Known.empty())
    return;
  std::vector<uint8_t> Device(Entry.size());
  if (auto Err = Memory.retrieve(Device.data(), Entry.TgtBegin, Entry.size())) {
    llvm::consumeError(std::move(Err));
    return;
  }
  std::vector<uint8_t> Skip = shadowPointerMask(Entry);
  int64_t At = firstDifference(Shadow, Skip, 0, Entry.size(), Device.data());
  if (At < 0)
    return;
  std::string Name = itemName(nullptr, Entry);
  report("dropped device writes", Name, Entry.HstBegin,
         fmt::format("the device copy of {} was changed on device {} (first at byte {}) after it was last "
                     "copied, and {} ends its mapping (mapped by {}) without copying it back; fix: map it "
                     "'from' where the mapping ends ('map(from: {})'), or 'target update from({})' before",
                     describe(Name, Entry.HstBegin, Entry.size(), hostNameOf(Entry)), Memory.deviceNumber(),
                     At, region(), Shadow.CreatedBy, clauseName(Name), clauseName(Name)));
}

void onKernelFault(const ompsim_fault_info &Fault, host::MappingTable &Table, int32_t DeviceNumber) {
  uint64_t Block = Fault.guard_block;
  uint64_t Offset = Fault.guard_offset;
  if (Fault.guard == OMPSIM_GUARD_PAST_END) {
    const host::MapEntry *Found = nullptr;
    Table.forEach([&](host::MapEntry &E) {
      if (!E.isInfinite() && E.TgtBegin == Block)
        Found = &E;
    });
    if (!Found)
      return;
    std::string Name = itemName(nullptr, *Found);
    report(
        "out of section", Name, Found->HstBegin,
        fmt::format("{} read or wrote byte {} of the device copy of {} on device {}, past the end of the "
                    "mapped section; fix: map the whole range the region uses (a longer section than '{}'), "
                    "or keep its indices inside the section",
                    region(), Offset, describe(Name, Found->HstBegin, Found->size(), hostNameOf(*Found)),
                    DeviceNumber, clauseName(Name)));
    return;
  }
  if (Fault.guard != OMPSIM_GUARD_FREED)
    return;
  // The block's mapping ended while the checker watched it (onRemove()).
  const host::EndedMapping *Ended = Table.findEnded(Block);
  if (!Ended || !Ended->Check || Ended->TgtBegin != Block)
    return;
  const BlockShadow &Shadow = *Ended->Check;
  report("use after unmap", Ended->Name, Ended->HstBegin,
         fmt::format("{} used the device copy of {} on device {} after its mapping ended in {}; fix: keep "
                     "'{}' mapped while device code uses its device address (end the mapping after the "
                     "region)",
                     region(), describe(Ended->Name, Ended->HstBegin, Ended->size(), Shadow.HostName),
                     DeviceNumber, Shadow.EndedBy, clauseName(Ended->Name)));
}

void onExitItem(host::MapEntry &Entry) {
  if (Entry.Check && currentConstruct().Kind == kExiting)
    Entry.Check->SeenAtExit = true;
}

void onTargetAlloc(host::DeviceMemory &Memory, uint64_t Tgt, uint64_t Size) {
  if (!enabled() || !Tgt || !Size)
    return;
  BlockShadow Shadow;
  Shadow.Original.resize(Size);
  if (auto Err = Memory.retrieve(Shadow.Original.data(), Tgt, Size)) {
    llvm::consumeError(std::move(Err));
    return;
  }
  std::vector<uint8_t> Pattern(Size);
  for (uint64_t I = 0; I < Size; ++I)
    Pattern[I] = poisonAt(I);
  if (auto Err = Memory.submit(Tgt, Pattern.data(), Size)) {
    llvm::consumeError(std::move(Err));
    return;
  }
  std::lock_guard<std::mutex> Guard(TargetBlocksLock);
  TargetBlocks[{Memory.deviceNumber(), Tgt}] = {Size, std::move(Shadow)};
}

void onTargetFree(int32_t DeviceNumber, uint64_t Tgt) {
  if (!enabled())
    return;
  std::lock_guard<std::mutex> Guard(TargetBlocksLock);
  TargetBlocks.erase({DeviceNumber, Tgt});
}

namespace {
/// The omp_target_alloc block holding [Tgt, Tgt+Size) on the device, or
/// end(); TargetBlocksLock held.
auto findTargetBlock(int32_t DeviceNumber, uint64_t Tgt, uint64_t Size) {
  auto It = TargetBlocks.upper_bound({DeviceNumber, Tgt});
  if (It == TargetBlocks.begin())
    return TargetBlocks.end();
  --It;
  if (It->first.first != DeviceNumber || Tgt + Size > It->first.second + It->second.first)
    return TargetBlocks.end();
  return It;
}
} // namespace

void onTargetWrite(int32_t DeviceNumber, host::MappingTable &Table, uint64_t Tgt, uint64_t Size) {
  if (!enabled() || !Size)
    return;
  {
    std::lock_guard<std::mutex> Guard(TargetBlocksLock);
    auto It = findTargetBlock(DeviceNumber, Tgt, Size);
    if (It != TargetBlocks.end()) {
      It->second.second.markKnown(Tgt - It->first.second, Tgt - It->first.second + Size);
      return;
    }
  }
  std::lock_guard<std::recursive_mutex> Guard(Table.mutex());
  Table.forEach([&](host::MapEntry &Entry) {
    uint64_t Begin = std::max(Tgt, Entry.TgtBegin), End = std::min(Tgt + Size, Entry.TgtBegin + Entry.size());
    if (Entry.Check && Begin < End)
      Entry.Check->forget(Begin - Entry.TgtBegin, End - Entry.TgtBegin);
  });
}

void onTargetRead(int32_t DeviceNumber, uint64_t Tgt, uint64_t Size, void *Host) {
  if (!enabled() || !Size)
    return;
  std::vector<std::pair<uint64_t, uint64_t>> Runs;
  uint64_t Block = 0, BlockSize = 0, Bytes = 0;
  {
    std::lock_guard<std::mutex> Guard(TargetBlocksLock);
    auto It = findTargetBlock(DeviceNumber, Tgt, Size);
    if (It == TargetBlocks.end())
      return;
    Block = It->first.second;
    BlockSize = It->second.first;
    BlockShadow &Shadow = It->second.second;
    uint64_t From = Tgt - Block, To = From + Size;
    auto *Bytes8 = static_cast<uint8_t *>(Host);
    auto ScanGap = [&](uint64_t GapBegin, uint64_t GapEnd) {
      for (uint64_t I = GapBegin; I < GapEnd;) {
        uint64_t J = I;
        while (J < GapEnd && Bytes8[J - From] == poisonAt(J))
          ++J;
        if (J - I >= kMinPoisonRun)
          Runs.emplace_back(I, J);
        I = J == I ? I + 1 : J;
      }
    };
    uint64_t Next = From;
    forEachKnown(Shadow, From, To, [&](uint64_t B, uint64_t E) {
      ScanGap(Next, B);
      Next = E;
    });
    ScanGap(Next, To);
    for (auto [RunBegin, RunEnd] : Runs) {
      std::memcpy(Bytes8 + (RunBegin - From), Shadow.Original.data() + RunBegin, RunEnd - RunBegin);
      Bytes += RunEnd - RunBegin;
    }
  }
  if (Runs.empty())
    return;
  std::string Range = fmt::format("bytes [{}, {})", Runs[0].first, Runs[0].second);
  if (Runs.size() > 1)
    Range += fmt::format(" and {} more range{} ({} bytes in all)", Runs.size() - 1,
                         Runs.size() == 2 ? "" : "s", Bytes);
  report("uninitialized copy-back", "", Block,
         fmt::format("{} of the {}-byte block from omp_target_alloc at {:#x} were never written on device {} "
                     "when omp_target_memcpy copied them to host {:#x}; fix: write them on the device first, "
                     "or copy only the part the device wrote",
                     Range, BlockSize, Block, DeviceNumber, reinterpret_cast<uintptr_t>(Host)));
}

void onLeftAtExit(const host::MapEntry &Entry, int32_t DeviceNumber) {
  const BlockShadow *S = Entry.Check.get();
  if (!S || S->LeftByMapper || S->SeenAtExit || S->ByRegion || !S->MovesData)
    return;
  Construct Saved = currentConstruct();
  currentConstruct() = Construct{"program's exit", "", "", 0};
  std::string Name = itemName(nullptr, Entry);
  report("leak", Name, Entry.HstBegin,
         fmt::format("{} is still mapped on device {} at exit (reference count {}, mapped by {}); fix: end "
                     "the mapping with 'target exit data map(release: {})' (or 'delete')",
                     describe(Name, Entry.HstBegin, Entry.size(), hostNameOf(Entry)), DeviceNumber,
                     Entry.totalRef(), Entry.Check->CreatedBy, clauseName(Name)));
  currentConstruct() = Saved;
}

bool failsStrict(int Status) {
  if (config().Check != 2 || Reports.load() == 0 || Status != 0)
    return false;
  std::fflush(stdout);
  std::fprintf(stderr, "ompsim: check: %llu report%s under OMPSIM_CHECK=strict: exit status 1\n",
               static_cast<unsigned long long>(Reports.load()), Reports.load() == 1 ? "" : "s");
  return true;
}

uint64_t reportCount() { return Reports.load(); }

} // namespace ompsim::check

// Merging, vtable expansion and duplicate detection for the fptr table.
#include "FunctionPointerTable.h"

#include "ompsim/Errors.h"
#include "ompsim/Trace.h"

#include <fmt/format.h>

#include <algorithm>

namespace ompsim::host {
llvm::Error FunctionPointerTable::addImage(uint64_t ImageKey, std::string ImageName,
                                           std::vector<IndirectTarget> Targets) {
  for (const IndirectTarget &T : Targets)
    if (T.IsVtable && (T.Size == 0 || T.Size % 8 != 0))
      return makeError(fmt::format("indirect vtable entry '{}' of {} has size {}, which is not a "
                                   "non-zero multiple of 8",
                                   T.Name, ImageName, T.Size));
  Images[ImageKey] = ImageTargets{std::move(ImageName), std::move(Targets)};
  return llvm::Error::success();
}

bool FunctionPointerTable::removeImage(uint64_t ImageKey) { return Images.erase(ImageKey) != 0; }

llvm::Expected<std::vector<__omp_offloading_fptr_map_ty>> FunctionPointerTable::build() const {
  struct Pair {
    uint64_t Host, Tgt;
    const IndirectTarget *From;
    const std::string *Image;
  };
  std::vector<Pair> Pairs;
  size_t Count = 0;
  for (const auto &[key, image] : Images)
    Count += image.Targets.size();
  Pairs.reserve(Count);
  for (const auto &[key, image] : Images)
    for (const IndirectTarget &T : image.Targets) {
      if (!T.IsVtable) {
        Pairs.push_back({T.HostPtr, T.TgtPtr, &T, &image.ImageName});
        continue;
      }
      // One pair per 8-byte vtable slot: a translated vtable pointer at any
      // slot offset lands on the matching device slot.
      for (uint64_t Off = 0; Off < T.Size; Off += 8)
        Pairs.push_back({T.HostPtr + Off, T.TgtPtr + Off, &T, &image.ImageName});
    }
  auto Before = [](const Pair &A, const Pair &B) {
    return A.Host != B.Host ? A.Host < B.Host : A.Tgt < B.Tgt;
  };
  // Entry tables mostly list functions in address order already.
  if (!std::is_sorted(Pairs.begin(), Pairs.end(), Before))
    std::sort(Pairs.begin(), Pairs.end(), Before);
  std::vector<__omp_offloading_fptr_map_ty> Table;
  Table.reserve(Pairs.size());
  for (size_t I = 0; I < Pairs.size(); ++I) {
    if (!Table.empty() && Table.back().host_ptr == Pairs[I].Host) {
      if (Table.back().tgt_ptr != Pairs[I].Tgt) {
        const Pair &Prev = Pairs[I - 1];
        return makeError(
            fmt::format("host address {} has two device targets: entry '{}' of {} gives {:#x}, entry '{}' of "
                        "{} gives {:#x}",
                        trace::hostAddress(Pairs[I].Host), Prev.From->Name, *Prev.Image, Prev.Tgt,
                        Pairs[I].From->Name, *Pairs[I].Image, Pairs[I].Tgt));
      }
      continue;
    }
    Table.push_back({Pairs[I].Host, Pairs[I].Tgt});
  }
  return Table;
}

} // namespace ompsim::host

// Merging, vtable expansion and duplicate detection for the fptr table.
#include "FunctionPointerTable.h"

#include "ompsim/Trace.h"

#include <fmt/format.h>

#include <algorithm>

namespace ompsim::host {
namespace {

llvm::Error makeError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

} // namespace

llvm::Error FunctionPointerTable::addImage(uint64_t imageKey, std::string imageName,
                                           std::vector<IndirectTarget> targets) {
  for (const IndirectTarget &t : targets)
    if (t.isVtable && (t.size == 0 || t.size % 8 != 0))
      return makeError(fmt::format("indirect vtable entry '{}' of {} has size {}, which is not a "
                                   "non-zero multiple of 8",
                                   t.name, imageName, t.size));
  images_[imageKey] = ImageTargets{std::move(imageName), std::move(targets)};
  return llvm::Error::success();
}

bool FunctionPointerTable::removeImage(uint64_t imageKey) { return images_.erase(imageKey) != 0; }

llvm::Expected<std::vector<__omp_offloading_fptr_map_ty>> FunctionPointerTable::build() const {
  struct Pair {
    uint64_t host, tgt;
    const IndirectTarget *from;
    const std::string *image;
  };
  std::vector<Pair> pairs;
  size_t count = 0;
  for (const auto &[key, image] : images_)
    count += image.targets.size();
  pairs.reserve(count);
  for (const auto &[key, image] : images_)
    for (const IndirectTarget &t : image.targets) {
      if (!t.isVtable) {
        pairs.push_back({t.hostPtr, t.tgtPtr, &t, &image.imageName});
        continue;
      }
      // One pair per 8-byte vtable slot: a translated vtable pointer at any
      // slot offset lands on the matching device slot.
      for (uint64_t off = 0; off < t.size; off += 8)
        pairs.push_back({t.hostPtr + off, t.tgtPtr + off, &t, &image.imageName});
    }
  auto before = [](const Pair &a, const Pair &b) {
    return a.host != b.host ? a.host < b.host : a.tgt < b.tgt;
  };
  // Entry tables mostly list functions in address order already.
  if (!std::is_sorted(pairs.begin(), pairs.end(), before))
    std::sort(pairs.begin(), pairs.end(), before);
  std::vector<__omp_offloading_fptr_map_ty> table;
  table.reserve(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (!table.empty() && table.back().host_ptr == pairs[i].host) {
      if (table.back().tgt_ptr != pairs[i].tgt) {
        const Pair &prev = pairs[i - 1];
        return makeError(
            fmt::format("host address {} has two device targets: entry '{}' of {} gives {:#x}, entry '{}' of "
                        "{} gives {:#x}",
                        trace::hostAddress(pairs[i].host), prev.from->name, *prev.image, prev.tgt,
                        pairs[i].from->name, *pairs[i].image, pairs[i].tgt));
      }
      continue;
    }
    table.push_back({pairs[i].host, pairs[i].tgt});
  }
  return table;
}

} // namespace ompsim::host

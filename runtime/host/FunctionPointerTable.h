// ompsim runtime: the per-device host->device function-pointer table.
#pragma once

#include "ompsim/offload_abi.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ompsim::host {

/// One indirect entry's contribution, as read from the loaded image.
struct IndirectTarget {
  std::string Name;      ///< the entry's symbol name (for messages)
  uint64_t HostPtr = 0;  ///< host function or vtable address
  uint64_t TgtPtr = 0;   ///< device function or vtable address
  uint64_t Size = 8;     ///< 8 for a function; the vtable's size for a vtable
  bool IsVtable = false; ///< expands to size/8 pairs
};

/// The sorted `{host_ptr, tgt_ptr}` table of one device, merged over every
/// registered image and library.
///
/// Contributions are kept per image so a library that unregisters takes its
/// pairs with it; build() merges and sorts whatever is registered now.
class FunctionPointerTable {
public:
  /// Records the indirect entries of one image (replacing any earlier set
  /// under the same key). Fails naming the entry when a vtable size is not a
  /// multiple of 8.
  llvm::Error addImage(uint64_t ImageKey, std::string ImageName, std::vector<IndirectTarget> Targets);

  /// Forgets an image's contribution; returns true if there was one.
  bool removeImage(uint64_t ImageKey);

  /// The merged table sorted by host_ptr. Identical duplicates (the same
  /// function seen through two images) collapse to one pair; a host pointer
  /// with two different device targets fails, naming both entries.
  llvm::Expected<std::vector<__omp_offloading_fptr_map_ty>> build() const;

  /// Number of images that contributed entries.
  size_t imageCount() const { return Images.size(); }

private:
  struct ImageTargets {
    std::string ImageName;
    std::vector<IndirectTarget> Targets;
  };
  std::map<uint64_t, ImageTargets> Images;
};

} // namespace ompsim::host

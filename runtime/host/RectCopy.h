// ompsim runtime: the contiguous runs of an omp_target_memcpy_rect copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ompsim::host {

/// One contiguous piece of a rectangular copy: `Size` bytes from byte offset
/// `Src` of the source to byte offset `Dst` of the destination.
struct CopyRun {
  uint64_t Dst = 0;
  uint64_t Src = 0;
  uint64_t Size = 0;
};

/// The pieces of an omp_target_memcpy_rect copy of `Volume` elements per
/// dimension (outermost first), in copy order, with pieces that are
/// contiguous in both source and destination merged: a copy of whole rows
/// is one piece, a sub-rectangle one piece per row.
std::vector<CopyRun> rectCopyRuns(size_t ElementSize, int NumDims, const size_t *Volume,
                                  const size_t *DstOffsets, const size_t *SrcOffsets,
                                  const size_t *DstDimensions, const size_t *SrcDimensions);

} // namespace ompsim::host

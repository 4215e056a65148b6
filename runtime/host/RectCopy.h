// ompsim runtime: the contiguous runs of an omp_target_memcpy_rect copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ompsim::host {

/// One contiguous piece of a rectangular copy: `size` bytes from byte offset
/// `src` of the source to byte offset `dst` of the destination.
struct CopyRun {
  uint64_t dst = 0;
  uint64_t src = 0;
  uint64_t size = 0;
};

/// The pieces of an omp_target_memcpy_rect copy of `volume` elements per
/// dimension (outermost first), in copy order, with pieces that are
/// contiguous in both source and destination merged: a copy of whole rows
/// is one piece, a sub-rectangle one piece per row.
std::vector<CopyRun> rectCopyRuns(size_t elementSize, int numDims, const size_t *volume,
                                  const size_t *dstOffsets, const size_t *srcOffsets,
                                  const size_t *dstDimensions, const size_t *srcDimensions);

} // namespace ompsim::host

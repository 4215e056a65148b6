// Runs of omp_target_memcpy_rect: walk the rectangle's rows and merge the
// ones that follow each other in both source and destination.
#include "RectCopy.h"

namespace ompsim::host {

std::vector<CopyRun> rectCopyRuns(size_t elementSize, int numDims, const size_t *volume,
                                  const size_t *dstOffsets, const size_t *srcOffsets,
                                  const size_t *dstDimensions, const size_t *srcDimensions) {
  std::vector<CopyRun> runs;
  if (numDims < 1 || elementSize == 0)
    return runs;
  auto dims = static_cast<size_t>(numDims);
  for (size_t d = 0; d < dims; ++d)
    if (volume[d] == 0)
      return runs;
  // Byte size of one step in each dimension.
  std::vector<uint64_t> dstStride(dims), srcStride(dims);
  dstStride[dims - 1] = srcStride[dims - 1] = elementSize;
  for (size_t d = dims - 1; d-- > 0;) {
    dstStride[d] = dstStride[d + 1] * dstDimensions[d + 1];
    srcStride[d] = srcStride[d + 1] * srcDimensions[d + 1];
  }
  uint64_t rowBytes = volume[dims - 1] * elementSize;
  std::vector<size_t> index(dims, 0);
  while (true) {
    uint64_t dst = 0, src = 0;
    for (size_t d = 0; d < dims; ++d) {
      dst += (dstOffsets[d] + index[d]) * dstStride[d];
      src += (srcOffsets[d] + index[d]) * srcStride[d];
    }
    if (!runs.empty() && runs.back().dst + runs.back().size == dst &&
        runs.back().src + runs.back().size == src)
      runs.back().size += rowBytes;
    else
      runs.push_back({dst, src, rowBytes});
    // Next row: the innermost dimension is the row itself.
    size_t d = dims - 1;
    while (d-- > 0) {
      if (++index[d] < volume[d])
        break;
      index[d] = 0;
    }
    if (d == static_cast<size_t>(-1))
      break;
  }
  return runs;
}

} // namespace ompsim::host

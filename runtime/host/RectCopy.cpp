// Runs of omp_target_memcpy_rect: walk the rectangle's rows and merge the
// ones that follow each other in both source and destination.
#include "RectCopy.h"

namespace ompsim::host {

std::vector<CopyRun> rectCopyRuns(size_t ElementSize, int NumDims, const size_t *Volume,
                                  const size_t *DstOffsets, const size_t *SrcOffsets,
                                  const size_t *DstDimensions, const size_t *SrcDimensions) {
  std::vector<CopyRun> Runs;
  if (NumDims < 1 || ElementSize == 0)
    return Runs;
  auto Dims = static_cast<size_t>(NumDims);
  for (size_t D = 0; D < Dims; ++D)
    if (Volume[D] == 0)
      return Runs;
  // Byte size of one step in each dimension.
  std::vector<uint64_t> DstStride(Dims), SrcStride(Dims);
  DstStride[Dims - 1] = SrcStride[Dims - 1] = ElementSize;
  for (size_t D = Dims - 1; D-- > 0;) {
    DstStride[D] = DstStride[D + 1] * DstDimensions[D + 1];
    SrcStride[D] = SrcStride[D + 1] * SrcDimensions[D + 1];
  }
  uint64_t RowBytes = Volume[Dims - 1] * ElementSize;
  std::vector<size_t> Index(Dims, 0);
  while (true) {
    uint64_t Dst = 0, Src = 0;
    for (size_t D = 0; D < Dims; ++D) {
      Dst += (DstOffsets[D] + Index[D]) * DstStride[D];
      Src += (SrcOffsets[D] + Index[D]) * SrcStride[D];
    }
    if (!Runs.empty() && Runs.back().Dst + Runs.back().Size == Dst &&
        Runs.back().Src + Runs.back().Size == Src)
      Runs.back().Size += RowBytes;
    else
      Runs.push_back({Dst, Src, RowBytes});
    // Next row: the innermost dimension is the row itself.
    size_t D = Dims - 1;
    while (D-- > 0) {
      if (++Index[D] < Volume[D])
        break;
      Index[D] = 0;
    }
    if (D == static_cast<size_t>(-1))
      break;
  }
  return Runs;
}

} // namespace ompsim::host

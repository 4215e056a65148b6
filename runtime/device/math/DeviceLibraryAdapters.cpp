//===- DeviceLibraryAdapters.cpp - GPU math functions libm has in other shapes //
//
// See DeviceLibraryAdapters.h. Each adapter computes with libm and answers in
// the device library's shape: the ROCm device libraries' sincos returns the
// sine and stores only the cosine; their remquo keeps 7 bits of the quotient;
// both libraries' isinf and signbit answer 1 or 0.
//
//===----------------------------------------------------------------------===//
#include "DeviceLibraryAdapters.h"

#include <cmath>
#include <limits>

#define OMPSIM_DEVICE_MATH_API extern "C" __attribute__((visibility("default")))

namespace {

/// remainder(X, Y), with the low 7 bits of its rounded quotient, signed as
/// X / Y, in `Quo` (ROCm-Device-Libs' ocml remquo).
template <typename T> T remquoSevenBits(T X, T Y, int *Quo) {
  int Low = 0;
  T Rem = std::remquo(X, Y, &Low);
  if (!std::isfinite(X) || std::isnan(Y) || Y == 0) {
    *Quo = 0;
    return Rem;
  }
  // |X| less a multiple of 128 |Y| (exact) has the same quotient modulo 128;
  // below 128 |Y| the rounded quotient is (|X| - r) / |Y|, near an integer
  // below 129 that the division's rounding cannot move to another.
  T AbsX = std::fabs(X), AbsY = std::fabs(Y);
  if (AbsY <= std::numeric_limits<T>::max() / 128)
    AbsX = std::fmod(AbsX, 128 * AbsY);
  long Quotient = std::lround((AbsX - std::remainder(AbsX, AbsY)) / AbsY) & 0x7f;
  *Quo = static_cast<int>(std::signbit(X) != std::signbit(Y) ? -Quotient : Quotient);
  return Rem;
}

} // namespace

OMPSIM_DEVICE_MATH_API float __ompsim_ocml_sincos_f32(float X, float *Cos) {
  float Sin;
  ::sincosf(X, &Sin, Cos);
  return Sin;
}

OMPSIM_DEVICE_MATH_API double __ompsim_ocml_sincos_f64(double X, double *Cos) {
  double Sin;
  ::sincos(X, &Sin, Cos);
  return Sin;
}

OMPSIM_DEVICE_MATH_API float __ompsim_ocml_remquo_f32(float X, float Y, int *Quo) {
  return remquoSevenBits(X, Y, Quo);
}

OMPSIM_DEVICE_MATH_API double __ompsim_ocml_remquo_f64(double X, double Y, int *Quo) {
  return remquoSevenBits(X, Y, Quo);
}

OMPSIM_DEVICE_MATH_API int __ompsim_isinf(double X) { return std::isinf(X) ? 1 : 0; }

OMPSIM_DEVICE_MATH_API int __ompsim_isinff(float X) { return std::isinf(X) ? 1 : 0; }

OMPSIM_DEVICE_MATH_API int __ompsim_signbit(double X) { return std::signbit(X) ? 1 : 0; }

OMPSIM_DEVICE_MATH_API int __ompsim_signbitf(float X) { return std::signbit(X) ? 1 : 0; }

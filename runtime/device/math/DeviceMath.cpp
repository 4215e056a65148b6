//===- DeviceMath.cpp - CUDA's device math functions libm lacks -----------===//
//
// A GPU's OpenMP device compile gets normcdf, normcdfinv, erfinv and erfcinv
// (and their float forms) from clang's CUDA math wrappers; glibc's libm has
// none of them. `ompsim cc` force-includes math/include/__ompsim_device_math.h
// into host-offload device compiles, whose wrappers call these definitions
// (ELF images link libompsim-device; the JIT of bitcode images resolves them
// in the executor).
//
// Everything is computed in double from libm's erf, erfc, exp and log:
//
//  - normcdf(x) = erfc(-x / sqrt(2)) / 2, with the rounding error of the
//    scaled argument fed back through erfc's derivative, so the far lower
//    tail keeps erfc's relative accuracy;
//  - the inverses refine a first guess by Halley's iteration on erf (|result|
//    below erfinv(1/2), where erf keeps the relative accuracy of small
//    results) or on erfc (beyond, where the complement of the argument is
//    exact), and by Newton's iteration on an asymptotic series of log erfc
//    where erfc's results would be subnormal;
//  - the float forms round the double results once.
//
// The double results are within a few units in the last place of the true
// values (libm's erf and erfc bound them); docs/device-math.md gives the
// measured bounds.
//
//===----------------------------------------------------------------------===//
#include "__ompsim_device_math.h"

#include <cmath>
#include <limits>

#define OMPSIM_DEVICE_MATH_API extern "C" __attribute__((visibility("default")))

namespace {

/// 1/sqrt(2) and sqrt(2) as the sum of a double and its rounding error.
constexpr double kSqrtHalfHi = 0.7071067811865476;
constexpr double kSqrtHalfLo = -4.833646656726457e-17;
constexpr double kSqrtTwoHi = 1.4142135623730951;
constexpr double kSqrtTwoLo = -9.667293313452913e-17;
/// 2/sqrt(pi), erf's derivative at 0, and its inverse.
constexpr double kTwoOverSqrtPi = 1.1283791670955126;
constexpr double kSqrtPiOverTwo = 0.886226925452758;
constexpr double kPi = 3.141592653589793;
/// log(sqrt(pi)).
constexpr double kLogSqrtPi = 0.5723649429247001;

/// erfc below this is subnormal or nearly so (erfc(26.2) is about 1e-300):
/// the inverse there works on log erfc instead.
constexpr double kLogDomainBelow = 1e-290;

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Halley steps from a first guess within 1e-3: each step cubes the relative
/// error, so three reach double precision; one more absorbs the rounding of
/// the iterates.
constexpr int kHalleySteps = 4;
/// Newton steps on log erfc from a first guess within 5e-4.
constexpr int kNewtonSteps = 6;

/// A&S 26.2.23: the lower-tail quantile of the normal distribution for
/// 0 < P <= 1/2, with an absolute error below 4.5e-4.
double normalQuantileGuess(double P) {
  double T = std::sqrt(-2.0 * std::log(P));
  double Num = 2.515517 + T * (0.802853 + T * 0.010328);
  double Den = 1.0 + T * (1.432788 + T * (0.189269 + T * 0.001308));
  return -(T - Num / Den);
}

/// log erfc(Z) for Z above 26, from the asymptotic series
/// erfc(Z) = exp(-Z^2) / (Z sqrt(pi)) * sum_k (-1)^k (2k-1)!! / (2 Z^2)^k.
/// Eight terms leave a relative error below 1e-18 there.
double logErfcAsymptotic(double Z) {
  double X = 1.0 / (2.0 * Z * Z);
  double Sum = 1.0, Term = 1.0;
  for (int K = 1; K <= 7; ++K) {
    Term *= -(2 * K - 1) * X;
    Sum += Term;
  }
  return -Z * Z - std::log(Z) - kLogSqrtPi + std::log(Sum);
}

/// Z >= 0 with erf(Z) = T, for 0 <= T <= 1/2 (Z <= 0.477).
double solveErf(double T) {
  if (T == 0.0)
    return 0.0;
  // The first three terms of erfinv's Maclaurin series: within 1e-3 here.
  double T2 = T * T;
  double Z = kSqrtPiOverTwo * T * (1.0 + T2 * (kPi / 12.0 + T2 * (7.0 * kPi * kPi / 480.0)));
  for (int I = 0; I < kHalleySteps; ++I) {
    double U = (std::erf(Z) - T) * kSqrtPiOverTwo * std::exp(Z * Z);
    Z -= U / (1.0 + Z * U);
  }
  return Z;
}

/// Z >= 0 with erfc(Z) = Y, for 0 < Y <= 1/2 (Z >= 0.477).
double solveErfc(double Y) {
  double Z = -normalQuantileGuess(0.5 * Y) * kSqrtHalfHi;
  if (Y < kLogDomainBelow) {
    // erfc(Z) - Y would lose its digits to subnormal rounding: solve
    // log erfc(Z) = log Y instead (d/dZ log erfc(Z) = -2Z - 1/Z + O(Z^-3)).
    double LogY = std::log(Y);
    for (int I = 0; I < kNewtonSteps; ++I)
      Z -= (logErfcAsymptotic(Z) - LogY) / (-2.0 * Z - 1.0 / Z);
    return Z;
  }
  for (int I = 0; I < kHalleySteps; ++I) {
    // (erfc(Z) - Y) / erfc'(Z), with the difference taken relative to Y so
    // that neither factor leaves the normal range.
    double U = -(std::erfc(Z) / Y - 1.0) * (Y * std::exp(Z * Z)) * kSqrtPiOverTwo;
    Z -= U / (1.0 + Z * U);
  }
  return Z;
}

double inverseErf(double T) {
  if (std::isnan(T) || T < -1.0 || T > 1.0)
    return kNaN;
  double A = std::fabs(T);
  double Z = A == 1.0 ? kInfinity : A <= 0.5 ? solveErf(A) : solveErfc(1.0 - A);
  return std::copysign(Z, T);
}

double inverseErfc(double Y) {
  if (std::isnan(Y) || Y < 0.0 || Y > 2.0)
    return kNaN;
  if (Y == 0.0)
    return kInfinity;
  if (Y == 2.0)
    return -kInfinity;
  if (Y <= 0.5)
    return solveErfc(Y);
  if (Y >= 1.5)
    return -solveErfc(2.0 - Y); // exact for Y in [1, 2]
  // erfcinv(Y) = erfinv(1 - Y), and 1 - Y is exact for Y in [1/2, 2].
  return inverseErf(1.0 - Y);
}

double normalCdf(double X) {
  if (std::isnan(X))
    return X;
  // U = -X / sqrt(2) = UHi + ULo, ULo carrying what the rounding of UHi lost.
  double UHi = -X * kSqrtHalfHi;
  if (!std::isfinite(UHi) || std::fabs(UHi) > 27.0)
    return 0.5 * std::erfc(UHi); // 0 or 1; no correction is needed or finite
  double ULo = std::fma(-X, kSqrtHalfHi, -UHi) + -X * kSqrtHalfLo;
  // erfc(UHi + ULo) = erfc(UHi) - ULo * 2/sqrt(pi) * exp(-UHi^2) + O(ULo^2).
  return 0.5 * (std::erfc(UHi) - ULo * kTwoOverSqrtPi * std::exp(-UHi * UHi));
}

double normalQuantile(double P) {
  // normcdfinv(P) = -sqrt(2) erfcinv(2P); 2P is exact.
  double Z = inverseErfc(2.0 * P);
  if (!std::isfinite(Z))
    return -Z;
  return -std::fma(Z, kSqrtTwoHi, Z * kSqrtTwoLo);
}

} // namespace

OMPSIM_DEVICE_MATH_API double __ompsim_normcdf(double A) { return normalCdf(A); }

OMPSIM_DEVICE_MATH_API float __ompsim_normcdff(float A) { return static_cast<float>(normalCdf(A)); }

OMPSIM_DEVICE_MATH_API double __ompsim_normcdfinv(double A) { return normalQuantile(A); }

OMPSIM_DEVICE_MATH_API float __ompsim_normcdfinvf(float A) { return static_cast<float>(normalQuantile(A)); }

OMPSIM_DEVICE_MATH_API double __ompsim_erfinv(double A) { return inverseErf(A); }

OMPSIM_DEVICE_MATH_API float __ompsim_erfinvf(float A) { return static_cast<float>(inverseErf(A)); }

OMPSIM_DEVICE_MATH_API double __ompsim_erfcinv(double A) { return inverseErfc(A); }

OMPSIM_DEVICE_MATH_API float __ompsim_erfcinvf(float A) { return static_cast<float>(inverseErfc(A)); }

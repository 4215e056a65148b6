// Unit tests of the device math functions libompsim-device gives host-offload
// device code (math/DeviceMath.cpp): values against references computed with
// 40-digit arithmetic (mpmath), special values, symmetries, and round trips
// over the whole range, including subnormal arguments.
#include "DeviceTestSupport.h"
#include "__ompsim_device_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

using ompsim::test::kInf;

namespace {

constexpr double kDenormMin = std::numeric_limits<double>::denorm_min();

/// Distance of `Got` from `Want` in units of the last place of `Want`.
double ulps(double Got, double Want) {
  if (Got == Want)
    return 0;
  double Unit = std::nextafter(std::fabs(Want), kInf) - std::fabs(Want);
  return std::fabs(Got - Want) / Unit;
}

/// The double results are documented within 4 units in the last place
/// (docs/device-math.md); the float forms round a double result once.
constexpr double kMaxUlps = 4;

struct Case {
  double Arg;
  double Want;
};

TEST(DeviceMath, NormcdfMatchesReferenceValues) {
  const std::vector<Case> Cases = {
      {0.0, 0.5},
      {1.0, 0.84134474606854294859},
      {-1.0, 0.15865525393145705141},
      {1.959963984540054, 0.97499999999999998912},
      {-3.0, 0.0013498980316300945267},
      {-10.0, 7.619853024160526066e-24},
      {-37.0, 5.7255712225245768227e-300},
      {5.0, 0.99999971334842812081},
  };
  for (const Case &C : Cases)
    EXPECT_LE(ulps(__ompsim_normcdf(C.Arg), C.Want), kMaxUlps) << "normcdf(" << C.Arg << ")";
}

TEST(DeviceMath, NormcdfinvMatchesReferenceValues) {
  const std::vector<Case> Cases = {
      {0.975, 1.9599639845400538556},   {0.025, -1.9599639845400542118},
      {0.8413, 0.99981509361474459638}, {0.001, -3.0902323061678135354},
      {0.999, 3.0902323061678132778},   {1e-10, -6.3613409024040561991},
      {1e-300, -37.047096299361199237}, {kDenormMin, -38.467405617144346251},
  };
  EXPECT_EQ(__ompsim_normcdfinv(0.5), 0.0);
  for (const Case &C : Cases)
    EXPECT_LE(ulps(__ompsim_normcdfinv(C.Arg), C.Want), kMaxUlps) << "normcdfinv(" << C.Arg << ")";
}

TEST(DeviceMath, ErfinvMatchesReferenceValues) {
  const std::vector<Case> Cases = {
      {0.5, 0.47693627620446987338},      {-0.5, -0.47693627620446987338}, {0.1, 0.088855990494257691974},
      {1e-20, 8.8622692545275796504e-21}, {0.9, 1.1630871536766741628},    {0.999999, 3.4589107372754987775},
      {-0.75, -0.81341984759761854169},
  };
  for (const Case &C : Cases)
    EXPECT_LE(ulps(__ompsim_erfinv(C.Arg), C.Want), kMaxUlps) << "erfinv(" << C.Arg << ")";
}

TEST(DeviceMath, ErfcinvMatchesReferenceValues) {
  const std::vector<Case> Cases = {
      {0.5, 0.47693627620446987338},   {1.5, -0.47693627620446987338},  {0.1, 1.1630871536766740677},
      {1e-10, 4.5728249673894852748},  {1e-100, 15.065574702592645704}, {1e-300, 26.209469960516123886},
      {1e-310, 26.644806559364764782}, {1.9, -1.1630871536766737823},   {1.999999, -3.4589107372909471213},
  };
  EXPECT_EQ(__ompsim_erfcinv(1.0), 0.0);
  for (const Case &C : Cases)
    EXPECT_LE(ulps(__ompsim_erfcinv(C.Arg), C.Want), kMaxUlps) << "erfcinv(" << C.Arg << ")";
}

TEST(DeviceMath, FloatFormsRoundTheDoubleResult) {
  EXPECT_EQ(__ompsim_normcdfinvf(0.975f), static_cast<float>(__ompsim_normcdfinv(0.975f)));
  EXPECT_EQ(__ompsim_normcdff(-2.5f), static_cast<float>(__ompsim_normcdf(-2.5f)));
  EXPECT_EQ(__ompsim_erfinvf(0.5f), 0.476936281f);
  EXPECT_EQ(__ompsim_erfcinvf(0.25f), static_cast<float>(__ompsim_erfcinv(0.25f)));
  EXPECT_NEAR(__ompsim_normcdfinvf(0.975f), 1.959964f, 1e-6f);
}

TEST(DeviceMath, EdgesOfTheDomainAreInfiniteAndOutsideIsNaN) {
  EXPECT_EQ(__ompsim_normcdfinv(0.0), -kInf);
  EXPECT_EQ(__ompsim_normcdfinv(1.0), kInf);
  EXPECT_EQ(__ompsim_erfinv(1.0), kInf);
  EXPECT_EQ(__ompsim_erfinv(-1.0), -kInf);
  EXPECT_EQ(__ompsim_erfcinv(0.0), kInf);
  EXPECT_EQ(__ompsim_erfcinv(2.0), -kInf);
  EXPECT_EQ(__ompsim_normcdfinvf(0.0f), -std::numeric_limits<float>::infinity());
  for (double Bad : {-0.5, 1.5, std::nan("")})
    EXPECT_TRUE(std::isnan(__ompsim_normcdfinv(Bad))) << Bad;
  for (double Bad : {-1.5, 1.5, std::nan("")})
    EXPECT_TRUE(std::isnan(__ompsim_erfinv(Bad))) << Bad;
  EXPECT_TRUE(std::isnan(__ompsim_erfcinv(-0.25)));
  EXPECT_TRUE(std::isnan(__ompsim_erfcinv(2.25)));
  EXPECT_EQ(__ompsim_normcdf(kInf), 1.0);
  EXPECT_EQ(__ompsim_normcdf(-kInf), 0.0);
  EXPECT_TRUE(std::isnan(__ompsim_normcdf(std::nan(""))));
  EXPECT_EQ(__ompsim_erfinv(-0.0), 0.0);
  EXPECT_TRUE(std::signbit(__ompsim_erfinv(-0.0)));
}

/// How far f(g(y)) / y may be from 1 when g inverts f within a few units in
/// the last place: f's relative change per unit of its argument Z grows as
/// 2Z for erfc and Z for the normal distribution.
double roundTripTolerance(double Z) { return 2e-15 * (1.0 + Z * Z); }

TEST(DeviceMath, InversesAreOddAndInvertLibm) {
  // Arguments from 1e-300 to 1 (and their complements, where those are
  // exact); below, erfc's own results lose digits to subnormal rounding.
  for (double Y = 1e-300; Y <= 1.0; Y *= 2.9) {
    double Z = __ompsim_erfcinv(Y);
    EXPECT_NEAR(std::erfc(Z) / Y, 1.0, roundTripTolerance(Z)) << Y;
    if (2.0 - (2.0 - Y) == Y)
      EXPECT_EQ(__ompsim_erfcinv(2.0 - Y), -Z) << Y;
    double P = Y / 2;
    double X = __ompsim_normcdfinv(P);
    EXPECT_NEAR(__ompsim_normcdf(X) / P, 1.0, roundTripTolerance(X)) << P;
    if (1.0 - (1.0 - P) == P)
      EXPECT_EQ(__ompsim_normcdfinv(1.0 - P), -X) << P;
    double T = 1.0 - Y; // erfinv near 1
    for (double A : {Y, T}) {
      if (A >= 1.0)
        continue;
      double E = __ompsim_erfinv(A);
      EXPECT_EQ(__ompsim_erfinv(-A), -E) << A;
      EXPECT_NEAR(std::erf(E) / A, 1.0, roundTripTolerance(E)) << A;
    }
  }
}

TEST(DeviceMath, HeaderWrappersCallTheImplementations) {
  // The C++ wrappers ompsim cc force-includes into device code.
  EXPECT_EQ(normcdf(-1.0), __ompsim_normcdf(-1.0));
  EXPECT_EQ(normcdff(0.5f), __ompsim_normcdff(0.5f));
  EXPECT_EQ(normcdfinv(0.9), __ompsim_normcdfinv(0.9));
  EXPECT_EQ(normcdfinvf(0.9f), __ompsim_normcdfinvf(0.9f));
  EXPECT_EQ(erfinv(0.25), __ompsim_erfinv(0.25));
  EXPECT_EQ(erfinvf(0.25f), __ompsim_erfinvf(0.25f));
  EXPECT_EQ(erfcinv(0.25), __ompsim_erfcinv(0.25));
  EXPECT_EQ(erfcinvf(0.25f), __ompsim_erfcinvf(0.25f));
}

} // namespace

// Unit tests of the GPU device math libraries' functions libompsim-device
// computes in their own shape (math/DeviceLibraryAdapters.cpp): each answers
// as the device library does, where libm's namesake answers otherwise.
#include "DeviceLibraryAdapters.h"
#include "DeviceTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using ompsim::test::kInf;
using ompsim::test::kNaN;

namespace {

TEST(DeviceLibraryAdapters, OcmlSincosReturnsTheSineAndStoresTheCosine) {
  for (double X : {0.0, 0.25, -1.5, 3.0, 1e6}) {
    double Cos = kNaN;
    EXPECT_EQ(__ompsim_ocml_sincos_f64(X, &Cos), std::sin(X)) << X;
    EXPECT_EQ(Cos, std::cos(X)) << X;
    float CosF = NAN;
    auto XF = static_cast<float>(X);
    EXPECT_EQ(__ompsim_ocml_sincos_f32(XF, &CosF), std::sin(XF)) << X;
    EXPECT_EQ(CosF, std::cos(XF)) << X;
  }
}

TEST(DeviceLibraryAdapters, OcmlRemquoKeepsSevenBitsOfTheQuotient) {
  struct Case {
    double X, Y, Rem;
    int Quo;
  };
  const Case Cases[] = {
      {7.0, 2.0, -1.0, 4},                              // 3.5 rounds to the even 4
      {5.0, 2.0, 1.0, 2},                               // 2.5 rounds to the even 2
      {300.0, 1.0, 0.0, 44},                            // 300 = 2 * 128 + 44 (glibc keeps 300 & 7 = 4)
      {-300.0, 1.0, -0.0, -44},                         // signed as x / y
      {300.0, -1.0, 0.0, -44},  {0x3p60, 7.0, 3.0, 91}, // 3 * 2^60 = 7 k + 3, k = 91 modulo 128
      {0.5, 3.0, 0.5, 0},
  };
  for (const Case &C : Cases) {
    int Quo = 12345;
    EXPECT_EQ(__ompsim_ocml_remquo_f64(C.X, C.Y, &Quo), C.Rem) << C.X << " " << C.Y;
    EXPECT_EQ(Quo, C.Quo) << C.X << " " << C.Y;
    Quo = 12345;
    EXPECT_EQ(__ompsim_ocml_remquo_f32(float(C.X), float(C.Y), &Quo), float(C.Rem)) << C.X << " " << C.Y;
    EXPECT_EQ(Quo, C.Quo) << C.X << " " << C.Y;
  }
  // No quotient where there is no remainder.
  for (auto [X, Y] : {std::pair{1.0, 0.0}, {kInf, 2.0}, {kNaN, 2.0}, {1.0, kNaN}}) {
    int Quo = 12345;
    EXPECT_TRUE(std::isnan(__ompsim_ocml_remquo_f64(X, Y, &Quo)));
    EXPECT_EQ(Quo, 0) << X << " " << Y;
  }
}

TEST(DeviceLibraryAdapters, IsinfAndSignbitAnswerOneOrZero) {
  EXPECT_EQ(__ompsim_isinf(-kInf), 1);
  EXPECT_EQ(__ompsim_isinf(kInf), 1);
  EXPECT_EQ(__ompsim_isinf(1e308), 0);
  EXPECT_EQ(__ompsim_isinf(kNaN), 0);
  EXPECT_EQ(__ompsim_isinff(-INFINITY), 1);
  EXPECT_EQ(__ompsim_isinff(3.0f), 0);
  EXPECT_EQ(__ompsim_signbit(-0.0), 1);
  EXPECT_EQ(__ompsim_signbit(-kNaN), 1);
  EXPECT_EQ(__ompsim_signbit(-kInf), 1);
  EXPECT_EQ(__ompsim_signbit(0.0), 0);
  EXPECT_EQ(__ompsim_signbitf(-2.0f), 1);
  EXPECT_EQ(__ompsim_signbitf(2.0f), 0);
}

} // namespace

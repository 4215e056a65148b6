// What the device runtime's unit tests share: an entry point of
// libompsim-device found by name, and the floating-point specials.
#pragma once

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <limits>

namespace ompsim::test {

/// The entry point `Name` as a `Fn`: looked up rather than declared, since
/// clang's OpenMP optimizer knows the names with its own types and crashes on
/// others. A missing one fails the test that uses it.
template <typename Fn> Fn entry(const char *Name) {
  auto F = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, Name));
  EXPECT_NE(F, nullptr) << Name;
  return F;
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

} // namespace ompsim::test

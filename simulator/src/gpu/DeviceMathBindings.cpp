//===- DeviceMathBindings.cpp - GPU device math on the simulated device ----===//
//
// See DeviceMathBindings.h. The device libraries name most of libm's
// functions after it: libdevice as `__nv_<f>` and `__nv_<f>f`, the ROCm
// device libraries as `__ocml_<f>_f64` and `__ocml_<f>_f32`, with libm's
// signatures. The rest are listed one by one: other names, and the functions
// whose libm namesake has another signature (ocml's sincos returns the sine
// and takes one pointer, for the cosine) or answers otherwise (ocml's remquo
// keeps 7 bits of the quotient, glibc's 3; glibc's isinf answers -1 for
// negative infinity), which libompsim-device computes in the device
// library's shape (runtime/device/math/DeviceLibraryAdapters.h).
// simulator/tests/DeviceMathBindingsTest.cpp states each device function's
// signature and checks its binding against it.
//
//===----------------------------------------------------------------------===//
#include "DeviceMathBindings.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/StringSaver.h"

#include <cassert>
#include <vector>

namespace ompsim::sim::gpu {

using namespace llvm;

namespace {

/// libm's functions both libraries define in double and float forms with
/// libm's signature and meaning.
constexpr StringLiteral BothLibraries[] = {
    "acos",     "acosh", "asin",      "asinh",     "atan",   "atan2",     "atanh", "cbrt",  "ceil",
    "copysign", "cos",   "cosh",      "erf",       "erfc",   "exp",       "exp10", "exp2",  "expm1",
    "fabs",     "fdim",  "floor",     "fma",       "fmax",   "fmin",      "fmod",  "frexp", "hypot",
    "ilogb",    "j0",    "j1",        "ldexp",     "lgamma", "log",       "log10", "log1p", "log2",
    "logb",     "modf",  "nearbyint", "nextafter", "pow",    "remainder", "rint",  "round", "scalbn",
    "sin",      "sinh",  "sqrt",      "tan",       "tanh",   "tgamma",    "trunc", "y0",    "y1"};

/// libm's functions only libdevice defines so. (Its remquo keeps 3 bits of
/// the quotient, as glibc's does; its sincos takes libm's two pointers.)
constexpr StringLiteral LibdeviceOnly[] = {"jn", "llrint", "llround", "nan", "remquo", "sincos", "yn"};

/// libm's functions only the ROCm device libraries define so.
constexpr StringLiteral OcmlOnly[] = {"isnan", "scalb"};

/// The others, one by one.
constexpr DeviceMathBinding Named[] = {
    // libdevice: libc's integer functions, classifications libm names
    // otherwise or answers otherwise (isinf: -1 for negative infinity).
    {"__nv_abs", "abs"},
    {"__nv_llabs", "llabs"},
    {"__nv_ffs", "ffs"},
    {"__nv_ffsll", "ffsll"},
    {"__nv_isnand", "isnan"},
    {"__nv_isnanf", "isnanf"},
    {"__nv_isfinited", "finite"},
    {"__nv_finitef", "finitef"},
    {"__nv_isinfd", "__ompsim_isinf"},
    {"__nv_isinff", "__ompsim_isinff"},
    {"__nv_signbitd", "__ompsim_signbit"},
    {"__nv_signbitf", "__ompsim_signbitf"},
    // libdevice: CUDA's functions libm lacks (docs/device-math.md).
    {"__nv_normcdf", "__ompsim_normcdf"},
    {"__nv_normcdff", "__ompsim_normcdff"},
    {"__nv_normcdfinv", "__ompsim_normcdfinv"},
    {"__nv_normcdfinvf", "__ompsim_normcdfinvf"},
    {"__nv_erfinv", "__ompsim_erfinv"},
    {"__nv_erfinvf", "__ompsim_erfinvf"},
    {"__nv_erfcinv", "__ompsim_erfcinv"},
    {"__nv_erfcinvf", "__ompsim_erfcinvf"},
    // ocml: another shape than libm's.
    {"__ocml_sincos_f64", "__ompsim_ocml_sincos_f64"},
    {"__ocml_sincos_f32", "__ompsim_ocml_sincos_f32"},
    {"__ocml_remquo_f64", "__ompsim_ocml_remquo_f64"},
    {"__ocml_remquo_f32", "__ompsim_ocml_remquo_f32"},
    {"__ocml_isinf_f64", "__ompsim_isinf"},
    {"__ocml_isinf_f32", "__ompsim_isinff"},
    {"__ocml_signbit_f64", "__ompsim_signbit"},
    {"__ocml_signbit_f32", "__ompsim_signbitf"},
    // ocml: libm's under other names.
    {"__ocml_isfinite_f64", "finite"},
    {"__ocml_isfinite_f32", "finitef"},
    {"__ocml_lgamma_r_f64", "lgamma_r"},
    {"__ocml_lgamma_r_f32", "lgammaf_r"},
    // ocml: CUDA's functions libm lacks, under ocml's names.
    {"__ocml_ncdf_f64", "__ompsim_normcdf"},
    {"__ocml_ncdf_f32", "__ompsim_normcdff"},
    {"__ocml_ncdfinv_f64", "__ompsim_normcdfinv"},
    {"__ocml_ncdfinv_f32", "__ompsim_normcdfinvf"},
    {"__ocml_erfinv_f64", "__ompsim_erfinv"},
    {"__ocml_erfinv_f32", "__ompsim_erfinvf"},
    {"__ocml_erfcinv_f64", "__ompsim_erfcinv"},
    {"__ocml_erfcinv_f32", "__ompsim_erfcinvf"},
    // CUDA's functions libm lacks called by their own names (a C program's
    // own declarations of them; clang's wrappers are not in OpenMP C).
    {"normcdf", "__ompsim_normcdf"},
    {"normcdff", "__ompsim_normcdff"},
    {"normcdfinv", "__ompsim_normcdfinv"},
    {"normcdfinvf", "__ompsim_normcdfinvf"},
    {"erfinv", "__ompsim_erfinv"},
    {"erfinvf", "__ompsim_erfinvf"},
    {"erfcinv", "__ompsim_erfcinv"},
    {"erfcinvf", "__ompsim_erfcinvf"},
};

class BindingTable {
public:
  BindingTable() {
    auto Add = [&](const Twine &Device, const Twine &Host) {
      StringRef D = Names.save(Device), H = Names.save(Host);
      bool New = ByDevice.try_emplace(D, H).second;
      assert(New && "a device function bound twice");
      (void)New;
      All.push_back({D, H});
    };
    for (StringRef F : BothLibraries) {
      Add("__nv_" + F, F);
      Add("__nv_" + F + "f", F + "f");
      Add("__ocml_" + F + "_f64", F);
      Add("__ocml_" + F + "_f32", F + "f");
    }
    for (StringRef F : LibdeviceOnly) {
      Add("__nv_" + F, F);
      Add("__nv_" + F + "f", F + "f");
    }
    for (StringRef F : OcmlOnly) {
      Add("__ocml_" + F + "_f64", F);
      Add("__ocml_" + F + "_f32", F + "f");
    }
    for (const DeviceMathBinding &B : Named)
      Add(B.Device, B.Host);
  }

  ArrayRef<DeviceMathBinding> all() const { return All; }
  StringRef find(StringRef Device) const { return ByDevice.lookup(Device); }

private:
  BumpPtrAllocator Storage;
  StringSaver Names{Storage};
  StringMap<StringRef> ByDevice;
  std::vector<DeviceMathBinding> All;
};

const BindingTable &table() {
  static const BindingTable Table;
  return Table;
}

} // namespace

ArrayRef<DeviceMathBinding> deviceMathBindings() { return table().all(); }

StringRef hostMathFunction(StringRef Device) { return table().find(Device); }

} // namespace ompsim::sim::gpu

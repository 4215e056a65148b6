//===- DeviceLibraryAdapters.h - GPU math functions libm has in other shapes ===//
//
// A GPU image's code calls the GPU's device math library: libdevice's
// `__nv_*` for nvptx64, the ROCm device libraries' `__ocml_*` for amdgcn.
// The simulated GPU binds most of them to libm's namesakes
// (simulator/src/gpu/DeviceMathBindings.cpp); these are the ones whose libm
// namesake has another signature or answers otherwise, each computed here
// with the device library's signature and meaning. libompsim-device exports
// them; the executor, which has it loaded, resolves the retargeted image's
// calls to them.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_RUNTIME_DEVICE_MATH_DEVICELIBRARYADAPTERS_H
#define OMPSIM_RUNTIME_DEVICE_MATH_DEVICELIBRARYADAPTERS_H

extern "C" {

/// `__ocml_sincos_f32`: returns sin(x) and stores cos(x) in `*Cos` (libm's
/// sincosf takes two out-pointers and returns nothing).
float __ompsim_ocml_sincos_f32(float X, float *Cos);
/// `__ocml_sincos_f64`: the double form.
double __ompsim_ocml_sincos_f64(double X, double *Cos);

/// `__ocml_remquo_f32`: remainder(x, y), and in `*Quo` the low 7 bits of
/// the rounded quotient x/y with its sign (libm's remquof gives 3 on
/// glibc); 0 there when y is 0 or NaN or x is not finite.
float __ompsim_ocml_remquo_f32(float X, float Y, int *Quo);
/// `__ocml_remquo_f64`: the double form.
double __ompsim_ocml_remquo_f64(double X, double Y, int *Quo);

/// `__nv_isinfd`, `__ocml_isinf_f64`: 1 for an infinity of either sign, else
/// 0 (glibc's isinf answers -1 for negative infinity).
int __ompsim_isinf(double X);
/// `__nv_isinff`, `__ocml_isinf_f32`: the float form.
int __ompsim_isinff(float X);

/// `__nv_signbitd`, `__ocml_signbit_f64`: 1 when the sign bit is set (NaNs,
/// zeros and infinities included), else 0 (libm has no function of this
/// name, only the macro).
int __ompsim_signbit(double X);
/// `__nv_signbitf`, `__ocml_signbit_f32`: the float form.
int __ompsim_signbitf(float X);
}

#endif // OMPSIM_RUNTIME_DEVICE_MATH_DEVICELIBRARYADAPTERS_H

// The device math functions a GPU image calls and what the simulated GPU
// calls in their place (simulator/src/gpu/DeviceMathBindings.cpp): one row
// per device-library function states its signature as the device library
// declares it (clang-22's __clang_cuda_libdevice_declares.h and
// __clang_hip_libdevice_declares.h; ROCm-Device-Libs' ocml for lgamma_r;
// CUDA's math API for the functions called by their own names) and the host
// function it is bound to, whose type comes from that function's own C
// declaration (glibc's <math.h>, libompsim-device's headers). Every binding
// must have a row, and every row's signatures must agree, pointers of any
// address space being the host's; what the adapters compute is checked in
// runtime/device/tests/DeviceLibraryAdaptersTest.cpp.
#include "gpu/DeviceMathBindings.h"
#include "gpu/GpuImageRetarget.h"

#include "DeviceLibraryAdapters.h"
#include "__ompsim_device_math.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/TargetParser/Triple.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <strings.h>
#include <type_traits>
#include <utility>
#include <vector>

// glibc's <math.h> declares the function isnan(double) for C and C++98 only
// (C++11's isnan is <cmath>'s overload set); its prototype, from glibc's
// <bits/mathcalls-helper-functions.h> and <bits/mathcalls.h>.
extern "C" int isnan(double);

using namespace llvm;
using namespace ompsim::sim::gpu;

namespace {

/// The LLVM type the host's C ABI gives C type `T` (x86-64).
template <typename T> Type *cType(LLVMContext &Ctx) {
  if constexpr (std::is_void_v<T>)
    return Type::getVoidTy(Ctx);
  else if constexpr (std::is_pointer_v<T>)
    return PointerType::get(Ctx, 0);
  else if constexpr (std::is_same_v<T, float>)
    return Type::getFloatTy(Ctx);
  else if constexpr (std::is_same_v<T, double>)
    return Type::getDoubleTy(Ctx);
  else {
    static_assert(std::is_integral_v<T>, "a C type the table does not use");
    return Type::getIntNTy(Ctx, sizeof(T) * 8);
  }
}

template <typename F> struct CSignature;
template <typename R, typename... A> struct CSignature<R(A...) noexcept> {
  static FunctionType *get(LLVMContext &Ctx) {
    return FunctionType::get(cType<R>(Ctx), {cType<A>(Ctx)...}, false);
  }
};
template <typename R, typename... A> struct CSignature<R(A...)> {
  static FunctionType *get(LLVMContext &Ctx) {
    return FunctionType::get(cType<R>(Ctx), {cType<A>(Ctx)...}, false);
  }
};

struct Row {
  /// The device library's function.
  const char *Device;
  /// Its signature as the device library declares it, in IR (amdgcn's
  /// out-pointers point to private memory, address space 5).
  const char *DeviceType;
  /// What it is bound to, or null for a function left unbound.
  const char *Host;
  /// The host function's type, from its C declaration.
  FunctionType *(*HostType)(LLVMContext &);
};

/// A row of a function bound to host function `Host`, typed by its declaration.
#define ROW(Device, DeviceType, Host) {Device, DeviceType, #Host, &CSignature<decltype(::Host)>::get}
/// The same for a name C++ overloads (abs): `CType` picks its C declaration.
#define ROW_OVERLOADED(Device, DeviceType, Host, CType)                                                      \
  {Device, DeviceType, #Host,                                                                                \
   &CSignature<std::remove_pointer_t<decltype(static_cast<std::add_pointer_t<CType>>(::Host))>>::get}
/// A row of a function left unbound: its signature is not the one of any
/// host function the executor has (the image is refused naming it).
#define UNBOUND(Device, DeviceType) {Device, DeviceType, nullptr, nullptr}

const Row Rows[] = {
    ROW_OVERLOADED("__nv_abs", "i32 (i32)", abs, int(int) noexcept),
    ROW("__nv_acos", "double (double)", acos),
    ROW("__nv_acosf", "float (float)", acosf),
    ROW("__nv_acosh", "double (double)", acosh),
    ROW("__nv_acoshf", "float (float)", acoshf),
    ROW("__nv_asin", "double (double)", asin),
    ROW("__nv_asinf", "float (float)", asinf),
    ROW("__nv_asinh", "double (double)", asinh),
    ROW("__nv_asinhf", "float (float)", asinhf),
    ROW("__nv_atan", "double (double)", atan),
    ROW("__nv_atan2", "double (double, double)", atan2),
    ROW("__nv_atan2f", "float (float, float)", atan2f),
    ROW("__nv_atanf", "float (float)", atanf),
    ROW("__nv_atanh", "double (double)", atanh),
    ROW("__nv_atanhf", "float (float)", atanhf),
    ROW("__nv_cbrt", "double (double)", cbrt),
    ROW("__nv_cbrtf", "float (float)", cbrtf),
    ROW("__nv_ceil", "double (double)", ceil),
    ROW("__nv_ceilf", "float (float)", ceilf),
    ROW("__nv_copysign", "double (double, double)", copysign),
    ROW("__nv_copysignf", "float (float, float)", copysignf),
    ROW("__nv_cos", "double (double)", cos),
    ROW("__nv_cosf", "float (float)", cosf),
    ROW("__nv_cosh", "double (double)", cosh),
    ROW("__nv_coshf", "float (float)", coshf),
    ROW("__nv_erf", "double (double)", erf),
    ROW("__nv_erfc", "double (double)", erfc),
    ROW("__nv_erfcf", "float (float)", erfcf),
    ROW("__nv_erfcinv", "double (double)", __ompsim_erfcinv),
    ROW("__nv_erfcinvf", "float (float)", __ompsim_erfcinvf),
    ROW("__nv_erff", "float (float)", erff),
    ROW("__nv_erfinv", "double (double)", __ompsim_erfinv),
    ROW("__nv_erfinvf", "float (float)", __ompsim_erfinvf),
    ROW("__nv_exp", "double (double)", exp),
    ROW("__nv_exp10", "double (double)", exp10),
    ROW("__nv_exp10f", "float (float)", exp10f),
    ROW("__nv_exp2", "double (double)", exp2),
    ROW("__nv_exp2f", "float (float)", exp2f),
    ROW("__nv_expf", "float (float)", expf),
    ROW("__nv_expm1", "double (double)", expm1),
    ROW("__nv_expm1f", "float (float)", expm1f),
    ROW("__nv_fabs", "double (double)", fabs),
    ROW("__nv_fabsf", "float (float)", fabsf),
    ROW("__nv_fdim", "double (double, double)", fdim),
    ROW("__nv_fdimf", "float (float, float)", fdimf),
    ROW("__nv_ffs", "i32 (i32)", ffs),
    ROW("__nv_ffsll", "i32 (i64)", ffsll),
    ROW("__nv_finitef", "i32 (float)", finitef),
    ROW("__nv_floor", "double (double)", floor),
    ROW("__nv_floorf", "float (float)", floorf),
    ROW("__nv_fma", "double (double, double, double)", fma),
    ROW("__nv_fmaf", "float (float, float, float)", fmaf),
    ROW("__nv_fmax", "double (double, double)", fmax),
    ROW("__nv_fmaxf", "float (float, float)", fmaxf),
    ROW("__nv_fmin", "double (double, double)", fmin),
    ROW("__nv_fminf", "float (float, float)", fminf),
    ROW("__nv_fmod", "double (double, double)", fmod),
    ROW("__nv_fmodf", "float (float, float)", fmodf),
    ROW("__nv_frexp", "double (double, ptr)", frexp),
    ROW("__nv_frexpf", "float (float, ptr)", frexpf),
    ROW("__nv_hypot", "double (double, double)", hypot),
    ROW("__nv_hypotf", "float (float, float)", hypotf),
    ROW("__nv_ilogb", "i32 (double)", ilogb),
    ROW("__nv_ilogbf", "i32 (float)", ilogbf),
    ROW("__nv_isfinited", "i32 (double)", finite),
    ROW("__nv_isinfd", "i32 (double)", __ompsim_isinf),
    ROW("__nv_isinff", "i32 (float)", __ompsim_isinff),
    ROW("__nv_isnand", "i32 (double)", isnan),
    ROW("__nv_isnanf", "i32 (float)", isnanf),
    ROW("__nv_j0", "double (double)", j0),
    ROW("__nv_j0f", "float (float)", j0f),
    ROW("__nv_j1", "double (double)", j1),
    ROW("__nv_j1f", "float (float)", j1f),
    ROW("__nv_jn", "double (i32, double)", jn),
    ROW("__nv_jnf", "float (i32, float)", jnf),
    ROW("__nv_ldexp", "double (double, i32)", ldexp),
    ROW("__nv_ldexpf", "float (float, i32)", ldexpf),
    ROW("__nv_lgamma", "double (double)", lgamma),
    ROW("__nv_lgammaf", "float (float)", lgammaf),
    ROW("__nv_llabs", "i64 (i64)", llabs),
    ROW("__nv_llrint", "i64 (double)", llrint),
    ROW("__nv_llrintf", "i64 (float)", llrintf),
    ROW("__nv_llround", "i64 (double)", llround),
    ROW("__nv_llroundf", "i64 (float)", llroundf),
    ROW("__nv_log", "double (double)", log),
    ROW("__nv_log10", "double (double)", log10),
    ROW("__nv_log10f", "float (float)", log10f),
    ROW("__nv_log1p", "double (double)", log1p),
    ROW("__nv_log1pf", "float (float)", log1pf),
    ROW("__nv_log2", "double (double)", log2),
    ROW("__nv_log2f", "float (float)", log2f),
    ROW("__nv_logb", "double (double)", logb),
    ROW("__nv_logbf", "float (float)", logbf),
    ROW("__nv_logf", "float (float)", logf),
    ROW("__nv_modf", "double (double, ptr)", modf),
    ROW("__nv_modff", "float (float, ptr)", modff),
    ROW("__nv_nan", "double (ptr)", nan),
    ROW("__nv_nanf", "float (ptr)", nanf),
    ROW("__nv_nearbyint", "double (double)", nearbyint),
    ROW("__nv_nearbyintf", "float (float)", nearbyintf),
    ROW("__nv_nextafter", "double (double, double)", nextafter),
    ROW("__nv_nextafterf", "float (float, float)", nextafterf),
    ROW("__nv_normcdf", "double (double)", __ompsim_normcdf),
    ROW("__nv_normcdff", "float (float)", __ompsim_normcdff),
    ROW("__nv_normcdfinv", "double (double)", __ompsim_normcdfinv),
    ROW("__nv_normcdfinvf", "float (float)", __ompsim_normcdfinvf),
    ROW("__nv_pow", "double (double, double)", pow),
    ROW("__nv_powf", "float (float, float)", powf),
    ROW("__nv_remainder", "double (double, double)", remainder),
    ROW("__nv_remainderf", "float (float, float)", remainderf),
    ROW("__nv_remquo", "double (double, double, ptr)", remquo),
    ROW("__nv_remquof", "float (float, float, ptr)", remquof),
    ROW("__nv_rint", "double (double)", rint),
    ROW("__nv_rintf", "float (float)", rintf),
    ROW("__nv_round", "double (double)", round),
    ROW("__nv_roundf", "float (float)", roundf),
    ROW("__nv_scalbn", "double (double, i32)", scalbn),
    ROW("__nv_scalbnf", "float (float, i32)", scalbnf),
    ROW("__nv_signbitd", "i32 (double)", __ompsim_signbit),
    ROW("__nv_signbitf", "i32 (float)", __ompsim_signbitf),
    ROW("__nv_sin", "double (double)", sin),
    ROW("__nv_sincos", "void (double, ptr, ptr)", sincos),
    ROW("__nv_sincosf", "void (float, ptr, ptr)", sincosf),
    ROW("__nv_sinf", "float (float)", sinf),
    ROW("__nv_sinh", "double (double)", sinh),
    ROW("__nv_sinhf", "float (float)", sinhf),
    ROW("__nv_sqrt", "double (double)", sqrt),
    ROW("__nv_sqrtf", "float (float)", sqrtf),
    ROW("__nv_tan", "double (double)", tan),
    ROW("__nv_tanf", "float (float)", tanf),
    ROW("__nv_tanh", "double (double)", tanh),
    ROW("__nv_tanhf", "float (float)", tanhf),
    ROW("__nv_tgamma", "double (double)", tgamma),
    ROW("__nv_tgammaf", "float (float)", tgammaf),
    ROW("__nv_trunc", "double (double)", trunc),
    ROW("__nv_truncf", "float (float)", truncf),
    ROW("__nv_y0", "double (double)", y0),
    ROW("__nv_y0f", "float (float)", y0f),
    ROW("__nv_y1", "double (double)", y1),
    ROW("__nv_y1f", "float (float)", y1f),
    ROW("__nv_yn", "double (i32, double)", yn),
    ROW("__nv_ynf", "float (i32, float)", ynf),
    ROW("__ocml_acos_f32", "float (float)", acosf),
    ROW("__ocml_acos_f64", "double (double)", acos),
    ROW("__ocml_acosh_f32", "float (float)", acoshf),
    ROW("__ocml_acosh_f64", "double (double)", acosh),
    ROW("__ocml_asin_f32", "float (float)", asinf),
    ROW("__ocml_asin_f64", "double (double)", asin),
    ROW("__ocml_asinh_f32", "float (float)", asinhf),
    ROW("__ocml_asinh_f64", "double (double)", asinh),
    ROW("__ocml_atan2_f32", "float (float, float)", atan2f),
    ROW("__ocml_atan2_f64", "double (double, double)", atan2),
    ROW("__ocml_atan_f32", "float (float)", atanf),
    ROW("__ocml_atan_f64", "double (double)", atan),
    ROW("__ocml_atanh_f32", "float (float)", atanhf),
    ROW("__ocml_atanh_f64", "double (double)", atanh),
    ROW("__ocml_cbrt_f32", "float (float)", cbrtf),
    ROW("__ocml_cbrt_f64", "double (double)", cbrt),
    ROW("__ocml_ceil_f32", "float (float)", ceilf),
    ROW("__ocml_ceil_f64", "double (double)", ceil),
    ROW("__ocml_copysign_f32", "float (float, float)", copysignf),
    ROW("__ocml_copysign_f64", "double (double, double)", copysign),
    ROW("__ocml_cos_f32", "float (float)", cosf),
    ROW("__ocml_cos_f64", "double (double)", cos),
    ROW("__ocml_cosh_f32", "float (float)", coshf),
    ROW("__ocml_cosh_f64", "double (double)", cosh),
    ROW("__ocml_erf_f32", "float (float)", erff),
    ROW("__ocml_erf_f64", "double (double)", erf),
    ROW("__ocml_erfc_f32", "float (float)", erfcf),
    ROW("__ocml_erfc_f64", "double (double)", erfc),
    ROW("__ocml_erfcinv_f32", "float (float)", __ompsim_erfcinvf),
    ROW("__ocml_erfcinv_f64", "double (double)", __ompsim_erfcinv),
    ROW("__ocml_erfinv_f32", "float (float)", __ompsim_erfinvf),
    ROW("__ocml_erfinv_f64", "double (double)", __ompsim_erfinv),
    ROW("__ocml_exp10_f32", "float (float)", exp10f),
    ROW("__ocml_exp10_f64", "double (double)", exp10),
    ROW("__ocml_exp2_f32", "float (float)", exp2f),
    ROW("__ocml_exp2_f64", "double (double)", exp2),
    ROW("__ocml_exp_f32", "float (float)", expf),
    ROW("__ocml_exp_f64", "double (double)", exp),
    ROW("__ocml_expm1_f32", "float (float)", expm1f),
    ROW("__ocml_expm1_f64", "double (double)", expm1),
    ROW("__ocml_fabs_f32", "float (float)", fabsf),
    ROW("__ocml_fabs_f64", "double (double)", fabs),
    ROW("__ocml_fdim_f32", "float (float, float)", fdimf),
    ROW("__ocml_fdim_f64", "double (double, double)", fdim),
    ROW("__ocml_floor_f32", "float (float)", floorf),
    ROW("__ocml_floor_f64", "double (double)", floor),
    ROW("__ocml_fma_f32", "float (float, float, float)", fmaf),
    ROW("__ocml_fma_f64", "double (double, double, double)", fma),
    ROW("__ocml_fmax_f32", "float (float, float)", fmaxf),
    ROW("__ocml_fmax_f64", "double (double, double)", fmax),
    ROW("__ocml_fmin_f32", "float (float, float)", fminf),
    ROW("__ocml_fmin_f64", "double (double, double)", fmin),
    ROW("__ocml_fmod_f32", "float (float, float)", fmodf),
    ROW("__ocml_fmod_f64", "double (double, double)", fmod),
    ROW("__ocml_frexp_f32", "float (float, ptr addrspace(5))", frexpf),
    ROW("__ocml_frexp_f64", "double (double, ptr addrspace(5))", frexp),
    ROW("__ocml_hypot_f32", "float (float, float)", hypotf),
    ROW("__ocml_hypot_f64", "double (double, double)", hypot),
    ROW("__ocml_ilogb_f32", "i32 (float)", ilogbf),
    ROW("__ocml_ilogb_f64", "i32 (double)", ilogb),
    ROW("__ocml_isfinite_f32", "i32 (float)", finitef),
    ROW("__ocml_isfinite_f64", "i32 (double)", finite),
    ROW("__ocml_isinf_f32", "i32 (float)", __ompsim_isinff),
    ROW("__ocml_isinf_f64", "i32 (double)", __ompsim_isinf),
    ROW("__ocml_isnan_f32", "i32 (float)", isnanf),
    ROW("__ocml_isnan_f64", "i32 (double)", isnan),
    ROW("__ocml_j0_f32", "float (float)", j0f),
    ROW("__ocml_j0_f64", "double (double)", j0),
    ROW("__ocml_j1_f32", "float (float)", j1f),
    ROW("__ocml_j1_f64", "double (double)", j1),
    ROW("__ocml_ldexp_f32", "float (float, i32)", ldexpf),
    ROW("__ocml_ldexp_f64", "double (double, i32)", ldexp),
    ROW("__ocml_lgamma_f32", "float (float)", lgammaf),
    ROW("__ocml_lgamma_f64", "double (double)", lgamma),
    ROW("__ocml_lgamma_r_f32", "float (float, ptr addrspace(5))", lgammaf_r),
    ROW("__ocml_lgamma_r_f64", "double (double, ptr addrspace(5))", lgamma_r),
    ROW("__ocml_log10_f32", "float (float)", log10f),
    ROW("__ocml_log10_f64", "double (double)", log10),
    ROW("__ocml_log1p_f32", "float (float)", log1pf),
    ROW("__ocml_log1p_f64", "double (double)", log1p),
    ROW("__ocml_log2_f32", "float (float)", log2f),
    ROW("__ocml_log2_f64", "double (double)", log2),
    ROW("__ocml_log_f32", "float (float)", logf),
    ROW("__ocml_log_f64", "double (double)", log),
    ROW("__ocml_logb_f32", "float (float)", logbf),
    ROW("__ocml_logb_f64", "double (double)", logb),
    ROW("__ocml_modf_f32", "float (float, ptr addrspace(5))", modff),
    ROW("__ocml_modf_f64", "double (double, ptr addrspace(5))", modf),
    ROW("__ocml_ncdf_f32", "float (float)", __ompsim_normcdff),
    ROW("__ocml_ncdf_f64", "double (double)", __ompsim_normcdf),
    ROW("__ocml_ncdfinv_f32", "float (float)", __ompsim_normcdfinvf),
    ROW("__ocml_ncdfinv_f64", "double (double)", __ompsim_normcdfinv),
    ROW("__ocml_nearbyint_f32", "float (float)", nearbyintf),
    ROW("__ocml_nearbyint_f64", "double (double)", nearbyint),
    ROW("__ocml_nextafter_f32", "float (float, float)", nextafterf),
    ROW("__ocml_nextafter_f64", "double (double, double)", nextafter),
    ROW("__ocml_pow_f32", "float (float, float)", powf),
    ROW("__ocml_pow_f64", "double (double, double)", pow),
    ROW("__ocml_remainder_f32", "float (float, float)", remainderf),
    ROW("__ocml_remainder_f64", "double (double, double)", remainder),
    ROW("__ocml_remquo_f32", "float (float, float, ptr addrspace(5))", __ompsim_ocml_remquo_f32),
    ROW("__ocml_remquo_f64", "double (double, double, ptr addrspace(5))", __ompsim_ocml_remquo_f64),
    ROW("__ocml_rint_f32", "float (float)", rintf),
    ROW("__ocml_rint_f64", "double (double)", rint),
    ROW("__ocml_round_f32", "float (float)", roundf),
    ROW("__ocml_round_f64", "double (double)", round),
    ROW("__ocml_scalb_f32", "float (float, float)", scalbf),
    ROW("__ocml_scalb_f64", "double (double, double)", scalb),
    ROW("__ocml_scalbn_f32", "float (float, i32)", scalbnf),
    ROW("__ocml_scalbn_f64", "double (double, i32)", scalbn),
    ROW("__ocml_signbit_f32", "i32 (float)", __ompsim_signbitf),
    ROW("__ocml_signbit_f64", "i32 (double)", __ompsim_signbit),
    ROW("__ocml_sin_f32", "float (float)", sinf),
    ROW("__ocml_sin_f64", "double (double)", sin),
    ROW("__ocml_sincos_f32", "float (float, ptr addrspace(5))", __ompsim_ocml_sincos_f32),
    ROW("__ocml_sincos_f64", "double (double, ptr addrspace(5))", __ompsim_ocml_sincos_f64),
    ROW("__ocml_sinh_f32", "float (float)", sinhf),
    ROW("__ocml_sinh_f64", "double (double)", sinh),
    ROW("__ocml_sqrt_f32", "float (float)", sqrtf),
    ROW("__ocml_sqrt_f64", "double (double)", sqrt),
    ROW("__ocml_tan_f32", "float (float)", tanf),
    ROW("__ocml_tan_f64", "double (double)", tan),
    ROW("__ocml_tanh_f32", "float (float)", tanhf),
    ROW("__ocml_tanh_f64", "double (double)", tanh),
    ROW("__ocml_tgamma_f32", "float (float)", tgammaf),
    ROW("__ocml_tgamma_f64", "double (double)", tgamma),
    ROW("__ocml_trunc_f32", "float (float)", truncf),
    ROW("__ocml_trunc_f64", "double (double)", trunc),
    ROW("__ocml_y0_f32", "float (float)", y0f),
    ROW("__ocml_y0_f64", "double (double)", y0),
    ROW("__ocml_y1_f32", "float (float)", y1f),
    ROW("__ocml_y1_f64", "double (double)", y1),
    ROW("erfcinv", "double (double)", __ompsim_erfcinv),
    ROW("erfcinvf", "float (float)", __ompsim_erfcinvf),
    ROW("erfinv", "double (double)", __ompsim_erfinv),
    ROW("erfinvf", "float (float)", __ompsim_erfinvf),
    ROW("normcdf", "double (double)", __ompsim_normcdf),
    ROW("normcdff", "float (float)", __ompsim_normcdff),
    ROW("normcdfinv", "double (double)", __ompsim_normcdfinv),
    ROW("normcdfinvf", "float (float)", __ompsim_normcdfinvf),
    // Left unbound: libm has no function of this meaning (sincospi, a fast
    // approximation), or its namesake takes another argument (ocml's nan
    // takes the NaN's payload, libm's a string).
    UNBOUND("__nv_sincospi", "void (double, ptr, ptr)"),
    UNBOUND("__nv_sincospif", "void (float, ptr, ptr)"),
    UNBOUND("__nv_fast_sincosf", "void (float, ptr, ptr)"),
    UNBOUND("__ocml_sincospi_f64", "double (double, ptr addrspace(5))"),
    UNBOUND("__ocml_sincospi_f32", "float (float, ptr addrspace(5))"),
    UNBOUND("__ocml_nan_f64", "double (i64)"),
    UNBOUND("__ocml_nan_f32", "float (i32)"),
};

const Row *rowOf(StringRef Device) {
  for (const Row &R : Rows)
    if (Device == R.Device)
      return &R;
  return nullptr;
}

/// `T` with every pointer in address space 0: the simulated GPU's address
/// spaces are all the host's memory.
FunctionType *onHost(FunctionType *T) {
  auto Flat = [](Type *P) { return P->isPointerTy() ? PointerType::get(P->getContext(), 0) : P; };
  std::vector<Type *> Params;
  for (Type *P : T->params())
    Params.push_back(Flat(P));
  return FunctionType::get(Flat(T->getReturnType()), Params, T->isVarArg());
}

std::string str(const Type *T) {
  std::string S;
  raw_string_ostream Os(S);
  T->print(Os);
  return S;
}

class DeviceMathBindingsTest : public ::testing::Test {
protected:
  LLVMContext Ctx;
  Module Scratch{"types", Ctx};

  FunctionType *deviceType(const Row &R) {
    SMDiagnostic Err;
    Type *T = parseType(R.DeviceType, Err, Scratch);
    EXPECT_TRUE(T && T->isFunctionTy()) << R.Device << ": " << Err.getMessage().str();
    return cast_or_null<FunctionType>(T);
  }
};

TEST_F(DeviceMathBindingsTest, EveryBindingKeepsTheDeviceLibrarysSignature) {
  ASSERT_FALSE(deviceMathBindings().empty());
  StringMap<bool> Seen;
  for (const DeviceMathBinding &B : deviceMathBindings()) {
    EXPECT_TRUE(Seen.try_emplace(B.Device, true).second) << B.Device.str() << " is bound twice";
    const Row *R = rowOf(B.Device);
    if (!R) {
      ADD_FAILURE() << B.Device.str() << " is bound to " << B.Host.str()
                    << ", but no row states its signature in the device library";
      continue;
    }
    ASSERT_NE(R->Host, nullptr) << B.Device.str() << " is bound to " << B.Host.str()
                                << ", its row says unbound";
    EXPECT_EQ(B.Host.str(), R->Host) << B.Device.str();
    FunctionType *Device = deviceType(*R);
    ASSERT_NE(Device, nullptr);
    EXPECT_EQ(str(onHost(Device)), str(R->HostType(Ctx)))
        << B.Device.str() << " is " << str(Device) << " in the device library; " << B.Host.str()
        << " is not that";
  }
}

TEST_F(DeviceMathBindingsTest, EveryRowIsBoundAsItSays) {
  for (const Row &R : Rows)
    EXPECT_EQ(hostMathFunction(R.Device).str(), R.Host ? R.Host : "") << R.Device;
  // Not the device library's: a program's own function keeps its name.
  EXPECT_EQ(hostMathFunction("sin").str(), "");
  EXPECT_EQ(hostMathFunction("__nv_no_such_function").str(), "");
}

TEST_F(DeviceMathBindingsTest, ARetargetedImageCallsTheBoundFunction) {
  // One image per device library, calling each of its functions as the
  // device library declares it.
  for (auto [TripleName, Prefix] :
       {std::pair{"nvptx64-nvidia-cuda", "__nv_"}, {"amdgcn-amd-amdhsa", "__ocml_"}}) {
    Module M("image", Ctx);
    M.setTargetTriple(Triple(TripleName));
    Function *K =
        Function::Create(FunctionType::get(Type::getVoidTy(Ctx), false), Function::ExternalLinkage, "k", M);
    IRBuilder<> B(BasicBlock::Create(Ctx, "entry", K));
    std::vector<std::pair<const Row *, CallInst *>> Calls;
    for (const Row &R : Rows) {
      bool Nvptx = StringRef(Prefix) == "__nv_";
      bool Ocml = StringRef(R.Device).starts_with("__ocml_");
      if (Ocml == Nvptx)
        continue; // libdevice's (and the names CUDA calls directly) in the nvptx64 image
      FunctionType *T = deviceType(R);
      ASSERT_NE(T, nullptr);
      FunctionCallee F = M.getOrInsertFunction(R.Device, T);
      std::vector<Value *> Args;
      for (Type *P : T->params())
        Args.push_back(Constant::getNullValue(P));
      Calls.emplace_back(&R, B.CreateCall(F, Args));
    }
    B.CreateRetVoid();
    auto Out =
        retargetGpuModule(M, "x86_64-pc-linux-gnu", DataLayout("e-m:e-i64:64-f80:128-n8:16:32:64-S128"), "#1",
                          /*LinkedRuntime=*/false);
    ASSERT_TRUE(bool(Out)) << toString(Out.takeError());
    for (auto [R, Call] : Calls) {
      Function *Callee = Call->getCalledFunction();
      ASSERT_NE(Callee, nullptr) << R->Device;
      EXPECT_EQ(Callee->getName().str(), R->Host ? R->Host : R->Device) << R->Device;
      if (R->Host)
        EXPECT_EQ(str(onHost(Callee->getFunctionType())), str(R->HostType(Ctx))) << R->Device;
    }
  }
}

} // namespace

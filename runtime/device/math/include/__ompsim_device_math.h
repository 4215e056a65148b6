/*===- __ompsim_device_math.h - CUDA's device math functions libm lacks ----===
 *
 * `ompsim cc` force-includes this header into the device compile of every
 * host-offload build (never the host compile, never --gpu= builds, never
 * Fortran), so device code sees what a GPU's OpenMP device compile gets from
 * clang's CUDA math wrappers and glibc's libm does not have: normcdf,
 * normcdfinv, erfinv, erfcinv and their float forms. libompsim-device defines
 * them under reserved names (runtime/device/math/DeviceMath.cpp); see
 * docs/device-math.md for their accuracy.
 *
 * C++ gets clang's shape for OpenMP (static constexpr, always_inline,
 * nothrow), so a program may redeclare them as a GPU compile allows. C has
 * no overloading: there they are ordinary external functions bound to the
 * reserved names, so a program's own definition of one of them (with
 * CUDA's prototype) is the one its device code calls. Defining
 * __CLANG_GPU_DISABLE_MATH_WRAPPERS (as for clang's GPU wrappers) leaves
 * them all out.
 *
 *===----------------------------------------------------------------------===
 */
#ifndef OMPSIM_DEVICE_MATH_H
#define OMPSIM_DEVICE_MATH_H

/* The C++ wrappers are constexpr functions calling non-constexpr ones, as
 * clang's CUDA wrappers are; like those, this is a system header, so the
 * user's warning flags do not apply to it. */
#pragma clang system_header

#ifndef __CLANG_GPU_DISABLE_MATH_WRAPPERS

#ifdef __cplusplus
/* The implementations, exported by libompsim-device. (C declares only the
 * CUDA names, bound to these symbols: a declaration of both would clash with
 * a program's own definition.) */
extern "C" {
double __ompsim_normcdf(double __a) __attribute__((nothrow));
float __ompsim_normcdff(float __a) __attribute__((nothrow));
double __ompsim_normcdfinv(double __a) __attribute__((nothrow));
float __ompsim_normcdfinvf(float __a) __attribute__((nothrow));
double __ompsim_erfinv(double __a) __attribute__((nothrow));
float __ompsim_erfinvf(float __a) __attribute__((nothrow));
double __ompsim_erfcinv(double __a) __attribute__((nothrow));
float __ompsim_erfcinvf(float __a) __attribute__((nothrow));
}

#pragma push_macro("__OMPSIM_DEVICE__")
#if __cplusplus >= 201103L
#define __OMPSIM_DEVICE__ static constexpr __attribute__((always_inline, nothrow))
#else
#define __OMPSIM_DEVICE__ static inline __attribute__((always_inline, nothrow))
#endif

__OMPSIM_DEVICE__ double normcdf(double __a) { return __ompsim_normcdf(__a); }
__OMPSIM_DEVICE__ float normcdff(float __a) { return __ompsim_normcdff(__a); }
__OMPSIM_DEVICE__ double normcdfinv(double __a) { return __ompsim_normcdfinv(__a); }
__OMPSIM_DEVICE__ float normcdfinvf(float __a) { return __ompsim_normcdfinvf(__a); }
__OMPSIM_DEVICE__ double erfinv(double __a) { return __ompsim_erfinv(__a); }
__OMPSIM_DEVICE__ float erfinvf(float __a) { return __ompsim_erfinvf(__a); }
__OMPSIM_DEVICE__ double erfcinv(double __a) { return __ompsim_erfcinv(__a); }
__OMPSIM_DEVICE__ float erfcinvf(float __a) { return __ompsim_erfcinvf(__a); }

#pragma pop_macro("__OMPSIM_DEVICE__")

#else /* C */

/* A program's own definition inherits the label: its device code calls it. */
double normcdf(double __a) __asm__("__ompsim_normcdf");
float normcdff(float __a) __asm__("__ompsim_normcdff");
double normcdfinv(double __a) __asm__("__ompsim_normcdfinv");
float normcdfinvf(float __a) __asm__("__ompsim_normcdfinvf");
double erfinv(double __a) __asm__("__ompsim_erfinv");
float erfinvf(float __a) __asm__("__ompsim_erfinvf");
double erfcinv(double __a) __asm__("__ompsim_erfcinv");
float erfcinvf(float __a) __asm__("__ompsim_erfcinvf");

#endif /* __cplusplus */

#endif /* __CLANG_GPU_DISABLE_MATH_WRAPPERS */

#endif /* OMPSIM_DEVICE_MATH_H */

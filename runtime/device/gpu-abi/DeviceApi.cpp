//===- DeviceApi.cpp - the OpenMP routines whose answer differs on a device ---===//
//
// Device code of a host-offload image would otherwise call libomp's host
// answers: clang folds omp_is_initial_device() to 0 in device code, flang
// calls the routine, and libomp says the host. These are the device's
// answers, as a GPU's device runtime gives them. The routines that
// describe teams and threads stay libomp's: the device's teams and threads
// are libomp's (see DeviceKernel.cpp).
//
// Every image built by `ompsim cc` links libompsim-device-api.a (these, with
// hidden visibility), so its calls bind inside the image on every backend.
// libompsim-device does not export them: host code must keep libomp's.
//
//===----------------------------------------------------------------------===//
#include "ompsim/device_runtime.h"

#define OMPSIM_DEVICE_API extern "C" __attribute__((visibility("hidden")))

OMPSIM_DEVICE_API int omp_is_initial_device(void) { return 0; }

OMPSIM_DEVICE_API int omp_get_device_num(void) { return __ompsim_device_current_device(); }

// The Fortran spellings libomp also exports (for compilers whose omp_lib
// does not bind to the C names).
OMPSIM_DEVICE_API int omp_is_initial_device_(void) { return 0; }

OMPSIM_DEVICE_API int omp_get_device_num_(void) { return __ompsim_device_current_device(); }

// Shared by the end-to-end programs: a counter only device copies bump.
//
// `device_calls` is declare target, so host and device each have their own
// instance. A function's host copy bumps the host instance, its device copy
// the device one; `target update from` then brings the device instance back,
// so a non-zero count proves the translated device copies ran.
#include <cstdio>
#pragma omp declare target
int device_calls = 0;
#pragma omp end declare target

/// Resets the device instance of the counter.
static inline void reset_device_calls() {
  device_calls = 0;
#pragma omp target update to(device_calls)
}

/// Fetches the device instance and prints it for the test to check.
static inline void report_device_calls(int expected) {
#pragma omp target update from(device_calls)
  std::printf("device_calls=%d expected=%d\n", device_calls, expected);
}

//===- TsanHandover.h - handovers ThreadSanitizer cannot see ----*- C++ -*-===//
//
// Some of ompsim's data goes from one thread to another through a library
// not built with ThreadSanitizer: libomp's fork and join (a virtual GPU's
// device threads, and the fibers that have no libomp frame for tsan.supp's
// called_from_lib to match), ORC's dispatch of a link's phases. The library
// orders the two threads, but TSan sees only the accesses on either side
// and reports a race. The thread that hands over releases a token (the
// object handed over) and the one that takes it acquires the same token.
// Both are no-ops in a build without TSan. Header-only: the device runtime
// uses it too, and stays free of other libraries.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_TSANHANDOVER_H
#define OMPSIM_TSANHANDOVER_H

#if defined(__SANITIZE_THREAD__)
#define OMPSIM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define OMPSIM_TSAN 1
#endif
#endif

#ifdef OMPSIM_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace ompsim {

/// Whether this build runs under ThreadSanitizer.
#ifdef OMPSIM_TSAN
inline constexpr bool TsanBuild = true;
#else
inline constexpr bool TsanBuild = false;
#endif

/// The calling thread hands over what it wrote before, under `Token`.
inline void tsanRelease(const void *Token) {
#ifdef OMPSIM_TSAN
  __tsan_release(const_cast<void *>(Token));
#else
  (void)Token;
#endif
}

/// The calling thread takes over what was released under `Token`.
inline void tsanAcquire(const void *Token) {
#ifdef OMPSIM_TSAN
  __tsan_acquire(const_cast<void *>(Token));
#else
  (void)Token;
#endif
}

} // namespace ompsim

#endif // OMPSIM_TSANHANDOVER_H

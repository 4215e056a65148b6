//===- LateStaticDestructors.cpp - statics that outlive the exit handlers ----===//
//
// clang's offload registration calls __tgt_register_lib from a constructor and
// then atexit(__tgt_unregister_lib): the runtime unloads the program's images
// from an exit handler. Exit handlers and static destructors run in the
// reverse order of their registration, and a function-local static registers
// its destructor when it is first used. So every static of libLLVM that the
// sim plugin's JIT first used while the program ran (SelectionDAG's table of
// value types, for one) was destroyed before __tgt_unregister_lib. Unloading
// a JIT image runs its device destructors, which may call a function not
// compiled yet; that compile then read freed memory and crashed or stopped
// with "LLVM ERROR: Do not know how to promote this operator!", about one run
// in two with a cold JIT cache (LLVM's offloading/ctor_dtor.cpp on sim-nvptx).
//
// The same holds for the statics of the plugins, which the runtime loads
// after start-up (a fault line's regex of the sim plugin, used when a device
// destructor faults).
//
// The runtime therefore takes over the destructors of statics that code in
// libLLVM and in the plugins registers once the runtime has started
// (__cxa_atexit, which the compiler calls for each such static, is interposed
// here: this library comes before libc in the lookup order, preloaded or
// linked) and runs them, last registered first, when the runtime's own static
// storage ends: after the program's exit handlers, __tgt_unregister_lib among
// them. Every other registration goes to libc's __cxa_atexit unchanged.
//
//===----------------------------------------------------------------------===//

#include "LateStaticDestructors.h"

#include "llvm-c/Core.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>

namespace {

using CxaAtexitFn = int (*)(void (*)(void *), void *, void *);

/// A static's destructor libLLVM or a plugin registered, kept until the
/// runtime's own end.
struct Registration {
  void (*Fn)(void *);
  void *Arg;
};

// Plain constant-initialized storage only: __cxa_atexit is called while
// libraries load, before any constructor of this one ran.
pthread_mutex_t Mu = PTHREAD_MUTEX_INITIALIZER;
Registration *Deferred = nullptr; ///< malloc'ed, grown by doubling
size_t Count = 0, Capacity = 0;
std::atomic<bool> Deferring{false};
/// libc's __cxa_atexit, found on first use. Not an atomic: a sanitizer's
/// runtime registers its own handler while it starts, when an instrumented
/// atomic access would call into it too early (both threads that may race
/// here store the same pointer).
CxaAtexitFn LibcCxaAtexit = nullptr;
/// The addresses the loaded segments of libLLVM and of each plugin span
/// (their __dso_handle among them); none until the runtime starts. Ranges,
/// not dladdr: that takes the loader's lock, which a thread making a static
/// may not wait for.
struct Span {
  std::atomic<uintptr_t> Begin{0}, End{0};
};
constexpr unsigned MaxSpans = 16;
Span Spans[MaxSpans];
std::atomic<unsigned> SpanCount{0};

__attribute__((disable_sanitizer_instrumentation)) CxaAtexitFn libcCxaAtexit() {
  if (!LibcCxaAtexit)
    LibcCxaAtexit = reinterpret_cast<CxaAtexitFn>(::dlsym(RTLD_NEXT, "__cxa_atexit"));
  return LibcCxaAtexit;
}

/// Whether `Dso` (a __dso_handle) is libLLVM's or a plugin's.
bool isKept(void *Dso) {
  auto Addr = reinterpret_cast<uintptr_t>(Dso);
  unsigned N = std::min(SpanCount.load(std::memory_order_acquire), MaxSpans);
  for (unsigned I = 0; I < N; ++I)
    if (Addr >= Spans[I].Begin.load(std::memory_order_acquire) &&
        Addr < Spans[I].End.load(std::memory_order_acquire))
      return true;
  return false;
}

/// Adds the segments of the object that holds `Symbol` to the spans, and
/// says whether it could.
bool addSpanOf(const void *Symbol) {
  Dl_info Info{};
  if (!::dladdr(Symbol, &Info) || !Info.dli_fbase)
    return false;
  struct Found {
    uintptr_t Base, Begin = UINTPTR_MAX, End = 0;
  } S{reinterpret_cast<uintptr_t>(Info.dli_fbase)};
  ::dl_iterate_phdr(
      [](dl_phdr_info *Info, size_t, void *Data) {
        auto &S = *static_cast<Found *>(Data);
        if (Info->dlpi_addr != S.Base)
          return 0;
        for (int I = 0; I < Info->dlpi_phnum; ++I)
          if (Info->dlpi_phdr[I].p_type == PT_LOAD) {
            uintptr_t Begin = Info->dlpi_addr + Info->dlpi_phdr[I].p_vaddr;
            S.Begin = std::min(S.Begin, Begin);
            S.End = std::max(S.End, uintptr_t(Begin + Info->dlpi_phdr[I].p_memsz));
          }
        return 1;
      },
      &S);
  if (S.Begin >= S.End)
    return false;
  pthread_mutex_lock(&Mu);
  unsigned I = SpanCount.load(std::memory_order_relaxed);
  if (I < MaxSpans) {
    Spans[I].Begin.store(S.Begin, std::memory_order_relaxed);
    Spans[I].End.store(S.End, std::memory_order_relaxed);
    SpanCount.store(I + 1, std::memory_order_release);
  }
  pthread_mutex_unlock(&Mu);
  return I < MaxSpans;
}

bool defer(void (*Fn)(void *), void *Arg) {
  pthread_mutex_lock(&Mu);
  if (!Deferring.load(std::memory_order_relaxed)) {
    pthread_mutex_unlock(&Mu);
    return false;
  }
  if (Count == Capacity) {
    size_t Grown = Capacity ? 2 * Capacity : 64;
    auto *Bigger = static_cast<Registration *>(std::realloc(Deferred, Grown * sizeof(Registration)));
    if (!Bigger) {
      pthread_mutex_unlock(&Mu);
      return false; // libc keeps it: destroyed early, as before
    }
    Deferred = Bigger;
    Capacity = Grown;
  }
  Deferred[Count++] = {Fn, Arg};
  pthread_mutex_unlock(&Mu);
  return true;
}

/// Starts deferring once this library's constructors run (libLLVM's own
/// globals, registered while it loaded, stay with libc), and runs what it
/// deferred when this library's static storage ends.
struct LateDestructors {
  LateDestructors() {
    if (addSpanOf(reinterpret_cast<const void *>(&LLVMContextCreate)))
      Deferring.store(true, std::memory_order_release);
  }
  ~LateDestructors() {
    pthread_mutex_lock(&Mu);
    Deferring.store(false, std::memory_order_release);
    pthread_mutex_unlock(&Mu);
    // A destructor may make another static: that one goes to libc.
    for (;;) {
      pthread_mutex_lock(&Mu);
      if (Count == 0) {
        pthread_mutex_unlock(&Mu);
        break;
      }
      Registration R = Deferred[--Count];
      pthread_mutex_unlock(&Mu);
      R.Fn(R.Arg);
    }
  }
};

LateDestructors TheLateDestructors;

} // namespace

void ompsim::host::keepStaticsUntilExit(const void *Symbol) { addSpanOf(Symbol); }

extern "C" __attribute__((visibility("default"), disable_sanitizer_instrumentation)) int
__cxa_atexit(void (*Fn)(void *), void *Arg, void *Dso) {
  // A static's destructor comes with its object and its library's handle;
  // atexit() handlers (no object: the sim plugin stops its devices from
  // one) and a sanitizer runtime's own (no handle, registered while it
  // starts) keep their place, checked before anything else is read.
  if (Arg && Dso && Deferring.load(std::memory_order_acquire) && isKept(Dso) && defer(Fn, Arg))
    return 0;
  CxaAtexitFn Libc = libcCxaAtexit();
  return Libc ? Libc(Fn, Arg, Dso) : -1;
}

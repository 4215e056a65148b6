/* A shared library with its own offload image and indirect functions (see shared_library_linked.c). */
#include <omp.h>

int lib_calls = 0;
#pragma omp declare target to(lib_calls)
int lib_add(int x) { lib_calls++; return x + 7; }
int lib_sub(int x) { lib_calls++; return x - 7; }
#pragma omp declare target to(lib_add, lib_sub) indirect

/* Host-side accessors: the library reads its own device counter back. */
int lib_device_calls(void) {
#pragma omp target update from(lib_calls)
  return lib_calls;
}

/* A region inside the library calling a pointer that came from the main program. */
int lib_apply(int (*f)(int), int x) {
  int r = 0;
#pragma omp target map(from : r)
  r = f(x);
  return r;
}

// CHECKS: the device translate API: NULL, table hits, and host addresses inside the table's range that are not entries (must return unchanged, never hang)
// REQUIRES: ompsim-device-runtime
// XFAIL: !ompsim-runtime -- stock libomptarget never publishes the function-pointer table to ompsim's device runtime, so a table entry is returned unchanged
// TIMEOUT: 60
// CHECK: PASS
#include "inputs/conformance.h"
#include <stdint.h>

void *__kmpc_target_translate_fptr(void *host_ptr);
void *__llvm_omp_indirect_call_lookup(void *host_ptr);

int a1(int x) { return x + 1; }
int a2(int x) { return x + 2; }
int a3(int x) { return x + 3; }
#pragma omp declare target to(a1, a2, a3) indirect
int not_indirect(int x) { return x; }

int main(void) {
  /* Integers, not pointers: the runtime must not translate these on the way in. */
  uintptr_t h1 = (uintptr_t)a1, h2 = (uintptr_t)a2, h3 = (uintptr_t)a3;
  uintptr_t lo = h1 < h2 ? (h1 < h3 ? h1 : h3) : (h2 < h3 ? h2 : h3);
  uintptr_t hi = h1 > h2 ? (h1 > h3 ? h1 : h3) : (h2 > h3 ? h2 : h3);
  uintptr_t other = (uintptr_t)not_indirect;
  int null_ok = 0, hits_ok = 0, names_agree = 0, inside_unchanged = 0, outside_unchanged = 0, r = 0;
#pragma omp target map(from : null_ok, hits_ok, names_agree, inside_unchanged, outside_unchanged, r)
  {
    null_ok = __kmpc_target_translate_fptr(0) == 0 && __llvm_omp_indirect_call_lookup(0) == 0;
    int (*volatile d1)(int) = a1, (*volatile d2)(int) = a2, (*volatile d3)(int) = a3;
    hits_ok = __kmpc_target_translate_fptr((void *)h1) == (void *)d1 &&
              __kmpc_target_translate_fptr((void *)h2) == (void *)d2 &&
              __kmpc_target_translate_fptr((void *)h3) == (void *)d3;
    names_agree = __llvm_omp_indirect_call_lookup((void *)h2) == __kmpc_target_translate_fptr((void *)h2);
    /* Every address strictly between the lowest and highest entry that is not an entry. */
    inside_unchanged = 1;
    for (uintptr_t p = lo; p <= hi; p++)
      if (p != h1 && p != h2 && p != h3 &&
          (__kmpc_target_translate_fptr((void *)p) != (void *)p ||
           __llvm_omp_indirect_call_lookup((void *)p) != (void *)p))
        inside_unchanged = 0;
    outside_unchanged = __kmpc_target_translate_fptr((void *)(lo - 1)) == (void *)(lo - 1) &&
                        __kmpc_target_translate_fptr((void *)(hi + 1)) == (void *)(hi + 1) &&
                        __kmpc_target_translate_fptr((void *)other) == (void *)other &&
                        __kmpc_target_translate_fptr((void *)UINTPTR_MAX) == (void *)UINTPTR_MAX;
    int (*t)(int) = (int (*)(int))__kmpc_target_translate_fptr((void *)h3);
    r = t(39);
  }
  EXPECT_TRUE(null_ok);
  EXPECT_TRUE(hits_ok);
  EXPECT_TRUE(names_agree);
  EXPECT_TRUE(inside_unchanged);
  EXPECT_TRUE(outside_unchanged);
  EXPECT_EQ(r, 42);
  return CONF_RESULT();
}

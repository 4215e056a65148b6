// CHECKS: a host pointer to a declare-target function that is NOT indirect: the simulated device must diagnose the call, naming the host function
// REQUIRES: c
// EXPECT-FAIL-IF: separate-address-space && ompsim-runtime -- calling a host pointer to a non-indirect function is not allowed by OpenMP 5.1; a separate device must fault and say which pointer it was
// XFAIL: gpu -- a GPU faults with an illegal-address error that names no function; only ompsim can say which pointer it was
// CHECK-FAIL-STDERR: {{^}}ompsim: device 0: kernel {{[^ ]+}} called untranslated host function pointer 0x{{[0-9a-f]+}} (host symbol 'plain' in {{[^ ]+}}); note: 'plain' (defined {{(at [^ ]+nonindirect_host_pointer.c:[0-9]+|in [^ ]+)}}) is not declare target indirect, so the device cannot call it through a host pointer: add '#pragma omp declare target to(plain) indirect'{{$}}
// CHECK-FAIL-STDERR-NOT: ompsim:
// On a shared address space the call silently reaches the host copy: nothing can tell.
// CHECK: result 42
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
int plain(int x) { dev_calls++; return x + 1; }
#pragma omp declare target to(plain)

int main(void) {
  int (*fp)(int) = plain;
  int r = 0;
#pragma omp target map(from : r)
  r = fp(41);
  printf("result %d\n", r);
  EXPECT_EQ(r, 42);
  return CONF_RESULT();
}

// CHECKS: `requires unified_shared_memory` with function pointers in unmapped host memory: honoured where memory is shared, rejected with a diagnostic where it cannot be
// REQUIRES: c
// Expected behaviour per backend: host backends (ours-host, host-upstream) honour USM, but clang-22
// emits no lookup, so the host pointers read from host memory run the host copies
// unless ompsim's pass translates them. The simulated device keeps its memory apart: the runtime
// must refuse the program with one line naming unified_shared_memory rather than fault later.
// EXPECT-FAIL-IF: !usm -- a device with a separate address space cannot honour unified_shared_memory; the runtime must say so
// CHECK-FAIL-STDERR: {{[Uu]nified[ _]shared[ _]memory}}
// XFAIL: usm && translate=native -- clang-22 emits no lookup at the call site: the host copy runs (results are off by 1000)
// XFAIL: translate=pass && shared-address-space && !ompsim-runtime -- stock libomptarget never publishes the function-pointer table to ompsim's device runtime, so the pass's lookups miss and the host copies run (results are off by 1000)
// CHECK: PASS
#include "inputs/conformance.h"
#include <stdlib.h>

#pragma omp requires unified_shared_memory

/* Under USM the counter may be shared with the host, so the result itself says where it ran. */
int add1(int x) { return x + 1 + (omp_is_initial_device() ? 1000 : 0); }
#pragma omp declare target to(add1) indirect

struct job { int (*fn)(int); int arg; int result; };

int main(void) {
  struct job *jobs = malloc(4 * sizeof *jobs);
  for (int i = 0; i < 4; i++) {
    jobs[i].fn = add1;
    jobs[i].arg = i;
    jobs[i].result = -1;
  }
#pragma omp target
  for (int i = 0; i < 4; i++)
    jobs[i].result = jobs[i].fn(jobs[i].arg);
  for (int i = 0; i < 4; i++)
    EXPECT_EQ(jobs[i].result, i + 1);
  free(jobs);
  return CONF_RESULT();
}

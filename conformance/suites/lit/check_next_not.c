// A lit offload test in LLVM's offload/test style: the matrix maps the RUN line onto the
// column's compiler and backend and runs the CHECK lines through FileCheck.
// RUN: %libomptarget-compile-run-and-check-generic
#include <omp.h>
#include <stdio.h>

int twice(int x) { return 2 * x; }
#pragma omp declare target to(twice) indirect

int main(void) {
  int (*fp)(int) = twice;
  int r = 0;
#pragma omp target map(from : r)
  r = fp(21);
  printf("start\n");
  printf("result %d\n", r);
  printf("done\n");
  return r == 42 ? 0 : 1;
}

// CHECK: start
// CHECK-NEXT: result 42
// CHECK-NOT: FAIL
// CHECK-NEXT: done

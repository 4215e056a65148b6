// A lit feature without a meaning here (the GPU libc): UNSUPPORTED on every column.
// RUN: %libomptarget-compile-run-and-check-generic
// REQUIRES: libc
#include <stdio.h>
int main(void) {
  // CHECK: never
  printf("never\n");
  return 0;
}

// %libomptarget-run-fail-generic: the program must die (here: abort on the device path).
// RUN: %libomptarget-compile-generic && %libomptarget-run-fail-generic 2>&1 | %fcheck-generic
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int on_device = 0;
#pragma omp target map(from : on_device)
  on_device = 1;
  // CHECK: about to abort
  fprintf(stderr, "about to abort\n");
  if (on_device)
    abort();
  return 0;
}

// A multi-file lit test: the indirect function lives in a shared library built first
// from Inputs/, the program calls it on the device through a host pointer.
// RUN: %clang-generic -fPIC -shared %S/Inputs/triple.c -o %t.so
// RUN: %libomptarget-compile-generic %t.so -Wl,-rpath,%T && \
// RUN:   env OMP_TARGET_OFFLOAD=MANDATORY %libomptarget-run-generic 2>&1 | %fcheck-generic
// UNSUPPORTED: nvptx64-nvidia-cuda-LTO
#include <stdio.h>

int triple(int x);
#pragma omp declare target to(triple) indirect

int main(void) {
  int (*fp)(int) = triple;
  int r = 0;
#pragma omp target map(from : r)
  r = fp(5);
  // CHECK: triple 15
  printf("triple %d\n", r);
  return 0;
}

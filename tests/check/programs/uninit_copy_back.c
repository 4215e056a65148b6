// Planted bug: map(from:) of a whole array when the kernel writes only half:
// the other half is copied back from device memory nobody wrote.
#include <stdio.h>

int main(void) {
  int C[100];
  for (int I = 0; I < 100; ++I)
    C[I] = 0;
#pragma omp target map(from : C)
  for (int I = 0; I < 50; ++I)
    C[I] = I;
  printf("c[10] %d c[99] %d\n", C[10], C[99]);
  return 0;
}

// Planted bug: the region maps A[0:32] but its loop reads A[0:64]. On a GPU
// and on stock the reads past the section return whatever lies there; under
// --check the device copy ends at a guard page, so the first read past it faults.
#include <stdio.h>

int main(void) {
  int A[64];
  for (int I = 0; I < 64; ++I)
    A[I] = I;
  long Sum = 0;
  int N = 64;
#pragma omp target map(to : A[0 : 32]) map(tofrom : Sum)
  for (int I = 0; I < N; ++I)
    Sum += A[I];
  printf("sum %ld\n", Sum);
  return 0;
}

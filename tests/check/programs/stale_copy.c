// Planted bug: the host changes a mapped array and the next region reads the
// old device copy (no `target update to`). --check reports a stale device copy.
#include <stdio.h>

int main(void) {
  int A[64];
  for (int I = 0; I < 64; ++I)
    A[I] = 1;
#pragma omp target enter data map(to : A)
  A[5] = 100; // the host's change never reaches the device
  int Sum = 0;
#pragma omp target map(tofrom : Sum)
  for (int I = 0; I < 64; ++I)
    Sum += A[I];
  printf("sum %d\n", Sum);
#pragma omp target exit data map(delete : A)
  return 0;
}

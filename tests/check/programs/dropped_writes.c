// Planted bug: a kernel writes a mapped array, and the mapping ends with
// `release` (no `from`): the writes are lost. --check reports them.
#include <stdio.h>

int main(void) {
  int B[32];
  for (int I = 0; I < 32; ++I)
    B[I] = I;
#pragma omp target enter data map(to : B)
#pragma omp target
  for (int I = 0; I < 32; ++I)
    B[I] *= 2;
#pragma omp target exit data map(release : B)
  printf("b[3] %d\n", B[3]);
  return 0;
}

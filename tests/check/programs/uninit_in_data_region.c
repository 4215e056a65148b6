// Planted bug: a target data maps X 'from' and its region writes X[0] only:
// the rest comes back from device memory nobody wrote. One report: the
// bytes the checker puts back on the host are not device writes the end of
// the data region dropped.
#include <stdio.h>

int main(void) {
  int X[8] = {0};
#pragma omp target data map(from : X)
  {
#pragma omp target
    X[0] = 7;
  }
  printf("x[0] %d\n", X[0]);
  return 0;
}

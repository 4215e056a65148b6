// Planted bug: a mapping is never ended; it is still present at exit.
#include <stdio.h>

int main(void) {
  double D[16] = {0};
#pragma omp target enter data map(to : D)
#pragma omp target
  D[0] = 1.0;
  printf("done\n");
  return 0;
}

/* Non-contiguous target update (OMP_MAP_NON_CONTIG) of strided sections that
 * start at the array's first element: stock libomptarget 22 moves these
 * right, so every backend must print the same. */
#include <stdio.h>

int b[20];

int main(void) {
  #pragma omp target enter data map(alloc: b)
  #pragma omp target
  {
    for (int i = 0; i < 20; ++i) b[i] = 500 + i;
  }
  #pragma omp target update from(b[0:7:3])
  for (int i = 0; i < 20; ++i) printf("%d ", b[i]);
  printf("\n");
  for (int i = 0; i < 20; ++i) b[i] = -i;
  #pragma omp target update to(b[0:4:5])
  #pragma omp target update from(b)
  for (int i = 0; i < 20; ++i) printf("%d ", b[i]);
  printf("\n");
  #pragma omp target exit data map(delete: b)
  return b[5] == -5 && b[6] == 506 ? 0 : 3;
}

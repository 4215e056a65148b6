/* Non-contiguous target update with lower bounds and strided inner
 * dimensions. Stock libomptarget 22 moves the wrong elements here (it scales
 * a lower bound by the stride and copies one element per row of a[1:3][2:4]);
 * ompsim moves what the sections name, row runs merged into one transfer.
 * (A section such as a[5][1:3:2] is left out: clang-22 drops its fixed row
 * from the descriptor, so no runtime can know it.) */
#include <stdio.h>

int a[6][8];
int b[20];
double m[4][6];

int main(void) {
  #pragma omp target enter data map(alloc: a, b, m)
  #pragma omp target
  {
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 8; ++j) a[i][j] = 100 + i * 10 + j;
    for (int i = 0; i < 20; ++i) b[i] = 500 + i;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 6; ++j) m[i][j] = i + j / 10.0;
  }
  #pragma omp target update from(m[0:2:2][0:6])
  int mbad = 0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j)
      if (m[i][j] != (i % 2 == 0 ? i + j / 10.0 : 0.0)) { printf("m[%d][%d]=%.1f\n", i, j, m[i][j]); mbad = 1; }
  #pragma omp target update from(a[1:3][2:4])
  #pragma omp target update from(b[1:5:3])
  #pragma omp target update from(a[4:2][1:3:2])
  int ok = !mbad;
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 8; ++j) {
      int want = (i >= 1 && i <= 3 && j >= 2 && j <= 5) || (i >= 4 && (j == 1 || j == 3 || j == 5))
                     ? 100 + i * 10 + j : 0;
      if (a[i][j] != want) { printf("a[%d][%d]=%d want %d\n", i, j, a[i][j], want); ok = 0; }
    }
  for (int i = 0; i < 20; ++i) {
    int want = i >= 1 && i <= 13 && (i - 1) % 3 == 0 ? 500 + i : 0;
    if (b[i] != want) { printf("b[%d]=%d want %d\n", i, b[i], want); ok = 0; }
  }
  for (int i = 0; i < 8; ++i) a[2][i] = -i;
  #pragma omp target update to(a[2:1][1:3:2])
  #pragma omp target update from(a[2:1][0:8])
  for (int j = 0; j < 8; ++j) {
    int want = (j == 1 || j == 3 || j == 5) ? -j : 120 + j;
    if (a[2][j] != want) { printf("to: a[2][%d]=%d want %d\n", j, a[2][j], want); ok = 0; }
  }
  printf(ok ? "strided updates ok\n" : "strided updates WRONG\n");
  return ok ? 0 : 3;
}

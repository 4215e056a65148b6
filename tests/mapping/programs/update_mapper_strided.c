/* A strided target update of an array of structs through a declare mapper:
 * each element moves what the mapper names (here only .n). Stock
 * libomptarget 22 hands the mapper the descriptor's dimension count as a byte
 * size and moves nothing; ompsim calls the mapper once per element. */
#include <stdio.h>

typedef struct { int n; double v; } S;
#pragma omp declare mapper(id: S s) map(s.n)
S arr[8];

int main(void) {
  for (int i = 0; i < 8; ++i) arr[i].n = i, arr[i].v = i;
  #pragma omp target enter data map(to: arr)
  #pragma omp target
  for (int i = 0; i < 8; ++i) arr[i].n += 100, arr[i].v += 100;
  #pragma omp target update from(mapper(id): arr[0:4:2])
  int ok = 1;
  for (int i = 0; i < 8; ++i) {
    int n = i % 2 == 0 ? 100 + i : i;
    if (arr[i].n != n || arr[i].v != i) {
      printf("arr[%d] = %d/%.0f, want %d/%d\n", i, arr[i].n, arr[i].v, n, i);
      ok = 0;
    }
  }
  #pragma omp target exit data map(release: arr)
  printf(ok ? "mapper strided update ok\n" : "mapper strided update WRONG\n");
  return ok ? 0 : 3;
}

/* target update through a declare mapper: a struct whose mapper brings its
 * pointee along (every backend, stock included, moves this right). */
#include <stdio.h>
#include <stdlib.h>

typedef struct { int n; int *d; int w[8]; } S;
#pragma omp declare mapper(id: S s) map(s, s.d[0:s.n])

int main(void) {
  S s;
  s.n = 6;
  s.d = malloc(6 * sizeof(int));
  for (int i = 0; i < 6; ++i) s.d[i] = i;
  for (int i = 0; i < 8; ++i) s.w[i] = 100 + i;
  #pragma omp target enter data map(mapper(id), to: s)
  #pragma omp target
  {
    for (int i = 0; i < s.n; ++i) s.d[i] += 50;
    for (int i = 0; i < 8; ++i) s.w[i] += 1000;
  }
  #pragma omp target update from(mapper(id): s)
  printf("from: d %d %d w %d %d\n", s.d[0], s.d[5], s.w[0], s.w[7]);
  for (int i = 0; i < 6; ++i) s.d[i] = -1;
  #pragma omp target update to(mapper(id): s)
  #pragma omp target
  for (int i = 0; i < s.n; ++i) s.d[i] *= 2;
  #pragma omp target update from(s.d[0:3:2])
  printf("strided: %d %d %d %d %d\n", s.d[0], s.d[1], s.d[2], s.d[3], s.d[4]);
  #pragma omp target exit data map(mapper(id), release: s)
  return s.d[4] == -2 && s.d[1] == -1 ? 0 : 3;
}

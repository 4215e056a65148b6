// Planted bug: a named declare mapper's first component is never released
// (stock's rule, docs/mapping.md), so the struct stays mapped after the first
// region; the second region maps it without the mapper, finds it present and
// reads the old device copy: it prints 1, not 5, on stock and on a GPU alike.
#include <stdio.h>

typedef struct {
  int A;
  long B;
} Pair;
#pragma omp declare mapper(pm : Pair p) map(p, p.B)

Pair GP = {1, 2};

int main(void) {
  int R = 0;
#pragma omp target map(mapper(pm), tofrom : GP) map(from : R)
  R = GP.A;
  GP.A = 5;
#pragma omp target map(tofrom : GP) map(from : R)
  R = GP.A;
  printf("r %d\n", R);
  return 0;
}

/* Map items whose names traces and diagnostics show; argv[1] "present" maps a missing item. */
#include <stdio.h>
#include <string.h>

int table[8] = {1, 2, 3, 4, 5, 6, 7, 8};

int main(int argc, char **argv) {
  int xs[4] = {1, 2, 3, 4};
  int *p = xs;
  if (argc > 1 && !strcmp(argv[1], "present")) {
#pragma omp target map(present, to : xs)
    xs[0] = 0;
  }
#pragma omp target map(tofrom : xs) map(to : p[0:2], table)
  xs[0] += p[1] + table[7];
  printf("xs[0]=%d\n", xs[0]);
  return xs[0] != 11;
}

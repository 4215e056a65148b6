/* A device fault inside a library function the kernel calls: libm's sincos
 * writes its sine through a null out-pointer. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>

int main(void) {
  double c = 0, *s = NULL;
#pragma omp target map(tofrom : c) firstprivate(s)
  sincos(0.5, s, &c);
  printf("%f\n", c);
  return 0;
}

/* Multi-file DejaGnu test: the indirect function comes from a second translation unit. */
/* { dg-do run } */
/* { dg-additional-sources "Inputs/add-aux.c" } */
/* { dg-output "sum 9" } */

#include <stdio.h>

extern int add(int, int);
#pragma omp declare target to(add) indirect

int main(void) {
  int (*fp)(int, int) = add;
  int r = 0;
#pragma omp target map(from : r)
  r = fp(4, 5);
  printf("sum %d\n", r);
  return r == 9 ? 0 : 1;
}

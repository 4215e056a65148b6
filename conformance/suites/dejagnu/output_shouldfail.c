/* A GCC libgomp-style test: dg-output patterns over the output, dg-shouldfail for the exit. */
/* { dg-do run } */
/* { dg-additional-options "-foffload=-lm -DVALUE=7" } */
/* { dg-output "value 7(\n|\r\n|\r)" } */
/* { dg-output "about to fail" } */
/* { dg-shouldfail "the program aborts after printing" } */

#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int v = 0;
#pragma omp target map(from : v)
  v = VALUE;
  printf("value %d\n", v);
  fflush(stdout);
  fprintf(stderr, "about to fail\n");
  abort();
}

/* dg-do compile with an effective target: built (never run) where device memory is separate. */
/* { dg-do compile } */
/* { dg-require-effective-target offload_device_nonshared_as } */

int f(int x) { return x + 1; }
#pragma omp declare target to(f) indirect

int g(void) {
  int r = 0;
#pragma omp target map(from : r)
  r = f(1);
  return r;
}

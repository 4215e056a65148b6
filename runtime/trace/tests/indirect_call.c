// The canonical indirect-call program of the golden trace: two indirect
// functions, a pointer captured as a scalar (translated by the mapping table),
// one mapped in an array (translated on the device), and, with an argument, a
// pointer to a declare-target function that is not indirect (a device fault).
#include <stdio.h>

int add1(int x) { return x + 1; }
int mul2(int x) { return x * 2; }
int plain(int x) { return x - 1; }
#pragma omp declare target to(add1, mul2) indirect
#pragma omp declare target to(plain)

int main(int argc, char **argv) {
  int (*fp)(int) = argc > 1 ? plain : add1;
  int (*arr[2])(int) = {add1, mul2};
  int r = 0;
#pragma omp target map(from : r) map(to : arr)
  { r = fp(41) + arr[1](10); }
  printf("r=%d\n", r);
  return r == 62 ? 0 : 1;
}

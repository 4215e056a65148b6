#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int plain(int x) { return x - 1; }
int add1(int x) { return x + 1; }
#pragma omp declare target to(add1) indirect
#pragma omp declare target
int deep(int n) { volatile char buf[256]; buf[0] = (char)n; return n == 0 ? buf[0] : deep(n + 1) + buf[0]; }
#pragma omp end declare target
int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "ok";
  int mode = !strcmp(what, "untranslated") ? 1 : !strcmp(what, "null") ? 2 : !strcmp(what, "wild") ? 3
           : !strcmp(what, "stack") ? 4 : !strcmp(what, "abort") ? 5 : !strcmp(what, "loop") ? 6
           : !strcmp(what, "parallel-loop") ? 7 : !strcmp(what, "parallel-exit") ? 8 : !strcmp(what, "exit") ? 9
           : !strcmp(what, "parallel-wild") ? 10 : 0;
  if (mode >= 7 && mode != 9) {
    /* Faults inside teams distribute parallel for, where the device's libomp runs. */
    int sum = 0;
#pragma omp target teams distribute parallel for map(to : mode) reduction(+ : sum)
    for (int i = 0; i < 64; ++i) {
      if (mode == 7) { while (*(volatile int *)&mode == 7) {} }
      else if (mode == 8 && (omp_get_team_num() == 1 || omp_get_thread_num() == 1)) exit(3); /* not the initial thread */
      else if (mode == 10 && i == 17) *(volatile int *)0x1234560 = 7;
      sum += i;
    }
    printf("sum=%d\n", sum);
    return sum != 2016;
  }
  int (*fp)(int) = mode == 1 ? plain : mode == 2 ? (int (*)(int))0 : add1;
  int r = 0;
#pragma omp target map(from : r) map(to : mode)
  {
    if (mode == 3) *(volatile int *)0x1234560 = 7;
    else if (mode == 4) r = deep(1);
    else if (mode == 5) abort();
    else if (mode == 6) { while (*(volatile int *)&mode == 6) {} }
    else if (mode == 9) exit(3);
    else r = fp(41);
  }
  printf("r=%d\n", r);
  return r != 42;
}

/* Faults whose diagnosis must say how to fix them; argv[1] picks one. */
#include <omp.h>
#include <stdio.h>
#include <string.h>
int plain(int x) { return x - 1; }
int add1(int x) { return x + 1; }
#pragma omp declare target to(add1) indirect
int host_counter = 5; /* host data only: never mapped, not declare target */
int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "ok";
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  int mode = !strcmp(what, "plain") ? 1 : !strcmp(what, "indirect") ? 2 : !strcmp(what, "hostread") ? 3
           : !strcmp(what, "hostwrite") ? 4 : 0;
  /* A table copied as data: clang-22 leaves the host addresses in it. */
  int (*table[2])(int) = {add1, plain};
  /* An explicit firstprivate pointer keeps its host value on the device. */
  int *hp = &host_counter;
  int r = 41;
  if (!strcmp(what, "memcpy") || !strcmp(what, "memcpy-to-host") || !strcmp(what, "map") ||
      !strcmp(what, "hostderef")) {
    int *d = (int *)omp_target_alloc(16 * sizeof(int), dev);
    int rc = 0;
    if (!strcmp(what, "hostderef")) /* device memory written by the host itself */
      *(volatile int *)d = 1;
    else if (!strcmp(what, "memcpy")) /* d is device memory, passed as if it were on the host */
      rc = omp_target_memcpy(d, d, 16 * sizeof(int), 0, 0, dev, host);
    else if (!strcmp(what, "memcpy-to-host"))
      rc = omp_target_memcpy(d, d, 16 * sizeof(int), 0, 0, host, dev);
    else {
#pragma omp target map(tofrom : d[0:16])
      d[0] = 1;
    }
    printf("rc=%d\n", rc);
    omp_target_free(d, dev);
    return rc != 0;
  }
#pragma omp target map(tofrom : r) map(to : mode, table) firstprivate(hp)
  {
    if (mode == 1) r = table[1](r);
    else if (mode == 2) r = table[0](r);
    else if (mode == 3) r = *(volatile int *)hp;
    else if (mode == 4) *(volatile int *)hp = 7;
    else r = r + 1;
  }
  printf("r=%d\n", r);
  return r != 42;
}

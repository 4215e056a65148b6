// An interop construct with a depend clause is an included task with those
// dependences: `interop use` and `interop destroy` end only once the tasks
// they depend on have run, a sibling host task and a `target nowait` region
// alike. Stock 22 returns from destroy at once (this program reads 0 there,
// or ends while the region still runs); ompsim waits.
#include <omp.h>
#include <stdio.h>

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int dev = omp_get_default_device(), produced = 0, a[4] = {0};
  omp_interop_t obj = omp_interop_none;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp interop init(targetsync : obj) device(dev) depend(inout : produced)
#pragma omp task depend(out : produced) shared(produced)
    {
      for (volatile int i = 0; i < 20000000; ++i)
        ;
      produced = 7;
    }
#pragma omp interop use(obj) depend(inout : produced)
    printf("after use: produced=%d\n", produced);
#pragma omp task depend(out : produced) shared(produced)
    {
      for (volatile int i = 0; i < 20000000; ++i)
        ;
      produced = 8;
    }
#pragma omp interop destroy(obj) depend(inout : produced)
    printf("after destroy: produced=%d\n", produced);
  }
  obj = omp_interop_none;
#pragma omp interop init(targetsync : obj) device(dev)
#pragma omp target nowait depend(inout : a) map(tofrom : a)
  for (int i = 0; i < 4; ++i)
    a[i] += 5;
#pragma omp interop destroy(obj) depend(out : a)
  printf("after the region's destroy: a={%d,%d,%d,%d}\n", a[0], a[1], a[2], a[3]);
  return 0;
}

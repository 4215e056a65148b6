// `#pragma omp interop`: a CPU device has no foreign runtime, so init gives
// omp_interop_none (after waiting for the dependences of a targetsync
// request), and use/destroy of it do nothing.
#include <omp.h>
#include <stdio.h>

int ompx_interop_add_completion_callback(omp_interop_t, void (*)(omp_interop_t, void *), void *);

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int dev = omp_get_default_device();
  int produced = 0;
  omp_interop_t obj = omp_interop_none;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp task depend(out : produced) shared(produced)
    {
      for (volatile int i = 0; i < 1000000; ++i)
        ;
      produced = 42;
    }
#pragma omp interop init(targetsync : obj) device(dev) depend(inout : produced)
    printf("after init: produced=%d\n", produced);
  }
  printf("interop object: %s\n", obj == omp_interop_none ? "omp_interop_none" : "an object");
  if (obj != omp_interop_none) {
#pragma omp interop use(obj)
#pragma omp interop destroy(obj)
  }
  printf("completion callback on none: %d (omp_irc_other=%d)\n",
         ompx_interop_add_completion_callback(omp_interop_none, NULL, NULL), omp_irc_other);
  return 0;
}

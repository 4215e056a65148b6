/* Device numbering as stock libomptarget: the initial device
 * (omp_get_initial_device() == omp_get_num_devices()) is a valid device()
 * argument and runs the region on the host, even when offload is mandatory;
 * every device keeps its own copy of a declare-target global. */
#include <omp.h>
#include <stdio.h>

int g = 0;
#pragma omp declare target to(g)

int main(void) {
  int n = omp_get_num_devices(), init = omp_get_initial_device();
  printf("num_devices=%d initial=%d default=%d\n", n, init, omp_get_default_device());
  int on_host = -1, x = 0;
  #pragma omp target device(omp_get_initial_device()) map(from: on_host) map(tofrom: x)
  { on_host = omp_is_initial_device(); x += 1; }
  printf("initial device: on_host=%d x=%d\n", on_host, x);
  #pragma omp target device(omp_get_num_devices()) map(from: on_host) map(tofrom: x)
  { on_host = omp_is_initial_device(); x += 1; }
  printf("num_devices device: on_host=%d x=%d\n", on_host, x);
  #pragma omp target data map(tofrom: x) device(omp_get_initial_device())
  {
    #pragma omp target device(omp_get_initial_device()) map(tofrom: x)
    x += 5;
  }
  #pragma omp target enter data map(to: x) device(init)
  #pragma omp target exit data map(from: x) device(init)
  printf("data constructs on the host: x=%d\n", x);
  for (int d = 0; d < n; ++d) {
    int y = d;
    #pragma omp target device(d) map(tofrom: y) map(from: on_host)
    { y *= 10; on_host = omp_is_initial_device(); g = 100 + d; }
  }
  for (int d = 0; d < n; ++d) {
    #pragma omp target update from(g) device(d)
    printf("device %d: g=%d\n", d, g);
  }
  printf("host g=%d\n", g);
  return 0;
}

// A function pointer captured as a scalar (firstprivate): the runtime's
// mapping table translates it, so it works even without the pass.
#include "common.h"

int triple(int x) { ++device_calls; return 3 * x; }
#pragma omp declare target to(triple) indirect

int main() {
  reset_device_calls();
  int (*fp)(int) = triple;
  int r = 0;
#pragma omp target map(tofrom: r)
  r = fp(14);
  std::printf("r=%d\n", r);
  report_device_calls(1);
  return r != 42;
}

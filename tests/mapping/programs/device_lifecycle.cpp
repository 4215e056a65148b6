// What stock libomptarget 22 does around a device's life, by argument:
//   lazy   - a device constructor that traps (-DCTOR_TRAPS) never runs when
//            the program never uses the device (images load at first use);
//   ctor   - the same constructor runs, and fails, at the first use;
//   trap   - a kernel that traps fails its target region;
//   reuse  - a freed device block comes back to the next request of its size.
#include <omp.h>
#include <cstdio>
#include <cstring>

void trap_dev(void) { __builtin_trap(); }
#pragma omp declare variant(trap_dev) match(device = {kind(nohost)})
void trap(void) {}

int Global;
#pragma omp declare target(Global)

#ifdef CTOR_TRAPS
// Built with -DCTOR_TRAPS: a device constructor that traps (on the host the
// variant is a no-op, so the host's own constructor run is harmless).
struct S {
  S() { trap(); }
};
S Object;
#pragma omp declare target(Object)
#endif

int main(int argc, char **argv) {
  const char *Mode = argc > 1 ? argv[1] : "";
  int Dev = omp_get_default_device();
  if (!strcmp(Mode, "lazy")) {
    printf("host only\n");
  } else if (!strcmp(Mode, "ctor")) {
    printf("using the device\n");
    fflush(stdout);
    omp_target_is_present(&Global, Dev);
    printf("not reached\n");
  } else if (!strcmp(Mode, "trap")) {
#pragma omp target
    __builtin_trap();
    printf("not reached\n");
  } else if (!strcmp(Mode, "reuse")) {
    void *P = omp_target_alloc(8, Dev);
    omp_target_free(P, Dev);
    void *Q = omp_target_alloc(8, Dev);
    printf("same block: %d\n", P == Q);
    omp_target_free(Q, Dev);
  }
  return 0;
}

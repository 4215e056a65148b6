// Under `requires unified_shared_memory` on a device sharing the host's
// memory, stock treats unmapped data as present for map clauses (no copy, no
// error; `target update`'s present motion modifier still fails), and
// memory given by omp_target_associate_ptr still moves with `always`.
#include <omp.h>
#include <stdio.h>

#pragma omp requires unified_shared_memory

int main(void) {
  int Dev = omp_get_default_device();
  int I = 1;
#pragma omp target map(present, tofrom : I)
  I += 1;
#pragma omp target exit data map(present, release : I)
  int X = 10;
  int *XDev = (int *)omp_target_alloc(sizeof X, Dev);
  if (omp_target_associate_ptr(&X, XDev, sizeof X, 0, Dev))
    return 1;
#pragma omp target map(always, tofrom : X)
  X += 1;
  printf("I=%d X=%d present=%d\n", I, X, omp_target_is_present(&X, Dev));
  return 0;
}

// Planted bug: device memory from omp_target_alloc is copied back with
// omp_target_memcpy, but the kernel wrote only its first half.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int Dev = omp_get_default_device(), Host = omp_get_initial_device();
  int Out[64] = {0};
  int *Buf = (int *)omp_target_alloc(sizeof(Out), Dev);
#pragma omp target is_device_ptr(Buf)
  for (int I = 0; I < 32; ++I)
    Buf[I] = I;
  omp_target_memcpy(Out, Buf, sizeof(Out), 0, 0, Host, Dev);
  omp_target_free(Buf, Dev);
  // Out[32..63] is whatever the fresh device memory held (heap garbage on a
  // shared-memory device): only the written half is printed.
  printf("out[31] %d\n", Out[31]);
  return 0;
}

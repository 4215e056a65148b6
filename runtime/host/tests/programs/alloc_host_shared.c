// llvm_omp_target_alloc_host / _shared: memory both the host and the device
// use directly, as on stock's host plugin and a discrete GPU. sim maps the
// block into the host at its device address.
#include <omp.h>
#include <stdio.h>

void *llvm_omp_target_alloc_host(size_t, int);
void *llvm_omp_target_alloc_shared(size_t, int);
void llvm_omp_target_free_host(void *, int);
void llvm_omp_target_free_shared(void *, int);

int main(int argc, char **argv) {
  int dev = omp_get_default_device();
  int shared = argc > 1; // "shared": test alloc_shared, else alloc_host
  int *p = shared ? llvm_omp_target_alloc_shared(16 * sizeof(int), dev)
                  : llvm_omp_target_alloc_host(16 * sizeof(int), dev);
  if (!p) {
    printf("%s: refused\n", shared ? "alloc_shared" : "alloc_host");
    return 3;
  }
  for (int i = 0; i < 16; ++i)
    p[i] = i;
  int total = 0;
#pragma omp target is_device_ptr(p) map(tofrom : total) device(dev)
  {
    for (int i = 0; i < 16; ++i) {
      total += p[i];
      p[i] = -p[i];
    }
  }
  printf("%s: device saw %d, host sees p[5]=%d\n", shared ? "alloc_shared" : "alloc_host", total,
         p[5]);
  if (shared)
    llvm_omp_target_free_shared(p, dev);
  else
    llvm_omp_target_free_host(p, dev);
  return 0;
}

// llvm_omp_target_alloc_device / llvm_omp_target_free_device: device memory
// usable through is_device_ptr and omp_target_memcpy; the initial device
// gets host memory; an empty request gets null.
#include <omp.h>
#include <stdio.h>
#include <string.h>

void *llvm_omp_target_alloc_device(size_t, int);
void llvm_omp_target_free_device(void *, int);
void *llvm_omp_target_dynamic_shared_alloc(void);

enum { N = 256 };

int main(void) {
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  int *d = llvm_omp_target_alloc_device(N * sizeof(int), dev);
  if (!d) {
    printf("alloc_device failed\n");
    return 2;
  }
  int in[N], out[N];
  for (int i = 0; i < N; ++i)
    in[i] = i, out[i] = 0;
  omp_target_memcpy(d, in, sizeof in, 0, 0, dev, host);
#pragma omp target teams distribute parallel for is_device_ptr(d) device(dev)
  for (int i = 0; i < N; ++i)
    d[i] = d[i] * 2 + 1;
  omp_target_memcpy(out, d, sizeof out, 0, 0, host, dev);
  long s = 0;
  for (int i = 0; i < N; ++i)
    s += out[i];
  printf("alloc_device: sum=%ld expect=%ld\n", s, (long)N * (N - 1) + N);
  llvm_omp_target_free_device(d, dev);
  llvm_omp_target_free_device(NULL, dev); // no-op

  char *h = llvm_omp_target_alloc_device(32, host);
  if (h) {
    memset(h, 'x', 32); // the initial device's memory is the host's
    llvm_omp_target_free_device(h, host);
  }
  printf("alloc_device on the initial device: %s\n", h ? "host memory" : "null");
  printf("alloc_device of 0 bytes: %s\n", llvm_omp_target_alloc_device(0, dev) ? "non-null" : "null");
  printf("dynamic_shared_alloc on the host: %s\n",
         llvm_omp_target_dynamic_shared_alloc() ? "non-null" : "null");
  return 0;
}

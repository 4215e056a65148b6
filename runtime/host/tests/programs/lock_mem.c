// llvm_omp_target_lock_mem / unlock_mem: on a device that shares the host's
// memory the locked range is usable in place, as on stock's host plugin; a
// device with its own address space (sim) refuses: null and one line.
#include <omp.h>
#include <stdio.h>

void *llvm_omp_target_lock_mem(void *, size_t, int);
void llvm_omp_target_unlock_mem(void *, int);

int main(void) {
  int dev = omp_get_default_device();
  int buf[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  printf("lock of 0 bytes: %s\n", llvm_omp_target_lock_mem(buf, 0, dev) ? "non-null" : "null");
  int *p = llvm_omp_target_lock_mem(buf, sizeof buf, dev);
  if (!p) {
    printf("lock_mem: refused\n");
    return 3;
  }
  printf("lock_mem: %s\n", p == buf ? "same address" : "another address");
#pragma omp target is_device_ptr(p) device(dev)
  for (int i = 0; i < 8; ++i)
    p[i] *= 10;
  llvm_omp_target_unlock_mem(buf, dev);
  printf("lock_mem: buf[0]=%d buf[7]=%d\n", buf[0], buf[7]);
  return 0;
}

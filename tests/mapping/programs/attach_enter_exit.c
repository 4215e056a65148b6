/* ATTACH items (clang-22 lowers every pointer-based section with one) do not
 * count: `target enter data map(to: p[:n])` then `exit data map(from: p[:n])`
 * must copy the results back and unmap. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int n = 8, dev = omp_get_default_device();
  int *p = malloc(n * sizeof(int));
  for (int i = 0; i < n; ++i) p[i] = i;
  #pragma omp target enter data map(to: p[:n])
  #pragma omp target map(alloc: p[:n])
  for (int i = 0; i < n; ++i) p[i] += 100;
  #pragma omp target exit data map(from: p[:n])
  printf("whole: %d %d present=%d\n", p[0], p[7], omp_target_is_present(p, dev));

  /* A section that does not start at the pointee: the device pointer must
   * still point at the (device) base. */
  int *q = malloc(16 * sizeof(int));
  for (int i = 0; i < 16; ++i) q[i] = i;
  #pragma omp target enter data map(to: q[4:8])
  #pragma omp target map(alloc: q[4:8])
  for (int i = 4; i < 12; ++i) q[i] *= 2;
  #pragma omp target exit data map(from: q[4:8])
  printf("offset: %d %d %d %d present=%d\n", q[3], q[4], q[11], q[12], omp_target_is_present(&q[4], dev));

  /* A pointer that is itself mapped gets attached. */
  int *r = malloc(4 * sizeof(int));
  for (int i = 0; i < 4; ++i) r[i] = 1;
  #pragma omp target enter data map(to: r, r[0:4])
  #pragma omp target
  for (int i = 0; i < 4; ++i) r[i] += 2;
  #pragma omp target exit data map(from: r[0:4]) map(release: r)
  printf("mapped pointer: %d %d present=%d\n", r[0], r[3], omp_target_is_present(r, dev));
  int ok = p[7] == 107 && q[3] == 3 && q[4] == 8 && q[11] == 22 && q[12] == 12 && r[3] == 3;
  free(p), free(q), free(r);
  return ok ? 0 : 3;
}

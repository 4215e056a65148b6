/* Every kind of offload event an OMPT tool sees: enter/exit data, update, a target region
 * with teams, device memory routines, associate/disassociate, and nowait regions with
 * depend. Exits 0 when every result is right. */
#include <omp.h>
#include <stdio.h>

#define N 64

int main(void) {
  int a[N], b[N], fails = 0;
  int dev = omp_get_default_device();
  for (int i = 0; i < N; ++i)
    a[i] = i, b[i] = 0;
#pragma omp target enter data map(to : a) map(alloc : b)
#pragma omp target teams distribute parallel for num_teams(2)
  for (int i = 0; i < N; ++i)
    b[i] = 2 * a[i];
  a[0] = 100;
#pragma omp target update to(a[0 : 1])
#pragma omp target
  b[0] = a[0] + 1;
#pragma omp target exit data map(from : b) map(delete : a)
  for (int i = 0; i < N; ++i)
    fails += b[i] != (i == 0 ? 101 : 2 * i);

  int *d = omp_target_alloc(N * sizeof(int), dev);
  omp_target_memcpy(d, a, N * sizeof(int), 0, 0, dev, omp_get_initial_device());
  omp_target_memcpy(b, d, N * sizeof(int), 0, 0, omp_get_initial_device(), dev);
  fails += b[5] != 5;
  int c[N];
  omp_target_associate_ptr(c, d, N * sizeof(int), 0, dev);
#pragma omp target map(tofrom : c)
  c[1] = 7;
  omp_target_disassociate_ptr(c, dev);
  omp_target_free(d, dev);

  int v[4] = {0, 0, 0, 0};
  for (int k = 0; k < 4; ++k) {
#pragma omp target nowait map(tofrom : v[k : 1]) depend(inout : v[k])
    v[k] += k;
#pragma omp target nowait map(tofrom : v[k : 1]) depend(inout : v[k])
    v[k] *= 2;
  }
#pragma omp taskwait
  for (int k = 0; k < 4; ++k)
    fails += v[k] != 2 * k;
  printf("%s\n", fails ? "FAIL" : "ok");
  return fails != 0;
}

// omp_target_memcpy_async, omp_target_memcpy_rect_async and
// omp_target_memset_async: each copy runs as a task after the tasks its
// depend objects name, and taskwait waits for it.
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 4096, ROWS = 6, COLS = 8 };

static long sum(const int *a, int n) {
  long s = 0;
  for (int i = 0; i < n; ++i)
    s += a[i];
  return s;
}

int main(void) {
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  int *h = malloc(N * sizeof(int)), *back = calloc(N, sizeof(int));
  int *d = omp_target_alloc(N * sizeof(int), dev);
  if (!h || !back || !d)
    return 2;
  for (int i = 0; i < N; ++i)
    h[i] = -1;

  // The producer fills h; the copies depend on it through depend objects, so
  // they must see its values, never the -1s, however the tasks are scheduled.
  omp_depend_t onH, onD;
  int failures = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp depobj(onH) depend(inout : h[0])
#pragma omp depobj(onD) depend(inout : d[0])
#pragma omp task depend(inout : h[0]) firstprivate(h)
    {
      // Work first, so a copy that ignored its dependences would read -1s.
      for (volatile int spin = 0; spin < 20000000; ++spin)
        ;
      for (int i = 0; i < N; ++i)
        h[i] = 3 * i + 1;
    }
    if (omp_target_memcpy_async(d, h, N * sizeof(int), 0, 0, dev, host, 1, &onH))
      failures++;
    // Device to host: after the copy above, which also names h's object.
    omp_depend_t both[2] = {onH, onD};
    if (omp_target_memcpy_async(back, d, N * sizeof(int), 0, 0, host, dev, 2, both))
      failures++;
#pragma omp taskwait
#pragma omp depobj(onH) destroy
#pragma omp depobj(onD) destroy
  }
  long expect = 0;
  for (int i = 0; i < N; ++i)
    expect += 3 * i + 1;
  printf("memcpy_async: failures=%d sum=%ld expect=%ld\n", failures, sum(back, N), expect);

  // With no dependences, taskwait alone orders it; offsets apply.
  for (int i = 0; i < N; ++i)
    back[i] = 0;
  if (omp_target_memcpy_async(back, d, 16 * sizeof(int), 4 * sizeof(int), 8 * sizeof(int), host,
                              dev, 0, NULL))
    failures++;
#pragma omp taskwait
  printf("memcpy_async offsets: back[4]=%d back[19]=%d back[3]=%d back[20]=%d\n", back[4], back[19],
         back[3], back[20]);
  printf("memcpy_async null: %s\n",
         omp_target_memcpy_async(NULL, d, 4, 0, 0, host, dev, 0, NULL) ? "fails" : "succeeds");

  // A 3x4 block at (2, 3) of a ROWSxCOLS host matrix into the top-left of a
  // device matrix, then the device matrix back.
  int m[ROWS][COLS], out[ROWS][COLS];
  for (int r = 0; r < ROWS; ++r)
    for (int c = 0; c < COLS; ++c)
      m[r][c] = 100 * r + c, out[r][c] = -7;
  int *dm = omp_target_alloc(sizeof m, dev);
  omp_target_memset(dm, 0, sizeof m, dev);
  size_t volume[2] = {3, 4}, srcOff[2] = {2, 3}, dstOff[2] = {0, 0}, dims[2] = {ROWS, COLS};
  size_t all[2] = {ROWS, COLS}, zero[2] = {0, 0};
  omp_depend_t onM;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp depobj(onM) depend(inout : m)
    if (omp_target_memcpy_rect_async(dm, m, sizeof(int), 2, volume, dstOff, srcOff, dims, dims, dev,
                                      host, 1, &onM))
      failures++;
    if (omp_target_memcpy_rect_async(out, dm, sizeof(int), 2, all, zero, zero, dims, dims, host, dev,
                                      1, &onM))
      failures++;
#pragma omp taskwait
#pragma omp depobj(onM) destroy
  }
  printf("memcpy_rect_async: failures=%d out[0][0]=%d out[2][3]=%d out[0][4]=%d out[3][0]=%d\n",
         failures, out[0][0], out[2][3], out[0][4], out[3][0]);
  printf("memcpy_rect_async max dims: %s\n",
         omp_target_memcpy_rect_async(NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, dev, host, 0,
                                      NULL) == INT_MAX
             ? "INT_MAX"
             : "other");

  // memset_async fills after the dependence, then a dependent copy reads it.
  omp_depend_t onFill;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp depobj(onFill) depend(inout : d[0])
    void *r = omp_target_memset_async(d, 0x5A, 64, dev, 1, &onFill);
    printf("memset_async returns its pointer: %s\n", r == d ? "yes" : "no");
    unsigned char bytes[64] = {0};
    omp_target_memcpy_async(bytes, d, 64, 0, 0, host, dev, 1, &onFill);
#pragma omp taskwait
    int ok = 1;
    for (int i = 0; i < 64; ++i)
      ok &= bytes[i] == 0x5A;
    printf("memset_async: %s\n", ok ? "filled" : "NOT filled");
#pragma omp depobj(onFill) destroy
  }
  printf("memset_async zero bytes: %s\n",
         omp_target_memset_async(d, 1, 0, dev, 0, NULL) == d ? "no-op" : "other");
  omp_target_free(dm, dev);
  omp_target_free(d, dev);
  free(h);
  free(back);
  return failures ? 1 : 0;
}

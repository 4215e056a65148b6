/* omp_target_memcpy_rect between host and device and between two device
 * buffers: a sub-rectangle, whole rows, and 3-D. */
#include <omp.h>
#include <stdio.h>

int main(void) {
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  double a[4][6], back[4][6];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) a[i][j] = i * 10 + j, back[i][j] = -1;
  double *d = omp_target_alloc(sizeof(a), dev);
  double *e = omp_target_alloc(sizeof(a), dev);
  size_t dims[2] = {4, 6}, zero[2] = {0, 0}, all[2] = {4, 6};
  int rc = omp_target_memcpy_rect(d, a, sizeof(double), 2, all, zero, zero, dims, dims, dev, host);
  /* Rows 1..2, columns 2..4 of d into rows 0..1, columns 0..2 of e. */
  size_t vol[2] = {2, 3}, srcOff[2] = {1, 2}, dstOff[2] = {0, 0};
  rc |= omp_target_memcpy_rect(e, d, sizeof(double), 2, vol, dstOff, srcOff, dims, dims, dev, dev);
  size_t backOff[2] = {2, 3};
  rc |= omp_target_memcpy_rect(back, e, sizeof(double), 2, vol, backOff, dstOff, dims, dims, host, dev);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 6; ++j) printf("%5.0f", back[i][j]);
    printf("\n");
  }
  int cube[2][3][4], out[2][3][4] = {{{0}}};
  for (int i = 0; i < 24; ++i) (&cube[0][0][0])[i] = i;
  int *dc = omp_target_alloc(sizeof(cube), dev);
  size_t cdims[3] = {2, 3, 4}, cvol[3] = {2, 2, 2}, coff[3] = {0, 1, 2}, c0[3] = {0, 0, 0};
  rc |= omp_target_memcpy_rect(dc, cube, sizeof(int), 3, cdims, c0, c0, cdims, cdims, dev, host);
  rc |= omp_target_memcpy_rect(out, dc, sizeof(int), 3, cvol, c0, coff, cdims, cdims, host, dev);
  printf("cube: %d %d %d %d\n", out[0][0][0], out[0][1][1], out[1][0][0], out[1][1][1]);
  printf("dims supported > 2: %d rc=%d\n",
         omp_target_memcpy_rect(NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, dev, host) > 2, rc);
  omp_target_free(d, dev), omp_target_free(e, dev), omp_target_free(dc, dev);
  return rc == 0 && back[2][3] == 12 && back[3][5] == 24 && out[1][1][1] == 23 ? 0 : 3;
}

/* Misuse of the device memory API: argv[1] picks one. The program goes on
 * after each call and prints what the call returned. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "ok";
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  if (!strcmp(what, "alloc-huge")) {
    size_t sizes[] = {SIZE_MAX, SIZE_MAX - 4095, (size_t)1 << 63};
    for (int i = 0; i < 3; ++i) {
      void *p = omp_target_alloc(sizes[i], dev);
      printf("alloc(%zu)=%s\n", sizes[i], p ? "non-null" : "null");
    }
  } else if (!strcmp(what, "free-host")) {
    static int x;
    omp_target_free(&x, dev);
  } else if (!strcmp(what, "free-interior")) {
    char *p = omp_target_alloc(64, dev);
    omp_target_free(p + 8, dev);
    omp_target_free(p, dev);
  } else if (!strcmp(what, "free-twice")) {
    void *p = omp_target_alloc(64, dev);
    omp_target_free(p, dev);
    omp_target_free(p, dev);
  } else if (!strcmp(what, "memcpy-from-0x10")) {
    char buf[16];
    int rc = omp_target_memcpy(buf, (void *)0x10, sizeof buf, 0, 0, host, dev);
    printf("memcpy rc=%d\n", rc);
  } else if (!strcmp(what, "memcpy-8g")) {
    char *p = omp_target_alloc(64, dev);
    char *buf = malloc(64);
    int rc = omp_target_memcpy(buf, p, (size_t)8 << 30, 0, 0, host, dev);
    printf("memcpy rc=%d\n", rc);
    omp_target_free(p, dev);
    free(buf);
  } else if (!strcmp(what, "ok")) {
    int *p = omp_target_alloc(4 * sizeof(int), dev);
    int in[4] = {1, 2, 3, 4}, out[4] = {0};
    int rc = omp_target_memcpy(p, in, sizeof in, 0, 0, dev, host) |
             omp_target_memcpy(out, p, sizeof out, 0, 0, host, dev);
    omp_target_free(p, dev);
    printf("memcpy rc=%d out=%d,%d,%d,%d\n", rc, out[0], out[1], out[2], out[3]);
  }
  printf("done\n");
  return 0;
}

// Device-image probe for the loader unit tests: globals, a data relocation
// against a function, static constructors in priority order, libc imports.
#include <stdio.h>
#include <string.h>

#pragma omp begin declare target
int probe_global = 42;
int probe_order[2];
int probe_norder;
static void probe_first(void) __attribute__((constructor(101)));
static void probe_second(void) __attribute__((constructor(102)));
static void probe_first(void) { probe_order[probe_norder++] = 1; }
static void probe_second(void) { probe_order[probe_norder++] = 2; }
int probe_add1(int x) { return x + 1; }
int (*probe_fp)(int) = probe_add1;
#pragma omp end declare target

int main(void) {
  int out[4] = {0, 0, 0, 0};
  char text[16] = "";
#pragma omp target map(from : out[0 : 4], text[0 : 16])
  {
    out[0] = probe_global;
    out[1] = probe_fp(5);
    out[2] = probe_order[0] * 10 + probe_order[1];
    snprintf(text, sizeof text, "n=%d", probe_norder);
    out[3] = (int)strlen(text);
  }
  printf("%d %d %d %d %s\n", out[0], out[1], out[2], out[3], text);
  return 0;
}

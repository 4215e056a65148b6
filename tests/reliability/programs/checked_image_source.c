/* The offload program whose device image the named corrupt-image cases of
 * test_image_checks.py break (built with -save-temps). As image_source.c (two
 * indirect functions, a region without arguments), but its kernel calls a
 * function the image imports, so the image has a PLT relocation (DT_JMPREL)
 * and a kernel longer than one instruction. */
#include <sched.h>
int add1(int x) { return x + 1; }
int mul2(int x) { return x * 2; }
#pragma omp declare target to(add1, mul2) indirect
int main(void) {
#pragma omp target
  { sched_yield(); }
  return add1(1) + mul2(1) == 4 ? 0 : 1;
}

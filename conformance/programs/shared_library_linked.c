// CHECKS: a linked shared library with its own indirect functions: the program calls them through host pointers, and the library calls the program's
// REQUIRES: c
// BUILD-SHLIB: libconfshared.so: %inputs/shlib_funcs.c
// BUILD: -lconfshared
// CHECK: PASS
#include "inputs/conformance.h"

int lib_add(int x);
int lib_sub(int x);
int lib_device_calls(void);
int lib_apply(int (*f)(int), int x);

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
int main_neg(int x) { dev_calls++; return -x; }
#pragma omp declare target to(main_neg) indirect

int main(void) {
  int (*add)(int) = lib_add, (*sub)(int) = lib_sub;
  int a = 0, s = 0;
#pragma omp target map(from : a, s)
  {
    a = add(35);
    s = sub(49);
  }
  int n = lib_apply(main_neg, -42);
#pragma omp target update from(dev_calls)
  EXPECT_EQ(a, 42);
  EXPECT_EQ(s, 42);
  EXPECT_EQ(n, 42);
  EXPECT_EQ(lib_device_calls(), 2);
  EXPECT_EQ(dev_calls, 1);
  return CONF_RESULT();
}

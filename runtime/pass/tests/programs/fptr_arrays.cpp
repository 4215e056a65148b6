// Function pointers in local and global arrays, struct and nested struct members.
#include "common.h"

int add1(int x) { ++device_calls; return x + 1; }
int mul2(int x) { ++device_calls; return x * 2; }
int sub3(int x) { ++device_calls; return x - 3; }
#pragma omp declare target to(add1, mul2, sub3) indirect

typedef int (*unary)(int);
unary global_table[3] = {add1, mul2, sub3};
#pragma omp declare target to(global_table)

struct Ops { int tag; unary op; };
struct Nested { int pad; Ops inner; unary other; };

int main() {
  reset_device_calls();
  unary local_table[3] = {sub3, add1, mul2};
  Ops ops = {7, mul2};
  Nested nested = {1, {2, add1}, sub3};
  int r[5] = {0, 0, 0, 0, 0};
#pragma omp target map(to: local_table, ops, nested) map(tofrom: r)
  {
    for (int i = 0; i < 3; ++i) r[0] = r[0] * 10 + global_table[i](i + 4);
    for (int i = 0; i < 3; ++i) r[1] += local_table[i](10);
    r[2] = ops.op(21);
    r[3] = nested.inner.op(41);
    r[4] = nested.other(10);
  }
  // global: add1(4)=5, mul2(5)=10, sub3(6)=3 -> ((5)*10+10)*10+3 = 603
  int want[5] = {603, 7 + 11 + 20, 42, 42, 7};
  int bad = 0;
  for (int i = 0; i < 5; ++i)
    if (r[i] != want[i]) { std::printf("r[%d]=%d want %d\n", i, r[i], want[i]); bad = 1; }
  report_device_calls(9);
  return bad;
}

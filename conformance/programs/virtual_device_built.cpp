// CHECKS: virtual calls on objects constructed on the device (device vtables) across a small hierarchy
// REQUIRES: c++
// CHECK: PASS
#include "inputs/conformance.h"
#include <new>

int dev_calls = 0;
#pragma omp declare target to(dev_calls)

struct Base {
  virtual int f(int x);
  virtual ~Base() = default;
};
struct Der : Base {
  int f(int x) override;
};
struct Der2 : Der {
  int f(int x) override;
};
#pragma omp begin declare target indirect
int Base::f(int x) { dev_calls++; return x; }
int Der::f(int x) { dev_calls++; return x + 1; }
int Der2::f(int x) { dev_calls++; return Der::f(x) * 2; }
#pragma omp end declare target

int main() {
  int r[3] = {0, 0, 0};
  int kinds[3] = {0, 1, 2};
#pragma omp target map(to : kinds) map(from : r)
  for (int i = 0; i < 3; i++) {
    alignas(Der2) unsigned char buf[sizeof(Der2)];
    Base *b = kinds[i] == 0 ? new (buf) Base : kinds[i] == 1 ? static_cast<Base *>(new (buf) Der)
                                                                 : static_cast<Base *>(new (buf) Der2);
    r[i] = b->f(10);
    b->~Base();
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(r[0], 10);
  EXPECT_EQ(r[1], 11);
  EXPECT_EQ(r[2], 22);
  EXPECT_EQ(dev_calls, 4);
  return CONF_RESULT();
}

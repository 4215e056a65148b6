// CHECKS: a pointer to a virtual member function dispatches through the vtable of an object built on the device
// REQUIRES: c++
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)

struct Shape {
  virtual int area(int s);
  virtual ~Shape() = default;
};
struct Square : Shape {
  int area(int s) override;
};
#pragma omp begin declare target indirect
int Shape::area(int s) { dev_calls++; return 0 * s; }
int Square::area(int s) { dev_calls++; return s * s; }
#pragma omp end declare target

int main() {
  int (Shape::*pa)(int) = &Shape::area;
  int r = 0;
#pragma omp target map(from : r)
  {
    Square sq;
    Shape *volatile sp = &sq;
    r = (sp->*pa)(7);
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(r, 49);
  EXPECT_EQ(dev_calls, 1);
  return CONF_RESULT();
}

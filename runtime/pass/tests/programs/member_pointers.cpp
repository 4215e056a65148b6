// Calls through pointers to member functions, virtual and non-virtual.
#include "common.h"

struct Shape {
  int k;
  virtual int area(int x);
  int scale(int x);
};
struct Square : Shape {
  int area(int x) override;
};
#pragma omp declare target
int Shape::area(int x) { ++device_calls; return x + k; }
int Shape::scale(int x) { ++device_calls; return x * k; }
int Square::area(int x) { ++device_calls; return x * x + k; }
#pragma omp end declare target
#pragma omp declare target to(Shape::scale) indirect

int main() {
  reset_device_calls();
  int (Shape::*virt)(int) = &Shape::area;
  int (Shape::*plain)(int) = &Shape::scale;
  int r[2] = {0, 0};
#pragma omp target map(tofrom: r)
  {
    Square sq;
    sq.k = 3;
    Shape *s = &sq;
    r[0] = (s->*virt)(5);  // Square::area through the device-built object's vtable
    r[1] = (s->*plain)(5); // Shape::scale through a host function address
  }
  int bad = r[0] != 28 || r[1] != 15;
  std::printf("r=%d,%d\n", r[0], r[1]);
  report_device_calls(2);
  return bad;
}

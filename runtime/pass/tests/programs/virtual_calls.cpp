// Virtual calls on objects mapped from the host (host vtable pointer) and on
// objects built on the device (device vtable pointer).
#include "common.h"

struct Animal {
  int legs;
  virtual int speak(int x);
  virtual int walk(int x);
};
struct Dog : Animal {
  int speak(int x) override;
};
#pragma omp declare target
int Animal::speak(int x) { ++device_calls; return x + 100; }
int Animal::walk(int x) { ++device_calls; return x * legs; }
int Dog::speak(int x) { ++device_calls; return x + 200; }
#pragma omp end declare target

int main() {
  reset_device_calls();
  Dog host_dog;
  host_dog.legs = 4;
  int r[4] = {0, 0, 0, 0};
#pragma omp target map(to: host_dog) map(tofrom: r)
  {
    Animal *mapped = &host_dog;
    r[0] = mapped->speak(1);
    r[1] = mapped->walk(2);
    Dog device_dog;
    device_dog.legs = 3;
    Animal *built = &device_dog;
    r[2] = built->speak(3);
    r[3] = built->walk(4);
  }
  int bad = r[0] != 201 || r[1] != 8 || r[2] != 203 || r[3] != 12;
  std::printf("r=%d,%d,%d,%d\n", r[0], r[1], r[2], r[3]);
  report_device_calls(4);
  return bad;
}

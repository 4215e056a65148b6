// A device global whose destructor calls a function nothing else calls: on
// sim a GPU image's JIT compiles that function first while the program
// exits, from __tgt_unregister_lib (an exit handler), when the image's
// destructors run. Prints 7.
#include <cstdio>

#pragma omp declare target
int Seen = 0;
__attribute__((noinline)) int onlyAtExit(int I) { return I * 3 + 1; }
struct S {
  S() : I(7) {}
  ~S() { Seen = onlyAtExit(I); }
  int I;
};
S Global;
#pragma omp end declare target

int main() {
  int R = 0;
#pragma omp target map(from : R)
  R = Global.I;
  std::printf("%d\n", R);
  return 0;
}

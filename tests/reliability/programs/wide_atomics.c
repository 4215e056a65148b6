// A kernel that calls into libatomic (atomic load and store of a struct too
// wide for one instruction), then keeps the program, and so its executor,
// alive until a line arrives on stdin.
#include <stdio.h>

struct wide {
  long v[4];
};

int main(void) {
  struct wide w = {{1, 2, 3, 4}}, got = {{0}};
#pragma omp target map(to : w) map(from : got)
  {
    struct wide tmp;
    __atomic_load(&w, &tmp, __ATOMIC_SEQ_CST);
    tmp.v[3] += 38;
    __atomic_store(&got, &tmp, __ATOMIC_SEQ_CST);
  }
  printf("got=%ld\n", got.v[3]);
  fflush(stdout);
  getchar();
  return 0;
}

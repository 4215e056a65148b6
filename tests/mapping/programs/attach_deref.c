/* map(tofrom: *ptr) of an int (4 bytes) next to its 8-byte ATTACH item, and
 * of a struct through a pointer. */
#include <stdio.h>

int main(void) {
  int x = 5;
  int *ptr = &x;
  #pragma omp target map(tofrom: *ptr)
  *ptr += 10;
  struct P { double a, b; } pt = {1.5, 2.5}, *pp = &pt;
  #pragma omp target map(tofrom: *pp)
  { pp->a *= 2; pp->b += 1; }
  char c = 'a', *pc = &c;
  #pragma omp target map(tofrom: pc[0])
  *pc += 1;
  printf("x=%d pt=%.1f %.1f c=%c\n", x, pt.a, pt.b, c);
  return x == 15 && pt.a == 3.0 && pt.b == 3.5 && c == 'b' ? 0 : 3;
}

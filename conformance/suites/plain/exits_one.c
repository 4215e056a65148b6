/* Returns 1 on purpose; ompsim-expectations.txt expects that failure. */
int main(void) {
  int x = 0;
#pragma omp target map(tofrom : x)
  x = 1;
  return x;
}

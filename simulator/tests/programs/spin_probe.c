// Device-image probe for timeout and executor-death tests: the kernel spins
// until the flag it is given becomes non-zero.
int main(void) {
  int flag = 0;
#pragma omp target map(to : flag)
  {
    while (*(volatile int *)&flag == 0) {
    }
  }
  return 0;
}

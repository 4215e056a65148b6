/* A kernel that waits, asleep, until it is killed: many of them at once cost no CPU. */
#include <stdio.h>
#include <unistd.h>
int main(void) {
  int stop = 0;
#pragma omp target map(to : stop)
  {
    while (!*(volatile int *)&stop)
      usleep(10000);
  }
  printf("stopped\n");
  return 1;
}

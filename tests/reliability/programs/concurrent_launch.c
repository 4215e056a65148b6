/* Several host threads launch target regions at once, on one device or
 * spread over all devices (argv[1] = "one" or "all"). Each region calls an
 * indirect function through a host pointer translated on the device with
 * the explicit translate API, and every result is checked on the host. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__kmpc_target_translate_fptr(void *host_ptr);

int add1(int x) { return x + 1; }
int mul3(int x) { return x * 3; }
#pragma omp declare target to(add1, mul3) indirect

enum { THREADS = 4, ROUNDS = 25, N = 64 };

int main(int argc, char **argv) {
  int spread = argc > 1 && !strcmp(argv[1], "all");
  int devices = omp_get_num_devices();
  if (devices < 1) {
    fprintf(stderr, "no devices\n");
    return 2;
  }
  int bad = 0;
#pragma omp parallel num_threads(THREADS) reduction(+ : bad)
  {
    int t = omp_get_thread_num();
    int dev = spread ? t % devices : 0;
    for (int round = 0; round < ROUNDS; ++round) {
      int in[N], out[N];
      int (*fp)(int) = (t + round) % 2 ? add1 : mul3;
      for (int i = 0; i < N; ++i)
        in[i] = t * 1000 + round * 10 + i;
#pragma omp target teams distribute parallel for device(dev) map(to : in) map(from : out) num_teams(2)
      for (int i = 0; i < N; ++i) {
        int (*f)(int) = (int (*)(int))__kmpc_target_translate_fptr((void *)fp);
        out[i] = f(in[i]);
      }
      for (int i = 0; i < N; ++i)
        if (out[i] != ((t + round) % 2 ? in[i] + 1 : in[i] * 3))
          ++bad;
    }
  }
  printf("devices=%d threads=%d mismatches=%d\n", devices, THREADS, bad);
  return bad != 0;
}

/* One host thread per device launches a kernel on its device at once; each
 * kernel calls an indirect function through a host pointer translated on the
 * device and writes device-specific results, checked on the host. With
 * argv[1] = "hold" the program then waits for a line on stdin, so a test can
 * look at the idle executors. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

void *__kmpc_target_translate_fptr(void *host_ptr);

int scale(int x) { return x * 3; }
#pragma omp declare target to(scale) indirect

enum { N = 256 };

int main(int argc, char **argv) {
  int devices = omp_get_num_devices();
  if (devices < 1) {
    fprintf(stderr, "no devices\n");
    return 2;
  }
  int bad = 0;
  int (*fp)(int) = scale;
#pragma omp parallel for num_threads(devices) schedule(static, 1) reduction(+ : bad)
  for (int d = 0; d < devices; ++d) {
    int buf[N];
    for (int i = 0; i < N; ++i)
      buf[i] = i;
#pragma omp target teams distribute parallel for device(d) map(tofrom : buf) num_teams(2)
    for (int i = 0; i < N; ++i) {
      int (*f)(int) = (int (*)(int))__kmpc_target_translate_fptr((void *)fp);
      buf[i] = f(buf[i]) + d;
    }
    for (int i = 0; i < N; ++i)
      bad += buf[i] != i * 3 + d;
  }
  printf("devices=%d mismatches=%d\n", devices, bad);
  fflush(stdout);
  if (argc > 1 && !strcmp(argv[1], "hold")) {
    char line[16];
    if (!fgets(line, sizeof line, stdin))
      line[0] = 0;
  }
  return bad != 0;
}

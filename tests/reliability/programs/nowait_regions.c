/* target nowait regions from several host tasks, with depend chains and a
 * taskwait; each region calls a translated indirect function. */
#include <stdio.h>

void *__kmpc_target_translate_fptr(void *host_ptr);

int twice(int x) { return 2 * x; }
int plus7(int x) { return x + 7; }
#pragma omp declare target to(twice, plus7) indirect

enum { CHAINS = 8, N = 32 };

int main(void) {
  int data[CHAINS][N];
  for (int c = 0; c < CHAINS; ++c)
    for (int i = 0; i < N; ++i)
      data[c][i] = c * 100 + i;
  int (*first)(int) = twice, (*second)(int) = plus7;
#pragma omp parallel num_threads(4)
#pragma omp single
  for (int c = 0; c < CHAINS; ++c) {
    int *row = data[c];
#pragma omp target nowait map(tofrom : row[0 : N]) depend(inout : data[c])
    for (int i = 0; i < N; ++i)
      row[i] = ((int (*)(int))__kmpc_target_translate_fptr((void *)first))(row[i]);
#pragma omp target nowait map(tofrom : row[0 : N]) depend(inout : data[c])
    for (int i = 0; i < N; ++i)
      row[i] = ((int (*)(int))__kmpc_target_translate_fptr((void *)second))(row[i]);
  }
#pragma omp taskwait
  int bad = 0;
  for (int c = 0; c < CHAINS; ++c)
    for (int i = 0; i < N; ++i)
      bad += data[c][i] != 2 * (c * 100 + i) + 7;
  printf("chains=%d mismatches=%d\n", CHAINS, bad);
  return bad != 0;
}

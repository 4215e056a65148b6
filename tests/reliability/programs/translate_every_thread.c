/* Every device thread of every team translates every table entry (and a
 * miss) at once; each thread records what it saw and the host checks all. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>

void *__kmpc_target_translate_fptr(void *host_ptr);

int f0(int x) { return x + 10; }
int f1(int x) { return x + 11; }
int f2(int x) { return x + 12; }
int f3(int x) { return x + 13; }
#pragma omp declare target to(f0, f1, f2, f3) indirect
int not_indirect(int x) { return x; }

enum { TEAMS = 8, THREADS = 8, SLOTS = TEAMS * THREADS, REPS = 200 };

int main(void) {
  int (*table[4])(int) = {f0, f1, f2, f3};
  uintptr_t miss = (uintptr_t)not_indirect;
  int ok[SLOTS] = {0}, seen[SLOTS] = {0};
#pragma omp target teams num_teams(TEAMS) thread_limit(THREADS) map(to : table) map(tofrom : ok, seen)
#pragma omp parallel num_threads(THREADS)
  {
    int slot = omp_get_team_num() * THREADS + omp_get_thread_num();
    int good = 1;
    for (int rep = 0; rep < REPS; ++rep) {
      for (int k = 0; k < 4; ++k) {
        int (*f)(int) = (int (*)(int))__kmpc_target_translate_fptr((void *)table[k]);
        good &= f(rep) == rep + 10 + k;
      }
      good &= __kmpc_target_translate_fptr((void *)miss) == (void *)miss;
      good &= __kmpc_target_translate_fptr(0) == 0;
    }
    if (slot < SLOTS) {
      ok[slot] = good;
      seen[slot] = 1;
    }
  }
  int threads = 0, good = 0;
  for (int i = 0; i < SLOTS; ++i) {
    threads += seen[i] == 1;
    good += seen[i] == 1 && ok[i] == 1;
  }
  printf("threads=%d good=%d\n", threads, good);
  return !(threads > 0 && good == threads);
}

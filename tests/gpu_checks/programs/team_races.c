// A kernel's teams on one array or counter, one kernel a mode (argv[1]):
// each team adding to a mapped counter, a declare-target global or a
// device-heap block without an atomic, or writing its neighbour's element
// too; and clean kernels (each team its own elements, an atomic count; a
// count in a critical region). On a GPU the teams run at once and the racy
// ones lose updates or give a result that depends on which team came last.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEAMS 16

// Each team writes its own elements, and counts itself atomically.
static int clean(void) {
  int a[TEAMS] = {0}, count = 0;
#pragma omp target teams distribute num_teams(TEAMS) map(tofrom : a, count)
  for (int i = 0; i < TEAMS; ++i) {
    a[i] = i;
#pragma omp atomic
    count += 1;
  }
  int sum = 0;
  for (int i = 0; i < TEAMS; ++i)
    sum += a[i];
  return sum + count;
}

// Two threads of each team add one to the counter in a critical region
// (one lock for the whole device, as on a GPU); 1 when no update is lost
// (a host offload may run fewer teams and threads).
static int critical(void) {
  int count = 0, ran = 0;
#pragma omp target teams num_teams(TEAMS) map(tofrom : count, ran)
#pragma omp parallel num_threads(2)
  {
#pragma omp critical
    count += 1;
#pragma omp atomic
    ran += 1;
  }
  return count == ran;
}

// Each team adds one to the counter, with no atomic.
static int lost(void) {
  int count = 0;
#pragma omp target teams num_teams(TEAMS) map(tofrom : count)
  {
    if (omp_get_thread_num() == 0)
      count += 1;
  }
  return count;
}

#pragma omp declare target
int hits;
#pragma omp end declare target

// Each team adds one to a declare-target global, with no atomic.
static int global(void) {
  hits = 0;
#pragma omp target update to(hits)
#pragma omp target teams num_teams(TEAMS)
  {
    if (omp_get_thread_num() == 0)
      hits += 1;
  }
#pragma omp target update from(hits)
  return hits;
}

// Team t writes elements t and t + 1.
static int overlap(void) {
  int a[TEAMS + 1] = {0};
#pragma omp target teams num_teams(TEAMS) map(tofrom : a)
  {
    int t = omp_get_team_num();
    if (omp_get_thread_num() == 0) {
      a[t] = t;
      a[t + 1] = t;
    }
  }
  return a[TEAMS];
}

#pragma omp declare target
int *counts;
#pragma omp end declare target

// A device-heap block one kernel allocates, to which the next kernel's teams
// each add one, with no atomic; the last kernel reads and frees it.
static int heap(void) {
  int total = 0;
#pragma omp target
  {
    counts = (int *)malloc(sizeof(int));
    counts[0] = 0;
  }
#pragma omp target teams num_teams(TEAMS)
  {
    if (omp_get_thread_num() == 0)
      counts[0] += 1;
  }
#pragma omp target map(from : total)
  {
    total = counts[0];
    free(counts);
  }
  return total;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "clean";
  int r = !strcmp(mode, "lost")       ? lost()
          : !strcmp(mode, "overlap")  ? overlap()
          : !strcmp(mode, "critical") ? critical()
          : !strcmp(mode, "global")   ? global()
          : !strcmp(mode, "heap")     ? heap()
                                      : clean();
  printf("%s %d\n", mode, r);
  return 0;
}

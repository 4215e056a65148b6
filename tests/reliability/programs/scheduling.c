/* How ompsim schedules the threads that run target regions.
 *
 * slice: the scheduler slice (sched_getattr's sched_runtime) of the thread
 * a region runs on, read inside the region: a synchronous region and a
 * `target nowait` one (which libomp runs on a hidden helper thread), and the
 * initial thread's own. On ours-host a region runs in the thread that
 * launches it, so the figures are those of the launching threads.
 *
 * handover N: 2 host threads launch N regions each while the test keeps
 * every CPU busy. There the sim plugin wakes the executor's device thread
 * on its own CPU, narrowing that thread's affinity for the wake-up; every
 * kernel reports how many CPUs its thread may run on, which must be the
 * executor's whole mask (the host's, which it inherits), and each region
 * increments a counter of its own. Each host thread moves itself to the
 * next CPU before every launch, so that the device thread it wakes has
 * mostly run somewhere else (else the plugin narrows nothing). */
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#pragma omp declare target
/* The kernel's struct sched_attr, first version. */
struct attr48 {
  uint32_t size, policy;
  uint64_t flags;
  int32_t nice;
  uint32_t priority;
  uint64_t runtime, deadline, period;
};

static long long slice_of_this_thread(void) {
  struct attr48 a;
  memset(&a, 0, sizeof a);
  if (syscall(SYS_sched_getattr, 0, &a, sizeof a, 0) != 0)
    return -1;
  return (long long)a.runtime;
}

static int cpus_of_this_thread(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return -1;
  return CPU_COUNT(&set);
}
#pragma omp end declare target

static int slice(void) {
  long long initial = slice_of_this_thread(), sync = -2, nowait = -2;
#pragma omp target map(from : sync)
  sync = slice_of_this_thread();
#pragma omp target nowait map(from : nowait)
  nowait = slice_of_this_thread();
#pragma omp taskwait
  printf("slice: initial=%lld target=%lld nowait=%lld\n", initial, sync, nowait);
  return 0;
}

static int handover(int n) {
  int host_cpus = cpus_of_this_thread(), narrowed = 0, wrong = 0, ids[CPU_SETSIZE], nids = 0;
  cpu_set_t all;
  CPU_ZERO(&all);
  sched_getaffinity(0, sizeof all, &all);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &all))
      ids[nids++] = c;
#pragma omp parallel num_threads(2) reduction(+ : narrowed, wrong)
  {
    int count = 0, me = omp_get_thread_num();
    for (int i = 0; i < n; ++i) {
      int cpus = 0;
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(ids[(i + me) % nids], &one);
      sched_setaffinity(0, sizeof one, &one);
#pragma omp target map(tofrom : count) map(from : cpus)
      {
        count += 1;
        cpus = cpus_of_this_thread();
      }
      narrowed += cpus != host_cpus;
    }
    sched_setaffinity(0, sizeof all, &all);
    wrong += count != n;
  }
  printf("handover: launches=%d host_cpus=%d narrowed=%d wrong=%d\n", 2 * n, host_cpus, narrowed, wrong);
  return narrowed || wrong;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "slice"))
    return slice();
  if (argc > 2 && !strcmp(argv[1], "handover"))
    return handover(atoi(argv[2]));
  fprintf(stderr, "usage: %s slice | handover N\n", argv[0]);
  return 2;
}

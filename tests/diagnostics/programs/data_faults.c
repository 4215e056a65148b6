/* Device faults on data addresses; argv[1] picks what the kernel touches. */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int host_table[16]; /* host data only: never mapped, not declare target */

__attribute__((noinline)) int read_stack(void) {
  volatile int local[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  int *p = (int *)local;
  int r = 0;
#pragma omp target map(from : r) firstprivate(p)
  r = p[2];
  return r;
}

__attribute__((noinline)) int read_implicit(void) {
  volatile int local[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  int *p = (int *)local;
  int r = 0;
  /* No clause names p: clang maps it as a zero-length section, which finds nothing. */
#pragma omp target map(from : r)
  r = p[2];
  return r;
}

__attribute__((noinline)) int read_heap(void) {
  int *h = (int *)malloc(64 * sizeof(int));
  int r = 0;
#pragma omp target map(from : r) firstprivate(h)
  r = h[3];
  free(h);
  return r;
}

__attribute__((noinline)) int write_global(void) {
  int *g = host_table;
#pragma omp target firstprivate(g)
  g[5] = 1;
  return 0;
}

__attribute__((noinline)) int read_mapped(void) {
  int *a = (int *)malloc(64 * sizeof(int));
  int r = 0;
  for (int i = 0; i < 64; ++i)
    a[i] = i;
#pragma omp target enter data map(to : a[0:64])
#pragma omp target map(from : r) firstprivate(a)
  r = a[3];
#pragma omp target exit data map(delete : a[0:64])
  free(a);
  return r;
}

struct holder {
  long len;
  int *data;
};

__attribute__((noinline)) int read_member(void) {
  struct holder s = {64, (int *)malloc(64 * sizeof(int))};
  int r = 0;
#pragma omp target enter data map(to : s.data[0:64])
#pragma omp target map(from : r)
  r = s.data[3];
#pragma omp target exit data map(delete : s.data[0:64])
  return r;
}

__attribute__((noinline)) int read_private_member(void) {
  struct holder s = {64, (int *)malloc(64 * sizeof(int))};
  int r = 0;
#pragma omp target enter data map(to : s.data[0:64])
#pragma omp target map(from : r) firstprivate(s)
  r = s.data[3];
#pragma omp target exit data map(delete : s.data[0:64])
  return r;
}

__attribute__((noinline)) int read_freed(void) {
  /* 64 MiB: the device pointer outlives the mapping of its block. */
  size_t n = (size_t)16 << 20;
  int *big = (int *)calloc(n, sizeof(int));
  int *dev = 0, r = 0;
#pragma omp target enter data map(to : big[0:n])
  dev = (int *)omp_get_mapped_ptr(big, omp_get_default_device());
#pragma omp target exit data map(delete : big[0:n])
#pragma omp target map(from : r) is_device_ptr(dev)
  r = dev[n / 2];
  free(big);
  return r;
}

/* Device 1's memory used by a region on device 0 (run with two devices). */
__attribute__((noinline)) int read_other_device(void) {
  int *d1 = (int *)omp_target_alloc(64 * sizeof(int), 1);
  int r = 0;
#pragma omp target device(0) map(from : r) is_device_ptr(d1)
  r = d1[3];
  omp_target_free(d1, 1);
  return r;
}

/* A thread that lends the address of its stack and waits until main is done with it. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int *lent;
static int finished;

static void *lender(void *unused) {
  int local[8] = {0};
  (void)unused;
  pthread_mutex_lock(&lock);
  lent = local;
  pthread_cond_broadcast(&cond);
  while (!finished)
    pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  return 0;
}

__attribute__((noinline)) int read_other_thread(void) {
  pthread_t t;
  pthread_create(&t, 0, lender, 0);
  pthread_mutex_lock(&lock);
  while (!lent)
    pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  int *q = lent, r = 0;
#pragma omp target map(from : r) firstprivate(q)
  r = q[1];
  return r; /* not reached on sim: the region faults */
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "";
  int r = !strcmp(what, "stack")    ? read_stack()
          : !strcmp(what, "heap")   ? read_heap()
          : !strcmp(what, "implicit") ? read_implicit()
          : !strcmp(what, "global") ? write_global()
          : !strcmp(what, "mapped") ? read_mapped()
          : !strcmp(what, "member") ? read_member()
          : !strcmp(what, "privmember") ? read_private_member()
          : !strcmp(what, "freed")  ? read_freed()
          : !strcmp(what, "thread") ? read_other_thread()
          : !strcmp(what, "device1") ? read_other_device()
                                    : -1;
  printf("r=%d\n", r);
  return 0;
}

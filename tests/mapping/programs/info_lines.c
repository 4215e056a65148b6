/* Constructs whose LIBOMPTARGET_INFO lines ompsim prints as stock
 * libomptarget 22 does: argv[1] picks one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* to/from/tofrom items, an implicit scalar and a zero-length section of
 * unmapped data (no device counterpart). */
static int target(void) {
  int a[4] = {1, 2, 3, 4}, b[4] = {0}, c[4] = {5, 6, 7, 8}, d[2] = {0}, s = 3;
#pragma omp target map(to : a) map(from : b) map(tofrom : c) map(to : d[0 : 0])
  for (int i = 0; i < 4; ++i) {
    b[i] = a[i] * s;
    c[i] += a[i];
  }
  printf("%d %d\n", b[3], c[3]);
  return 0;
}

/* A data region with a nested target region: the region finds its items
 * mapped and copies nothing. */
static int data(void) {
  int a[4] = {1, 2, 3, 4}, b[4];
#pragma omp target data map(to : a) map(from : b)
  {
#pragma omp target map(from : b) map(to : a)
    for (int i = 0; i < 4; ++i)
      b[i] = a[i] * 2;
  }
  printf("%d\n", b[3]);
  return 0;
}

/* enter/exit data: counts up and down, release, delete, a section of an
 * array, a heap section through a pointer (its attachment), always. */
static int enterexit(void) {
  int a[8], b[4] = {1, 2, 3, 4}, c = 5;
  int *p = (int *)malloc(4 * sizeof(int));
  for (int i = 0; i < 8; ++i)
    a[i] = i;
  for (int i = 0; i < 4; ++i)
    p[i] = 10 * i;
#pragma omp target enter data map(to : a[2 : 4], b) map(alloc : c)
#pragma omp target enter data map(to : b) map(always, to : c)
#pragma omp target enter data map(to : p[0 : 4])
#pragma omp target map(tofrom : a[2 : 4], p[0 : 4]) map(from : c) map(to : b[0 : 0])
  {
    for (int i = 2; i < 6; ++i)
      a[i] += 100;
    for (int i = 0; i < 4; ++i)
      p[i] += 1;
    c = b[1];
  }
#pragma omp target exit data map(release : b)
#pragma omp target exit data map(from : c) map(delete : a[2 : 4])
#pragma omp target exit data map(delete : b) map(from : p[0 : 4])
  printf("%d %d %d\n", a[3], c, p[2]);
  free(p);
  return 0;
}

/* target update to and from a mapped array and a section of it, and of an
 * unmapped one (nothing happens). */
static int update(void) {
  int a[6] = {1, 2, 3, 4, 5, 6}, u[2] = {0};
#pragma omp target enter data map(alloc : a)
#pragma omp target update to(a)
#pragma omp target
  for (int i = 0; i < 6; ++i)
    a[i] *= 10;
#pragma omp target update from(a[1 : 3]) to(u)
#pragma omp target exit data map(from : a)
  printf("%d %d %d\n", a[0], a[1], a[5]);
  return 0;
}

/* A mapping left at exit: the tables printed as the devices go. */
static int leftover(void) {
  static int g[3] = {1, 2, 3};
#pragma omp target enter data map(to : g)
  printf("%d\n", g[2]);
  return 0;
}

struct S {
  int n;
  int *p;
  double d[2];
};
#pragma omp declare mapper(struct S s) map(s.n, s.d) map(s.p[0 : s.n])
struct T {
  int a;
  int b[3];
};
int G[4] = {1, 2, 3, 4};
#pragma omp declare target(G)

/* Struct members: the combined entry and its members. */
static int members(void) {
  struct T t = {1, {2, 3, 4}};
#pragma omp target map(tofrom : t.a, t.b[1 : 2])
  {
    t.a += t.b[1];
    t.b[2] = 9;
  }
  printf("%d %d\n", t.a, t.b[2]);
  return 0;
}

/* A declare mapper's components, with a pointer member's pointee. */
static int mapper(void) {
  struct S s;
  s.n = 3;
  s.p = (int *)malloc(3 * sizeof(int));
  s.d[0] = 1.5;
  for (int i = 0; i < 3; ++i)
    s.p[i] = i;
#pragma omp target map(tofrom : s)
  {
    s.p[2] += 5;
    s.d[0] *= 2;
  }
  printf("%d %g\n", s.p[2], s.d[0]);
  free(s.p);
  return 0;
}

/* A declare target global: an infinite count, its own name in the tables. */
static int global(void) {
#pragma omp target map(tofrom : G[1 : 2])
  G[1] += 10;
#pragma omp target update from(G)
  printf("%d\n", G[1]);
  return 0;
}

/* ompx_hold and present, and a section inside a mapped one. */
static int hold(void) {
  int x = 4, y[8] = {0};
#pragma omp target data map(ompx_hold, tofrom : x)
  {
#pragma omp target map(present, tofrom : x)
    x += 1;
  }
#pragma omp target enter data map(to : y[2 : 4])
#pragma omp target map(y[3 : 1])
  y[3] = 7;
#pragma omp target exit data map(from : y[2 : 4])
  printf("%d %d\n", x, y[3]);
  return 0;
}

/* A heap section through a pointer, and use_device_ptr. */
static int ptr(void) {
  int *p = (int *)malloc(4 * sizeof(int));
  for (int i = 0; i < 4; ++i)
    p[i] = i;
#pragma omp target map(tofrom : p[0 : 4])
  p[1] += 5;
#pragma omp target data map(tofrom : p[0 : 4]) use_device_ptr(p)
  printf("%d\n", p != 0);
  printf("%d\n", p[1]);
  free(p);
  return 0;
}

/* The nowait entry points: stock names their regions "..._nowait_mapper". */
static int nowait(void) {
  int a[4] = {1, 2, 3, 4};
#pragma omp target enter data map(to : a) nowait
#pragma omp taskwait
#pragma omp target update from(a) nowait
#pragma omp taskwait
#pragma omp target map(tofrom : a) nowait
  a[1] += 1;
#pragma omp taskwait
#pragma omp target exit data map(from : a) nowait
#pragma omp taskwait
  printf("%d\n", a[1]);
  return 0;
}

/* firstprivate arrays: the small ones travel in one copy, a large one alone. */
static int firstprivate(void) {
  int a[4] = {1, 2, 3, 4}, b[3] = {5, 6, 7}, out = 0;
  double big[200];
  for (int i = 0; i < 200; ++i)
    big[i] = i;
#pragma omp target firstprivate(a, b, big) map(from : out)
  out = a[1] + b[2] + (int)big[199];
  printf("%d\n", out);
  return 0;
}

int main(int argc, char **argv) {
  const char *Mode = argc > 1 ? argv[1] : "";
  if (!strcmp(Mode, "target"))
    return target();
  if (!strcmp(Mode, "data"))
    return data();
  if (!strcmp(Mode, "enterexit"))
    return enterexit();
  if (!strcmp(Mode, "update"))
    return update();
  if (!strcmp(Mode, "leftover"))
    return leftover();
  if (!strcmp(Mode, "members"))
    return members();
  if (!strcmp(Mode, "mapper"))
    return mapper();
  if (!strcmp(Mode, "global"))
    return global();
  if (!strcmp(Mode, "hold"))
    return hold();
  if (!strcmp(Mode, "ptr"))
    return ptr();
  if (!strcmp(Mode, "nowait"))
    return nowait();
  if (!strcmp(Mode, "firstprivate"))
    return firstprivate();
  fprintf(
      stderr,
      "usage: %s target|data|enterexit|update|leftover|members|mapper|global|hold|ptr|nowait|firstprivate\n",
      argv[0]);
  return 2;
}

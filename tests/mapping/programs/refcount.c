/* Reference counting as stock libomptarget: dynamic and ompx_hold counts,
 * present, always, delete, release, zero-length sections, nested target data.
 * Prints what a program can observe: host values after each construct and
 * whether the data is present. */
#include <omp.h>
#include <stdio.h>

static int dev;
#define PRESENT(x) omp_target_is_present(&(x), dev)

int main(void) {
  dev = omp_get_default_device();
  int a = 1, b[4] = {0, 1, 2, 3}, c = 7;

  /* Nested target data: copy-back only when the outermost releases. */
  #pragma omp target data map(tofrom: a)
  {
    #pragma omp target data map(tofrom: a)
    {
      #pragma omp target map(tofrom: a)
      a += 10;
    }
    printf("nested inner end: a=%d present=%d\n", a, PRESENT(a));
    #pragma omp target update from(a)
    printf("after update from: a=%d\n", a);
  }
  printf("nested outer end: a=%d present=%d\n", a, PRESENT(a));

  /* Dynamic count: two enters need two exits; `always` copies regardless. */
  #pragma omp target enter data map(to: b)
  #pragma omp target enter data map(to: b)
  #pragma omp target
  for (int i = 0; i < 4; ++i) b[i] += 100;
  #pragma omp target exit data map(from: b)
  printf("first exit: b0=%d present=%d\n", b[0], PRESENT(b));
  #pragma omp target exit data map(always, from: b[1:2]) map(release: b)
  printf("always from: b1=%d b3=%d present=%d\n", b[1], b[3], PRESENT(b));

  /* delete drops the dynamic count at once, without copying. */
  #pragma omp target enter data map(to: c)
  #pragma omp target enter data map(to: c)
  #pragma omp target enter data map(to: c)
  #pragma omp target
  c = 70;
  #pragma omp target exit data map(delete: c)
  printf("delete: c=%d present=%d\n", c, PRESENT(c));

  /* ompx_hold keeps data through a delete until the structured region ends. */
  int h = 3;
  #pragma omp target data map(ompx_hold, tofrom: h)
  {
    #pragma omp target enter data map(to: h)
    #pragma omp target exit data map(delete: h)
    printf("hold after delete: present=%d\n", PRESENT(h));
    #pragma omp target
    h = 33;
  }
  printf("hold end: h=%d present=%d\n", h, PRESENT(h));

  /* present: fine when mapped; to on a present item does not copy. */
  int m = 5;
  #pragma omp target enter data map(to: m)
  m = 6;
  #pragma omp target map(present, to: m) map(from: a)
  a = m;
  printf("present to: a=%d\n", a);
  #pragma omp target map(always, to: m) map(from: a)
  a = m;
  printf("always to: a=%d\n", a);
  #pragma omp target exit data map(release: m)

  /* Zero-length sections: not mapped, no copy, and a mapped array's
   * zero-length section finds it. */
  int z[4] = {1, 2, 3, 4};
  int *pz = z;
  #pragma omp target enter data map(to: z)
  #pragma omp target map(tofrom: pz[0:0]) map(from: a)
  a = pz[2];
  printf("zero-length: a=%d present=%d\n", a, PRESENT(z));
  #pragma omp target exit data map(delete: z)
  #pragma omp target enter data map(to: pz[0:0])
  printf("zero-length unmapped: present=%d\n", PRESENT(z));
  return 0;
}

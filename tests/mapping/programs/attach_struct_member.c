/* map(tofrom: s, s.data[:n]) attaches the device copy of s.data; arrays of
 * structs with pointer members; a struct mapped before its pointee. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

struct S { int n; int *data; };

int main(void) {
  int dev = omp_get_default_device();
  struct S s = {4, malloc(4 * sizeof(int))};
  for (int i = 0; i < 4; ++i) s.data[i] = i;
  #pragma omp target map(tofrom: s, s.data[:s.n])
  for (int i = 0; i < s.n; ++i) s.data[i] *= 3;
  printf("member: %d %d %d %d\n", s.data[0], s.data[1], s.data[2], s.data[3]);

  struct S arr[3];
  for (int k = 0; k < 3; ++k) {
    arr[k].n = 2;
    arr[k].data = malloc(2 * sizeof(int));
    arr[k].data[0] = k, arr[k].data[1] = 10 * k;
  }
  #pragma omp target enter data map(to: arr)
  for (int k = 0; k < 3; ++k) {
    #pragma omp target enter data map(to: arr[k].data[0:2])
  }
  #pragma omp target
  for (int k = 0; k < 3; ++k) arr[k].data[1] += arr[k].data[0] + 1;
  for (int k = 0; k < 3; ++k) {
    #pragma omp target exit data map(from: arr[k].data[0:2])
  }
  #pragma omp target exit data map(from: arr)
  printf("array of structs: %d %d %d pointers kept=%d present=%d\n", arr[0].data[1], arr[1].data[1],
         arr[2].data[1], arr[2].data != 0, omp_target_is_present(arr, dev));
  int ok = s.data[3] == 9 && arr[0].data[1] == 1 && arr[1].data[1] == 12 && arr[2].data[1] == 23;
  return ok ? 0 : 3;
}

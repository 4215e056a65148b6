/* A map item whose type carries a bit the runtime does not implement (0x800,
 * which OpenMPOffloadMappingFlags reserves): the runtime must stop with one
 * line naming the bit, the variable and the program, not map it silently. */
#include <stdint.h>
#include <stdio.h>

void __tgt_target_data_begin_mapper(void *loc, int64_t device, int32_t n, void **bases,
                                    void **begins, int64_t *sizes, int64_t *types, void **names,
                                    void **mappers);

int main(void) {
  int x = 1;
  #pragma omp target map(tofrom: x)
  x += 1;
  void *bases[1] = {&x}, *begins[1] = {&x};
  int64_t sizes[1] = {sizeof(x)}, types[1] = {0x800 | 0x1};
  void *names[1] = {";x;unknown_map_bit.c;17;3;;"};
  __tgt_target_data_begin_mapper(NULL, -1, 1, bases, begins, sizes, types, names, NULL);
  printf("mapped x=%d without an error\n", x);
  return 0;
}

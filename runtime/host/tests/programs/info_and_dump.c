// __tgt_set_info_flag turns LIBOMPTARGET_INFO bits on and off at run time;
// ompx_dump_mapping_tables prints each device's mapping table;
// __tgt_print_device_info prints the device, UID included.
#include <omp.h>
#include <stdint.h>
#include <stdio.h>

void __tgt_set_info_flag(uint32_t);
int __tgt_print_device_info(int64_t);
void ompx_dump_mapping_tables(void);

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int dev = omp_get_default_device();
  int a[4] = {1, 2, 3, 4}, b[8] = {0};
  fprintf(stderr, "== transfers shown\n");
  __tgt_set_info_flag(0x20); // data transfers
#pragma omp target enter data map(to : a) device(dev)
  __tgt_set_info_flag(0);
  fprintf(stderr, "== transfers hidden\n");
#pragma omp target enter data map(to : b) device(dev)
  fprintf(stderr, "== end\n");
  printf("== dump\n"); // the dump goes to stdout, as stock's
  ompx_dump_mapping_tables();
#pragma omp target exit data map(release : a, b) device(dev)
  printf("== dump after release\n");
  ompx_dump_mapping_tables();
  printf("== end\n");
  printf("device uid: %s\n", omp_get_uid_from_device(dev));
  printf("print_device_info returns %d\n", __tgt_print_device_info(dev));
  return 0;
}

// Runtime-control entry points: __tgt_rtl_init/__tgt_rtl_deinit,
// __tgt_target_sync, record-replay on a device that cannot record, the
// kernel-language call configuration, and (with argument "query")
// __tgt_target_nowait_query with no async handle, which is fatal.
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

void __tgt_rtl_init(void);
void __tgt_rtl_deinit(void);
void __tgt_target_sync(void *, int, void *, void *);
void __tgt_target_nowait_query(void **);
int __tgt_activate_record_replay(int64_t, uint64_t, void *, bool, bool, bool, const char *);
int __tgt_target_kernel_replay(void *, int64_t, void *);
typedef struct { unsigned x, y, z; } dim3;
unsigned __llvmPushCallConfiguration(dim3, dim3, size_t, void *);
unsigned __llvmPopCallConfiguration(dim3 *, dim3 *, size_t *, void *);

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc > 1 && strcmp(argv[1], "query") == 0) {
    void *handle = NULL;
    printf("querying\n");
    __tgt_target_nowait_query(&handle);
    printf("query returned\n");
    return 0;
  }
  __tgt_rtl_init();
  int x = 0;
#pragma omp target map(tofrom : x)
  x = 1;
  __tgt_target_sync(NULL, omp_get_thread_num(), NULL, NULL);
  printf("region ran: x=%d\n", x);
  int dev = omp_get_default_device();
  printf("activate record: %d\n", __tgt_activate_record_replay(dev, 1 << 20, NULL, 1, 0, 0, NULL));
  printf("replay on the initial device: %d\n",
         __tgt_target_kernel_replay(NULL, omp_get_initial_device(), NULL));
  dim3 grid = {4, 2, 1}, block = {32, 1, 1}, g, b;
  size_t shared;
  void *stream = NULL, *in = &x;
  unsigned pushed = __llvmPushCallConfiguration(grid, block, 256, in);
  unsigned popped = __llvmPopCallConfiguration(&g, &b, &shared, &stream);
  printf("call configuration: %u %u grid=%u,%u,%u block=%u shared=%zu stream=%s\n", pushed, popped,
         g.x, g.y, g.z, b.x, shared, stream == in ? "same" : "other");
#pragma omp target map(tofrom : x)
  x += 1;
  printf("after more work: x=%d\n", x);
  __tgt_rtl_deinit();
  return 0;
}

// The legacy launch entry points, called as a pre-__tgt_target_kernel
// compiler would: a registered target region's id and hand-built map
// arrays. Version-1 arguments have no implicit kernel parameter, so the
// first argument (a literal) stands where clang-22 kernels take it.
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

// One record of clang-22's offload entry table (llvm::offloading::EntryTy).
struct Entry {
  uint64_t reserved;
  uint16_t version, kind;
  uint32_t flags;
  void *addr;
  const char *name;
  uint64_t size, data;
  void *aux;
};
extern struct Entry __start_llvm_offload_entries[] __attribute__((weak));
extern struct Entry __stop_llvm_offload_entries[] __attribute__((weak));

int __tgt_target(int64_t, void *, int32_t, void **, void **, int64_t *, int64_t *);
int __tgt_target_nowait(int64_t, void *, int32_t, void **, void **, int64_t *, int64_t *, int32_t,
                        void *, int32_t, void *);
int __tgt_target_mapper(void *, int64_t, void *, int32_t, void **, void **, int64_t *, int64_t *,
                        void **, void **);
int __tgt_target_nowait_mapper(void *, int64_t, void *, int32_t, void **, void **, int64_t *,
                               int64_t *, void **, void **, int32_t, void *, int32_t, void *);
int __tgt_target_teams(int64_t, void *, int32_t, void **, void **, int64_t *, int64_t *, int32_t,
                       int32_t);
int __tgt_target_teams_nowait(int64_t, void *, int32_t, void **, void **, int64_t *, int64_t *,
                              int32_t, int32_t, int32_t, void *, int32_t, void *);
int __tgt_target_teams_mapper(void *, int64_t, void *, int32_t, void **, void **, int64_t *,
                              int64_t *, void **, void **, int32_t, int32_t);
int __tgt_target_teams_nowait_mapper(void *, int64_t, void *, int32_t, void **, void **, int64_t *,
                                     int64_t *, void **, void **, int32_t, int32_t, int32_t, void *,
                                     int32_t, void *);

// The region the legacy calls launch: kernel(dyn_ptr, n, x).
void add_one(int *x, int n) {
#pragma omp target map(tofrom : x[0 : n])
  for (int i = 0; i < n; ++i)
    x[i] += 1;
}

static void *regionOf(const char *function) {
  for (struct Entry *e = __start_llvm_offload_entries; e < __stop_llvm_offload_entries; ++e)
    if (e->name && strstr(e->name, function))
      return e->addr;
  return NULL;
}

enum { N = 8 };

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int x[N] = {0};
  add_one(x, N); // the ordinary way first: the image is registered and works
  void *region = regionOf("_add_one_l");
  printf("region found: %s\n", region ? "yes" : "no");
  if (!region)
    return 2;
  int64_t dev = omp_get_default_device();
  intptr_t n = N;
  // dyn_ptr stand-in, n (literal), x (tofrom section, the kernel's pointer).
  void *bases[3] = {NULL, (void *)n, x}, *begins[3] = {NULL, (void *)n, x};
  int64_t sizes[3] = {0, sizeof(int), sizeof x};
  int64_t types[3] = {0x120, 0x320, 0x23}; // LITERAL|PARAM, +IMPLICIT, TO|FROM|PARAM
  int rc[8];
  rc[0] = __tgt_target(dev, region, 3, bases, begins, sizes, types);
  rc[1] = __tgt_target_nowait(dev, region, 3, bases, begins, sizes, types, 0, NULL, 0, NULL);
  rc[2] = __tgt_target_mapper(NULL, dev, region, 3, bases, begins, sizes, types, NULL, NULL);
  rc[3] = __tgt_target_nowait_mapper(NULL, dev, region, 3, bases, begins, sizes, types, NULL, NULL,
                                     0, NULL, 0, NULL);
  rc[4] = __tgt_target_teams(dev, region, 3, bases, begins, sizes, types, 1, 0);
  rc[5] = __tgt_target_teams_nowait(dev, region, 3, bases, begins, sizes, types, 1, 0, 0, NULL, 0,
                                    NULL);
  rc[6] = __tgt_target_teams_mapper(NULL, dev, region, 3, bases, begins, sizes, types, NULL, NULL,
                                    1, 0);
  rc[7] = __tgt_target_teams_nowait_mapper(NULL, dev, region, 3, bases, begins, sizes, types, NULL,
                                           NULL, 1, 0, 0, NULL, 0, NULL);
  printf("return codes: %d %d %d %d %d %d %d %d\n", rc[0], rc[1], rc[2], rc[3], rc[4], rc[5], rc[6],
         rc[7]);
  printf("x after 1 + 8 launches: %d %d ... %d\n", x[0], x[1], x[N - 1]);
  printf("x still mapped: %s\n", omp_target_is_present(x, (int)dev) ? "yes" : "no");
  return 0;
}

/* A "fake" offload program: builds its own offload descriptor, entries and
 * image bytes and drives the libomptarget ABI directly, so the tests can
 * hand the runtime inputs that no compiler emits.
 *
 * Usage: fake_program <case> <image file> <kernel name> <add1 global> <mul2 global>
 * Prints "fake: registered", "fake: launched", "fake: done" as it gets there. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ompsim/offload_abi.h"

void __tgt_register_lib(__tgt_bin_desc *desc);
void __tgt_unregister_lib(__tgt_bin_desc *desc);
int __tgt_target_kernel(ompsim_ident *loc, int64_t device, int32_t teams, int32_t threads,
                        void *region, __tgt_kernel_arguments *args);

static int host_add1(int x) { return x + 1; }
static int host_mul2(int x) { return x * 2; }
static char region_id; /* the kernel's host "region id" stub */
static ompsim_ident loc = {0, 2, 0, 22, ";fake_program.c;main;1;1;;"};

static char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(2); }
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = aligned_alloc(16, (*size + 31) & ~(size_t)15); /* a multiple of the alignment */
  if (fread(buf, 1, *size, f) != *size) { perror(path); exit(2); }
  fclose(f);
  return buf;
}

static __tgt_offload_entry entry(void *addr, const char *name, uint32_t flags, uint64_t size) {
  __tgt_offload_entry e = {0, 1, 1, flags, addr, (char *)name, size, 0, 0};
  return e;
}

static void launch(void) {
  __tgt_kernel_arguments args;
  memset(&args, 0, sizeof args);
  args.Version = 3;
  args.NumTeams[0] = 1;
  args.ThreadLimit[0] = 1;
  int rc = __tgt_target_kernel(&loc, -1, 1, 1, &region_id, &args);
  printf("fake: launched rc=%d\n", rc);
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s <case> <image> <kernel> <add1 global> <mul2 global>\n", argv[0]);
    return 2;
  }
  const char *c = argv[1], *kernel = argv[3], *add1 = argv[4], *mul2 = argv[5];
  size_t size;
  char *image = read_file(argv[2], &size);

  static __tgt_offload_entry table[8];
  int n = 0;
  table[n++] = entry((void *)host_add1, add1, OMPSIM_ENTRY_INDIRECT, 8);
  table[n++] = entry((void *)host_mul2, mul2, OMPSIM_ENTRY_INDIRECT, 8);
  table[n++] = entry(&region_id, kernel, 0, 0);
  char *entries_begin = (char *)table, *entries_end = (char *)(table + n);

  __tgt_device_image img = {image, image + size, table, table + n};
  __tgt_bin_desc desc = {1, &img, table, table + n};

  if (!strcmp(c, "truncated")) {
    img.ImageEnd = image + size / 3; /* headers survive, segments do not */
  } else if (!strcmp(c, "corrupted")) {
    uint64_t bad = 0x7fffffff00ull; /* e_phoff far past the end */
    memcpy(image + 0x20, &bad, 8);
  } else if (!strcmp(c, "machine")) {
    uint16_t aarch64 = 183; /* EM_AARCH64 */
    memcpy(image + 0x12, &aarch64, 2);
  } else if (!strcmp(c, "empty")) {
    img.ImageEnd = img.ImageStart;
  } else if (!strcmp(c, "no-images")) {
    desc.NumDeviceImages = 0;
  } else if (!strcmp(c, "null-address")) {
    table[0].Address = NULL;
  } else if (!strcmp(c, "misaligned")) {
    /* The same entries, starting 4 bytes past an aligned address. */
    char *copy = aligned_alloc(16, sizeof(table) + 16); /* sizeof(table) is 8 * 56 */
    memcpy(copy + 4, table, (size_t)n * sizeof(*table));
    entries_begin = copy + 4;
    entries_end = copy + 4 + (size_t)n * sizeof(*table);
  } else if (!strcmp(c, "unterminated-name")) {
    /* 64 name bytes without a NUL, right before an inaccessible page. */
    long page = sysconf(_SC_PAGESIZE);
    char *two = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(two + page, (size_t)page, PROT_NONE);
    memset(two + page - 64, 'A', 64);
    table[0].SymbolName = two + page - 64;
  } else if (!strcmp(c, "long-name")) {
    char *name = malloc(100001);
    memset(name, 'B', 100000);
    name[100000] = 0;
    table[0].SymbolName = name;
  } else if (!strcmp(c, "duplicate-host-pointer")) {
    table[1].Address = (void *)host_add1; /* mul2's device function under add1's host pointer */
  } else if (!strcmp(c, "missing-device-global")) {
    table[1].SymbolName = (char *)"__omp_offloading_fe00_0_nonexistent_l1";
  } else if (!strcmp(c, "vtable-size")) {
    table[1] = entry((void *)host_mul2, mul2, OMPSIM_ENTRY_INDIRECT_VTABLE, 12);
  } else if (!strcmp(c, "mixed-formats")) {
    /* A legacy (LLVM <= 19) entry first, then the LLVM 20+ entries. */
    static char mixed[sizeof(__tgt_offload_entry_legacy) + sizeof(table)] __attribute__((aligned(16)));
    __tgt_offload_entry_legacy legacy = {(void *)host_add1, (char *)add1, 8, OMPSIM_ENTRY_INDIRECT, 0};
    memcpy(mixed, &legacy, sizeof legacy);
    memcpy(mixed + sizeof legacy, &table[1], (size_t)(n - 1) * sizeof(*table));
    entries_begin = mixed;
    entries_end = mixed + sizeof legacy + (size_t)(n - 1) * sizeof(*table);
  } else if (!strcmp(c, "image-end-1m") || !strcmp(c, "image-end-4g")) {
    /* The image bytes end a page before a PROT_NONE guard; ImageEnd points
     * past them into the guard and beyond. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE), span = (size + page - 1) / page * page;
    char *m = mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(m + span, page, PROT_NONE);
    memcpy(m + span - size, image, size);
    img.ImageStart = m + span - size;
    img.ImageEnd = (char *)img.ImageStart + size + (c[10] == '1' ? (1u << 20) : (4ull << 30));
  } else if (!strcmp(c, "unmapped-images")) {
    desc.DeviceImages = (__tgt_device_image *)0x10;
  } else if (!strcmp(c, "unmapped-entries")) {
    /* A table whose end runs into a PROT_NONE page. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(two + page, page, PROT_NONE);
    entries_begin = two + page - (size_t)n * sizeof(*table);
    memcpy(entries_begin, table, (size_t)n * sizeof(*table));
    entries_end = entries_begin + 2 * (size_t)n * sizeof(*table);
  } else if (!strcmp(c, "unregister-without-register")) {
    __tgt_unregister_lib(&desc);
    printf("fake: done\n");
    return 0;
  } else if (strcmp(c, "ok") && strcmp(c, "double-register") && strcmp(c, "bitcode")) {
    fprintf(stderr, "unknown case %s\n", c);
    return 2;
  }
  img.EntriesBegin = (__tgt_offload_entry *)entries_begin;
  img.EntriesEnd = (__tgt_offload_entry *)entries_end;
  desc.HostEntriesBegin = img.EntriesBegin;
  desc.HostEntriesEnd = img.EntriesEnd;

  __tgt_register_lib(&desc);
  printf("fake: registered\n");
  fflush(stdout);
  if (!strcmp(c, "double-register")) {
    __tgt_register_lib(&desc);
    printf("fake: registered again\n");
  }
  launch();
  __tgt_unregister_lib(&desc);
  printf("fake: done\n");
  return 0;
}

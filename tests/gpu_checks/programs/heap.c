// Device-heap bugs a GPU hides, one per mode (argv[1]), and a clean use:
//   overrun      writes element 16 of a 16-int malloc block
//   use-after-free reads a block after its free
//   double-free  frees one block twice
//   foreign-free frees a mapped array's device address
//   tail         writes byte 13 of a 13-byte block (inside malloc's 16)
//   before       writes the int before a block's start
//   unwritten    sums a block whose last element was never written
//   clean        each thread mallocs, fills, sums and frees its block
//   calloc       clean too: calloc'd zeros are read, realloc keeps them
//   local        writes element 4 of a 4-int block nothing else sees (-O2
//                would remove it with its overrun; ompsim cc keeps it)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Each block escapes through this variable, so the compiler keeps every
// malloc and free (-O2 removes a block it can see all uses of); one element
// an iteration, so that the teams do not race on it (the checker would say).
#pragma omp declare target
int *volatile seen[64];
#pragma omp end declare target

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "clean";
  int m = !strcmp(mode, "overrun")          ? 1
          : !strcmp(mode, "use-after-free") ? 2
          : !strcmp(mode, "double-free")    ? 3
          : !strcmp(mode, "foreign-free")   ? 4
          : !strcmp(mode, "tail")           ? 5
          : !strcmp(mode, "before")         ? 6
          : !strcmp(mode, "unwritten")      ? 7
          : !strcmp(mode, "calloc")         ? 8
          : !strcmp(mode, "local")          ? 9
                                            : 0;
  int out[64] = {0};
#pragma omp target teams distribute parallel for num_teams(2) thread_limit(32) map(tofrom : out)
  for (int i = 0; i < 64; ++i) {
    int *block;
    if (m == 8) {
      // Eight zeros, then eight more ints: realloc keeps what calloc wrote.
      block = (int *)calloc(8, sizeof(int));
      seen[i] = block;
      block = (int *)realloc(seen[i], 16 * sizeof(int));
      seen[i] = block;
      for (int k = 8; k < 16; ++k)
        block[k] = i + k;
    } else {
      block = (int *)malloc(16 * sizeof(int));
      seen[i] = block;
      for (int k = 0; k < (m == 7 && i == 3 ? 15 : 16); ++k)
        block[k] = i + k;
    }
    if (m == 1 && i == 5)
      seen[i][16] = 1;
    if (m == 6 && i == 4)
      seen[i][-1] = 1;
    // Read through `seen`, so the sum loads what the block holds.
    int sum = 0;
    for (int k = 0; k < 16; ++k)
      sum += seen[i][k];
    free(block);
    if (m == 2 && i == 9)
      sum += block[3];
    if (m == 3 && i == 40)
      free(block);
    if (m == 4 && i == 2)
      free(out);
    if (m == 5 && i == 7) {
      char *bytes = (char *)malloc(13);
      seen[i] = (int *)bytes;
      ((char *)seen[i])[13] = 1;
      free(bytes);
    }
    if (m == 9 && i == 6) {
      int *local = (int *)malloc(4 * sizeof(int));
      for (int k = 0; k <= 4; ++k)
        local[k] = k;
      sum += local[2];
      free(local);
    }
    out[i] = sum;
  }
  long total = 0;
  for (int i = 0; i < 64; ++i)
    total += out[i];
  printf("%ld\n", total);
  return 0;
}

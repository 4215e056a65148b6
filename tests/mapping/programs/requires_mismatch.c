// Registers a descriptor whose only image has no bytes and two `requires`
// entries: the flags of no clause (1), then the argument's. Stock takes the
// first and checks the second against it (a fatal error on a mismatch).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  uint64_t Reserved;
  uint16_t Version;
  uint16_t Kind;
  uint32_t Flags;
  void *Address;
  char *SymbolName;
  uint64_t Size;
  uint64_t Data;
  void *AuxAddr;
} Entry;

typedef struct {
  void *ImageStart, *ImageEnd;
  Entry *EntriesBegin, *EntriesEnd;
} Image;

typedef struct {
  int32_t NumDeviceImages;
  Image *DeviceImages;
  Entry *HostEntriesBegin, *HostEntriesEnd;
} Descriptor;

void __tgt_register_lib(Descriptor *Desc);
void __tgt_unregister_lib(Descriptor *Desc);

int main(int argc, char **argv) {
  uint64_t Flags = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
  Entry Entries[] = {{0, 0, 1, 0x10, NULL, "", 0, 1, NULL}, {0, 0, 1, 0x10, NULL, "", 0, Flags, NULL}};
  Image Img = {NULL, NULL, &Entries[0], &Entries[2]};
  Descriptor Desc = {1, &Img, &Entries[0], &Entries[2]};
  __tgt_register_lib(&Desc);
  printf("registered\n");
  __tgt_unregister_lib(&Desc);
#pragma omp target
  {}
  return 0;
}

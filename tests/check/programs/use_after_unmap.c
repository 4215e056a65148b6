// Planted bug: a device address kept after its mapping ended is used by a
// later region. Under --check the freed block stays inaccessible (quarantine),
// so the read faults instead of returning stale data.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int Data[256];
  for (int I = 0; I < 256; ++I)
    Data[I] = I;
  int Dev = omp_get_default_device();
#pragma omp target enter data map(to : Data)
  int *DevPtr = (int *)omp_get_mapped_ptr(Data, Dev);
#pragma omp target exit data map(delete : Data)
  int First = -1;
#pragma omp target is_device_ptr(DevPtr) map(from : First)
  First = DevPtr[0];
  printf("first %d\n", First);
  return 0;
}

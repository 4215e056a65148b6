// Correct: a list linked on the device by the program itself. Each node is
// mapped 'to', and the device copy's Next is set with omp_target_memcpy to
// the next node's device address (the host's Next stays a host pointer). The
// region only reads; the mappings end with 'release'. The checker must not
// call the stored device pointers dropped device writes or a stale copy.
#include <omp.h>
#include <stdio.h>

typedef struct Node {
  struct Node *Next;
  int Val;
} Node;

int main(void) {
  Node B = {NULL, 2}, A = {&B, 1};
  Node *Pa = &A, *Pb = &B;
  int Dev = omp_get_default_device(), Sum = 0;
#pragma omp target enter data map(to : A, B)
#pragma omp target data use_device_ptr(Pa, Pb)
  omp_target_memcpy(Pa, &Pb, sizeof(Node *), offsetof(Node, Next), 0, Dev, omp_get_initial_device());
#pragma omp target map(tofrom : Sum) map(to : A)
  for (Node *N = &A; N; N = N->Next)
    Sum += N->Val;
#pragma omp target exit data map(release : A, B)
  printf("sum %d next %s\n", Sum, A.Next == &B ? "host" : "changed");
  return 0;
}

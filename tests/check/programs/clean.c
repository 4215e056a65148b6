// Correct mapping code: every check must stay silent on it.
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  int N;
  double *Data;
} Vec;

int main(void) {
  int A[64], Sum = 0;
  for (int I = 0; I < 64; ++I)
    A[I] = I;
#pragma omp target enter data map(to : A)
  A[5] = 100;
#pragma omp target update to(A)
#pragma omp target map(tofrom : Sum)
  for (int I = 0; I < 64; ++I)
    Sum += A[I];
  // Device writes copied back before the mapping ends.
#pragma omp target
  for (int I = 0; I < 64; ++I)
    A[I] *= 2;
#pragma omp target exit data map(from : A)

  // map(from:) of exactly the part the kernel writes.
  int C[100] = {0};
#pragma omp target map(from : C[0 : 50])
  for (int I = 0; I < 50; ++I)
    C[I] = I;

  // A struct with padding, written member by member, and an attached pointer.
  struct {
    char Tag;
    double X;
  } S = {'a', 1.0};
#pragma omp target map(from : S)
  {
    S.Tag = 'b';
    S.X = 2.0;
  }
  Vec V = {8, malloc(8 * sizeof(double))};
  for (int I = 0; I < 8; ++I)
    V.Data[I] = I;
#pragma omp target data map(to : V) map(tofrom : V.Data[0 : 8])
  {
#pragma omp target
    for (int I = 0; I < V.N; ++I)
      V.Data[I] += 1;
  }
  // Scratch data mapped `to` by one region: its writes are not wanted back.
  int Tmp[8] = {0};
#pragma omp target map(to : Tmp) map(tofrom : Sum)
  {
    for (int I = 0; I < 8; ++I)
      Tmp[I] = I;
    Sum += Tmp[7];
  }
  printf("sum %d a[5] %d c[49] %d s %c %.1f v %.1f\n", Sum, A[5], C[49], S.Tag, S.X, V.Data[7]);
  free(V.Data);
  return 0;
}

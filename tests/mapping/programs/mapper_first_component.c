// A declare mapper's first component, as stock libomptarget 22 treats it: it is
// neither counted nor released, so a block it creates stays mapped after the
// construct; and an item stock does not count is copied again whenever its
// block's total count is 1, unless an attached pointer lies in it. The output
// must be the same on every backend (tests/mapping/test_map_semantics.py).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int f_one(void) { return 1; }
int f_two(void) { return 2; }
int f_neg(int X) { return -X; }
int f_dbl(int X) { return 2 * X; }
#pragma omp declare target to(f_one, f_two, f_neg, f_dbl) indirect

// The shape of LLVM's api/omp_indirect_func_struct.c: a default mapper that
// maps the struct and its function-pointer members.
typedef struct {
  int Buffer;
  int (*F1)(void);
  int (*F0)(int);
} Fns;
#pragma omp declare mapper(Fns s) map(s, s.F0, s.F1)

// A mapper of one member only (a partial struct), as in
// mapping/mapper_map_always_to_enter_data.c.
typedef struct {
  int X, Y, Z;
} Yonly;
#pragma omp declare mapper(Yonly s) map(tofrom : s.Y)

// A named mapper, so that the same type can also be mapped without it.
typedef struct {
  int A;
  long B;
} Pair;
#pragma omp declare mapper(pm : Pair p) map(p, p.B)

// A named mapper whose struct holds an attached pointer.
typedef struct {
  int N;
  int *Data;
} Vec;
#pragma omp declare mapper(vm : Vec v) map(v, v.Data[0 : 4])

Fns GFns = {0, f_one, f_neg};
Yonly GY;
Pair GP;
Vec GV;

int main(void) {
  int Dev = omp_get_default_device();
  int R0 = 0, R1 = 0;

  // 1. Implicitly mapped through the default mapper, twice, with the host's
  //    function pointers changed in between: the second region calls the new ones.
#pragma omp target map(from : R0, R1)
  {
    R0 = GFns.F0(5);
    R1 = GFns.F1();
  }
  printf("1a %d %d present=%d\n", R0, R1, omp_target_is_present(&GFns, Dev));
  GFns.F0 = f_dbl;
  GFns.F1 = f_two;
  GFns.Buffer = 7;
#pragma omp target map(from : R0, R1)
  {
    R0 = GFns.F0(5) + GFns.Buffer;
    R1 = GFns.F1();
  }
  printf("1b %d %d present=%d\n", R0, R1, omp_target_is_present(&GFns, Dev));

  // 2. Through the mapper with enter/exit data: a block the mapper created
  //    is copied again by each later entering construct, and copied back by
  //    each exiting one.
  GY.Y = 10;
#pragma omp target enter data map(to : GY)
  GY.Y = 11;
#pragma omp target enter data map(to : GY)
  int Y = -1;
#pragma omp target map(from : Y)
  { Y = GY.Y; }
  printf("2a %d present=%d\n", Y, omp_target_is_present(&GY.Y, Dev));
#pragma omp target
  { GY.Y = 12; }
#pragma omp target exit data map(from : GY)
  printf("2b %d present=%d\n", GY.Y, omp_target_is_present(&GY.Y, Dev));

  // 3. `always` reaches the mapper's member over a block mapped before.
  GY.Y = 20;
#pragma omp target enter data map(always, to : GY)
#pragma omp target map(from : Y)
  { Y = GY.Y; }
  printf("3 %d\n", Y);

  // 4. A struct already present with a count of 1 (mapped without the
  //    mapper), then mapped through it: stock copies it again.
  GP.A = 1;
  GP.B = 100;
#pragma omp target enter data map(to : GP)
  GP.A = 2;
  GP.B = 200;
  long B = -1;
  int A = -1;
#pragma omp target map(mapper(pm), to : GP) map(from : A, B)
  {
    A = GP.A;
    B = GP.B;
  }
  printf("4a %d %ld\n", A, B);
  // With a count of 2 it is present as OpenMP says, and nothing is copied.
#pragma omp target enter data map(to : GP)
  GP.A = 3;
  GP.B = 300;
#pragma omp target map(mapper(pm), to : GP) map(from : A, B)
  {
    A = GP.A;
    B = GP.B;
  }
  printf("4b %d %ld\n", A, B);
#pragma omp target exit data map(delete : GP)

  // 5. A block the mapper left mapped with an attached pointer in it is not
  //    copied again (stock: a second new mapping would clobber the pointer).
  GV.N = 4;
  GV.Data = (int *)calloc(4, sizeof(int));
#pragma omp target enter data map(mapper(vm), to : GV)
  GV.N = 40;
  GV.Data[1] = 9;
  int N = -1, D1 = -1;
#pragma omp target map(mapper(vm), to : GV) map(from : N, D1)
  {
    N = GV.N;
    D1 = GV.Data[1];
  }
  printf("5 %d %d\n", N, D1);
  free(GV.Data);
  return 0;
}

// The cases of LLVM's offload/test/sanitizer programs that clang-22 builds
// (without -fsanitize=offload), one a mode (argv[1]), for stock's
// OFFLOAD_TRACK_ALLOCATION_TRACES and OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES.
#include <omp.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C"
#endif
    void *llvm_omp_target_alloc_host(size_t Size, int DeviceNum);

// free_host_ptr.c: a host address given to omp_target_free.
static void freeHostPtr(void) {
  int X;
  omp_target_free(&X, 0); // free host pointer
}

// free_wrong_ptr_kind.c: pinned host memory freed as device memory.
static void freeWrongKind(void) {
  void *P = llvm_omp_target_alloc_host(8, 0); // alloc pinned
  omp_target_free(P, 0);                      // free as device memory
}

// double_free.c: three blocks, the second freed twice.
static void doubleFree(void) {
  void *Ptr1 = omp_target_alloc(8, 0); // alloc 1
  omp_target_free(Ptr1, 0);            // free 1
  void *Ptr2 = omp_target_alloc(8, 0); // alloc 2
  omp_target_free(Ptr2, 0);            // free 2
  void *Ptr3 = omp_target_alloc(8, 0); // alloc 3
  omp_target_free(Ptr3, 0);            // free 3
  omp_target_free(Ptr2, 0);            // free 2 again
}

// kernel_crash.c and kernel_trap.c: the third of four kernels fails.
static void kernelFails(int Trap) {
  int *A = 0;
#pragma omp target // kernel 1
  {
  }
#pragma omp target // kernel 2
  {
  }
#pragma omp target map(to : Trap) // kernel 3
  {
    if (Trap)
      __builtin_trap();
    *A = 42;
  }
#pragma omp target // kernel 4
  {
  }
}

// kernel_crash_many.c: ten kernels, then one that fails.
static void kernelCrashMany(void) {
  int *A = 0;
  for (int I = 0; I < 10; ++I) {
#pragma omp target // kernel in the loop
    {
    }
  }
#pragma omp target // kernel after the loop
  {
    *A = 42;
  }
}

// use_after_free_1.c: a kernel writes through a pointer into a freed block.
static void useAfterFree(void) {
  int N = 1 << 20;
  char *A = (char *)omp_target_alloc(N, 0); // alloc the block
  char *P;
#pragma omp target map(from : P) is_device_ptr(A)
  {
    P = &A[N / 2];
    *P = 3;
  }
  omp_target_free(A, 0); // free the block
#pragma omp target       // write after free
  {
    *P = 5;
  }
}

// ptr_outside_alloc_1.c: a kernel writes outside a block (past its end,
// where the checker's guard page faults).
static void ptrOutsideAlloc(void) {
  char *A = (char *)omp_target_alloc(64, 0); // alloc the block
  char *P;
#pragma omp target map(from : P) is_device_ptr(A)
  {
    P = &A[0];
    *P = 3;
  }
#pragma omp target // write outside the block
  {
    P[68] = 5;
  }
  omp_target_free(A, 0);
}

int main(int argc, char **argv) {
  const char *Mode = argc > 1 ? argv[1] : "";
  if (!strcmp(Mode, "free-host-ptr"))
    freeHostPtr();
  else if (!strcmp(Mode, "free-wrong-kind"))
    freeWrongKind();
  else if (!strcmp(Mode, "double-free"))
    doubleFree();
  else if (!strcmp(Mode, "kernel-crash"))
    kernelFails(0);
  else if (!strcmp(Mode, "kernel-trap"))
    kernelFails(1);
  else if (!strcmp(Mode, "kernel-crash-many"))
    kernelCrashMany();
  else if (!strcmp(Mode, "use-after-free"))
    useAfterFree();
  else if (!strcmp(Mode, "ptr-outside-alloc"))
    ptrOutsideAlloc();
  else
    return fprintf(stderr, "unknown mode '%s'\n", Mode), 2;
  printf("not reached\n");
  return 0;
}

// Device code with a GNU indirect function: taking its address needs an
// R_X86_64_IRELATIVE relocation. Built at -O0: at -O1 LLVM resolves the
// ifunc at compile time and the relocation disappears.
#pragma omp declare target
static int twice(int x) { return 2 * x; }
static int (*resolve_scale(void))(int) { return twice; }
int scale(int) __attribute__((ifunc("resolve_scale")));
int (*probe_scale_fp)(int) = scale;
#pragma omp end declare target

int main(void) {
  int r = 0;
#pragma omp target map(from : r)
  r = probe_scale_fp(21);
  return r != 42;
}

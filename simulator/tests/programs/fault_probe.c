// Device-image probe for fault tests: the kernel calls whatever function
// pointer it is given, untranslated.
int main(void) {
  int (*fp)(int) = 0;
  int r = 0;
#pragma omp target map(from : r) firstprivate(fp)
  { r = fp(1); }
  return r;
}

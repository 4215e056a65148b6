/* The offload program whose device image fake_program.c registers (built
 * with -save-temps by test_bad_input.py). Two indirect functions and one
 * region without arguments, so its kernel takes only the dyn_ptr. */
int add1(int x) { return x + 1; }
int mul2(int x) { return x * 2; }
#pragma omp declare target to(add1, mul2) indirect
int main(void) {
#pragma omp target
  {
  }
  return add1(1) + mul2(1) == 4 ? 0 : 1;
}

/* Second translation unit of two_translation_units.c: defines the indirect functions and the counter. */
int dev_calls = 0;
#pragma omp declare target to(dev_calls)
int tu2_add(int x) { dev_calls++; return x + 2; }
int tu2_mul(int x) { dev_calls++; return x * 2; }
#pragma omp declare target to(tu2_add, tu2_mul) indirect
/* Calls back into the first unit's indirect function through a pointer given by the host. */
int tu2_apply(int (*f)(int), int x) { dev_calls++; return f(x) + 1; }
#pragma omp declare target to(tu2_apply)

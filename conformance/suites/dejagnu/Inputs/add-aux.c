/* Additional source of additional_sources.c. */
int add(int a, int b) { return a + b; }
#pragma omp declare target to(add) indirect

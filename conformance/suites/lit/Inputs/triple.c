// Helper of shared_lib.c: never run on its own.
int triple(int x) { return 3 * x; }
#pragma omp declare target to(triple) indirect

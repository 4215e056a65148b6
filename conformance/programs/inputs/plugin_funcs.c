/* A dlopen'd plugin with its own offload image and indirect functions (see shared_library_dlopen.c). */
int plug_calls = 0;
#pragma omp declare target to(plug_calls)
int plug_triple(int x) { plug_calls++; return 3 * x; }
#pragma omp declare target to(plug_triple) indirect

int plug_device_calls(void) {
#pragma omp target update from(plug_calls)
  return plug_calls;
}

// CHECKS: a dlopen'd shared library registers its own indirect functions after the program started; a dlsym'd host pointer calls the device copy
// REQUIRES: c
// BUILD-SHLIB: libconfplugin.so: %inputs/plugin_funcs.c
// BUILD: -ldl
// ENV: CONF_PLUGIN=%T/libconfplugin.so
// CHECK: PASS
#include "inputs/conformance.h"
#include <dlfcn.h>
#include <stdlib.h>

int main(void) {
  int warm = 0;
#pragma omp target map(from : warm)
  warm = 1; /* the device is initialised before the library arrives */
  const char *path = getenv("CONF_PLUGIN");
  void *h = path ? dlopen(path, RTLD_NOW) : 0;
  if (!h) {
    fprintf(stderr, "FAIL: cannot dlopen %s: %s\n", path ? path : "(CONF_PLUGIN unset)", dlerror());
    return 1;
  }
  int (*triple)(int) = (int (*)(int))dlsym(h, "plug_triple");
  int (*device_calls)(void) = (int (*)(void))dlsym(h, "plug_device_calls");
  EXPECT_TRUE(triple && device_calls);
  if (!triple || !device_calls)
    return CONF_RESULT();
  int r = 0;
#pragma omp target map(from : r)
  r = triple(14);
  EXPECT_EQ(warm, 1);
  EXPECT_EQ(r, 42);
  EXPECT_EQ(device_calls(), 1);
  return CONF_RESULT();
}

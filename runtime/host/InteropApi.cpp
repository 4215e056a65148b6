// The OpenMP interop entry points (`#pragma omp interop` and the
// omp_get_interop_* routines).
//
// An interop object hands a foreign runtime (CUDA, HIP, Level Zero...) the
// device's queue or context. ompsim's devices, like stock's host plugin, have
// no foreign runtime, so every request yields omp_interop_none, after the
// dependences a targetsync request names have been waited for, as stock does.
#include "ApiHelpers.h"

#include <omp.h>

#include <cstdint>

using namespace ompsim::host;

namespace {

/// kmp_interop_type_t value of a targetsync request.
constexpr int32_t InteropTargetSync = 2;

/// kmp_depend_info_t, opaque here: only passed back to libomp.
struct KmpDependInfo;

/// What __tgt_interop_get/use60/release receive (interop_ctx_t, dep_pack_t).
struct InteropContext {
  uint16_t version;
  struct {
    bool implicit;
    bool nowait;
    uint32_t reserved;
  } flags;
  int32_t gtid;
};
struct DependPack {
  int32_t ndeps;
  int32_t ndepsNoAlias;
  KmpDependInfo *deps;
  KmpDependInfo *noAliasDeps;
};

/// Sets *err (when given) and returns `value`.
template <typename T> T withCode(int *err, omp_interop_rc_t code, T value) {
  if (err)
    *err = code;
  return value;
}

} // namespace

extern "C" {
void __kmpc_omp_wait_deps(void *loc, int32_t gtid, int32_t ndeps, KmpDependInfo *deps, int32_t ndepsNoAlias,
                          KmpDependInfo *noAliasDeps);

// ---- OpenMP 6.0 form -------------------------------------------------------

void *__tgt_interop_get(ompsim_ident *loc, int32_t type, int64_t, int32_t, void *, InteropContext *ctx,
                        DependPack *deps) {
  if (Runtime::get().policy() == OffloadPolicy::Disabled)
    return omp_interop_none;
  if (type == InteropTargetSync && deps && ctx)
    __kmpc_omp_wait_deps(loc, ctx->gtid, deps->ndeps, deps->deps, deps->ndepsNoAlias, deps->noAliasDeps);
  return omp_interop_none;
}

/// No object exists to use or release: failure, as stock for omp_interop_none.
int __tgt_interop_use60(ompsim_ident *, void *, InteropContext *, DependPack *) {
  return OMPSIM_OFFLOAD_FAIL;
}
int __tgt_interop_release(ompsim_ident *, void *, InteropContext *, DependPack *) {
  return OMPSIM_OFFLOAD_FAIL;
}

// ---- OpenMP 5.1 form, what clang-22 emits ----------------------------------

void __tgt_interop_init(ompsim_ident *loc, int32_t gtid, void **interop, int32_t type, int32_t, int32_t ndeps,
                        KmpDependInfo *deps, int32_t) {
  if (type == InteropTargetSync && ndeps > 0 && Runtime::get().policy() != OffloadPolicy::Disabled)
    __kmpc_omp_wait_deps(loc, gtid, ndeps, deps, 0, nullptr);
  *interop = omp_interop_none;
}

void __tgt_interop_use(ompsim_ident *, int32_t, void *, int32_t, int32_t, KmpDependInfo *, int32_t) {}

void __tgt_interop_destroy(ompsim_ident *, int32_t, void **, int32_t, int32_t, KmpDependInfo *, int32_t) {}

int ompx_interop_add_completion_callback(void *, void *, void *) { return omp_irc_other; }

// ---- properties ------------------------------------------------------------
// Only omp_interop_none can exist, and it has no properties.

omp_intptr_t omp_get_interop_int(const omp_interop_t, omp_interop_property_t, int *err) {
  return withCode<omp_intptr_t>(err, omp_irc_empty, 0);
}
void *omp_get_interop_ptr(const omp_interop_t, omp_interop_property_t, int *err) {
  return withCode<void *>(err, omp_irc_empty, nullptr);
}
const char *omp_get_interop_str(const omp_interop_t, omp_interop_property_t, int *err) {
  return withCode<const char *>(err, omp_irc_empty, nullptr);
}
const char *omp_get_interop_name(const omp_interop_t, omp_interop_property_t) { return nullptr; }
const char *omp_get_interop_type_desc(const omp_interop_t, omp_interop_property_t) { return nullptr; }

} // extern "C"

// The OpenMP interop entry points (`#pragma omp interop` and the
// omp_get_interop_* routines).
//
// An interop object hands a foreign runtime (CUDA, HIP, Level Zero...) the
// device's queue or context. ompsim's devices, like stock's host plugin, have
// no foreign runtime, so every request yields omp_interop_none, after the
// dependences a targetsync request names have been waited for, as stock does.
// An interop construct with a depend clause is an included task with those
// dependences, so `use` and `destroy` wait for theirs too: a `target nowait
// depend(inout: a)` before `interop destroy(obj) depend(out: a)` has run when
// the construct ends. Under stock 22 it may not have (OpenMP_VV's
// test_interop_target.c fails there now and then: the program ends while
// the region still runs).
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
  uint16_t Version;
  struct {
    bool Implicit;
    bool Nowait;
    uint32_t Reserved;
  } Flags;
  int32_t Gtid;
};
struct DependPack {
  int32_t Ndeps;
  int32_t NdepsNoAlias;
  KmpDependInfo *Deps;
  KmpDependInfo *NoAliasDeps;
};

/// Sets *err (when given) and returns `Value`.
template <typename T> T withCode(int *Err, omp_interop_rc_t Code, T Value) {
  if (Err)
    *Err = Code;
  return Value;
}

} // namespace

extern "C" void __kmpc_omp_wait_deps(void *Loc, int32_t Gtid, int32_t Ndeps, KmpDependInfo *Deps,
                                     int32_t NdepsNoAlias, KmpDependInfo *NoAliasDeps);

namespace {

/// The construct's dependences, waited for as an included task's are.
void waitForInteropDeps(ompsim_ident *Loc, int32_t Gtid, int32_t Ndeps, KmpDependInfo *Deps) {
  if (Ndeps > 0 && Deps && Runtime::get().policy() != OffloadPolicy::Disabled)
    __kmpc_omp_wait_deps(Loc, Gtid, Ndeps, Deps, 0, nullptr);
}

void waitForInteropDeps(ompsim_ident *Loc, const InteropContext *Ctx, const DependPack *Deps) {
  if (Ctx && Deps && (Deps->Ndeps > 0 || Deps->NdepsNoAlias > 0) &&
      Runtime::get().policy() != OffloadPolicy::Disabled)
    __kmpc_omp_wait_deps(Loc, Ctx->Gtid, Deps->Ndeps, Deps->Deps, Deps->NdepsNoAlias, Deps->NoAliasDeps);
}

} // namespace

extern "C" {

// ---- OpenMP 6.0 form -------------------------------------------------------

void *__tgt_interop_get(ompsim_ident *Loc, int32_t Type, int64_t, int32_t, void *, InteropContext *Ctx,
                        DependPack *Deps) {
  if (Type == InteropTargetSync)
    waitForInteropDeps(Loc, Ctx, Deps);
  return omp_interop_none;
}

/// No object exists to use or release: failure, as stock for
/// omp_interop_none, once the construct's dependences are met.
int __tgt_interop_use60(ompsim_ident *Loc, void *, InteropContext *Ctx, DependPack *Deps) {
  waitForInteropDeps(Loc, Ctx, Deps);
  return OMPSIM_OFFLOAD_FAIL;
}
int __tgt_interop_release(ompsim_ident *Loc, void *, InteropContext *Ctx, DependPack *Deps) {
  waitForInteropDeps(Loc, Ctx, Deps);
  return OMPSIM_OFFLOAD_FAIL;
}

// ---- OpenMP 5.1 form, what clang-22 emits ----------------------------------

void __tgt_interop_init(ompsim_ident *Loc, int32_t Gtid, void **Interop, int32_t Type, int32_t, int32_t Ndeps,
                        KmpDependInfo *Deps, int32_t) {
  if (Type == InteropTargetSync)
    waitForInteropDeps(Loc, Gtid, Ndeps, Deps);
  *Interop = omp_interop_none;
}

void __tgt_interop_use(ompsim_ident *Loc, int32_t Gtid, void *, int32_t, int32_t Ndeps, KmpDependInfo *Deps,
                       int32_t) {
  waitForInteropDeps(Loc, Gtid, Ndeps, Deps);
}

void __tgt_interop_destroy(ompsim_ident *Loc, int32_t Gtid, void **, int32_t, int32_t Ndeps,
                           KmpDependInfo *Deps, int32_t) {
  waitForInteropDeps(Loc, Gtid, Ndeps, Deps);
}

int ompx_interop_add_completion_callback(void *, void *, void *) { return omp_irc_other; }

// ---- properties ------------------------------------------------------------
// Only omp_interop_none can exist, and it has no properties.

omp_intptr_t omp_get_interop_int(const omp_interop_t, omp_interop_property_t, int *Err) {
  return withCode<omp_intptr_t>(Err, omp_irc_empty, 0);
}
void *omp_get_interop_ptr(const omp_interop_t, omp_interop_property_t, int *Err) {
  return withCode<void *>(Err, omp_irc_empty, nullptr);
}
const char *omp_get_interop_str(const omp_interop_t, omp_interop_property_t, int *Err) {
  return withCode<const char *>(Err, omp_irc_empty, nullptr);
}
const char *omp_get_interop_name(const omp_interop_t, omp_interop_property_t) { return nullptr; }
const char *omp_get_interop_type_desc(const omp_interop_t, omp_interop_property_t) { return nullptr; }

} // extern "C"

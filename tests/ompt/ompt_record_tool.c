/* An OMPT tool for the tests: records the offload callbacks a runtime makes, one line each,
 * in a form that is the same on every backend for the same binary.
 *
 * Loaded through OMP_TOOL_LIBRARIES. OMPT_RECORD_FILE names the file it appends to;
 * OMPT_RECORD_MODE is "plain" (ompt_callback_target and friends, ids from the runtime) or
 * "emi" (the _emi forms; the tool writes the ids at each begin and checks them at the end).
 *
 * Lines start with `t<n>`, the thread (numbered as each first records), then:
 * `target <kind> <begin|end> dev=<n|host> id=<target id> code=<object>+0x<offset>`,
 * `dataop <op> <begin|end|once> id=<target id> op=<host op id> src=<dev>:<null|addr> dst=...
 * bytes=<n> code=...`, `submit <begin|end|once> id=... op=... teams=<n>`, `init dev=<n>`,
 * `load dev=<n> bytes=<n>`, `fini dev=<n>`. Addresses are said only to be null or not;
 * code addresses are given as an offset into their object, which does not move between
 * runs. A mismatch of the ids the tool handed out at a begin and got back at the end is
 * recorded as `mismatch ...`. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp-tools.h>
#include <omp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *Out;
static int Emi;
static pthread_mutex_t Lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t NextId = 1;

static void record(const char *Fmt, ...) __attribute__((format(printf, 1, 2)));
static void record(const char *Fmt, ...) {
  static __thread int Thread;
  static int Threads;
  va_list Ap;
  va_start(Ap, Fmt);
  pthread_mutex_lock(&Lock);
  if (!Thread)
    Thread = ++Threads;
  fprintf(Out, "t%d ", Thread);
  vfprintf(Out, Fmt, Ap);
  fputc('\n', Out);
  fflush(Out);
  pthread_mutex_unlock(&Lock);
  va_end(Ap);
}

static uint64_t newId(void) { return __atomic_fetch_add(&NextId, 1, __ATOMIC_RELAXED); }

/* "<object>+0x<offset>", or "null". */
static const char *code(const void *Ra, char *Buf, size_t N) {
  Dl_info Info;
  if (!Ra)
    return "null";
  if (!dladdr(Ra, &Info) || !Info.dli_fname) {
    snprintf(Buf, N, "unknown");
    return Buf;
  }
  const char *Base = strrchr(Info.dli_fname, '/');
  snprintf(Buf, N, "%s+0x%lx", Base ? Base + 1 : Info.dli_fname,
           (unsigned long)((uintptr_t)Ra - (uintptr_t)Info.dli_fbase));
  return Buf;
}

static const char *device(int D, char *Buf, size_t N) {
  if (D == omp_get_initial_device())
    return "host";
  snprintf(Buf, N, "%d", D);
  return Buf;
}

static const char *endpoint(ompt_scope_endpoint_t E) {
  return E == ompt_scope_begin ? "begin" : E == ompt_scope_end ? "end" : "beginend";
}

static const char *targetKind(ompt_target_t K) {
  switch (K) {
  case ompt_target:
    return "target";
  case ompt_target_enter_data:
    return "enter_data";
  case ompt_target_exit_data:
    return "exit_data";
  case ompt_target_update:
    return "update";
  default:
    return "other";
  }
}

static const char *dataOp(ompt_target_data_op_t Op) {
  switch (Op) {
  case ompt_target_data_alloc:
    return "alloc";
  case ompt_target_data_transfer_to_device:
    return "to_device";
  case ompt_target_data_transfer_from_device:
    return "from_device";
  case ompt_target_data_delete:
    return "delete";
  case ompt_target_data_associate:
    return "associate";
  case ompt_target_data_disassociate:
    return "disassociate";
  default:
    return "other";
  }
}

static void onTarget(ompt_target_t Kind, ompt_scope_endpoint_t E, int Dev, ompt_data_t *Task, ompt_id_t Id,
                     const void *Ra) {
  char C[256], D[16];
  record("target %s %s dev=%s id=%lu code=%s", targetKind(Kind), endpoint(E), device(Dev, D, sizeof D),
         (unsigned long)Id, code(Ra, C, sizeof C));
}

/* EMI: the tool's ids per thread, to check that the end gets back what the begin set. */
static __thread uint64_t TargetIdSet, OpIdSet;

static void onTargetEmi(ompt_target_t Kind, ompt_scope_endpoint_t E, int Dev, ompt_data_t *Task,
                        ompt_data_t *TargetTask, ompt_data_t *Target, const void *Ra) {
  char C[256], D[16];
  if (E == ompt_scope_begin)
    Target->value = TargetIdSet = newId();
  else if (Target->value != TargetIdSet)
    record("mismatch target id: set %lu at begin, %lu at end", (unsigned long)TargetIdSet,
           (unsigned long)Target->value);
  record("target %s %s dev=%s id=%lu code=%s", targetKind(Kind), endpoint(E), device(Dev, D, sizeof D),
         (unsigned long)Target->value, code(Ra, C, sizeof C));
}

static void dataOpLine(const char *When, uint64_t Id, uint64_t Op, ompt_target_data_op_t Kind, void *Src,
                       int SrcDev, void *Dst, int DstDev, size_t Bytes, const void *Ra) {
  char C[256], S[16], T[16];
  record("dataop %s %s id=%lu op=%lu src=%s:%s dst=%s:%s bytes=%zu code=%s", dataOp(Kind), When,
         (unsigned long)Id, (unsigned long)Op, SrcDev == -1 ? "none" : device(SrcDev, S, sizeof S),
         Src ? "addr" : "null", DstDev == -1 ? "none" : device(DstDev, T, sizeof T), Dst ? "addr" : "null",
         Bytes, code(Ra, C, sizeof C));
}

static void onDataOp(ompt_id_t Target, ompt_id_t Op, ompt_target_data_op_t Kind, void *Src, int SrcDev,
                     void *Dst, int DstDev, size_t Bytes, const void *Ra) {
  dataOpLine("once", Target, Op, Kind, Src, SrcDev, Dst, DstDev, Bytes, Ra);
}

static void onDataOpEmi(ompt_scope_endpoint_t E, ompt_data_t *TargetTask, ompt_data_t *Target, ompt_id_t *Op,
                        ompt_target_data_op_t Kind, void *Src, int SrcDev, void *Dst, int DstDev, size_t Bytes,
                        const void *Ra) {
  if (E == ompt_scope_begin)
    *Op = OpIdSet = newId();
  else if (*Op != OpIdSet)
    record("mismatch host_op_id: set %lu at begin, %lu at end", (unsigned long)OpIdSet, (unsigned long)*Op);
  dataOpLine(endpoint(E), Target->value, *Op, Kind, Src, SrcDev, Dst, DstDev, Bytes, Ra);
}

static void onSubmit(ompt_id_t Target, ompt_id_t Op, unsigned int Teams) {
  record("submit once id=%lu op=%lu teams=%u", (unsigned long)Target, (unsigned long)Op, Teams);
}

static void onSubmitEmi(ompt_scope_endpoint_t E, ompt_data_t *Target, ompt_id_t *Op, unsigned int Teams) {
  if (E == ompt_scope_begin)
    *Op = OpIdSet = newId();
  else if (*Op != OpIdSet)
    record("mismatch submit host_op_id: set %lu at begin, %lu at end", (unsigned long)OpIdSet,
           (unsigned long)*Op);
  record("submit %s id=%lu op=%lu teams=%u", endpoint(E), (unsigned long)Target->value, (unsigned long)*Op,
         Teams);
}

static void onInit(int Dev, const char *Type, ompt_device_t *Device, ompt_function_lookup_t Lookup,
                   const char *Doc) {
  record("init dev=%d", Dev);
}

static void onFini(int Dev) { record("fini dev=%d", Dev); }

static void onLoad(int Dev, const char *File, int64_t Offset, void *Vma, size_t Bytes, void *Host,
                   void *DevAddr, uint64_t Module) {
  record("load dev=%d bytes=%zu", Dev, Bytes);
}

static int initialize(ompt_function_lookup_t Lookup, int InitialDevice, ompt_data_t *Data) {
  ompt_set_callback_t Set = (ompt_set_callback_t)Lookup("ompt_set_callback");
  if (!Set)
    return 0;
  Set(ompt_callback_device_initialize, (ompt_callback_t)onInit);
  Set(ompt_callback_device_finalize, (ompt_callback_t)onFini);
  Set(ompt_callback_device_load, (ompt_callback_t)onLoad);
  if (Emi) {
    Set(ompt_callback_target_emi, (ompt_callback_t)onTargetEmi);
    Set(ompt_callback_target_data_op_emi, (ompt_callback_t)onDataOpEmi);
    Set(ompt_callback_target_submit_emi, (ompt_callback_t)onSubmitEmi);
  } else {
    Set(ompt_callback_target, (ompt_callback_t)onTarget);
    Set(ompt_callback_target_data_op, (ompt_callback_t)onDataOp);
    Set(ompt_callback_target_submit, (ompt_callback_t)onSubmit);
  }
  return 1;
}

static void finalize(ompt_data_t *Data) { record("finalize"); }

ompt_start_tool_result_t *ompt_start_tool(unsigned int Version, const char *Runtime) {
  static ompt_start_tool_result_t Result = {initialize, finalize, {0}};
  const char *Path = getenv("OMPT_RECORD_FILE");
  const char *Mode = getenv("OMPT_RECORD_MODE");
  Out = Path ? fopen(Path, "a") : NULL;
  if (!Out)
    return NULL;
  Emi = Mode && strcmp(Mode, "emi") == 0;
  return &Result;
}

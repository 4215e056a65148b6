/* ompsim: offload ABI types shared with clang-generated code.
 *
 * These mirror what clang-22 emits into a host program for
 * -fopenmp-targets=..., and what LLVM <= 19 emitted. Layouts are fixed by the
 * compiler: never reorder fields. All pointers here are host pointers unless a
 * name says "tgt" (a device address, opaque to the host).
 */
#ifndef OMPSIM_OFFLOAD_ABI_H
#define OMPSIM_OFFLOAD_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Offload entry, LLVM 20+ format (section `llvm_offload_entries`).
 *
 * `Reserved` is always 0 in this format; the legacy format starts with a
 * non-null address there, which is how the two are told apart. */
typedef struct __tgt_offload_entry {
  uint64_t Reserved;
  uint16_t Version; /**< 1 for clang-22 */
  uint16_t Kind;    /**< 1 = OpenMP */
  uint32_t Flags;   /**< OMPSIM_ENTRY_* bits */
  void *Address;    /**< host address: kernel stub, global, function or vtable */
  char *SymbolName; /**< device symbol name */
  uint64_t Size;    /**< 0 for kernels; 8 for indirect functions; bytes of a global or vtable */
  uint64_t Data;
  void *AuxAddr;
} __tgt_offload_entry;

/** Offload entry, LLVM <= 19 format (section `omp_offloading_entries`). */
typedef struct __tgt_offload_entry_legacy {
  void *addr;
  char *name;
  size_t size;
  int32_t flags;
  int32_t reserved;
} __tgt_offload_entry_legacy;

/** Entry flags (both formats). */
enum {
  OMPSIM_ENTRY_KERNEL = 0x0,
  OMPSIM_ENTRY_LINK = 0x1,
  OMPSIM_ENTRY_ENTER = 0x2,
  OMPSIM_ENTRY_CTOR = 0x2,
  OMPSIM_ENTRY_DTOR = 0x4,
  OMPSIM_ENTRY_INDIRECT = 0x8,
  OMPSIM_ENTRY_REQUIRES = 0x10,
  OMPSIM_ENTRY_INDIRECT_VTABLE = 0x20,
};

/** OpenMP `requires` flags carried by a requires entry (in `Data`). */
enum {
  OMPSIM_REQ_UNDEFINED = 0x000,
  OMPSIM_REQ_NONE = 0x001,
  OMPSIM_REQ_REVERSE_OFFLOAD = 0x002,
  OMPSIM_REQ_UNIFIED_ADDRESS = 0x004,
  OMPSIM_REQ_UNIFIED_SHARED_MEMORY = 0x008,
  OMPSIM_REQ_DYNAMIC_ALLOCATORS = 0x010,
  OMPSIM_REQ_AUTO_ZERO_COPY = 0x020,
};

/** One device image as embedded by clang-linker-wrapper. `EntriesBegin` /
 * `EntriesEnd` point at the host entry table. For clang-22 the entries are
 * `__tgt_offload_entry`; for LLVM <= 19, `__tgt_offload_entry_legacy` (the
 * pointers are typed as the new format; check `Reserved` before reading). */
typedef struct __tgt_device_image {
  void *ImageStart;
  void *ImageEnd;
  __tgt_offload_entry *EntriesBegin;
  __tgt_offload_entry *EntriesEnd;
} __tgt_device_image;

/** Descriptor passed to __tgt_register_lib by each host binary or library. */
typedef struct __tgt_bin_desc {
  int32_t NumDeviceImages;
  __tgt_device_image *DeviceImages;
  __tgt_offload_entry *HostEntriesBegin;
  __tgt_offload_entry *HostEntriesEnd;
} __tgt_bin_desc;

/** One host->device function-pointer pair (design note
 * declare_target_indirect.md); tables are sorted by `host_ptr`. */
typedef struct __omp_offloading_fptr_map_ty {
  uint64_t host_ptr;
  uint64_t tgt_ptr;
} __omp_offloading_fptr_map_ty;

/** Kernel launch arguments, version 3 as clang-22 emits them. */
typedef struct __tgt_kernel_arguments {
  uint32_t Version;
  uint32_t NumArgs;
  void **ArgBasePtrs;
  void **ArgPtrs;
  int64_t *ArgSizes;
  int64_t *ArgTypes;
  void **ArgNames;
  void **ArgMappers;
  uint64_t Tripcount;
  uint64_t Flags; /**< bit 0: NoWait, bit 1: IsCUDA */
  uint32_t NumTeams[3];
  uint32_t ThreadLimit[3];
  uint32_t DynCGroupMem;
} __tgt_kernel_arguments;

/** Source location passed by clang (`ident_t`). */
typedef struct ompsim_ident {
  int32_t reserved_1;
  int32_t flags;
  int32_t reserved_2;
  int32_t reserved_3;
  const char *psource; /**< ";file;function;line;col;;" */
} ompsim_ident;

/** Return codes of the __tgt_* entry points and plugin calls. */
enum { OMPSIM_OFFLOAD_SUCCESS = 0, OMPSIM_OFFLOAD_FAIL = ~0 };

/** Device id that selects the default device. */
#define OMPSIM_DEVICE_DEFAULT (-1)

#ifdef __cplusplus
}
#endif
#endif /* OMPSIM_OFFLOAD_ABI_H */

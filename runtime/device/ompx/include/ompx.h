/* ompsim: the ompx kernel-language API for device code of a host-offload
 * (x86_64) image.
 *
 * `ompsim cc` puts this folder first on the include path of the device
 * compile only (-Xopenmp-target=x86_64-pc-linux-gnu -I...), so the host
 * compile keeps clang-22's own <ompx.h> and its host fallback. clang's header
 * defines, for every device of kind cpu, inline host answers (block id 0,
 * grid size 1, shuffles that trap); this one declares the API's functions
 * only, and ompsim's device runtime (libompsim-device) defines them, as a
 * GPU's device runtime does: on an ompsim device (sim, ours-host) they answer
 * as a GPU does, with the device's teams as blocks and a team's threads as the
 * block's threads; under stock's host plugin they give clang's host answers.
 * docs/ompx.md says what each function answers.
 *
 * Same names, types and default arguments as clang-22's <ompx.h>.
 */
#ifndef __OMPX_H
#define __OMPX_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  ompx_relaxed = __ATOMIC_RELAXED,
  ompx_aquire = __ATOMIC_ACQUIRE,
  ompx_release = __ATOMIC_RELEASE,
  ompx_acq_rel = __ATOMIC_ACQ_REL,
  ompx_seq_cst = __ATOMIC_SEQ_CST,
};

enum {
  ompx_dim_x = 0,
  ompx_dim_y = 1,
  ompx_dim_z = 2,
};

/* Lanes of a warp on the device (32 on an ompsim device). */
uint32_t __ompsim_ompx_warp_size(void);

static inline uint32_t __warpSize(void) { return __ompsim_ompx_warp_size(); }

int ompx_thread_id(int Dim);
int ompx_block_dim(int Dim);
int ompx_block_id(int Dim);
int ompx_grid_dim(int Dim);

static inline int ompx_thread_id_x(void) { return ompx_thread_id(ompx_dim_x); }
static inline int ompx_thread_id_y(void) { return ompx_thread_id(ompx_dim_y); }
static inline int ompx_thread_id_z(void) { return ompx_thread_id(ompx_dim_z); }
static inline int ompx_block_dim_x(void) { return ompx_block_dim(ompx_dim_x); }
static inline int ompx_block_dim_y(void) { return ompx_block_dim(ompx_dim_y); }
static inline int ompx_block_dim_z(void) { return ompx_block_dim(ompx_dim_z); }
static inline int ompx_block_id_x(void) { return ompx_block_id(ompx_dim_x); }
static inline int ompx_block_id_y(void) { return ompx_block_id(ompx_dim_y); }
static inline int ompx_block_id_z(void) { return ompx_block_id(ompx_dim_z); }
static inline int ompx_grid_dim_x(void) { return ompx_grid_dim(ompx_dim_x); }
static inline int ompx_grid_dim_y(void) { return ompx_grid_dim(ompx_dim_y); }
static inline int ompx_grid_dim_z(void) { return ompx_grid_dim(ompx_dim_z); }

void ompx_sync_block(int Ordering);
void ompx_sync_block_acq_rel(void);
void ompx_sync_block_divergent(int Ordering);

uint64_t ompx_ballot_sync(uint64_t mask, int pred);

int ompx_shfl_down_sync_i(uint64_t mask, int var, unsigned delta, int width);
float ompx_shfl_down_sync_f(uint64_t mask, float var, unsigned delta, int width);
long ompx_shfl_down_sync_l(uint64_t mask, long var, unsigned delta, int width);
double ompx_shfl_down_sync_d(uint64_t mask, double var, unsigned delta, int width);

#ifdef __cplusplus
}

namespace ompx {

enum {
  dim_x = ompx_dim_x,
  dim_y = ompx_dim_y,
  dim_z = ompx_dim_z,
};

enum {
  relaxed = ompx_relaxed,
  aquire = ompx_aquire,
  release = ompx_release,
  acc_rel = ompx_acq_rel,
  seq_cst = ompx_seq_cst,
};

static inline int thread_id(int Dim) noexcept { return ompx_thread_id(Dim); }
static inline int thread_id_x() noexcept { return ompx_thread_id(dim_x); }
static inline int thread_id_y() noexcept { return ompx_thread_id(dim_y); }
static inline int thread_id_z() noexcept { return ompx_thread_id(dim_z); }
static inline int block_dim(int Dim) noexcept { return ompx_block_dim(Dim); }
static inline int block_dim_x() noexcept { return ompx_block_dim(dim_x); }
static inline int block_dim_y() noexcept { return ompx_block_dim(dim_y); }
static inline int block_dim_z() noexcept { return ompx_block_dim(dim_z); }
static inline int block_id(int Dim) noexcept { return ompx_block_id(Dim); }
static inline int block_id_x() noexcept { return ompx_block_id(dim_x); }
static inline int block_id_y() noexcept { return ompx_block_id(dim_y); }
static inline int block_id_z() noexcept { return ompx_block_id(dim_z); }
static inline int grid_dim(int Dim) noexcept { return ompx_grid_dim(Dim); }
static inline int grid_dim_x() noexcept { return ompx_grid_dim(dim_x); }
static inline int grid_dim_y() noexcept { return ompx_grid_dim(dim_y); }
static inline int grid_dim_z() noexcept { return ompx_grid_dim(dim_z); }

static inline void sync_block(int Ordering = acc_rel) { ompx_sync_block(Ordering); }
static inline void sync_block_divergent(int Ordering = acc_rel) { ompx_sync_block_divergent(Ordering); }

static inline uint64_t ballot_sync(uint64_t mask, int pred) { return ompx_ballot_sync(mask, pred); }

static inline int shfl_down_sync(uint64_t mask, int var, unsigned delta, int width = __warpSize()) {
  return ompx_shfl_down_sync_i(mask, var, delta, width);
}
static inline float shfl_down_sync(uint64_t mask, float var, unsigned delta, int width = __warpSize()) {
  return ompx_shfl_down_sync_f(mask, var, delta, width);
}
static inline long shfl_down_sync(uint64_t mask, long var, unsigned delta, int width = __warpSize()) {
  return ompx_shfl_down_sync_l(mask, var, delta, width);
}
static inline double shfl_down_sync(uint64_t mask, double var, unsigned delta, int width = __warpSize()) {
  return ompx_shfl_down_sync_d(mask, var, delta, width);
}

} // namespace ompx
#endif

#endif /* __OMPX_H */

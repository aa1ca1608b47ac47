/* attention_variants.h: the attention kernel variants of dev/cuda for head
 * width 128, beside the product's mma.sync kernels, behind one C interface
 * for their check (dev/cuda/check_attention.c) and benchmark
 * (dev/cuda/bench_attention.c). Not part of the product: the backend
 * (kernels/) neither builds nor selects them; dev/cuda/README.md says what
 * each is and how one enters the product.
 *
 * Every pointer is device (or managed) memory of the backend
 * (kernels/cuda_api.h cuda_mem_alloc); q, k, v, y, dy, dq, dk, dv are
 * (B,T,H,128) fp32, lse (B,H,T) fp32, as trainer/backend.h attn_fwd and
 * attn_bwd; window as there (clamped to T). The calls queue their kernels
 * on the backend's stream; attn_variant_sync waits for them. A variant the
 * device cannot run (attn_variant_runs_here 0) aborts with a message.
 *
 * Reference: trainer/backend.h (attn_fwd, attn_bwd), kernels/attention_mma.cu.
 */
#ifndef SUPKIT_DEV_ATTENTION_VARIANTS_H
#define SUPKIT_DEV_ATTENTION_VARIANTS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum attn_variant {
	ATTN_VAR_MMA,   /* the product's kernels (kernels/attention_mma.cu; dQ from
	                   the kept dS), the reference wg is checked and
	                   timed against */
	ATTN_VAR_WG,    /* the forward, dK, dV and dQ (from the kept dS) on
	                   Hopper's wgmma; compute capability 9.0 only */
	ATTN_VAR_N
};

/* "mma", "wg" */
const char *attn_variant_name(enum attn_variant v);
/* 1 when the current device runs v (wg: compute capability 9.0), else 0 */
int attn_variant_runs_here(enum attn_variant v);
void attn_variant_fwd(enum attn_variant var, float *y, float *lse, const float *q,
		      const float *k, const float *v, int B, int T, int H, int64_t window,
		      float scale);
/* y and lse: the forward's (of any variant); dy the output's gradient */
void attn_variant_bwd(enum attn_variant var, float *dq, float *dk, float *dv, const float *dy,
		      const float *q, const float *k, const float *v, const float *y,
		      const float *lse, int B, int T, int H, int64_t window, float scale);
void attn_variant_sync(void);

#ifdef __cplusplus
}
#endif

#endif

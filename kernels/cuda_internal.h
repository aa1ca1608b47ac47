/* cuda_internal.h: what the CUDA C++ files of kernels/ share (never
 * included from C): the error check that aborts with the op's name, the
 * backend's stream, device scratch, and the attention launchers of
 * kernels/attention.cu. All pointers passed to launchers are device pointers.
 *
 * Reference: trainer/backend.h (shapes and layouts of every operand).
 */
#ifndef SUPKIT_CUDA_INTERNAL_H
#define SUPKIT_CUDA_INTERNAL_H

#if !defined(__CUDACC__) && !defined(SUPKIT_EMU)   /* SUPKIT_EMU: tests/emu's host build */
#error "cuda_internal.h is for kernels/*.cu only; C code includes kernels/cuda_api.h"
#endif

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/cuda_api.h"   /* enum cuda_attn_mode */

/* A kernel's dynamic shared memory (the launch's size), 128-byte aligned;
 * the SIMT emulator of tests/emu gives its one buffer. */
#ifdef SUPKIT_EMU
#define DYN_SMEM(name) unsigned char *name = emu_smem
#else
#define DYN_SMEM(name) extern __shared__ __align__(128) unsigned char name[]
#endif

/* Abort with the op's name and the CUDA message (ops have no error return). */
#define CUDA_CK(op, call)                                                              \
	do {                                                                           \
		cudaError_t ck_e_ = (call);                                            \
		if (ck_e_ != cudaSuccess) {                                            \
			fprintf(stderr, "backend_cuda: %s: %s (%s:%d)\n", (op),        \
				cudaGetErrorString(ck_e_), __FILE__, __LINE__);        \
			abort();                                                       \
		}                                                                      \
	} while (0)

/* cuda_profile's hooks: call prof_begin when an op starts and prof_end(op)
 * after its synchronisation (an op begun inside another ends the outer's
 * interval; an op that returns early without prof_end has its time counted
 * in the next op). */
void cuda_prof_begin(void);
void cuda_prof_end(const char *op);

/* The backend's stream (created on first use). */
cudaStream_t cuda_stream(void);

/* Device scratch of n bytes from the stream-ordered pool, counted in the
 * backend's memory statistics; free with cuda_scratch_free(p, n). */
void *cuda_scratch_alloc(const char *op, size_t n);
void cuda_scratch_free(void *p, size_t n);

/* n fp32 values rounded to bf16, nearest even, into o (device memory, on
 * the backend's stream; float4 loads where x is 16-byte aligned). */
void cuda_cast_bf16(void *o, const float *x, int64_t n);

/* Sliding-window causal attention (kernels/attention.cu). q, k, v, y, dy,
 * dq, dk, dv are (B,T,H,D) fp32, lse (B,H,T) fp32; D <= ATTN_MAX_D. mode
 * (enum cuda_attn_mode) picks the kernels for D = 128: CUDA_ATTN_MMA the
 * mma.sync ones of kernels/attention_mma.cu (bf16 inputs, fp32
 * accumulation); CUDA_ATTN_F32, and every other D, the fp32 kernels. */
#define ATTN_MAX_D 128

/* Key s is visible from query t (causal, at most `window` back). */
__device__ static inline bool attn_visible(int t, int s, int T, int64_t window)
{
	return t < T && s <= t && (int64_t)s >= (int64_t)t - window;
}

/* The grid of the D = 128 tensor-core kernels: a block per (64 rows, b, h);
 * aborts with the op's name on another D or B*H above 65535. */
static inline dim3 attn128_grid(const char *op, int B, int T, int H, int D)
{
	if (D != 128 || (int64_t)B * H > 65535) {
		fprintf(stderr, "backend_cuda: %s: tensor-core attention needs D = 128 and B*H <= 65535\n",
			op);
		abort();
	}
	return dim3((unsigned)((T + 63) / 64), (unsigned)(B * H));
}
/* ob (forward): NULL, or (mode mma at D = 128 only: attn_has_cast) a
 * buffer that gets y's values rounded to bf16 as well; gb (backward): dq's,
 * dk's and dv's such buffers, each NULL or one (attn_has_cast modes only;
 * dq's and dk's only with bf16 q, k, v), beside the fp32 output or, where
 * that is NULL, instead of it (backend.h attn_bf16: bf16 gradients).
 * qkvb: NULL, or (attn_has_cast modes only) q, k and v rounded to bf16
 * (nearest even) by the caller, which the kernels read instead of casting
 * q, k, v themselves (the backend's kept casts: backend_cuda.cu).
 * bf16 storage (backend.h attn_bf16; attn_has_cast modes only, else abort):
 * q, k, v NULL with qkvb the tensors themselves; the forward's y NULL with
 * ob the bf16 y; the backward's y NULL with yb the bf16 y (yb is read only
 * then); the backward's dy NULL with dyb the bf16 dy (attn_bwd_launch
 * aborts unless exactly one of them is given, and dyb only with q NULL). */
/* The shape and settings of one attention call: (B, T, H, D), the
 * sliding window, the score scale, the kernels (mode). */
struct attn_shape {
	int B, T, H, D;
	int64_t window;
	float scale;
	enum cuda_attn_mode mode;
};
void attn_fwd_launch(const struct attn_shape *s, float *y, void *ob, float *lse, const float *q,
		     const float *k, const float *v, const void *const *qkvb);
void attn_bwd_launch(const struct attn_shape *s, float *dq, float *dk, float *dv,
		     void *const *gb, const float *dy, const void *dyb, const float *q,
		     const float *k, const float *v, const float *y, const void *yb,
		     const float *lse, const void *const *qkvb);
/* The mma kernels read and write bf16 copies: head width 128 */
static inline int attn_has_cast(enum cuda_attn_mode mode, int D)
{
	return mode == CUDA_ATTN_MMA && D == 128;
}
/* Dd (B,H,T) = rowsum(dy * y) on the backend's stream, as attn_bwd_launch
 * forms it: dy fp32, or NULL with dyb the bf16 dy; y fp32, or NULL with yb
 * the bf16 y (dyb only with yb). */
void attn_rowdot_launch(float *Dd, const float *dy, const void *dyb, const float *y,
			const void *yb, int B, int T, int H, int D);
/* kernels/attention_mma.cu, D = 128 only; Dd (B,H,T) = rowsum(dy * y). */
void attn_fwd_mma_launch(float *y, void *yb, float *lse, const float *q, const float *k,
			 const float *v, int B, int T, int H, int D, int64_t window, float scale,
			 const void *const *qkvb);
/* dQ from the dS tiles the dK/dV kernel keeps (one tile product a pair
 * instead of three; a B H T (window + 64) x 2-byte scratch buffer, about;
 * kernels/attention_mma.cu). */
void attn_bwd_mma_launch(float *dq, float *dk, float *dv, void *const *gb, const float *dy,
			 const void *dyb, const float *q, const float *k, const float *v,
			 const float *Dd,
			 const float *lse, int B, int T, int H, int D, int64_t window, float scale,
			 const void *const *qkvb);

#endif

/* cuda_api.h: the plain-C face of the CUDA backend (the .cu files of kernels/). C code
 * includes only this header and never sees CUDA C++; everything here is
 * implemented behind extern "C" in kernels/backend_cuda.cu.
 *
 * The backend table (backend_cuda) implements trainer/backend.h on the GPU:
 * fp32 tensors (TD_F32; TD_BF16 for matmul inputs and embedding tables), fp32
 * accumulation, cuBLAS GEMMs, own kernels for the rest (attention in
 * kernels/attention.cu). fp64 tensors are not supported (use the CPU backend).
 *
 * Memory: tensor data may live anywhere. Device and managed memory (from
 * cuda_mem_alloc) is used in place; plain host memory (malloc) is staged:
 * copied to a device buffer before the op and back after it, which is
 * correct but slow (only for small runs and tests). An op returns after
 * the GPU finished it, so the caller may touch its outputs from the host
 * at once, except inside a pass scope (asynchronous ops, see
 * cuda_get_async): there an op returns once its kernels are queued and
 * the host calls the table's sync (cuda_sync) before it touches what the
 * queued ops read or write (backend.h scope).
 *
 * Errors: a CUDA or cuBLAS failure inside an op aborts with the op's name
 * and the CUDA message (ops have no error return; see trainer/backend.h).
 *
 * Storage follows precision alone: with bf16 GEMMs (autocast) the MLP's,
 * the attention's and the norms' activations are stored in bf16
 * (backend.h mlp_bf16, attn_bf16, norm_bf16; the mma attention, head width
 * 128, for attn_bf16), with fp32 GEMMs (precision = fp32) every activation
 * is fp32.
 *
 * Left out: fp64, bf16 storage of the residual stream, the optimizer's
 * arms and scalar arithmetic (trainer/optim.c runs them on
 * the host; Polar Express and the element-wise passes come here, through
 * the backend object's polar_express and optim entries).
 *
 * The backend object registers itself under "cuda" (trainer/backend.h
 * backend_register) when these objects are linked in; trainer/ finds it by
 * name and never includes this header. Tests and benchmarks include it for
 * the modes below.
 * Reference: trainer/backend.h (the contract), shared/DESIGN.md (Backends).
 */
#ifndef SUPKIT_CUDA_API_H
#define SUPKIT_CUDA_API_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "trainer/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices; 0 when there is none or no driver. */
int cuda_device_count(void);

/* Name of the backend's device (open's, else 0; e.g. "NVIDIA H200") into
 * buf; -1 without it. */
int cuda_device_name(char *buf, size_t n);

/* The backend table, set up (the device open chose, else device 0, a
 * stream and the cuBLAS handle) on first use; aborts when there is no
 * device (check cuda_device_count first). */
const struct backend_ops *backend_cuda(void);

/* Matmul precision for fp32 operands: the config key precision (backend.h
 * backend_options) sets it when the backend opens (autocast: CUDA_MM_BF16,
 * fp32: CUDA_MM_F32); CUDA_MM_BF16_FAST is for gpu_bench and tests. */
enum cuda_mm_mode {
	CUDA_MM_BF16,      /* bf16 tensor cores, fp32 accumulation (default): fp32
	                      operands rounded to bf16 (nearest even, as autocast
	                      casts) into scratch first, bf16 ones used as they are */
	CUDA_MM_F32,       /* full fp32 (no TF32): for parity tests */
	CUDA_MM_BF16_FAST  /* fp32 operands down-converted inside cuBLAS
	                      (COMPUTE_32F_FAST_16BF: not nearest even, see
	                      test_cuda_ops's note) */
};
void cuda_set_matmul_mode(enum cuda_mm_mode mode);

/* Inside a pass scope (backend.h scope, which the model opens for each
 * forward/backward pass) a GEMM keeps the bf16 cast of an fp32 operand in
 * device memory and the next GEMM reading the same tensor reuses it, until
 * an op writes the tensor or the scope ends: an activation is cast once
 * for its forward and backward GEMMs, a weight once a pass, and the ops
 * that make most activations (relu^2, RMSNorm, attention, ...) write the
 * cast as they write the output, so that no separate cast runs. Outside a
 * scope every operand is cast afresh (the same bits).
 *
 * With the mma attention (head width 128) the backward's dK/dV kernel
 * keeps the bf16 dS tiles it forms (in a scratch buffer of about
 * B H T (window + 64) x 2 bytes, freed with the op) and dQ is formed from
 * them: one tile product a (query tile, key tile) pair where recomputing
 * S, P and dP takes three.
 *
 * A layer's input mixing (x = resid xin + x0_lambda x0 (+ wte_lambda
 * x0_wte)) runs in one kernel with the RMSNorm after it, and its backward
 * (the lambdas' gradient dots, the x0 gradients' updates, dx's scaling) in
 * one pass over the elements (backend.h mix_rmsnorm_fwd, mix_bwd: the same
 * values as the separate ops of trainer/backend_mix.h); the value-embedding
 * gate reads its table's rows in place (backend.h ve_gate_fwd_rows,
 * ve_gate_bwd_rows); backend.h matmul_n (the attention's q, k, v products
 * and their weights' gradients) runs as one batched GEMM
 * (cublasGemmBatchedEx) where the GEMMs run in bf16 and the operands agree
 * in shape and dtype. */

/* Attention kernels for head width 128 (other widths always use the fp32
 * ones). The environment variable SUPKIT_CUDA_ATTN (mma or f32) sets the
 * mode at initialisation; another value stops the backend's setup. */
enum cuda_attn_mode {
	CUDA_ATTN_F32,  /* fp32 on CUDA cores (kernels/attention.cu) */
	CUDA_ATTN_MMA   /* bf16 tensor cores through mma.sync with register-
	                   resident tiles, fp32 accumulation (default;
	                   kernels/attention_mma.cu) */
};
void cuda_set_attn_mode(enum cuda_attn_mode mode);

/* The modes in force and their names: "f32", "mma" (as
 * SUPKIT_CUDA_ATTN spells them); "bf16", "f32", "fast16bf". */
enum cuda_attn_mode cuda_get_attn_mode(void);
enum cuda_mm_mode cuda_get_matmul_mode(void);
const char *cuda_attn_mode_name(enum cuda_attn_mode m);
const char *cuda_matmul_mode_name(enum cuda_mm_mode m);

/* Polar Express on `batch` row-major m x n fp32 matrices stored one after
 * another at X, in place (device, managed or host memory): the GPU twin of
 * trainer/optim.h polar_express_f32 with the same rounding points in each
 * arithmetic (mode: enum polar_mode, 0 fp32, 1 bf16 as eager PyTorch, 2
 * bf16 as the benchmark's torch.compile), for Muon's shape groups. */
void cuda_polar_express(float *X, size_t batch, size_t m, size_t n, int mode);

/* The optimizer's element-wise passes (kernels/optim.cu) on managed or
 * device memory, as the functions of struct optim_device (trainer/optim.h)
 * of the same names; kernels/backend_cuda.cu assembles them with
 * cuda_mem_alloc / cuda_mem_free into the backend object's optim. */
void cuda_opt_nesterov(float *x, float *buf, const float *g, size_t n, double w1, double mu);
void cuda_opt_sumsq(double *ss, const float *x, size_t m, size_t n, int per_row);
void cuda_opt_muon_update(float *w, const float *x, const double *s, size_t m, size_t n,
			  int per_row, double lr, double lrwd, int bf16);
void cuda_opt_adamw(float *w, const float *g, float *m, float *v, size_t n, double w1,
		    double w2, double bias2, double eps, double step_size, int bf16_state,
		    int round_g, double *U);
void cuda_opt_step_w(float *w, const double *U, size_t n, double step_size, int bf16);
void cuda_opt_oe_sumsq(double *rs, const uint16_t *g, const uint32_t *counts, size_t rows,
		       size_t cols);
void cuda_opt_oe_step(uint16_t *w, const uint16_t *g, const uint32_t *counts, size_t rows,
		      size_t cols, double eta, double rms);
void cuda_opt_sumsq64(double *ss, const double *G, size_t m, size_t n, int per_row);
void cuda_opt_scale64(double *G, const double *rs, const double *cs, size_t m, size_t n);
void cuda_opt_widen(double *G, const float *x, size_t n, int bf16);
void cuda_opt_narrow(float *x, const double *G, size_t n);
void cuda_opt_colsum64(double *s, const double *U, size_t V, size_t d);
void cuda_opt_ng_project(double *U, double *proj, double *rs, const double *mu, size_t V,
			 size_t d);
void cuda_opt_gram64(double *H, const double *U, size_t V, size_t d);
void cuda_opt_ng_whiten(double *W, const double *U, const double *H, double c, size_t V,
			size_t d);
void cuda_opt_ng_combine(double *U, const double *proj, const double *mu, const double *W,
			 double c, size_t V, size_t d);

/* Managed (unified) memory of n bytes, zeroed, usable from the host and by
 * every op without staging; NULL when the allocation fails. */
void *cuda_mem_alloc(size_t n);
void cuda_mem_free(void *p);

/* 1 when p is device or managed memory (used by ops in place), 0 when it
 * is host memory that ops stage through copies. */
int cuda_mem_is_device(const void *p);

/* Wait for all work of the backend's stream (the table's sync); then
 * abort if an embed_gather queued since the last wait met an index
 * outside its table. */
void cuda_sync(void);

/* Asynchronous ops inside the model's pass scope (backend.h scope): an op
 * returns once its kernels are queued on the stream, unless it returns a
 * value (dot, softcap_ce), stages a host output or the profile is on;
 * scope(0) and sync wait. This removes the wait at each of the ~6,000 ops
 * of a depth-8 step. Needs the device's concurrent managed access (the
 * host reads the layer scalars while kernels run): without it every op
 * waits and cuda_get_async says 0. CUDA_LAUNCH_BLOCKING=1 (the CUDA
 * runtime's) makes every launch wait, for debugging. */
int cuda_get_async(void);

/* Memory accounting: bytes held by this backend (managed allocations,
 * staging buffers, workspaces), the largest figure seen, and the device's
 * own view (cudaMemGetInfo: used = total - free) with its largest sample. */
struct cuda_mem_stats {
	size_t in_use, peak;
	size_t device_used, device_peak, device_total;
};
void cuda_mem_stats(struct cuda_mem_stats *s);

/* Wall time per op, for finding where a training step goes: while the
 * profile is on every op ends in a stream synchronisation (asynchronous
 * ops too), so an op's time is its launches and kernels
 * (the optimizer's passes and Polar Express included); the host's time
 * between ops (the model's and optimizer's own C code, managed-memory reads)
 * is counted apart. cuda_profile(1) clears the counts and starts counting,
 * cuda_profile(0) stops. cuda_profile_print writes one line an op, the
 * largest first ("profile TITLE OP calls N ms X share P%"), at most `top`
 * of them and the rest as "(other)", then the host's line, the total, and
 * the bf16 operand casts made and reused (the pass scope's kept casts) while
 * counting, and how the ops' operands were told apart: found in the
 * backend's registry of cuda_mem_alloc blocks, or asked of the driver
 * (cudaPointerGetAttributes: host operands, other memory). */
void cuda_profile(int on);
void cuda_profile_print(FILE *f, const char *title, int top);

#ifdef __cplusplus
}
#endif

#endif

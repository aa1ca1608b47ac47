/* backend.h: the operations the model runs on, as
 * one table of function pointers (struct backend_ops), so that the CPU
 * reference (trainer/backend_cpu.c) and the CUDA backend (kernels/)
 * implement the same operations with the same argument order.
 *
 * Tensors carry a data pointer, a dtype and a shape (row-major, contiguous).
 * Matrix ops view a tensor as 2-D: rows = product of all dims but the last,
 * cols = the last dim. Every floating operand of one op has the same dtype
 * (TD_F32 or TD_F64); index tensors are int32 arrays passed as pointers. A
 * shape or dtype mismatch is a programming error: the CPU backend aborts
 * with the op's name. `accum` arguments: 0 = overwrite the output, 1 = add
 * into it (gradients are summed, never cleared by an op).
 *
 * Shape letters: N rows (= B*T tokens), C width, H heads, D head width,
 * V vocabulary, R rows of a chunk.
 *
 * The table is the whole backend object: every entry is required (a fusion
 * that a backend does not fuse runs as the ops it stands for, as the CPU
 * backend does), and besides the model's ops it holds the device's memory,
 * the optimizer's passes (trainer/optim.h struct optim_device), Polar
 * Express, what the device is (name, peak FLOP/s, memory budget) and the
 * options a run gives it. Backends are found by name in a registry
 * (backend_find): the CPU backend is always there, and kernels/ registers
 * "cuda" itself when it is linked in, so nothing in trainer/ names it.
 *
 * Left out here: bf16 compute (the CPU backend computes in fp32 or fp64 on
 * bf16-representable values; TD_BF16 is storage only).
 * Reference: docs/model.md.
 */
#ifndef SUPKIT_BACKEND_H
#define SUPKIT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct err;            /* lib/err.h */
struct optim_device;   /* trainer/optim.h */
struct backend_options;   /* below */

enum tdtype { TD_F32, TD_F64, TD_BF16 };

#define TENSOR_MAX_DIMS 4

struct tensor {
	void *data;
	enum tdtype dtype;
	int ndim;
	int64_t shape[TENSOR_MAX_DIMS];
};

/* A view of data (not owned) with dims shape[0..ndim-1]. */
static inline struct tensor tensor_2d(void *data, enum tdtype dt, int64_t r, int64_t c)
{
	struct tensor t = { data, dt, 2, { r, c, 1, 1 } };
	return t;
}
static inline struct tensor tensor_1d(void *data, enum tdtype dt, int64_t n)
{
	struct tensor t = { data, dt, 1, { n, 1, 1, 1 } };
	return t;
}
static inline int64_t tensor_numel(const struct tensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->ndim; i++)
		n *= t->shape[i];
	return n;
}
static inline int64_t tensor_cols(const struct tensor *t)
{
	return t->shape[t->ndim - 1];
}
static inline int64_t tensor_rows(const struct tensor *t)
{
	return tensor_numel(t) / tensor_cols(t);
}
static inline size_t tdtype_size(enum tdtype d)
{
	return d == TD_F64 ? 8 : d == TD_F32 ? 4 : 2;
}

struct backend_ops {
	const char *name;                       /* "cpu" */

	/* ---- memory and elementwise ---- */
	/* x = 0 (any dtype, TD_BF16 included) */
	void (*zero)(struct tensor *x);
	/* y = a*x + b*y; x, y same numel */
	void (*axpby)(struct tensor *y, double a, const struct tensor *x, double b);
	/* sum_i x_i y_i, accumulated in fp64; x, y same numel */
	double (*dot)(const struct tensor *x, const struct tensor *y);
	/* acc[i] += dot(x, y): the fp64 sum rounded once to acc's dtype (x's),
	 * then added in that dtype (a scalar parameter's gradient, left where
	 * the backend keeps it: no host read between ops) */
	void (*dot_acc)(struct tensor *acc, int64_t i, const struct tensor *x,
			const struct tensor *y);
	/* out (N,k) = x[:, c0:c0+k] (accum 0) or += (accum 1); x is (N,C) */
	void (*cols_get)(struct tensor *out, const struct tensor *x, int64_t c0, int accum);
	/* out[:, c0:c0+k] += x (N,k); out is (N,C) */
	void (*cols_add)(struct tensor *out, const struct tensor *x, int64_t c0);

	/* ---- matmul (cblas sgemm / dgemm) ---- */
	/* out (M,N) = alpha * op(a) op(b) + beta * out; op(a) is (M,K): a is
	 * (M,K) or, with ta, (K,M); op(b) is (K,N): b is (K,N) or, with tb, (N,K).
	 * A linear layer y = x W^T is matmul(y, x, W, 0, 1, 1, 0). */
	void (*matmul)(struct tensor *out, const struct tensor *a, const struct tensor *b,
		       int ta, int tb, double alpha, double beta);

	/* ---- normalisation ---- */
	/* out (N,C) = x / sqrt(mean(x^2) + eps) per row; rstd (N) keeps the
	 * reciprocal. out may alias x. */
	void (*rmsnorm_fwd)(struct tensor *out, struct tensor *rstd, const struct tensor *x,
			    double eps);
	/* dx (N,C) (+)= rstd * (dout - out * mean(dout * out)), from the forward's
	 * out and rstd. */
	void (*rmsnorm_bwd)(struct tensor *dx, const struct tensor *dout, const struct tensor *out,
			    const struct tensor *rstd, int accum);
	/* Normalise x by the RMS of another row s: out (N,C) = x * r with
	 * r = 1/sqrt(mean(s^2) + eps) (N) (the shared routing anchor). */
	void (*rmsnorm_ref_fwd)(struct tensor *out, struct tensor *r, const struct tensor *x,
				const struct tensor *s, double eps);
	/* dx (+)= r * dout;  ds (+)= -r^3/C * sum(dout * x) * s  (N,C each). */
	void (*rmsnorm_ref_bwd)(struct tensor *dx, struct tensor *ds, const struct tensor *dout,
				const struct tensor *x, const struct tensor *s,
				const struct tensor *r, int accum);

	/* ---- rotary embedding (split-half) ---- */
	/* x (B*T,H,D) in place: for plane c < D/2 at position t = row % T,
	 * (x1, x2) = (x[c], x[c+D/2]) -> (x1 cos + x2 sin, -x1 sin + x2 cos);
	 * cos, sin are (T', D/2) with T' >= T, or (T', H*D/2), a table for each
 * head (head h's plane c at column h*D/2 + c; the CPU backend only). */
	void (*rope_fwd)(struct tensor *x, const struct tensor *cos, const struct tensor *sin,
			 int64_t T);
	/* The transpose (inverse rotation) on a gradient, in place. */
	void (*rope_bwd)(struct tensor *dx, const struct tensor *cos, const struct tensor *sin,
			 int64_t T);
	/* Rotary embedding then QK-norm (then q_tau), fused (one pass over q
	 * or k): for x (B*T,H,D), out = rmsnorm(rope(x)) over each head's D
	 * values, rstd (B*T*H) the reciprocal RMS of each. With a column scale
	 * s (H*D, q_tau's exp(tau)), xn (B*T,H,D) keeps the normalised values
	 * and out = xn * s[h*D + c]; without (s and xn NULL) out is the
	 * normalised values. x is not written unless out or xn aliases it (they
	 * may not alias each other). The same values as rope_fwd, rmsnorm_fwd, then mul_cols_fwd.
	 * D <= 128. */
	void (*rope_rmsnorm_fwd)(struct tensor *out, struct tensor *rstd, struct tensor *xn,
				 const struct tensor *x, const struct tensor *s,
				 const struct tensor *cos, const struct tensor *sin, int64_t T,
				 double eps);
	/* Its gradient from the forward's normalised values xn (its out when s
	 * is NULL) and rstd: with s, g = dout * s and ds (H*D) += sum over
	 * tokens of dout * xn (ds may be NULL); then dx = rope_bwd(rmsnorm_bwd(g))
	 * (overwritten; dx may alias dout). The same values as mul_cols_bwd,
	 * rmsnorm_bwd, then rope_bwd. */
	void (*rope_rmsnorm_bwd)(struct tensor *dx, struct tensor *ds, const struct tensor *dout,
				 const struct tensor *xn, const struct tensor *rstd,
				 const struct tensor *s, const struct tensor *cos,
				 const struct tensor *sin, int64_t T);

	/* ---- attention ---- */
	/* Causal sliding-window attention. q, k, v, y are (B,T,H,D); lse (B,H,T)
	 * keeps each query row's log-sum-exp. Query t sees keys s with
	 * t - window <= s <= t; scores are scale * q.k. Scores are made one
	 * row block at a time (never T x T). */
	void (*attn_fwd)(struct tensor *y, struct tensor *lse, const struct tensor *q,
			 const struct tensor *k, const struct tensor *v, int64_t window, double scale);
	/* dq, dk, dv (B,T,H,D) = gradients (overwritten) from dy and the forward's
	 * q, k, v, y, lse. */
	void (*attn_bwd)(struct tensor *dq, struct tensor *dk, struct tensor *dv,
			 const struct tensor *dy, const struct tensor *q, const struct tensor *k,
			 const struct tensor *v, const struct tensor *y, const struct tensor *lse,
			 int64_t window, double scale);

	/* ---- loss ---- */
	/* Softcapped cross-entropy on a chunk of rows. logits (R,V) in: z =
	 * cap * tanh(l / cap); loss (R) = logsumexp(z) - z[target] (0 where
	 * target < 0). When dscale != 0, logits is overwritten with the gradient
	 * of dscale * sum(loss) with respect to the raw logits l. *valid (when
	 * valid is not NULL) gets the number of rows with target >= 0 (NULL
	 * lets a backend skip reading the targets on the host). */
	void (*softcap_ce)(struct tensor *logits, struct tensor *loss, const int32_t *targets,
			   double cap, double dscale, int64_t *valid);

	/* ---- embeddings ---- */
	/* out[:, c0:c0+k] (+)= table[idx[n]] for n < N; table (Vt,k) of dtype
	 * TD_F32, TD_F64 or TD_BF16 (converted); with round_bf16 each value is
	 * rounded to bf16 first (bf16-stored parameters with fp32 masters).
	 * Rows are indexed by idx (int32, N entries, 0 <= idx < Vt). */
	void (*embed_gather)(struct tensor *out, const struct tensor *table, const int32_t *idx,
			     int64_t c0, int round_bf16, int accum);
	/* gtable[idx[n]] += dout[n, c0:c0+k]; gtable (Vt,k), dout (N,C).
	 * Contributions to one row are added in n order. A TD_BF16 gtable
	 * (fp32 dout) gets, per row, its fp32 sum over this call rounded to
	 * bf16, added in fp32 and rounded again (a bf16 .grad in PyTorch). */
	void (*embed_scatter_add)(struct tensor *gtable, const struct tensor *dout,
				  const int32_t *idx, int64_t c0);

	/* Hashed n-gram rows of an OE table (the oe arm): for the B rows of T
	 * tokens idx (each in [0, V)), rows[b*T + t] = id mod nrows with id =
	 * sum over r < order of (V+1)^r * p_r, p_r = idx[b*T + t - r], or V
	 * (the sentinel) where t - r < 0; unsigned 64-bit arithmetic. */
	void (*ngram_rows)(int32_t *rows, const int32_t *idx, int64_t B, int64_t T, int64_t V,
			   int order, int64_t nrows);
	/* Visit counts: counts[rows[n]] += 1 for n < N, counts (nrows) uint32,
	 * 0 <= rows[n] < nrows (integers: the result does not depend on the
	 * order of the additions). */
	void (*count_rows)(uint32_t *counts, int64_t nrows, const int32_t *rows, int64_t N);

	/* ---- activations and gates ---- */
	/* out = relu(h)^2 (same shape; out may alias h only if h is not needed
	 * for the backward) */
	void (*relu2_fwd)(struct tensor *out, const struct tensor *h);
	/* dh = dout * 2 relu(h) */
	void (*relu2_bwd)(struct tensor *dh, const struct tensor *dout, const struct tensor *h);
	/* Value-embedding gate: v (N,H*D) += 2 sigmoid(glog[n,h]) * ve[n, h*D + c];
	 * glog (N,H). */
	void (*ve_gate_fwd)(struct tensor *v, const struct tensor *glog, const struct tensor *ve);
	/* dglog (N,H) = sum_c dv*ve * 2 s (1-s); dve (N,H*D) = 2 s dv (overwrite). */
	void (*ve_gate_bwd)(struct tensor *dglog, struct tensor *dve, const struct tensor *dv,
			    const struct tensor *glog, const struct tensor *ve);
	/* out (N,K) = x * s[k] (s (K) broadcast over rows); out may alias x. */
	void (*mul_cols_fwd)(struct tensor *out, const struct tensor *x, const struct tensor *s);
	/* dx (N,K) = dout * s (dx may alias dout); ds (K) += sum_n dout * x when
	 * ds != NULL (x is the forward's input, read before dx is written), the
	 * sum of exact products kept in fp64 and rounded once. */
	void (*mul_cols_bwd)(struct tensor *dx, struct tensor *ds, const struct tensor *dout,
			     const struct tensor *x, const struct tensor *s);

	/* ---- pass scope, storage and fusions ---- */
	/* The model brackets each forward (+ backward) pass with scope(1) ...
	 * scope(0). In between, matmul operands (weights and activations) are
	 * written by this backend's ops only (not by the host, nor by the
	 * optimizer), so a backend may keep a copy derived from a matmul
	 * operand (the CUDA backend's bf16 cast of an fp32 operand) until one
	 * of its ops writes any byte of it or the scope ends. Results are the
	 * same with or without it. Inside a scope a backend may also return
	 * from an op before it has finished (the CUDA backend's asynchronous
	 * ops): the host then calls sync before it reads backend memory that
	 * an op wrote since the last sync, or writes memory that one reads;
	 * scope(0) waits for every op. Ops that return a value (dot,
	 * softcap_ce) and ops outside a scope finish before they return. */
	void (*scope)(int begin);
	/* Wait until every op issued so far has finished (a backend whose ops
	 * finish before they return: nothing to do). */
	void (*sync)(void);
	/* relu2_fwd for an output that, until an op overwrites it, is read
	 * only as a matmul operand (not by any other op, nor accumulated into):
	 * a backend may keep it in another form only (the CUDA backend, in a
	 * pass scope with bf16 GEMMs: its bf16 cast alone, no fp32 values);
	 * else relu2_fwd. */
	void (*relu2_fwd_gemm)(struct tensor *out, const struct tensor *h);
	/* Nonzero: the model may store the MLP's hidden pre-activation h, its
	 * relu^2 u and the gradients du and dh (N,4C each) as TD_BF16, as the
	 * benchmark's autocast does. matmul then writes and reads them in bf16,
	 * and relu2_fwd, relu2_fwd_gemm and relu2_bwd take TD_BF16 for every
	 * operand: fp32 arithmetic on the widened values, each result rounded
	 * once to nearest even. The model asks once, when it is created. */
	int (*mlp_bf16)(void);
	/* The settings in force that change a run's numbers or speed, as
	 * "key=value" words (the CUDA backend: its attention kernels,
	 * asynchronous ops, cast reuse, bf16 storage, fusions), for the run's
	 * record; "" (never NULL): none. */
	const char *(*modes)(void);
	/* Nonzero: the model may store the attention's q, k, v (and q_tau's
	 * normalised q) and its output y, (N,C) each, as TD_BF16 for this head
	 * width, as the benchmark's autocast does. matmul then writes q, k, v
	 * and reads y in bf16; rope_rmsnorm_fwd takes x, out and xn in bf16
	 * (in place as before), rope_rmsnorm_bwd a bf16 xn, ve_gate_fwd a bf16
	 * v, attn_fwd and attn_bwd bf16 q, k, v and y (all four; lse stays
	 * fp32), and attn_bwd a bf16 dy (which matmul writes) as well as an
	 * fp32 one. With bf16 q, k, v, y, attn_bwd also writes dq, dk, dv in
	 * bf16 (all three, or all three fp32); rope_rmsnorm_bwd then takes
	 * dout and dx in bf16 (in place), ve_gate_bwd a bf16 dv, and matmul
	 * reads them as they are. fp32 arithmetic on the widened values, each
	 * stored result rounded once to nearest even. The model asks once,
	 * when it is created. */
	int (*attn_bf16)(int head_dim);
	/* Nonzero: the model may store the outputs of rmsnorm_fwd that only
	 * matmul, rmsnorm_bwd and cols_get read (each layer's normalised
	 * attention and MLP inputs, (N,C) each) as TD_BF16, as the benchmark's
	 * autocast stores them. rmsnorm_fwd then writes out in bf16 (x and rstd
	 * stay fp32: the fp32 result rounded once to nearest even, the values a
	 * bf16 GEMM would have read), rmsnorm_bwd reads a bf16 out (dx, dout,
	 * rstd fp32) and cols_get a bf16 x (out fp32, the widened values), and
	 * matmul reads them as they are. The model asks once, when it is
	 * created. */
	int (*norm_bf16)(void);
	/* ---- a layer's input mixing ----
	 * x = c[0] xin + c[1] x0 (+ c[2] x0w where x0w is not NULL), then out,
	 * rstd as rmsnorm_fwd(out, rstd, x, eps) (out TD_BF16 under
	 * norm_bf16): the same values as axpby(x, c[0], xin, 0), axpby(x,
	 * c[1], x0, 1) (, axpby(x, c[2], x0w, 1)) and rmsnorm_fwd
	 * (trainer/backend_mix.h runs those; a backend may fuse them). x
	 * aliases none of xin, x0, x0w. */
	void (*mix_rmsnorm_fwd)(struct tensor *x, struct tensor *out, struct tensor *rstd,
				const struct tensor *xin, const struct tensor *x0,
				const struct tensor *x0w, const double *c, double eps);
	/* Its backward, from dx (the gradient into x): dot_acc(g[0], i, dx,
	 * xin), dot_acc(g[1], i, dx, x0), axpby(dx0, c[1], dx, 1) (with x0w:
	 * dot_acc(g[2], i, dx, x0w), axpby(dx0w, c[2], dx, 1)), then axpby(dx,
	 * 0, dx, c[0]): the same values as those ops in that order (g[2] and
	 * dx0w are read only with x0w). */
	void (*mix_bwd)(struct tensor *dx, struct tensor *dx0, struct tensor *dx0w,
			struct tensor *g, int64_t i, const struct tensor *xin,
			const struct tensor *x0, const struct tensor *x0w, const double *c);

	/* n (1 to 4) products out[i] = alpha op(a[i]) op(b[i]) + beta out[i]:
	 * the same values as matmul(out[i], a[i], b[i], ...) for i = 0 .. n-1
	 * (no out[i] overlaps an a[j] or b[j]; a[i] may be one tensor for
	 * every i, so may b[i]). A backend may run them as one batched GEMM
	 * where they share their shapes and dtypes (the CUDA backend with bf16
	 * GEMMs: the attention's q, k, v projections and their weights'
	 * gradients); else it calls matmul n times. */
	void (*matmul_n)(int n, struct tensor *const *out, const struct tensor *const *a,
			 const struct tensor *const *b, int ta, int tb, double alpha, double beta);
	/* ve_gate_fwd and ve_gate_bwd with ve the rows idx[n] of table (N
	 * indices, table (Vt, H*D)), as embed_gather(ve, table, idx, 0,
	 * round_bf16, 0) would gather them: the same values. scratch (N, H*D,
	 * v's dtype) is the caller's, for a backend that gathers into it and
	 * then gates (the CPU backend); the CUDA backend reads the table's rows
	 * in the gate's kernels and leaves it alone. */
	void (*ve_gate_fwd_rows)(struct tensor *v, const struct tensor *glog,
				 const struct tensor *table, const int32_t *idx, int round_bf16,
				 struct tensor *scratch);
	void (*ve_gate_bwd_rows)(struct tensor *dglog, struct tensor *dve, const struct tensor *dv,
				 const struct tensor *glog, const struct tensor *table,
				 const int32_t *idx, int round_bf16, struct tensor *scratch);

	/* softcap_ce on bf16 logits (TD_F32 logits only), as the benchmark's
	 * autocast makes them (its lm_head GEMM outputs bf16; `.float()` before
	 * the softcap): each raw logit is rounded to bf16 (nearest even) before
	 * the cap, and the gradient written (dscale != 0) is rounded to bf16,
	 * as autograd rounds the gradient that flows back through that cast.
	 * The same values as rounding logits, softcap_ce, rounding its
	 * gradient. */
	void (*softcap_ce_bf16)(struct tensor *logits, struct tensor *loss, const int32_t *targets,
				double cap, double dscale, int64_t *valid);

	/* ---- the device: set-up, memory, optimizer, what it is ---- */
	/* Devices this backend can run on (the CPU backend: 1; CUDA: the
	 * devices CUDA_VISIBLE_DEVICES leaves, 0 without a GPU or a driver). */
	int (*device_count)(void);
	/* Set up for a run with these options before any other entry but
	 * device_count is used; -1 with e set (EXIT_USAGE) when o->device is
	 * not a device of this backend. A backend is opened once per process
	 * (a second open with another device is refused). */
	int (*open)(const struct backend_options *o, struct err *e);
	/* n zeroed bytes that every op uses in place (managed memory for CUDA,
	 * calloc for the CPU); NULL when out of memory. */
	void *(*alloc)(size_t n);
	void (*free)(void *p);
	/* 1: alloc's memory is the host's own (the model's arrays may be read
	 * and written by the host without a sync or a copy) */
	int host_memory;
	/* The optimizer's element-wise passes and state memory for this
	 * backend's tensors (the CPU backend: optim_device_host). */
	const struct optim_device *(*optim)(void);
	/* Polar Express on `batch` row-major m x n fp32 matrices one after
	 * another at X, in place, in arithmetic mode (trainer/optim.h
	 * polar_express_f32's; the CPU backend runs that on each). */
	void (*polar_express)(float *X, size_t batch, size_t m, size_t n, int mode);
	/* The device's name into buf (n bytes): the GPU's as CUDA reports it;
	 * -1 and buf empty for the CPU or when it cannot be read. */
	int (*device_name)(char *buf, size_t n);
	/* The device's dense bf16 tensor-core peak in FLOP/s; 0 unknown. */
	double (*peak_flops)(void);
	/* Bytes of device memory in use as the device reports it, and in
	 * *peak its largest sample; 0 and 0 for the CPU. */
	size_t (*device_bytes)(size_t *peak);
	/* Bytes of activations one forward/backward pass may hold when
	 * pass_rows = 0 (the model then runs the most rows that fit); 0: no
	 * bound, the whole micro-batch in one pass. */
	size_t act_budget;
	/* Rows of logits the model makes at a time (a larger chunk where the
	 * model's free buffers hold it, trainer/model.c). */
	int ce_rows;
	/* The GEMMs' arithmetic in force after open (config key precision,
	 * result.json precision): "autocast" (fp32 operands rounded to bf16 to
	 * nearest even, fp32 accumulation) or "fp32" (fp32 products and sums;
	 * the CPU backend's for fp32 tensors). */
	const char *(*precision)(void);
};

/* The GEMMs' arithmetic a run asks for (config key precision, same order):
 * the backend's own, autocast, or fp32. */
enum backend_precision { BK_PRECISION_AUTO, BK_PRECISION_AUTOCAST, BK_PRECISION_FP32 };

/* What a run asks of its backend (trainer/backend_select.c fills it from
 * the config). */
struct backend_options {
	int device;    /* the device's index among those visible (--device N) */
	int threads;   /* host threads for the CPU backend's BLAS; 0 = all cores */
	enum backend_precision precision; /* the CPU backend refuses autocast */
};

/* The CPU reference backend (OpenBLAS GEMMs, fp32 and fp64). */
const struct backend_ops *backend_cpu(void);
/* Threads for OpenBLAS (0 = leave as is: all cores); open sets the run's. */
void backend_cpu_set_threads(int n);

/* Add bk to the registry under bk->name (a backend's own code does this
 * when its objects are linked in: kernels/ registers "cuda"); aborts when
 * the name is taken or the registry is full. The CPU backend is always
 * there without registering. */
void backend_register(const struct backend_ops *bk);
/* The registered backend of that name, or NULL when this build has none. */
const struct backend_ops *backend_find(const char *name);

#ifdef __cplusplus
}
#endif

#endif

/* optim.h: MuonAdamW (the benchmark optimizer, docs/model.md), its
 * schedules, and the optimizer-side arms of supkit-train(1) (OE table-RMS
 * update, BiEq / MuonEq-R / MuonEq-RC, cooldown momentum, fp32 polar,
 * cosine Muon wd, Neumann-Gram at either site, Table-Neumann, embed_state,
 * the step-0 modes, lr_scale / muon_wd_scale).
 *
 * Ownership: the optimizer borrows the parameter table (the model owns it)
 * and keeps all of its own state (AdamW moments and step counters, Muon
 * momentum and NorMuon second-moment buffers), keyed by the parameter's
 * index in the table: fp32 arrays in fp32 runs (the values the original's
 * fp32 or bf16 state holds, exactly), fp64 in fp64 runs, in the memory of
 * the optimizer's device (optim_set_device). It updates p->w (fp32 runs) or p->w64 (fp64 runs) in
 * place from p->g / p->g64 (or an OE table's compact gradient, param.h),
 * and resets p->counts of OE tables.
 *
 * Precision (the exact rounding points are documented in trainer/optim.c):
 * fp32 runs follow the benchmark's dtypes (fp32 params, fp32 Muon momentum,
 * bf16 Polar Express unless polar = fp32 (in the arithmetic of polar_arith,
 * below), bf16 wte/value_embeds with bf16
 * moments unless embed_state = fp32, bf16 OE tables); fp64 runs do every
 * operation in fp64 with no bf16 rounding.
 *
 * Implementation: trainer/optim.c (steps, state I/O), trainer/polar.c (the
 * matrix operators below), trainer/schedule.c (schedules).
 */
#ifndef SUPKIT_OPTIM_H
#define SUPKIT_OPTIM_H

#include <stddef.h>
#include <stdint.h>
#include "lib/err.h"
#include "trainer/config.h"
#include "trainer/param.h"

/* ---- schedules (trainer/schedule.c) ---- */

struct optim_sched {
	int step;          /* 0-based optimizer step t */
	double progress;   /* p_t = min(max(t - warmup, 0) / (S - warmup), 1) */
	double lrm;        /* LR multiplier (1, then linear warmdown to 0) */
	double lr_mult;    /* lrm * lr_scale: what every group's initial lr is multiplied by */
	double momentum;   /* Muon mu_t (cooldown applied when the arm is on) */
	double muon_wd;    /* Muon wd_t (linear or cosine, times muon_wd_scale) */
};

/* The schedule values at 0-based step t for config c. */
void optim_schedule(const struct config *c, int step, struct optim_sched *s);

/* ---- the optimizer (trainer/optim.c) ---- */

struct optim;

/* Make the optimizer for config c over table t (borrowed; must outlive the
 * optimizer). fp64 = 1 for fp64 runs (uses w64/g64). Returns 0, or -1 with
 * e set (EXIT_USAGE) when a parameter does not fit its group (e.g. a Muon
 * parameter that is not a matrix, an OE table without counts). */
int optim_create(const struct config *c, struct param_table *t, int fp64,
		 struct optim **out, struct err *e);
void optim_free(struct optim *o);

/* Where Polar Express runs in fp32 runs: fn(X, batch, m, n, mode) must do
 * what polar_express_f32 does to each of `batch` row-major m x n matrices
 * stored one after another at X (host memory), in place. NULL (the
 * default) is polar_express_f32 on the host; backend_polar(bk)
 * (trainer/backend_select.h) gives the CUDA twin for the CUDA backend. */
typedef void (*optim_polar_fn)(float *X, size_t batch, size_t m, size_t n, int mode);
void optim_set_polar(struct optim *o, optim_polar_fn fn);

/* Where fp32 runs keep the optimizer state and do its element-wise passes
 * (with the CUDA backend: on the GPU). Every function does what
 * its comment says with the per-element functions of trainer/optim_elem.h,
 * so a device and the host twin (optim_device_host) round alike; the
 * optimizer keeps the scalar arithmetic (schedules, bias corrections,
 * NorMuon's row scales, the OE tables' RMS, the equilibrators' and
 * Neumann-Gram's vectors, masks, step-0 fix-ups, Table-Neumann's gather)
 * on the host, which reads device memory through alloc's unified addressing.
 * Arrays are alloc memory or the model's (backend_alloc memory of the same
 * backend). */
struct optim_device {
	/* n zeroed bytes addressable by the host and these functions; free */
	void *(*alloc)(size_t n);
	void (*free)(void *p);
	/* x[i] = nesterov_elem(&buf[i], g[i], w1, mu, 0), i < n (buf fp32) */
	void (*nesterov)(float *x, float *buf, const float *g, size_t n, double w1, double mu);
	/* ss[k] = sum over row k (per_row) or column k of the m x n x of x^2,
	 * accumulated in fp64 */
	void (*sumsq)(double *ss, const float *x, size_t m, size_t n, int per_row);
	/* w[i][j] = muon_update_elem(w, x, s[per_row ? i : j], lr, lrwd, RND_F32,
	 * bf16 ? RND_BF16 : RND_F32) */
	void (*muon_update)(float *w, const float *x, const double *s, size_t m, size_t n,
			    int per_row, double lr, double lrwd, int bf16);
	/* u = adamw_elem(&m[i], &v[i], g', w1, w2, bias2, eps, bf16_state, r)
	 * with g' = bf16(g[i]) (round_g) or g[i]; then U[i] = u (U not NULL:
	 * the direction, for Neumann-Gram) or w[i] = rnd(w[i] - step_size u,
	 * r); r = RND_BF16 with bf16_state, else RND_F32 */
	void (*adamw)(float *w, const float *g, float *m, float *v, size_t n, double w1,
		      double w2, double bias2, double eps, double step_size, int bf16_state,
		      int round_g, double *U);
	/* w[i] = rnd(w[i] - step_size U[i], bf16 ? RND_BF16 : RND_F32) */
	void (*step_w)(float *w, const double *U, size_t n, double step_size, int bf16);
	/* OE tables (bf16 value w and gradient g, rows x cols, visit counts):
	 * rs[i] = sum over j, in order, of G_ij^2 for a visited row (counts[i]
	 * > 0; rs[i] = 0 otherwise), G_ij = oe_g_elem(g_ij, counts[i], RND_F32) */
	void (*oe_sumsq)(double *rs, const bf16 *g, const uint32_t *counts, size_t rows,
			 size_t cols);
	/* on visited rows: w_ij = bf16(w_ij - oe_step_elem(G_ij, eta, rms, RND_F32)) */
	void (*oe_step)(bf16 *w, const bf16 *g, const uint32_t *counts, size_t rows, size_t cols,
			double eta, double rms);
	/* The equilibrators' passes on an fp64 working copy G (m x n) of the
	 * momentum: ss[k] = sum over row k (per_row) or column k of G^2, in
	 * order; G_ij *= (rs ? rs[i] : 1) * (cs ? cs[j] : 1); G = x widened
	 * (rounded to bf16 first when bf16); x = G rounded to fp32. */
	void (*sumsq64)(double *ss, const double *G, size_t m, size_t n, int per_row);
	void (*scale64)(double *G, const double *rs, const double *cs, size_t m, size_t n);
	void (*widen)(double *G, const float *x, size_t n, int bf16);
	void (*narrow)(float *x, const double *G, size_t n);
	/* Neumann-Gram's passes over U (V x d, fp64; sums in order):
	 * colsum64: s[j] = sum over rows of U_vj;
	 * ng_project: proj[v] = sum_j U_vj mu_j, U_v -= proj[v] mu, then
	 *   rs[v] = sum_j U_vj^2;
	 * gram64: H (d x d) = U^T U;
	 * ng_whiten: W = U + c U H;
	 * ng_combine: U_vj = proj[v] mu_j + c W_vj. */
	void (*colsum64)(double *s, const double *U, size_t V, size_t d);
	void (*ng_project)(double *U, double *proj, double *rs, const double *mu, size_t V,
			   size_t d);
	void (*gram64)(double *H, const double *U, size_t V, size_t d);
	void (*ng_whiten)(double *W, const double *U, const double *H, double c, size_t V,
			  size_t d);
	void (*ng_combine)(double *U, const double *proj, const double *mu, const double *W,
			   double c, size_t V, size_t d);
};

/* The host twin: plain loops over host memory (the default). */
const struct optim_device *optim_device_host(void);

/* Use device d (NULL: the host twin) from now on; state made so far moves
 * into d's memory. fp64 runs ignore it (they run on the host). */
void optim_set_device(struct optim *o, const struct optim_device *d);

/* One optimizer step with the schedule of 0-based step t (optim_schedule). */
int optim_step(struct optim *o, int step, struct err *e);
/* The same with explicit schedule values (tests, audits). */
int optim_step_sched(struct optim *o, const struct optim_sched *s, struct err *e);

/* AdamW step counter of parameter i (0 = no state yet). */
int64_t optim_adamw_count(const struct optim *o, size_t i);
/* AdamW moments (exp_avg, exp_avg_sq) of parameter i copied into m and v
 * (numel doubles each): 0, or -1 when it has no AdamW state (yet). */
int optim_adamw_moments(const struct optim *o, size_t i, double *m, double *v);

/* State I/O for bit-identical resume. File format ("SUPKOPT1"): magic,
 * uint64 record count, then per record: uint32 name length, name, uint32
 * kind (0 = f64 array, 1 = i64 scalar), uint64 count, data (little-endian).
 * Records: "<param>.exp_avg", "<param>.exp_avg_sq", "<param>.step",
 * "<param>.momentum_buffer", "<param>.second_momentum_buffer", and
 * "<param>.master" for values a bf16/fp32 checkpoint cannot hold exactly
 * (fp32 master weights of wte/value_embeds with embed_state = fp32; every
 * parameter of an fp64 run): optim_load writes those into p->w / p->w64, so
 * load the checkpoint first, then the optimizer state. Written atomically;
 * load checks that every record matches a parameter and size, that every
 * value is finite and one the run's state holds exactly (fp32 runs: fp32
 * values, and bf16 values for the bf16 moments of wte and value_embeds
 * with embed_state = bf16; the NorMuon buffer is fp64 always), masked
 * q_tau entries 0, the second moments (exp_avg_sq, second_momentum_buffer)
 * >= 0 and each step >= 0 (the error names the file and the record). */
int optim_save(const struct optim *o, const char *path, struct err *e);
/* The bytes optim_save writes (malloc'd, *len bytes; caller frees). */
unsigned char *optim_state_bytes(const struct optim *o, size_t *len);
int optim_load(struct optim *o, const char *path, struct err *e);
/* optim_load on the file's len bytes at data (name in messages). */
int optim_load_mem(struct optim *o, const void *data, size_t len, const char *name, struct err *e);

/* ---- matrix operators (trainer/polar.c); row-major m x n ---- */

/* The arithmetic of polar_express_f32 (its mode; trainer/polar.c has the
 * rounding points of each): plain fp32 (polar = fp32); bf16 as eager
 * PyTorch computes it (polar_arith = eager: every operation rounded to
 * bf16, the Python scalars too); bf16 as the benchmark's torch.compile'd
 * muon_step_fused computed it on CUDA (polar_arith = compiled: each fused
 * elementwise expression in fp32 from its bf16 inputs, rounded once). */
enum polar_mode { POLAR_MODE_FP32 = 0, POLAR_MODE_BF16_EAGER = 1, POLAR_MODE_BF16_COMPILED = 2 };
/* The mode of an fp32 run of config c (fp64 runs use polar_express_f64). */
int polar_mode_of(const struct config *c);

/* Polar Express, 5 iterations (docs/model.md) on X (m x n, in place), with the
 * Frobenius normalisation, in the arithmetic `mode` (enum polar_mode). */
void polar_express_f32(float *X, size_t m, size_t n, int mode);
void polar_express_f64(double *X, size_t m, size_t n);

/* BiEq (paper 004 section 3.1): two passes of row then column
 * equilibration of G with homotopy a = min(t/tau, 1)^2 (tau <= 0: a = 1). */
void bieq_apply(double *G, size_t m, size_t n, double a);
/* MuonEq-R: rows scaled by (sum_j G_ij^2 + 1e-8)^-1/2. */
void muoneq_r_apply(double *G, size_t m, size_t n);
/* MuonEq-RC: rows and columns scaled simultaneously from the same G. */
void muoneq_rc_apply(double *G, size_t m, size_t n);
/* The same three with their matrix passes on device d (G and work, m + n
 * doubles, in d's memory); the per-row and per-column factors are computed
 * here. The plain forms above use the host twin. */
void bieq_apply_on(const struct optim_device *d, double *G, size_t m, size_t n, double a,
		   double *work);
void muoneq_r_apply_on(const struct optim_device *d, double *G, size_t m, size_t n,
		       double *work);
void muoneq_rc_apply_on(const struct optim_device *d, double *G, size_t m, size_t n,
			double *work);
/* Neumann-Gram whitening (paper 004 Lemma 2) of U (V x d) in place
 * with a = min(t/tau, 1)^2. */
void neumann_gram_apply(double *U, size_t V, size_t d, double a);
/* The same with its matrix passes on device d (U and work,
 * neumann_work_doubles(V, dim) doubles, in d's memory). */
void neumann_gram_apply_on(const struct optim_device *d, double *U, size_t V, size_t dim,
			   double a, double *work);
size_t neumann_work_doubles(size_t V, size_t dim);
/* a = min(t/tau, 1)^2, a = 1 when tau <= 0. */
double homotopy_alpha(int step, double tau);

#endif

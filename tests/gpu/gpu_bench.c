/* gpu_bench.c: the GPU benchmark driver behind bench/bench_gpu.sh (built
 * with GPU=1 by that script; prints figures, asserts nothing).
 *
 *   gpu_bench ops  [--batch B] [--seq T]
 *       matmul and attention fwd/bwd through the CUDA backend table at the
 *       benchmark's shapes (depth 8: C 512, H 4, D 128, V 8192), on managed
 *       buffers: time per op and TFLOP/s (attention with each kernel set
 *       of the backend: fp32 and mma (mma.sync; dev/cuda/bench_attention
 *       times the variants not in the product beside it)); the row and
 *       element-wise ops of a layer ("elem" lines: the input mixing and
 *       its norm fused and as the separate ops of trainer/backend_mix.h,
 *       the norms' backward on fp32 and bf16 outputs, relu^2 in bf16)
 *       with the bandwidth their bytes make, and an op's fixed cost; the
 *       embedding scatter into a bf16 table on uniform and on Zipfian
 *       indices (a frequent token's long run). Below B T = 16,384 the
 *       lm_head chunks have B T rows (the emulated device's smoke run,
 *       tests/cli/bench_gpu_emu.sh, builds this file as build/emu/bin/gpu_bench).
 *   gpu_bench train --depth L [--batch B] [--seq T] [--steps S] [--budget SEC]
 *                   [--pass-rows P]
 *       optimizer steps (grad_accum micro-steps each, as the config says) of
 *       the real model with backend = cuda on random tokens after one warm-up
 *       step: "RESULT depth=L tokens_per_s=... step_s=... peak_mib=..."
 *       lines for the script. --pass-rows P (config pass_rows; 0, the
 *       default: the backend's choice, 16 rows at depth 8) runs each
 *       micro-batch in passes of P rows. Stops early past --budget seconds.
 *       Then "profile" lines: one more step's wall time op by op
 *       (cuda_profile, which makes every op wait for its kernels: the
 *       timed steps run without it, so that asynchronous ops show in
 *       tokens_per_s), the largest 24 first. The attention kernel follows
 *       SUPKIT_CUDA_ATTN (mma, the default: tensor cores through mma.sync;
 *       f32: fp32 on CUDA cores), the GEMMs
 *       the config's default (precision = autocast); ops inside a pass run
 *       on without waiting where the device allows it (RESULT's async=
 *       says what ran).
 *
 *   gpu_bench peak
 *       "peak_tflops: P": the dense bf16 peak that MFU is reckoned against
 *       (trainer/backend_select.h backend_peak_flops: SUPKIT_PEAK_TFLOPS, or
 *       the device's by name; 0 where unknown), as supkit train's result.json.
 *
 * Exit 0 with figures, 3 when the model does not run on the CUDA backend
 * (trainer/model.c not yet selecting it), 2 on bad usage, 4 without a device.
 * Left out: any check of the figures (tests/gpu/test_cuda_ops.c checks).
 * Reference: docs/model.md (the model, the benchmark's size), audit compute
 * (FLOPs).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda_api.h"
#include "lib/bf16.h"
#include "lib/err.h"
#include "lib/progress.h"
#include "lib/rng.h"
#include "trainer/backend.h"
#include "trainer/backend_mix.h"
#include "trainer/backend_select.h"
#include "trainer/config.h"
#include "trainer/model.h"
#include "trainer/optim.h"

/* n floats of managed memory holding N(0, 1) draws: copies of a pool of
 * 2^20 draws made once, each buffer from its own place in the pool (the
 * timings need realistic values, not independent ones; drawing each of
 * the attention's 1.2e9 values takes half a minute on an H200) */
#define POOL ((size_t)1 << 20)
static float *mbuf(size_t n, struct rng *r)
{
	static float *pool;
	static size_t at;
	if (!pool) {
		pool = xmalloc(POOL * sizeof(float));
		for (size_t i = 0; i < POOL; i++)
			pool[i] = (float)rng_normal(r);
	}
	float *p = cuda_mem_alloc(n * sizeof(float));
	if (!p) {
		fprintf(stderr, "gpu_bench: cannot allocate %zu floats\n", n);
		exit(EXIT_SYS);
	}
	for (size_t i = 0; i < n;) {
		size_t m = POOL - at < n - i ? POOL - at : n - i;
		memcpy(p + i, pool + at, m * sizeof(float));
		i += m;
		at = (at + m) % POOL;
	}
	at = (at + 7919) % POOL;   /* the next buffer starts elsewhere */
	return p;
}

static void bench_matmul(const struct backend_ops *g, const char *what, int64_t M, int64_t N,
			 int64_t K, struct rng *r)
{
	float *a = mbuf((size_t)(M * K), r), *b = mbuf((size_t)(N * K), r), *c = mbuf((size_t)(M * N), r);
	struct tensor ta = tensor_2d(a, TD_F32, M, K), tb = tensor_2d(b, TD_F32, N, K);
	struct tensor tc = tensor_2d(c, TD_F32, M, N);
	/* the default (operands rounded to bf16 here, casts included) and
	 * cuBLAS's own down-conversion */
	enum cuda_mm_mode was = cuda_get_matmul_mode();
	for (int fast = 0; fast < 2; fast++) {
		cuda_set_matmul_mode(fast ? CUDA_MM_BF16_FAST : CUDA_MM_BF16);
		g->matmul(&tc, &ta, &tb, 0, 1, 1, 0);
		int reps = 10;
		double t0 = now_seconds();
		for (int i = 0; i < reps; i++)
			g->matmul(&tc, &ta, &tb, 0, 1, 1, 0);
		double dt = (now_seconds() - t0) / reps;
		printf("matmul %-8s %-28s (%lld x %lld) (%lld x %lld)^T: %8.3f ms  %7.1f TFLOP/s\n",
		       cuda_matmul_mode_name(cuda_get_matmul_mode()), what, (long long)M, (long long)K, (long long)N,
		       (long long)K, dt * 1e3, 2.0 * M * N * K / dt / 1e12);
	}
	cuda_set_matmul_mode(was);
	cuda_mem_free(a), cuda_mem_free(b), cuda_mem_free(c);
}

/* n bf16 values from the pool (mbuf's draws, rounded) */
static bf16 *mbuf_bf16(size_t n, struct rng *r)
{
	float *f = mbuf(n, r);
	bf16 *b = cuda_mem_alloc(n * sizeof(bf16));
	if (!b) {
		fprintf(stderr, "gpu_bench: cannot allocate %zu bf16 values\n", n);
		exit(EXIT_SYS);
	}
	for (size_t i = 0; i < n; i++)
		b[i] = bf16_from_f32(f[i]);
	cuda_mem_free(f);
	return b;
}

/* The model's three q, k, v products, as three matmul calls and as one
 * matmul_n (a batched GEMM), in a pass scope as the model runs them: the
 * forward q, k, v (N,C) bf16 = a W^T (a bf16, W fp32, whose casts the
 * scope keeps) and the weights' gradients dW (C,C) fp32 += dX^T a. */
static void bench_matmul_n(const struct backend_ops *g, int64_t N, int64_t C, struct rng *r)
{
	bf16 *a = mbuf_bf16((size_t)(N * C), r), *o[3], *dx[3];
	float *w[3], *gw[3];
	struct tensor ta = tensor_2d(a, TD_BF16, N, C), to[3], tw[3], tdx[3], tgw[3];
	for (int i = 0; i < 3; i++) {
		o[i] = mbuf_bf16((size_t)(N * C), r);
		dx[i] = mbuf_bf16((size_t)(N * C), r);
		w[i] = mbuf((size_t)(C * C), r);
		gw[i] = mbuf((size_t)(C * C), r);
		to[i] = tensor_2d(o[i], TD_BF16, N, C);
		tdx[i] = tensor_2d(dx[i], TD_BF16, N, C);
		tw[i] = tensor_2d(w[i], TD_F32, C, C);
		tgw[i] = tensor_2d(gw[i], TD_F32, C, C);
	}
	struct tensor *po[3] = { &to[0], &to[1], &to[2] }, *pg[3] = { &tgw[0], &tgw[1], &tgw[2] };
	const struct tensor *pa[3] = { &ta, &ta, &ta }, *pw[3] = { &tw[0], &tw[1], &tw[2] };
	const struct tensor *pd[3] = { &tdx[0], &tdx[1], &tdx[2] };
	for (int dir = 0; dir < 2; dir++)
		for (int batched = 0; batched < 2; batched++) {
			g->scope(1);
			int reps = 10;
			double t0 = 0;
			for (int i = 0; i <= reps; i++) {
				if (i == 1)   /* the first: warm-up (and the weights' casts) */
					t0 = now_seconds();
				if (batched && dir == 0)
					g->matmul_n(3, po, pa, pw, 0, 1, 1, 0);
				else if (batched)
					g->matmul_n(3, pg, pd, pa, 1, 0, 1, 1);
				else
					for (int k = 0; k < 3; k++)
						if (dir == 0)
							g->matmul(po[k], pa[k], pw[k], 0, 1, 1, 0);
						else
							g->matmul(pg[k], pd[k], pa[k], 1, 0, 1, 1);
			}
			g->sync();
			double dt = (now_seconds() - t0) / reps;
			g->scope(0);
			printf("matmul %-8s q,k,v %-8s %-13s N %lld C %lld: %8.3f ms  %7.1f TFLOP/s\n",
			       batched ? "matmul_n" : "3 calls", dir ? "dW" : "forward",
			       dir ? "+= dX^T a" : "= a W^T", (long long)N, (long long)C, dt * 1e3,
			       3 * 2.0 * N * C * C / dt / 1e12);
		}
	cuda_mem_free(a);
	for (int i = 0; i < 3; i++) {
		cuda_mem_free(o[i]), cuda_mem_free(dx[i]);
		cuda_mem_free(w[i]), cuda_mem_free(gw[i]);
	}
}

/* The attention kernels' times: modes [m0, m1) of the list below */
static void bench_attn(const struct backend_ops *g, int B, int T, int H, int D, int64_t w,
		       struct rng *r, int m0, int m1)
{
	size_t n = (size_t)B * T * H * D;
	float *q = mbuf(n, r), *k = mbuf(n, r), *v = mbuf(n, r), *y = mbuf(n, r), *dy = mbuf(n, r);
	float *dq = mbuf(n, r), *dk = mbuf(n, r), *dv = mbuf(n, r), *l = mbuf((size_t)B * H * T, r);
#define A4(p) { p, TD_F32, 4, { B, T, H, D } }
	struct tensor tq = A4(q), tk = A4(k), tv = A4(v), ty = A4(y), tdy = A4(dy);
	struct tensor tdq = A4(dq), tdk = A4(dk), tdv = A4(dv);
	struct tensor tl = { l, TD_F32, 3, { B, H, T, 1 } };
#undef A4
	double sc = 1.0 / sqrt((double)D), pairs = 0;
	for (int64_t t = 0; t < T; t++)
		pairs += (double)(t < w ? t + 1 : w + 1);
	double ff = 4.0 * B * H * D * pairs;   /* QK^T and PV */
	static const enum cuda_attn_mode modes[] = { CUDA_ATTN_F32, CUDA_ATTN_MMA };
	enum cuda_attn_mode was = cuda_get_attn_mode();
	for (int mi = m0; mi < m1; mi++) {
		cuda_set_attn_mode(modes[mi]);
		g->attn_fwd(&ty, &tl, &tq, &tk, &tv, w, sc);
		double t0 = now_seconds();
		g->attn_fwd(&ty, &tl, &tq, &tk, &tv, w, sc);
		double t1 = now_seconds();
		g->attn_bwd(&tdq, &tdk, &tdv, &tdy, &tq, &tk, &tv, &ty, &tl, w, sc);
		double t2 = now_seconds();
		printf("attention %-4s B%d T%d H%d D%d window %-5lld fwd %8.2f ms %6.1f TFLOP/s  bwd "
		       "%8.2f ms %6.1f TFLOP/s\n", cuda_attn_mode_name(modes[mi]), B, T, H, D, (long long)w,
		       (t1 - t0) * 1e3, ff / (t1 - t0) / 1e12, (t2 - t1) * 1e3,
		       2.5 * ff / (t2 - t1) / 1e12);
	}
	cuda_set_attn_mode(was);
	float *all[] = { q, k, v, y, dy, dq, dk, dv, l };
	for (int i = 0; i < 9; i++)
		cuda_mem_free(all[i]);
}

/* ms = the ms a call of stmt, over reps calls after one warm-up (each op
 * waits for its kernels outside a pass scope) */
#define OP_MS(ms, reps, stmt)                                  \
	do {                                                   \
		stmt;                                          \
		double t0_ = now_seconds();                    \
		for (int r_ = 0; r_ < (reps); r_++)            \
			stmt;                                  \
		(ms) = (now_seconds() - t0_) / (reps) * 1e3;   \
	} while (0)

static void elem_line(const char *what, double ms, double bytes)
{
	printf("elem %-46s %8.3f ms %7.0f GB/s\n", what, ms, bytes / (ms * 1e-3) / 1e9);
}

/* The row and element-wise ops of a layer at (N, C) (and (N, 4C)), each
 * with its bytes moved as counted in the README (a re-read of a row just
 * written, from cache, not counted) and the bandwidth that makes; a
 * one-element op's time is the fixed cost of an op (launch and wait) */
static void bench_elem(const struct backend_ops *g, int64_t N, int64_t C, struct rng *r)
{
	size_t n = (size_t)(N * C), L = 8;
	float *xin = mbuf(n, r), *x0 = mbuf(n, r), *x = mbuf(n, r), *o = mbuf(n, r);
	float *dx = mbuf(n, r), *dx0 = mbuf(n, r), *rs = mbuf((size_t)N, r);
	float *gl[3] = { mbuf(L, r), mbuf(L, r), mbuf(L, r) };
	void *ob = cuda_mem_alloc(n * 2), *hb = cuda_mem_alloc(4 * n * 2);
	void *ub = cuda_mem_alloc(4 * n * 2), *db = cuda_mem_alloc(4 * n * 2);
	struct tensor txin = tensor_2d(xin, TD_F32, N, C), tx0 = tensor_2d(x0, TD_F32, N, C);
	struct tensor tx = tensor_2d(x, TD_F32, N, C), to = tensor_2d(o, TD_F32, N, C);
	struct tensor tob = tensor_2d(ob, TD_BF16, N, C), tdx = tensor_2d(dx, TD_F32, N, C);
	struct tensor tdx0 = tensor_2d(dx0, TD_F32, N, C), trs = tensor_1d(rs, TD_F32, N);
	struct tensor tg[3], one = tensor_1d(x, TD_F32, 1);
	for (int k = 0; k < 3; k++)
		tg[k] = tensor_1d(gl[k], TD_F32, (int64_t)L);
	const double cf[3] = { 1.0, 0.1, 0.0 };
	double e = (double)n;
	double ms;
	OP_MS(ms, 100, g->zero(&one));
	elem_line("zero, 1 element (an op's fixed cost)", ms, 4);
	/* fused (the backend's), then as the separate ops (trainer/backend_mix.h) */
	for (int f = 1; f >= 0; f--) {
		char w[80];
		snprintf(w, sizeof w, "mix_rmsnorm_fwd %s, out fp32", f ? "fused" : "separate");
		if (f)
			OP_MS(ms, 10, g->mix_rmsnorm_fwd(&tx, &to, &trs, &txin, &tx0, NULL, cf, 1e-6));
		else
			OP_MS(ms, 10, backend_mix_fwd_ops(g, &tx, &to, &trs, &txin, &tx0, NULL, cf, 1e-6));
		elem_line(w, ms, e * (f ? 16 : 28));
		snprintf(w, sizeof w, "mix_rmsnorm_fwd %s, out bf16", f ? "fused" : "separate");
		if (f)
			OP_MS(ms, 10, g->mix_rmsnorm_fwd(&tx, &tob, &trs, &txin, &tx0, NULL, cf, 1e-6));
		else
			OP_MS(ms, 10, backend_mix_fwd_ops(g, &tx, &tob, &trs, &txin, &tx0, NULL, cf, 1e-6));
		elem_line(w, ms, e * (f ? 14 : 26));
		snprintf(w, sizeof w, "mix_bwd %s", f ? "fused" : "separate");
		if (f)
			OP_MS(ms, 10, g->mix_bwd(&tdx, &tdx0, NULL, tg, 1, &txin, &tx0, NULL, cf));
		else
			OP_MS(ms, 10, backend_mix_bwd_ops(g, &tdx, &tdx0, NULL, tg, 1, &txin, &tx0, NULL, cf));
		elem_line(w, ms, e * (f ? 24 : 36));
	}
	OP_MS(ms, 10, g->rmsnorm_bwd(&tdx, &tdx0, &to, &trs, 1));
	elem_line("rmsnorm_bwd, out fp32 (accumulate)", ms, e * 16);
	OP_MS(ms, 10, g->rmsnorm_bwd(&tdx, &tdx0, &tob, &trs, 1));
	elem_line("rmsnorm_bwd, out bf16 (accumulate)", ms, e * 14);
	struct tensor th = tensor_2d(hb, TD_BF16, N, 4 * C), tu = tensor_2d(ub, TD_BF16, N, 4 * C);
	struct tensor tdh = tensor_2d(db, TD_BF16, N, 4 * C);
	g->zero(&th);
	g->zero(&tdh);
	OP_MS(ms, 10, g->relu2_fwd(&tu, &th));
	elem_line("relu2_fwd bf16 (N, 4C)", ms, 4 * e * 4);
	OP_MS(ms, 10, g->relu2_bwd(&tdh, &tu, &th));
	elem_line("relu2_bwd bf16 (N, 4C)", ms, 4 * e * 6);
	float *all[] = { xin, x0, x, o, dx, dx0, rs, gl[0], gl[1], gl[2] };
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		cuda_mem_free(all[i]);
	cuda_mem_free(ob), cuda_mem_free(hb), cuda_mem_free(ub), cuda_mem_free(db);
}

/* The embedding scatter of a pass's gradient (N, C) fp32 into a bf16 table
 * of 8,192 rows (wte, a value-embedding table), its plan kept (made by the
 * first call, as the model's scope keeps it for the next table), for
 * uniform indices (the training rows' random tokens: runs of about N /
 * 8,192 rows) and for indices under Zipf's law, p(r) ~ 1 / r (the most
 * frequent index takes 10% of the rows; on the demo corpus the most
 * frequent token takes 2.5-3.4% of a 131,072-token pass): a run's column
 * slices run side by side, so that a frequent token's long run should take
 * about a quarter of one block's whole-row time at C 512 (estimated; the
 * two lines show it). Bytes: d read,
 * the table's rows read and written. */
static void bench_scatter(const struct backend_ops *g, int64_t N, int64_t C, struct rng *r)
{
	const int64_t Vt = 8192;
	float *d = mbuf((size_t)(N * C), r);
	void *tb = cuda_mem_alloc((size_t)(Vt * C) * 2);
	int32_t *idx = cuda_mem_alloc((size_t)N * 4);
	double *cdf = xmalloc((size_t)Vt * sizeof(double));
	if (!tb || !idx) {
		fprintf(stderr, "gpu_bench: cannot allocate the scatter's buffers\n");
		exit(EXIT_SYS);
	}
	double z = 0;
	for (int64_t v = 0; v < Vt; v++)
		cdf[v] = z += 1.0 / (double)(v + 1);
	struct tensor td = tensor_2d(d, TD_F32, N, C), tt = tensor_2d(tb, TD_BF16, Vt, C);
	g->zero(&tt);
	for (int zipf = 0; zipf < 2; zipf++) {
		int64_t top = 0;   /* rows of index 0, the most frequent under Zipf's law */
		for (int64_t n = 0; n < N; n++) {
			if (zipf) {   /* the first v with cdf[v] > u z */
				double u = rng_uniform(r) * z;
				int64_t lo = 0, hi = Vt - 1;
				while (lo < hi) {
					int64_t mid = (lo + hi) / 2;
					if (cdf[mid] > u)
						hi = mid;
					else
						lo = mid + 1;
				}
				idx[n] = (int32_t)lo;
			} else {
				idx[n] = (int32_t)rng_below(r, (uint64_t)Vt);
			}
			top += idx[n] == 0;
		}
		double ms;
		g->scope(1);
		OP_MS(ms, 10, g->embed_scatter_add(&tt, &td, idx, 0));
		g->scope(0);
		char w[80];
		snprintf(w, sizeof w, "embed_scatter_add bf16, %s (index 0: %lld rows)",
			 zipf ? "Zipf" : "uniform", (long long)top);
		elem_line(w, ms, (double)(N * C) * 4 + (double)(Vt * C) * 4);
	}
	free(cdf);
	cuda_mem_free(d), cuda_mem_free(tb), cuda_mem_free(idx);
}

static int run_ops(int B, int T)
{
	const struct backend_ops *g = backend_cuda();
	struct rng r;
	rng_seed(&r, 1);
	int64_t N = (int64_t)B * T, C = 512;
	bench_matmul(g, "q/k/v/proj (N,C)(C,C)", N, C, C, &r);
	bench_matmul(g, "mlp fc (N,C)(4C,C)", N, 4 * C, C, &r);
	/* (fewer rows where N is smaller: the emulated device's smoke run) */
	bench_matmul(g, "lm_head chunk (4096,C)(V,C)", N < 4096 ? N : 4096, 8192, C, &r);
	bench_matmul(g, "lm_head chunk (16384,C)(V,C)", N < 16384 ? N : 16384, 8192, C, &r);
	bench_matmul_n(g, N, C, &r);
	bench_elem(g, N, C, &r);
	bench_scatter(g, N, C, &r);
	bench_attn(g, B, T, 4, 128, T / 2, &r, 0, 2);
	bench_attn(g, B, T, 4, 128, T, &r, 0, 2);
	return 0;
}

static int run_train(int depth, int B, int T, int steps, double budget, int P)
{
	struct config c;
	struct err e = {0};
	char kv[64];
	config_defaults(&c);
	const char *set[] = { "backend=cuda", NULL };
	snprintf(kv, sizeof kv, "depth=%d", depth);
	if (config_set(&c, kv, &e) != 0 || config_set(&c, set[0], &e) != 0 ||
	    (snprintf(kv, sizeof kv, "seq_len=%d", T), config_set(&c, kv, &e)) != 0 ||
	    (snprintf(kv, sizeof kv, "pass_rows=%d", P), config_set(&c, kv, &e)) != 0 ||
	    config_validate(&c, &e) != 0) {
		fprintf(stderr, "gpu_bench: config: %s\n", e.msg);
		return EXIT_USAGE;
	}
	struct model *m = NULL;
	if (model_create(&c, &m, &e) != 0) {
		fprintf(stderr, "gpu_bench: %s\n", e.msg);
		return EXIT_USAGE;
	}
	if (strcmp(model_backend(m)->name, "cuda") != 0) {
		printf("model runs on the %s backend: trainer/model.c does not select backend = cuda yet\n",
		       model_backend(m)->name);
		model_free(m);
		return 3;
	}
	struct param_table *pt = model_params(m);
	int resident = pt->n > 0 && cuda_mem_is_device(pt->p[0].w);
	if (!resident) {
		printf("note: model memory is host memory, every op copies its operands "
		       "(trainer/model.c allocation hook missing): figures are not representative\n");
		if (B > 4) {
			printf("note: batch cut from %d to 4 rows, 1 timed step, to finish in time\n", B);
			B = 4;
			steps = 1;
		}
	}
	struct optim *o = NULL;
	if (optim_create(&c, pt, 0, &o, &e) != 0) {
		fprintf(stderr, "gpu_bench: %s\n", e.msg);
		model_free(m);
		return EXIT_USAGE;
	}
	backend_optim_attach(o, model_backend(m));
	int K = c.grad_accum > 0 ? c.grad_accum : 1;

	size_t ntok = (size_t)B * T + 1;
	int32_t *tok = malloc(ntok * sizeof(int32_t));
	struct rng r;
	rng_seed(&r, 3);
	for (size_t i = 0; i < ntok; i++)
		tok[i] = (int32_t)rng_below(&r, (uint64_t)c.vocab_size);
	double loss = 0, t0 = 0, t1 = 0, start = now_seconds();
	int done = 0, rc = 0, s = 0;
	/* step 0 warms up, steps 1..done are timed, then one profiled step */
	for (int prof = 0; s <= steps + 1 && rc == 0; s++) {
		if (s == 1)
			t0 = now_seconds();
		if (s >= 1 && (s == steps + 1 || now_seconds() - start > budget)) {
			t1 = now_seconds();
			cuda_profile(1);      /* where a step goes, op by op */
			prof = 1;
		}
		model_zero_grad(m);
		for (int k = 0; k < K && rc == 0; k++)
			if (model_forward_backward(m, tok, tok + 1, B, T, 1.0 / K, &loss, &e) != 0)
				rc = EXIT_USAGE;
		if (rc == 0 && optim_step(o, s, &e) != 0)
			rc = EXIT_USAGE;
		cuda_sync();
		fprintf(stderr, "depth %d step %d loss %.4f (%.1f s)%s\n", depth, s, loss,
			now_seconds() - start, prof ? " profiled" : "");
		if (prof)
			break;
		if (s >= 1)
			done++;
	}
	if (rc != 0) {
		fprintf(stderr, "gpu_bench: %s\n", e.msg);
	} else if (done == 0) {
		printf("depth %d: budget of %.0f s spent in the warm-up step; no figure\n", depth, budget);
	} else {
		double dt = (t1 - t0) / done;
		struct cuda_mem_stats ms;
		cuda_mem_stats(&ms);
		printf("RESULT attn=%s mm=%s async=%d depth=%d batch=%d seq=%d pass_rows=%d accum=%d "
		       "steps=%d tokens_per_s=%.0f step_s=%.4f peak_mib=%.0f model_mib=%.0f resident=%d\n",
		       cuda_attn_mode_name(cuda_get_attn_mode()),
		       cuda_matmul_mode_name(cuda_get_matmul_mode()), cuda_get_async(), depth, B, T,
		       model_pass_rows(m, B, T), K, done, (double)B * T * K / dt, dt,
		       (double)ms.device_peak / 1048576.0, (double)model_peak_bytes(m) / 1048576.0,
		       resident);
		char title[32];
		snprintf(title, sizeof title, "d%d/1step", depth);
		cuda_profile_print(stdout, title, 24);
	}
	cuda_profile(0);
	free(tok);
	optim_free(o);
	model_free(m);
	return rc;
}

static int arg_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

int main(int argc, char **argv)
{
	const char *usage = "usage: gpu_bench ops [--batch B] [--seq T]\n"
			    "       gpu_bench train --depth L [--batch B] [--seq T] [--steps S] [--budget SEC]"
			    " [--pass-rows P]\n"
			    "       gpu_bench peak\n";
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	int depth = 8, B = 64, T = 2048, steps = 3, budget = 120, P = 0;
	for (int i = 2; i < argc; i++) {
		int *dst = !strcmp(argv[i], "--depth") ? &depth : !strcmp(argv[i], "--batch") ? &B :
			   !strcmp(argv[i], "--seq") ? &T : !strcmp(argv[i], "--steps") ? &steps :
			   !strcmp(argv[i], "--budget") ? &budget : !strcmp(argv[i], "--pass-rows") ? &P : NULL;
		if (!dst || i + 1 >= argc || arg_int(argv[i + 1], dst == &P ? 0 : 1, 1 << 20, dst) != 0) {
			fprintf(stderr, "gpu_bench: bad option '%s'\n%s", argv[i], usage);
			return EXIT_USAGE;
		}
		i++;
	}
	if (cuda_device_count() < 1) {
		fprintf(stderr, "gpu_bench: no CUDA device\n");
		return EXIT_SYS;
	}
	char name[128] = "?";
	cuda_device_name(name, sizeof name);
	printf("device: %s\n", name);
	if (!strcmp(argv[1], "peak")) {
		struct err e = { 0 };
		double pk;
		if (backend_peak_flops(backend_cuda(), &pk, &e) < 0) {
			fprintf(stderr, "gpu_bench: %s\n", e.msg);
			return EXIT_USAGE;
		}
		printf("peak_tflops: %g\n", pk / 1e12);
		return 0;
	}
	if (!strcmp(argv[1], "ops"))
		return run_ops(B, T);
	if (!strcmp(argv[1], "train"))
		return run_train(depth, B, T, steps, budget, P);
	fprintf(stderr, "gpu_bench: unknown mode '%s'\n%s", argv[1], usage);
	return EXIT_USAGE;
}

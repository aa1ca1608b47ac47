/* check_attention.c: the attention variant of dev/cuda (wg:
 * dev/cuda/attention_variants.h) against the CPU reference backend
 * (trainer/backend_cpu.c) and against the product's mma.sync kernels
 * (kernels/attention_mma.cu) on the same inputs, forward and backward, at
 * head width 128. Runs on a GPU (make dev-cuda GPU=1) and on the emulated
 * device of tests/emu (make dev-cuda; tests/cli/dev_cuda_emu.sh under make
 * test-emu). A variant the device cannot run (wg off compute capability
 * 9.0) is reported as skipped; without a CUDA device everything is.
 *
 * Bounds, those the product's own attention checks use
 * (tests/gpu/test_cuda_ops.c):
 * - against the CPU: relative Frobenius 2e-2 on y, dq, dk, dv and 3e-2
 *   nats (max) on lse: q, k, v, dy and the probabilities are rounded to
 *   bf16 (2^-8 each, a handful of roundings per product); with window 0
 *   (each query sees itself alone) dq = dk = 0 exactly and both sides
 *   return rounding noise: RMS 2e-2; a second backward gives the same bits;
 * - against the product's mma kernels: relative Frobenius 2e-3 on y, lse,
 *   dq, dk and dv (the same rounding points, fp32 sums in another order);
 *   the wg forward equal to mma's element by element on the emulated
 *   device where the window is a multiple of 64 or covers T (its wgmma
 *   sums each k16 step as its mma does; a GPU's wgmma may order its sums
 *   otherwise than mma.sync).
 * Reference: trainer/backend.h (attn_fwd, attn_bwd).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "dev/cuda/attention_variants.h"
#include "kernels/cuda_api.h"
#include "lib/err.h"
#include "lib/rng.h"
#include "trainer/backend.h"

static const struct backend_ops *CPU;
static struct rng RG;
static int EMU;   /* the device is tests/emu's SIMT emulator */

static float *rnd(size_t n)
{
	float *p = xmalloc((n ? n : 1) * sizeof(float));
	for (size_t i = 0; i < n; i++)
		p[i] = (float)rng_normal(&RG);
	return p;
}

/* n floats of device (managed) memory holding h, or zeros with h NULL */
static float *dev(const float *h, size_t n)
{
	float *p = cuda_mem_alloc(n * sizeof(float));
	if (h)
		memcpy(p, h, n * sizeof(float));
	else
		memset(p, 0, n * sizeof(float));
	return p;
}

static float *dupf(const float *p, size_t n)
{
	float *c = xmalloc(n * sizeof(float));
	memcpy(c, p, n * sizeof(float));
	return c;
}

static double rel_fro(const float *a, const float *b, size_t n)
{
	double d = 0, s = 0;
	for (size_t i = 0; i < n; i++) {
		d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
		s += (double)b[i] * b[i];
	}
	return s > 0 ? sqrt(d / s) : sqrt(d);
}

/* One attention's operands and results on the device: q k v dy (inputs),
 * y lse dq dk dv (outputs). */
struct run {
	float *p[9];
};

static void run_make(struct run *r, float *const *h, int64_t n, int64_t nl)
{
	for (int i = 0; i < 9; i++)
		r->p[i] = dev(i < 4 ? h[i] : NULL, i == 5 ? (size_t)nl : (size_t)n);
}

static void run_free(struct run *r)
{
	for (int i = 0; i < 9; i++)
		cuda_mem_free(r->p[i]);
}

/* forward, then (bwd) backward, of variant v on r's inputs */
static void run_var(enum attn_variant v, struct run *r, int B, int T, int H, int64_t window,
		    int bwd)
{
	float **p = r->p;
	float sc = (float)(1.0 / sqrt(128.0));
	attn_variant_fwd(v, p[4], p[5], p[0], p[1], p[2], B, T, H, window, sc);
	if (bwd)
		attn_variant_bwd(v, p[6], p[7], p[8], p[3], p[0], p[1], p[2], p[4], p[5], B, T, H,
				 window, sc);
	attn_variant_sync();
}

static const char *const OUT_NAME[] = { "y", "lse", "dq", "dk", "dv" };

/* Variant v against the CPU at (B, T, H, 128, window). */
static void vs_cpu(enum attn_variant v, int B, int T, int H, int64_t window)
{
	const int64_t D = 128, n = (int64_t)B * T * H * D, nl = (int64_t)B * H * T;
	double sc = 1.0 / sqrt((double)D);
	float *h[4];
	for (int i = 0; i < 4; i++)
		h[i] = rnd(n);
	float *c[5];   /* the CPU's y lse dq dk dv */
	for (int i = 0; i < 5; i++)
		c[i] = xcalloc(i == 1 ? nl : n, sizeof(float));
#define A4(p) { p, TD_F32, 4, { B, T, H, D } }
#define L3(p) { p, TD_F32, 3, { B, H, T, 1 } }
	struct tensor hq = A4(h[0]), hk = A4(h[1]), hv = A4(h[2]), hdy = A4(h[3]);
	struct tensor hy = A4(c[0]), hl = L3(c[1]), hdq = A4(c[2]), hdk = A4(c[3]), hdv = A4(c[4]);
#undef A4
#undef L3
	CPU->attn_fwd(&hy, &hl, &hq, &hk, &hv, window, sc);
	CPU->attn_bwd(&hdq, &hdk, &hdv, &hdy, &hq, &hk, &hv, &hy, &hl, window, sc);
	struct run r;
	run_make(&r, h, n, nl);
	run_var(v, &r, B, T, H, window, 1);
	printf("  %s B%d T%d H%d D128 w%lld\n", attn_variant_name(v), B, T, H, (long long)window);
	float *g[5] = { r.p[4], r.p[5], r.p[6], r.p[7], r.p[8] };
	double el = 0;
	for (int64_t i = 0; i < nl; i++)
		el = fmax(el, fabs((double)g[1][i] - c[1][i]));
	CHECKF(el <= 3e-2, "%s: lse error %.3g", attn_variant_name(v), el);
	for (int i = 0; i < 5; i++) {
		if (i == 1)
			continue;
		if (window == 0 && (i == 2 || i == 3)) {   /* dq = dk = 0: rounding noise */
			double ss = 0;
			for (int64_t j = 0; j < n; j++)
				ss += (double)g[i][j] * g[i][j];
			CHECKF(sqrt(ss / (double)n) <= 2e-2, "%s: window 0: %s rms %.3g",
			       attn_variant_name(v), OUT_NAME[i], sqrt(ss / (double)n));
			continue;
		}
		double e = rel_fro(g[i], c[i], n);
		CHECKF(e <= 2e-2, "%s: %s: relative Frobenius error %.3g", attn_variant_name(v),
		       OUT_NAME[i], e);
	}
	/* bitwise reproducible */
	float *dk1 = dupf(r.p[7], n), *dq1 = dupf(r.p[6], n);
	float sc32 = (float)sc;
	attn_variant_bwd(v, r.p[6], r.p[7], r.p[8], r.p[3], r.p[0], r.p[1], r.p[2], r.p[4], r.p[5],
			 B, T, H, window, sc32);
	attn_variant_sync();
	CHECKF(memcmp(dk1, r.p[7], n * 4) == 0 && memcmp(dq1, r.p[6], n * 4) == 0,
	       "%s: a second backward changed dq or dk", attn_variant_name(v));
	free(dk1), free(dq1);
	run_free(&r);
	for (int i = 0; i < 4; i++)
		free(h[i]);
	for (int i = 0; i < 5; i++)
		free(c[i]);
}

/* The shapes of the product's tensor-core attention checks: rows past T
 * in the last block, several tiles each way, a window not tile-aligned,
 * window 0, no window, two batch rows and heads. */
static void cpu_cases(enum attn_variant v)
{
	vs_cpu(v, 2, 100, 2, 1000);
	vs_cpu(v, 1, 200, 2, 17);
	vs_cpu(v, 1, 130, 1, 64);
	vs_cpu(v, 1, 70, 1, 0);
	vs_cpu(v, 1, 70, 1, INT64_MAX);   /* "no window": clamped to T */
	vs_cpu(v, 2, 300, 3, 150);
}

/* Variant v against the product's mma kernels on the same inputs: the
 * forward (and with bwd the backward) within 2e-3 relative Frobenius;
 * with bitwise, where the window is a multiple of 64 or covers T, the
 * forward equal element by element. */
static void vs_mma(enum attn_variant v, int bwd, int bitwise)
{
	static const int64_t cs[][2] = { { 333, 128 }, { 333, INT64_MAX }, { 1000, 512 },
					 { 70, 0 }, { 300, 150 }, { 520, 100 }, { 333, 200 } };
	const int B = 2, H = 2;
	for (size_t ci = 0; ci < sizeof cs / sizeof *cs; ci++) {
		int T = (int)cs[ci][0];
		int64_t window = cs[ci][1], n = (int64_t)B * T * H * 128, nl = (int64_t)B * H * T;
		int aligned = window % 64 == 0 || window >= T;
		float *h[4];
		for (int i = 0; i < 4; i++)
			h[i] = rnd(n);
		struct run a, b;
		run_make(&a, h, n, nl);
		run_make(&b, h, n, nl);
		run_var(ATTN_VAR_MMA, &a, B, T, H, window, bwd);
		run_var(v, &b, B, T, H, window, bwd);
		if (bitwise && aligned) {
			int64_t dy = 0, dl = 0;
			for (int64_t i = 0; i < n; i++)
				dy += !(a.p[4][i] == b.p[4][i]);
			for (int64_t i = 0; i < nl; i++)
				dl += !(a.p[5][i] == b.p[5][i]);
			CHECKF(dy == 0 && dl == 0, "T %d window %lld: %s differs from mma in %lld of y, "
			       "%lld of lse", T, (long long)window, attn_variant_name(v),
			       (long long)dy, (long long)dl);
		}
		for (int i = 0; i < (bwd ? 5 : 2); i++) {
			int64_t m = i == 1 ? nl : n;
			double e = rel_fro(b.p[4 + i], a.p[4 + i], m);
			printf("  %s vs mma, T %d window %lld: %s %.3g (relative Frobenius)\n",
			       attn_variant_name(v), T, (long long)window, OUT_NAME[i], e);
			if (window == 0 && (i == 2 || i == 3))
				continue;   /* both rounding noise around 0 (vs_cpu bounds them) */
			CHECKF(e <= 2e-3, "%s vs mma, T %d window %lld: %s differs by %.3g",
			       attn_variant_name(v), T, (long long)window, OUT_NAME[i], e);
		}
		run_free(&a);
		run_free(&b);
		for (int i = 0; i < 4; i++)
			free(h[i]);
	}
}

static int skip_variant(enum attn_variant v)
{
	if (attn_variant_runs_here(v))
		return 0;
	printf("  %s: this device cannot run it (wgmma: compute capability 9.0)\n",
	       attn_variant_name(v));
	return 1;
}

/* The wgmma kernels (the forward, dK, dV and dQ from the kept dS) against
 * the CPU, then against mma's: the forward bitwise on the emulator only. */
TEST(wg_vs_cpu)
{
	if (skip_variant(ATTN_VAR_WG))
		T_SKIP("wg needs compute capability 9.0");
	cpu_cases(ATTN_VAR_WG);
}

TEST(wg_vs_mma)
{
	if (skip_variant(ATTN_VAR_WG))
		T_SKIP("wg needs compute capability 9.0");
	vs_mma(ATTN_VAR_WG, 1, EMU);
}

TEST(device)
{
	T_SKIP("no CUDA device");
}

int main(void)
{
	rng_seed(&RG, 12345);
	if (cuda_device_count() < 1) {
		RUN(device);
		return t_done();
	}
	CPU = backend_cpu();
	(void)backend_cuda();   /* the device, its stream and scratch pool */
	char name[128] = "?";
	cuda_device_name(name, sizeof name);
	printf("device: %s\n", name);
	EMU = strstr(name, "SIMT emulator") != NULL;
	RUN(wg_vs_cpu);
	RUN(wg_vs_mma);
	return t_done();
}

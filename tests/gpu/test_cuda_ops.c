/* test_cuda_ops.c: the CUDA backend (kernels/) against the CPU reference
 * backend (trainer/backend_cpu.c), op by op on random inputs, then 20
 * training steps of a small model on both backends with the loss curves
 * compared. Built only with GPU=1 (tests/gpu/cuda.sh builds and runs it);
 * without a CUDA device it reports one skip.
 *
 * Tolerances, as max |gpu - cpu| over max |cpu| unless said otherwise:
 * - fp32 ops whose row sums both backends accumulate in fp64 (RMS norms,
 *   dot, gates, CE): 1e-6, a few fp32 roundings (2^-24 = 6e-8 each);
 * - attention: 2e-5 forward, 1e-4 backward: fp32 dot products of length D
 *   and tile-order fp32 softmax sums on the GPU against fp64 exp/sums on
 *   the CPU (dS = P (dP - D) loses a few more bits to cancellation);
 * - matmul in full fp32 (CUDA_MM_F32): 1e-5 (K <= 65 fp32 accumulations);
 * - matmul with bf16 inputs (CUDA_MM_BF16, the default), element-wise:
 *   |gpu - cpu| <= 2^-6 |alpha| sum_k |a_ik| |b_kj|: each input is rounded
 *   to bf16 (relative error <= 2^-8, bf16's unit roundoff), so each product
 *   is off by <= 2^-7 (and 2^-16); 2^-6 leaves a factor 2 for the fp32
 *   accumulation;
 * - the embedding scatter-add (fp32 and bf16 tables) and the staging path are bit-exact (same
 *   additions in the same order; the same kernels on copied operands).
 * Then the loss curves of tests/reference/torch_train.py (PyTorch, 40 steps,
 * tests/fixtures/model/curve_*.json) retrained on the GPU: with fp32 GEMMs
 * within 1e-2 of the loss and 3e-2 of each final RMS (the CPU backend drifts
 * 1.6e-3 / 3.7e-3 from the same curve: rounding flips over 40 steps; the
 * GPU sums in other orders again); with the default bf16 GEMM inputs within
 * 1e-1 / 1e-1, and learning.
 * Reference: trainer/backend.h (contracts), shared/DESIGN.md (Backends).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t.h"
#include "backend_complete.h"
#include "kernels/cuda_api.h"
#include "lib/bf16.h"
#include "lib/err.h"
#include "lib/rng.h"
#include "trainer/backend.h"
#include "trainer/backend_mix.h"
#include "trainer/backend_select.h"
#include "trainer/config.h"
#include "trainer/model.h"
#include "trainer/optim.h"
#include "trainer_fixture.h"

static const struct backend_ops *CPU, *GPU;
static struct rng RG;

/* ---- buffers: h = host copy for the CPU, d = managed copy for the GPU ---- */

static float *rnd(size_t n, double s)
{
	float *p = xmalloc((n ? n : 1) * sizeof(float));
	for (size_t i = 0; i < n; i++)
		p[i] = (float)(s * rng_normal(&RG));
	return p;
}

static void *dev(const void *h, size_t bytes)
{
	void *d = cuda_mem_alloc(bytes);
	if (!d) {
		printf("cuda_mem_alloc(%zu) failed\n", bytes);
		exit(1);
	}
	memcpy(d, h, bytes);
	return d;
}

static float *dupf(const float *h, size_t n)
{
	float *p = xmalloc((n ? n : 1) * sizeof(float));
	memcpy(p, h, n * sizeof(float));
	return p;
}

static double rel_err(const float *a, const float *b, size_t n)
{
	double mx = 0, d = 0;
	for (size_t i = 0; i < n; i++) {
		if (fabs(b[i]) > mx)
			mx = fabs(b[i]);
		if (!(fabs((double)a[i] - b[i]) <= d))
			d = isnan(a[i]) || isnan(b[i]) ? INFINITY : fabs((double)a[i] - b[i]);
	}
	return mx > 0 ? d / mx : d;
}

#define CLOSE(a, b, n, tol)                                                            \
	do {                                                                           \
		double e_ = rel_err(a, b, n);                                          \
		CHECKF(e_ <= (tol), "%s vs %s: error %.3g > %.3g", #a, #b, e_, (double)(tol)); \
	} while (0)

/* the device is tests/emu's SIMT emulator (where each GEMM entry is summed
 * in one fixed order, tests/emu/gemm.h: its bits do not depend on the
 * GEMM's shape, the processor or the host's BLAS) */
static int on_emulator(void)
{
	char name[128] = "";
	cuda_device_name(name, sizeof name);
	return strstr(name, "SIMT emulator") != NULL;
}

static struct tensor T2(float *p, int64_t r, int64_t c)
{
	return tensor_2d(p, TD_F32, r, c);
}

/* ---- memory and elementwise ---- */

TEST(axpby_zero_dot)
{
	size_t n = 100003;
	float *x = rnd(n, 1), *y = rnd(n, 1);
	float *dx = dev(x, n * 4), *dy = dev(y, n * 4);
	struct tensor hx = T2(x, 1, n), hy = T2(y, 1, n), gx = T2(dx, 1, n), gy = T2(dy, 1, n);
	double b[] = { 0, 1, -0.3 };
	for (int i = 0; i < 3; i++) {
		CPU->axpby(&hy, 0.7, &hx, b[i]);
		GPU->axpby(&gy, 0.7, &gx, b[i]);
		CLOSE(dy, y, n, 1e-6);
	}
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += fabs((double)x[i] * y[i]);
	/* the dot over the GPU's own vectors (its axpby may contract a*x + b*y
	 * into an FMA, so y differs from the CPU's by an ulp here and there) */
	double c = CPU->dot(&gx, &gy), g = GPU->dot(&gx, &gy);
	CHECKF(fabs(c - g) <= 1e-12 * s, "dot %.17g vs %.17g", g, c);
	CHECK(GPU->dot(&gx, &gy) == g);   /* deterministic */
	GPU->zero(&gy);
	int nz = 0;
	for (size_t i = 0; i < n; i++)
		nz += dy[i] != 0;
	CHECK(nz == 0);
	free(x), free(y), cuda_mem_free(dx), cuda_mem_free(dy);
}

/* the dot at sizes that take one block, some (DOT_PER_THREAD elements a
 * thread) and the most (DOT_BLOCKS, more elements a thread): equal to the
 * CPU's within the fp64 rounding of either sum order */
TEST(dot_sizes)
{
	static const size_t sizes[] = { 1, 4097, 65537, ((size_t)1 << 20) + 12345,
					((size_t)1 << 22) + 12345 };
	for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
		size_t n = sizes[k];
		float *x = rnd(n, 2), *y = rnd(n, 3);
		float *dx = dev(x, n * 4), *dy = dev(y, n * 4);
		struct tensor hx = T2(x, 1, n), hy = T2(y, 1, n), gx = T2(dx, 1, n), gy = T2(dy, 1, n);
		double s = 0;
		for (size_t i = 0; i < n; i++)
			s += fabs((double)x[i] * y[i]);
		double c = CPU->dot(&hx, &hy), g = GPU->dot(&gx, &gy);
		CHECKF(fabs(c - g) <= 1e-12 * s, "n %zu: dot %.17g vs %.17g", n, g, c);
		free(x), free(y), cuda_mem_free(dx), cuda_mem_free(dy);
	}
}

/* dot_acc: acc[i] += the fp64 dot rounded to fp32, on the device; the
 * other entries untouched. The CPU's dot sums in another order: the same
 * bound as the dot above, plus the fp32 rounding of the sum. */
TEST(dot_acc)
{
	size_t n = 70001;
	float *x = rnd(n, 1), *y = rnd(n, 1), acc[5] = { 0.5f, -1.25f, 3.0f, 7.5f, -2.0f };
	float *dx = dev(x, n * 4), *dy = dev(y, n * 4), *da = dev(acc, sizeof acc);
	struct tensor hx = T2(x, 1, n), hy = T2(y, 1, n), gx = T2(dx, 1, n), gy = T2(dy, 1, n);
	struct tensor ha = T2(acc, 1, 5), ga = T2(da, 1, 5);
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += fabs((double)x[i] * y[i]);
	for (int rep = 0; rep < 2; rep++) {
		CPU->dot_acc(&ha, 3, &hx, &hy);
		GPU->dot_acc(&ga, 3, &gx, &gy);
		GPU->sync();
		for (int i = 0; i < 5; i++)
			CHECKF(i == 3 ? fabs((double)da[i] - acc[i]) <= 1e-12 * s + 4e-7 * fabs(acc[i])
				      : da[i] == acc[i], "entry %d: %.9g vs %.9g", i, da[i], acc[i]);
	}
	/* equal to the host adding the GPU's own dot in fp32 */
	float want = da[1] + (float)GPU->dot(&gx, &gy);
	GPU->dot_acc(&ga, 1, &gx, &gy);
	GPU->sync();
	CHECKF(da[1] == want, "%.9g vs %.9g", da[1], want);
	free(x), free(y), cuda_mem_free(dx), cuda_mem_free(dy), cuda_mem_free(da);
}

TEST(cols_get_add)
{
	int64_t N = 37, C = 40, k = 13, c0 = 9;
	float *x = rnd(N * C, 1), *o = rnd(N * k, 1);
	float *dx = dev(x, N * C * 4), *dO = dev(o, N * k * 4);
	struct tensor hx = T2(x, N, C), ho = T2(o, N, k), gx = T2(dx, N, C), go = T2(dO, N, k);
	for (int acc = 0; acc < 2; acc++) {
		CPU->cols_get(&ho, &hx, c0, acc);
		GPU->cols_get(&go, &gx, c0, acc);
		CLOSE(dO, o, N * k, 0);
	}
	CPU->cols_add(&hx, &ho, c0);
	GPU->cols_add(&gx, &go, c0);
	CLOSE(dx, x, N * C, 0);
	free(x), free(o), cuda_mem_free(dx), cuda_mem_free(dO);
}

/* ---- matmul ---- */

static void matmul_case(int ta, int tb, double beta, enum cuda_mm_mode mode)
{
	int64_t M = 33, N = 47, K = 65;
	int64_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
	float *a = rnd(ar * ac, 1), *b = rnd(br * bc, 1), *o = rnd(M * N, 1);
	float *da = dev(a, ar * ac * 4), *db = dev(b, br * bc * 4), *dO = dev(o, M * N * 4);
	struct tensor ha = T2(a, ar, ac), hb = T2(b, br, bc), ho = T2(o, M, N);
	struct tensor ga = T2(da, ar, ac), gb = T2(db, br, bc), go = T2(dO, M, N);
	/* |a| |b| for the bf16 bound */
	float *aa = dupf(a, ar * ac), *ab = dupf(b, br * bc), *ao = xcalloc(M * N, 4);
	for (int64_t i = 0; i < ar * ac; i++)
		aa[i] = fabsf(aa[i]);
	for (int64_t i = 0; i < br * bc; i++)
		ab[i] = fabsf(ab[i]);
	struct tensor haa = T2(aa, ar, ac), hab = T2(ab, br, bc), hao = T2(ao, M, N);
	CPU->matmul(&hao, &haa, &hab, ta, tb, 1, 0);
	cuda_set_matmul_mode(mode);
	CPU->matmul(&ho, &ha, &hb, ta, tb, 0.7, beta);
	GPU->matmul(&go, &ga, &gb, ta, tb, 0.7, beta);
	if (mode == CUDA_MM_F32) {
		CLOSE(dO, o, M * N, 1e-5);
	} else {
		int bad = 0;
		for (int64_t i = 0; i < M * N; i++)
			bad += !(fabs((double)dO[i] - o[i]) <= ldexp(0.7 * ao[i], -6) + 1e-6);
		CHECKF(bad == 0, "ta %d tb %d beta %g: %d entries outside the bf16 bound", ta, tb,
		       beta, bad);
	}
	cuda_set_matmul_mode(CUDA_MM_BF16);
	free(a), free(b), free(o), free(aa), free(ab), free(ao);
	cuda_mem_free(da), cuda_mem_free(db), cuda_mem_free(dO);
}

TEST(matmul_f32)
{
	for (int t = 0; t < 4; t++)
		for (int b = 0; b < 2; b++)
			matmul_case(t & 1, t >> 1, b, CUDA_MM_F32);
}

TEST(matmul_bf16)
{
	for (int t = 0; t < 4; t++)
		for (int b = 0; b < 2; b++) {
			matmul_case(t & 1, t >> 1, b, CUDA_MM_BF16);
			matmul_case(t & 1, t >> 1, b, CUDA_MM_BF16_FAST);
		}
	/* The default mode rounds fp32 operands to nearest even (the benchmark's
	 * autocast) before the bf16 GEMM: the same bits as the product of
	 * operands already rounded on the host. For the record: does cuBLAS's
	 * own down-conversion (COMPUTE_32F_FAST_16BF) give them too? */
	int64_t M = 64, N = 96, K = 256;
	float *a = rnd(M * K, 1), *b = rnd(N * K, 1), *ra = dupf(a, M * K), *rb = dupf(b, N * K);
	for (int64_t i = 0; i < M * K; i++)
		ra[i] = bf16_round(ra[i]);
	for (int64_t i = 0; i < N * K; i++)
		rb[i] = bf16_round(rb[i]);
	float *da = dev(a, M * K * 4), *db = dev(b, N * K * 4), *dra = dev(ra, M * K * 4);
	float *drb = dev(rb, N * K * 4), *o1 = cuda_mem_alloc(M * N * 4), *o2 = cuda_mem_alloc(M * N * 4);
	struct tensor ga = T2(da, M, K), gb = T2(db, N, K), gra = T2(dra, M, K), grb = T2(drb, N, K);
	struct tensor g1 = T2(o1, M, N), g2 = T2(o2, M, N);
	GPU->matmul(&g1, &ga, &gb, 0, 1, 1, 0);
	GPU->matmul(&g2, &gra, &grb, 0, 1, 1, 0);
	int same = 0;
	for (int64_t i = 0; i < M * N; i++)
		same += o1[i] == o2[i];
	CHECKF(same == M * N, "default bf16 mode: %d of %d entries equal the GEMM of RNE-rounded operands",
	       same, (int)(M * N));
	cuda_set_matmul_mode(CUDA_MM_BF16_FAST);
	GPU->matmul(&g1, &ga, &gb, 0, 1, 1, 0);
	cuda_set_matmul_mode(CUDA_MM_BF16);
	same = 0;
	for (int64_t i = 0; i < M * N; i++)
		same += o1[i] == o2[i];
	printf("note: fp32-operand GEMM (FAST_16BF) equals the GEMM of RNE-rounded operands in %d of %d "
	       "entries (max rel. difference %.3g)\n", same, (int)(M * N), rel_err(o1, o2, M * N));
	free(a), free(b), free(ra), free(rb);
	cuda_mem_free(da), cuda_mem_free(db), cuda_mem_free(dra), cuda_mem_free(drb);
	cuda_mem_free(o1), cuda_mem_free(o2);
}

/* cuda_profile_print's text (free it) */
static char *profile_text(const char *title, int top)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cuda_profile_print(f, title, top);
	fclose(f);
	return buf;
}

/* The pass scope's cast reuse: inside a scope a GEMM reuses the bf16 cast
 * of an operand (or of a tensor it is a part of) until an op writes any
 * byte of it, and the ops that write their output's cast as they go
 * (relu^2, RMSNorm and its gradient here; relu2_fwd_gemm writes only the
 * cast) leave it kept; the result always equals the GEMM of the current
 * operands rounded on the host. */
static void reuse_expect(struct tensor *o, struct tensor *a, struct tensor *b, const char *what)
{
	int64_t M = tensor_rows(a), K = tensor_cols(a), N = tensor_rows(b);
	GPU->sync();   /* the ops before may still run (asynchronous ops, cuda_get_async) */
	float *ra = dupf(a->data, M * K), *rb = dupf(b->data, N * K);
	for (int64_t i = 0; i < M * K; i++)
		ra[i] = bf16_round(ra[i]);
	for (int64_t i = 0; i < N * K; i++)
		rb[i] = bf16_round(rb[i]);
	struct tensor ha = T2(ra, M, K), hb = T2(rb, N, K);
	float *want = xcalloc(M * N, 4);
	struct tensor hw = T2(want, M, N);
	GPU->matmul(o, a, b, 0, 1, 1, 0);
	/* the reference: host operands (staged, never kept), outside the scope's keys */
	GPU->matmul(&hw, &ha, &hb, 0, 1, 1, 0);
	CHECKF(memcmp(want, o->data, (size_t)(M * N) * 4) == 0, "cast reuse: %s: stale operand", what);
	free(ra), free(rb), free(want);
}

TEST(matmul_cast_reuse)
{
	int64_t M = 64, N = 96, K = 128;
	float *a = rnd(M * K, 1), *b = rnd(N * K, 1), *a2 = rnd(M * K, 1);
	float *da = dev(a, M * K * 4), *db = dev(b, N * K * 4), *da2 = dev(a2, M * K * 4);
	float *o = cuda_mem_alloc(M * N * 4);
	struct tensor ga = T2(da, M, K), gb = T2(db, N, K), ga2 = T2(da2, M, K), go = T2(o, M, N);
	cuda_profile(1);
	GPU->scope(1);
	reuse_expect(&go, &ga, &gb, "first use");
	reuse_expect(&go, &ga, &gb, "second use");
	GPU->axpby(&ga, 2.0, &ga2, 0);            /* an op rewrites a */
	reuse_expect(&go, &ga, &gb, "after axpby wrote a");
	struct tensor tail = T2(db + (N - 8) * K, 8, K);
	GPU->zero(&tail);                         /* an op writes the last rows of b */
	reuse_expect(&go, &ga, &gb, "after zero wrote part of b");
	struct tensor vb = T2(db, N / 2, K), vo = T2(o, M, N / 2);
	reuse_expect(&vo, &ga, &vb, "a view of b's first rows");
	GPU->relu2_fwd(&ga2, &ga);                /* relu^2 leaves its output's cast kept */
	reuse_expect(&go, &ga2, &gb, "relu2_fwd's output");
	GPU->relu2_bwd(&ga2, &ga2, &ga);          /* relu2_bwd's, written in place */
	reuse_expect(&go, &ga2, &gb, "relu2_bwd's output");
	GPU->matmul(&ga2, &go, &gb, 0, 0, 1, 0);  /* (M,N)(N,K): a matmul writes a2 */
	reuse_expect(&go, &ga2, &gb, "after a matmul wrote a2");
	float *rs = cuda_mem_alloc(M * 4);
	struct tensor grs = T2(rs, 1, M);
	GPU->rmsnorm_fwd(&ga2, &grs, &ga, 1e-6);  /* RMSNorm writes its output's cast */
	reuse_expect(&go, &ga2, &gb, "rmsnorm_fwd's output");
	struct tensor va2 = T2(da2 + 16 * K, 32, K), vo2 = T2(o, 32, N);
	reuse_expect(&vo2, &va2, &gb, "rows 16..47 of rmsnorm_fwd's output (a part of its cast)");
	GPU->rmsnorm_bwd(&ga2, &ga, &ga, &grs, 1);   /* and its gradient, accumulated */
	reuse_expect(&go, &ga2, &gb, "rmsnorm_bwd's accumulated output");
	/* relu2_fwd_gemm: only the cast is written (a2's fp32 values stay stale);
	 * the GEMM equals the one of relu(a)^2 formed and rounded on the host */
	GPU->relu2_fwd_gemm(&ga2, &ga);
	GPU->matmul(&go, &ga2, &gb, 0, 1, 1, 0);
	GPU->sync();
	float *ru = xmalloc(M * K * 4), *rb = dupf(db, N * K), *want = xcalloc(M * N, 4);
	for (int64_t i = 0; i < M * K; i++) {
		float r = da[i] > 0 ? da[i] : 0;
		ru[i] = bf16_round(r * r);
	}
	for (int64_t i = 0; i < N * K; i++)
		rb[i] = bf16_round(rb[i]);
	struct tensor hu = T2(ru, M, K), hb2 = T2(rb, N, K), hw = T2(want, M, N);
	GPU->matmul(&hw, &hu, &hb2, 0, 1, 1, 0);
	CHECKF(memcmp(want, o, (size_t)(M * N) * 4) == 0, "relu2_fwd_gemm's cast-only output");
	free(ru), free(rb), free(want);
	GPU->scope(0);
	cuda_profile(0);
	for (int64_t i = 0; i < M * K; i++)       /* the host writes a between scopes */
		da[i] = (float)(0.5 * i / (M * K));
	GPU->scope(1);
	reuse_expect(&go, &ga, &gb, "host write between scopes");
	GPU->scope(0);
	char *buf = profile_text("t", 50);
	const char *l = buf ? strstr(buf, "bf16 operand casts: ") : NULL;
	unsigned long long made = 0, reused = 0;
	CHECKF(l && sscanf(l, "bf16 operand casts: %llu made, %llu reused", &made, &reused) == 2 &&
	       reused >= 5, "casts reused in the scope: %s", buf ? buf : "");
	printf("  in the scope: %llu casts made, %llu reused\n", made, reused);
	free(buf);
	free(a), free(b), free(a2);
	cuda_mem_free(da), cuda_mem_free(db), cuda_mem_free(da2), cuda_mem_free(o), cuda_mem_free(rs);
}

/* cuda_profile counts every op of a run once, by name, with its time */
TEST(profile)
{
	cuda_profile(1);
	for (int t = 0; t < 3; t++)
		matmul_case(0, 1, 0, CUDA_MM_BF16);
	float *d = cuda_mem_alloc(64 * 4);
	struct tensor gd = T2(d, 8, 8);
	GPU->zero(&gd);
	cuda_profile(0);
	GPU->zero(&gd);   /* not counted */
	char *buf = profile_text("t", 10);
	const char *lm = buf ? strstr(buf, "profile t matmul ") : NULL;
	const char *lz = buf ? strstr(buf, "profile t zero ") : NULL;
	unsigned long long cm = 0, cz = 0;
	double ms = -1;
	CHECKF(lm && sscanf(lm, "profile t matmul calls %llu ms %lf", &cm, &ms) == 2 && cm == 3 && ms > 0,
	       "three matmuls counted: %s", buf ? buf : "");
	CHECKF(lz && sscanf(lz, "profile t zero calls %llu", &cz) == 1 && cz == 1, "one zero counted: %s",
	       buf ? buf : "");
	CHECK(buf && strstr(buf, "(total)"));
	free(buf);
	cuda_mem_free(d);
}

/* The profile's operand lookups (text of cuda_profile_print): ok when the
 * line is there, with its two counts. */
struct lookups {
	int ok;
	unsigned long long fast, drv;
};
static struct lookups lookups_in(const char *text)
{
	struct lookups k = { 0, 0, 0 };
	const char *l = text ? strstr(text, "operand lookups: ") : NULL;
	k.ok = l && sscanf(l, "operand lookups: %llu in the allocation registry, %llu by the driver",
			   &k.fast, &k.drv) == 2;
	return k;
}

/* Operands in cuda_mem_alloc blocks (at their start or inside) are found
 * in the backend's allocation registry, without a driver call; host
 * operands and freed blocks are not. */
TEST(operand_lookup)
{
	float *a = cuda_mem_alloc(64 * 4), *b = cuda_mem_alloc(64 * 4), *h = rnd(32, 1);
	float *ha = rnd(64, 1), *hb = rnd(64, 1);
	memcpy(a, ha, 64 * 4);
	memcpy(b, hb, 64 * 4);
	struct tensor ya = T2(a + 8, 4, 8), xb = T2(b + 32, 4, 8), xh = T2(h, 4, 8);
	cuda_profile(1);
	GPU->axpby(&ya, 2.0, &xb, 0.5);   /* a[8..40) = 2 b[32..64) + a/2: two registry lookups */
	char *buf = profile_text("l", 0);
	GPU->axpby(&ya, 1.0, &xh, 1.0);   /* += h: h by the driver */
	char *buf2 = profile_text("l", 0);
	cuda_profile(0);
	struct lookups k1 = lookups_in(buf), k2 = lookups_in(buf2);
	CHECKF(k1.ok && k1.fast == 2 && k1.drv == 0, "managed operands: %s", buf ? buf : "");
	CHECKF(k2.ok && k2.fast == 3 && k2.drv == 1, "a host operand: %s", buf2 ? buf2 : "");
	int bad = 0;
	for (int i = 0; i < 64; i++) {
		float want = i >= 8 && i < 40 ? (float)(2.0f * hb[i + 24] + 0.5f * ha[i]) + h[i - 8] : ha[i];
		bad += fabsf(a[i] - want) > 1e-6f * (1 + fabsf(want));
	}
	CHECKF(bad == 0, "axpby on registry operands: %d of 64 entries wrong", bad);
	CHECK(cuda_mem_is_device(b) && cuda_mem_is_device(b + 63) && !cuda_mem_is_device(h));
	cuda_mem_free(b);
	CHECK(!cuda_mem_is_device(b));   /* no longer in the registry; the driver does not know it */
	free(buf), free(buf2), free(h), free(ha), free(hb);
	cuda_mem_free(a);
}

/* ---- normalisation and rope ---- */

TEST(rmsnorm)
{
	int64_t N = 70, C = 96;
	float *x = rnd(N * C, 2), *o = xcalloc(N * C, 4), *r = xcalloc(N, 4);
	float *dx = dev(x, N * C * 4), *dO = dev(o, N * C * 4), *dr = dev(r, N * 4);
	struct tensor hx = T2(x, N, C), ho = T2(o, N, C), hr = T2(r, 1, N);
	struct tensor gx = T2(dx, N, C), go = T2(dO, N, C), gr = T2(dr, 1, N);
	CPU->rmsnorm_fwd(&ho, &hr, &hx, 1e-6);
	GPU->rmsnorm_fwd(&go, &gr, &gx, 1e-6);
	CLOSE(dO, o, N * C, 1e-6);
	CLOSE(dr, r, N, 1e-6);
	/* backward, overwrite and accumulate, and dx aliasing dout */
	float *g = rnd(N * C, 1), *d = rnd(N * C, 1);
	float *dg = dev(g, N * C * 4), *dd = dev(d, N * C * 4);
	struct tensor hg = T2(g, N, C), hd = T2(d, N, C), gg = T2(dg, N, C), gd = T2(dd, N, C);
	for (int acc = 0; acc < 2; acc++) {
		CPU->rmsnorm_bwd(&hd, &hg, &ho, &hr, acc);
		GPU->rmsnorm_bwd(&gd, &gg, &go, &gr, acc);
		CLOSE(dd, d, N * C, 1e-6);
	}
	CPU->rmsnorm_bwd(&hg, &hg, &ho, &hr, 0);
	GPU->rmsnorm_bwd(&gg, &gg, &go, &gr, 0);
	CLOSE(dg, g, N * C, 1e-6);
	/* in place forward */
	CPU->rmsnorm_fwd(&hx, &hr, &hx, 1e-6);
	GPU->rmsnorm_fwd(&gx, &gr, &gx, 1e-6);
	CLOSE(dx, x, N * C, 1e-6);
	free(x), free(o), free(r), free(g), free(d);
	cuda_mem_free(dx), cuda_mem_free(dO), cuda_mem_free(dr), cuda_mem_free(dg), cuda_mem_free(dd);
}

TEST(rmsnorm_ref)
{
	int64_t N = 50, C = 72;
	float *x = rnd(N * C, 1), *s = rnd(N * C, 3), *o = xcalloc(N * C, 4), *r = xcalloc(N, 4);
	float *dx = dev(x, N * C * 4), *ds = dev(s, N * C * 4), *dO = dev(o, N * C * 4);
	float *dr = dev(r, N * 4);
	struct tensor hx = T2(x, N, C), hs = T2(s, N, C), ho = T2(o, N, C), hr = T2(r, 1, N);
	struct tensor gx = T2(dx, N, C), gs = T2(ds, N, C), go = T2(dO, N, C), gr = T2(dr, 1, N);
	CPU->rmsnorm_ref_fwd(&ho, &hr, &hx, &hs, 1e-6);
	GPU->rmsnorm_ref_fwd(&go, &gr, &gx, &gs, 1e-6);
	CLOSE(dO, o, N * C, 1e-6);
	CLOSE(dr, r, N, 1e-6);
	float *u = rnd(N * C, 1), *a = rnd(N * C, 1), *b = rnd(N * C, 1);
	float *du = dev(u, N * C * 4), *da = dev(a, N * C * 4), *db = dev(b, N * C * 4);
	struct tensor hu = T2(u, N, C), ha = T2(a, N, C), hb = T2(b, N, C);
	struct tensor gu = T2(du, N, C), ga = T2(da, N, C), gb = T2(db, N, C);
	for (int acc = 0; acc < 2; acc++) {
		CPU->rmsnorm_ref_bwd(&ha, &hb, &hu, &hx, &hs, &hr, acc);
		GPU->rmsnorm_ref_bwd(&ga, &gb, &gu, &gx, &gs, &gr, acc);
		CLOSE(da, a, N * C, 1e-6);
		CLOSE(db, b, N * C, 1e-6);
	}
	free(x), free(s), free(o), free(r), free(u), free(a), free(b);
	cuda_mem_free(dx), cuda_mem_free(ds), cuda_mem_free(dO), cuda_mem_free(dr);
	cuda_mem_free(du), cuda_mem_free(da), cuda_mem_free(db);
}

TEST(rope)
{
	int64_t B = 2, T = 10, T0 = 12, H = 3, D = 16, N = B * T;
	float *x = rnd(N * H * D, 1), *cs = xmalloc(T0 * D / 2 * 4), *sn = xmalloc(T0 * D / 2 * 4);
	for (int64_t t = 0; t < T0; t++)
		for (int64_t c = 0; c < D / 2; c++) {
			cs[t * D / 2 + c] = (float)cos(t * pow(100, -2.0 * c / D));
			sn[t * D / 2 + c] = (float)sin(t * pow(100, -2.0 * c / D));
		}
	float *dx = dev(x, N * H * D * 4), *dc = dev(cs, T0 * D / 2 * 4), *dsn = dev(sn, T0 * D / 2 * 4);
	struct tensor hx = { x, TD_F32, 3, { N, H, D, 1 } }, gx = { dx, TD_F32, 3, { N, H, D, 1 } };
	struct tensor hc = T2(cs, T0, D / 2), hs = T2(sn, T0, D / 2);
	struct tensor gc = T2(dc, T0, D / 2), gs = T2(dsn, T0, D / 2);
	CPU->rope_fwd(&hx, &hc, &hs, T);
	GPU->rope_fwd(&gx, &gc, &gs, T);
	CLOSE(dx, x, N * H * D, 1e-6);
	CPU->rope_bwd(&hx, &hc, &hs, T);
	GPU->rope_bwd(&gx, &gc, &gs, T);
	CLOSE(dx, x, N * H * D, 1e-6);
	free(x), free(cs), free(sn), cuda_mem_free(dx), cuda_mem_free(dc), cuda_mem_free(dsn);
}

/* The fused rope + QK-norm against the CPU's (which equals its rope then
 * rmsnorm bit for bit, test_backend): D 128 (two pairs a lane) and D 16
 * (one lane pair, others idle), out of place and in place, the backward
 * into dx and in place on dout, then with q_tau's column scale (and its
 * column sums ds). Tolerance as rmsnorm's: fp32 values, fp64 sums in
 * another order. */
TEST(rope_rmsnorm)
{
	for (int dd = 0; dd < 2; dd++) {
		int64_t B = 2, T = 9, T0 = 11, H = 3, D = dd ? 128 : 16, N = B * T, n = N * H * D;
		float *x = rnd(n, 2), *cs = rnd(T0 * D / 2, 1), *sn = rnd(T0 * D / 2, 1);
		float *o = xcalloc(n, 4), *r = xcalloc(N * H, 4), *g = rnd(n, 1), *d = xcalloc(n, 4);
		float *dx = dev(x, n * 4), *dc = dev(cs, T0 * D / 2 * 4), *dsn = dev(sn, T0 * D / 2 * 4);
		float *dO = dev(o, n * 4), *dr = dev(r, N * H * 4), *dg = dev(g, n * 4), *dd_ = dev(d, n * 4);
		struct tensor hx = { x, TD_F32, 3, { N, H, D, 1 } }, gx = { dx, TD_F32, 3, { N, H, D, 1 } };
		struct tensor ho = { o, TD_F32, 3, { N, H, D, 1 } }, go = { dO, TD_F32, 3, { N, H, D, 1 } };
		struct tensor hg = { g, TD_F32, 3, { N, H, D, 1 } }, gg = { dg, TD_F32, 3, { N, H, D, 1 } };
		struct tensor hd = { d, TD_F32, 3, { N, H, D, 1 } }, gd = { dd_, TD_F32, 3, { N, H, D, 1 } };
		struct tensor hr = T2(r, 1, N * H), gr = T2(dr, 1, N * H);
		struct tensor hc = T2(cs, T0, D / 2), hs = T2(sn, T0, D / 2);
		struct tensor gc = T2(dc, T0, D / 2), gs = T2(dsn, T0, D / 2);
		CPU->rope_rmsnorm_fwd(&ho, &hr, NULL, &hx, NULL, &hc, &hs, T, 1e-6);
		GPU->rope_rmsnorm_fwd(&go, &gr, NULL, &gx, NULL, &gc, &gs, T, 1e-6);
		CLOSE(dO, o, n, 1e-6);
		CLOSE(dr, r, N * H, 1e-6);
		CLOSE(dx, x, n, 0);   /* out of place: x untouched */
		CPU->rope_rmsnorm_bwd(&hd, NULL, &hg, &ho, &hr, NULL, &hc, &hs, T);
		GPU->rope_rmsnorm_bwd(&gd, NULL, &gg, &go, &gr, NULL, &gc, &gs, T);
		CLOSE(dd_, d, n, 1e-6);
		CPU->rope_rmsnorm_bwd(&hg, NULL, &hg, &ho, &hr, NULL, &hc, &hs, T);
		GPU->rope_rmsnorm_bwd(&gg, NULL, &gg, &go, &gr, NULL, &gc, &gs, T);
		CLOSE(dg, g, n, 1e-6);
		CPU->rope_rmsnorm_fwd(&hx, &hr, NULL, &hx, NULL, &hc, &hs, T, 1e-6);
		GPU->rope_rmsnorm_fwd(&gx, &gr, NULL, &gx, NULL, &gc, &gs, T, 1e-6);
		CLOSE(dx, x, n, 1e-6);
		/* q_tau's column scale: in place on x with xn in o, then the
		 * backward in place on d with ds added to what it held */
		float *sv = rnd(H * D, 1), *ds = rnd(H * D, 1);
		float *gsv = dev(sv, H * D * 4), *gds = dev(ds, H * D * 4);
		struct tensor hk = T2(sv, 1, H * D), gk = T2(gsv, 1, H * D);
		struct tensor hds = T2(ds, 1, H * D), gdsv = T2(gds, 1, H * D);
		CPU->rope_rmsnorm_fwd(&hx, &hr, &ho, &hx, &hk, &hc, &hs, T, 1e-6);
		GPU->rope_rmsnorm_fwd(&gx, &gr, &go, &gx, &gk, &gc, &gs, T, 1e-6);
		CLOSE(dx, x, n, 1e-6);
		CLOSE(dO, o, n, 1e-6);
		CPU->rope_rmsnorm_bwd(&hd, &hds, &hd, &ho, &hr, &hk, &hc, &hs, T);
		GPU->rope_rmsnorm_bwd(&gd, &gdsv, &gd, &go, &gr, &gk, &gc, &gs, T);
		CLOSE(dd_, d, n, 1e-5);
		CLOSE(gds, ds, H * D, 1e-5);   /* over inputs (xn) that differ by 1e-6 */
		free(x), free(cs), free(sn), free(o), free(r), free(g), free(d), free(sv), free(ds);
		cuda_mem_free(dx), cuda_mem_free(dc), cuda_mem_free(dsn), cuda_mem_free(dO);
		cuda_mem_free(dr), cuda_mem_free(dg), cuda_mem_free(dd_), cuda_mem_free(gsv);
		cuda_mem_free(gds);
	}
}

/* ---- attention ---- */

static double rel_fro(const float *a, const float *b, size_t n);

/* tc = 0: the fp32 kernels, max-norm tolerances; tc = 1: the bf16 tensor-core
 * kernels (D = 128), relative Frobenius 2e-2 on y, dq, dk, dv and 3e-2 nats
 * on lse: q, k, v, dy and the probabilities are rounded to bf16 (2^-8 each,
 * a handful of roundings per product). With window 0 (each query sees only
 * itself) dq = dk = 0 exactly and both sides return rounding noise: checked
 * absolutely, max 1e-4 (fp32) and RMS 2e-2 (tensor cores: bf16(dy).bf16(v)
 * against the fp32 rowsum(dy y), about 2^-8 sqrt(D) times the scale). */
static void attn_case_mode(int64_t B, int64_t T, int64_t H, int64_t D, int64_t window,
			   enum cuda_attn_mode mode)
{
	int tc = mode != CUDA_ATTN_F32;
	int64_t n = B * T * H * D, nl = B * H * T;
	double sc = 1.0 / sqrt((double)D);
	float *q = rnd(n, 1), *k = rnd(n, 1), *v = rnd(n, 1), *dy = rnd(n, 1);
	float *y = xcalloc(n, 4), *l = xcalloc(nl, 4), *dq = xcalloc(n, 4), *dk = xcalloc(n, 4);
	float *dv = xcalloc(n, 4);
	float *gq = dev(q, n * 4), *gk = dev(k, n * 4), *gv = dev(v, n * 4), *gdy = dev(dy, n * 4);
	float *gy = dev(y, n * 4), *gl = dev(l, nl * 4), *gdq = dev(dq, n * 4), *gdk = dev(dk, n * 4);
	float *gdv = dev(dv, n * 4);
#define A4(p) { p, TD_F32, 4, { B, T, H, D } }
#define L3(p) { p, TD_F32, 3, { B, H, T, 1 } }
	struct tensor hq = A4(q), hk = A4(k), hv = A4(v), hdy = A4(dy), hy = A4(y), hl = L3(l);
	struct tensor hdq = A4(dq), hdk = A4(dk), hdv = A4(dv);
	struct tensor tq = A4(gq), tk = A4(gk), tv = A4(gv), tdy = A4(gdy), ty = A4(gy), tl = L3(gl);
	struct tensor tdq = A4(gdq), tdk = A4(gdk), tdv = A4(gdv);
	cuda_set_attn_mode(mode);
	CPU->attn_fwd(&hy, &hl, &hq, &hk, &hv, window, sc);
	GPU->attn_fwd(&ty, &tl, &tq, &tk, &tv, window, sc);
	printf("  attn%s B%lld T%lld H%lld D%lld w%lld\n",
	       mode == CUDA_ATTN_MMA ? " (tensor cores, mma)" : "", (long long)B,
	       (long long)T, (long long)H, (long long)D, (long long)window);
	CPU->attn_bwd(&hdq, &hdk, &hdv, &hdy, &hq, &hk, &hv, &hy, &hl, window, sc);
	GPU->attn_bwd(&tdq, &tdk, &tdv, &tdy, &tq, &tk, &tv, &ty, &tl, window, sc);
	if (window == 0) {   /* dq = dk = 0: absolute checks */
		const float *z2[] = { gdq, gdk };
		for (int i = 0; i < 2; i++) {
			double mx = 0, ss = 0;
			for (int64_t j = 0; j < n; j++) {
				mx = fmax(mx, fabs(z2[i][j]));
				ss += (double)z2[i][j] * z2[i][j];
			}
			if (!tc)
				CHECKF(mx <= 1e-4, "window 0: %s max %.3g", i ? "dk" : "dq", mx);
			else
				CHECKF(sqrt(ss / (double)n) <= 2e-2, "window 0: %s rms %.3g", i ? "dk" : "dq",
				       sqrt(ss / (double)n));
		}
	}
	if (!tc) {
		CLOSE(gy, y, n, 2e-5);
		CLOSE(gl, l, nl, 2e-5);
		if (window > 0) {
			CLOSE(gdq, dq, n, 1e-4);
			CLOSE(gdk, dk, n, 1e-4);
		}
		CLOSE(gdv, dv, n, 1e-4);
	} else {
		double el = 0;
		for (int64_t i = 0; i < nl; i++)
			el = fmax(el, fabs((double)gl[i] - l[i]));
		CHECKF(el <= 3e-2, "lse error %.3g", el);
		const float *g4[] = { gy, gdq, gdk, gdv }, *c4[] = { y, dq, dk, dv };
		const char *nm[] = { "y", "dq", "dk", "dv" };
		for (int i = 0; i < 4; i++) {
			if (window == 0 && (i == 1 || i == 2))
				continue;
			double e = rel_fro(g4[i], c4[i], n);
			CHECKF(e <= 2e-2, "%s: relative Frobenius error %.3g", nm[i], e);
		}
	}
	/* bitwise reproducible */
	float *c1 = dupf(gdk, n);
	GPU->attn_bwd(&tdq, &tdk, &tdv, &tdy, &tq, &tk, &tv, &ty, &tl, window, sc);
	CHECK(memcmp(c1, gdk, n * 4) == 0);
	/* staging path (plain host operands) gives the same bits */
	float *sy = xcalloc(n, 4), *sl = xcalloc(nl, 4);
	struct tensor uy = A4(sy), ul = L3(sl);
	GPU->attn_fwd(&uy, &ul, &hq, &hk, &hv, window, sc);
	CHECK(memcmp(sy, gy, n * 4) == 0 && memcmp(sl, gl, nl * 4) == 0);
#undef A4
#undef L3
	cuda_set_attn_mode(CUDA_ATTN_F32);
	free(q), free(k), free(v), free(dy), free(y), free(l), free(dq), free(dk), free(dv);
	free(c1), free(sy), free(sl);
	float *g[] = { gq, gk, gv, gdy, gy, gl, gdq, gdk, gdv };
	for (int i = 0; i < 9; i++)
		cuda_mem_free(g[i]);
}

static void attn_case(int64_t B, int64_t T, int64_t H, int64_t D, int64_t window)
{
	attn_case_mode(B, T, H, D, window, CUDA_ATTN_F32);
}

static void attn_tc_cases(enum cuda_attn_mode mode)
{
	attn_case_mode(2, 100, 2, 128, 1000, mode);
	attn_case_mode(1, 200, 2, 128, 17, mode);
	attn_case_mode(1, 130, 1, 128, 64, mode);
	attn_case_mode(1, 70, 1, 128, 0, mode);
	attn_case_mode(1, 70, 1, 128, INT64_MAX, mode);   /* "no window": clamped to T */
	attn_case_mode(2, 300, 3, 128, 150, mode);        /* several tiles each way, window not tile-aligned */
}

/* The mma.sync kernels (D = 128) against the CPU with the tensor-core
 * tolerances (attn_case_mode). The variants of dev/cuda are checked
 * against these and the CPU by dev/cuda/check_attention.c. */
TEST(attention_mma)
{
	attn_tc_cases(CUDA_ATTN_MMA);
}

TEST(attention_d128)
{
	attn_case(2, 100, 2, 128, 1000);
	attn_case(1, 130, 2, 128, 17);
	attn_case(1, 70, 1, 128, 0);
	attn_case(1, 70, 1, 128, INT64_MAX);
}

TEST(attention_small_heads)
{
	attn_case(2, 70, 3, 16, 1000);
	attn_case(3, 129, 2, 32, 40);
	attn_case(1, 64, 4, 64, 63);
}

/* ---- loss ---- */

/* V = 1000 and 9000 (above the benchmark's 8192), rows with and without
 * a target */
static void softcap_case(int64_t R, int64_t V)
{
	float *lg = rnd(R * V, 10), *ls = xcalloc(R, 4);
	int32_t *tg = xmalloc(R * 4);
	for (int64_t r = 0; r < R; r++)
		tg[r] = r % 9 == 4 ? -1 : (int32_t)rng_below(&RG, V);
	for (int pass = 0; pass < 2; pass++) {
		double dscale = pass ? 0.37 : 0;
		float *h = dupf(lg, R * V), *d = dev(lg, R * V * 4), *dl = dev(ls, R * 4);
		float *hl = xcalloc(R, 4);
		int32_t *dt = dev(tg, R * 4);
		struct tensor th = T2(h, R, V), tl = T2(hl, 1, R), td = T2(d, R, V), tdl = T2(dl, 1, R);
		int64_t a = -1, b = -2;
		CPU->softcap_ce(&th, &tl, tg, 15, dscale, &a);
		GPU->softcap_ce(&td, &tdl, dt, 15, dscale, pass ? &b : NULL);   /* NULL: no host read */
		CHECK(a == (pass ? b : a) && a >= 0);
		CLOSE(dl, hl, R, 2e-6);    /* the CPU's tanh/exp run in fp32 */
		CLOSE(d, h, R * V, 2e-6);
		free(h), free(hl), cuda_mem_free(d), cuda_mem_free(dl), cuda_mem_free(dt);
	}
	free(lg), free(ls), free(tg);
}

TEST(softcap_ce)
{
	softcap_case(37, 1000);
	softcap_case(11, 9000);
}

/* softcap_ce_bf16 (bf16 logits): the losses as softcap_ce's; the gradient
 * bf16 values, each the CPU's or one bf16 ulp from it (a row sum in another
 * order may move an fp32 value across a bf16 tie), on at most 1 in 1000 */
TEST(softcap_ce_bf16)
{
	int64_t R = 37, V = 1000;
	float *lg = rnd(R * V, 10), *ls = xcalloc(R, 4);
	int32_t *tg = xmalloc(R * 4);
	for (int64_t r = 0; r < R; r++)
		tg[r] = r % 9 == 4 ? -1 : (int32_t)rng_below(&RG, V);
	for (int pass = 0; pass < 2; pass++) {
		double dscale = pass ? 0.37 : 0;
		float *h = dupf(lg, R * V), *d = dev(lg, R * V * 4), *dl = dev(ls, R * 4);
		float *hl = xcalloc(R, 4);
		int32_t *dt = dev(tg, R * 4);
		struct tensor th = T2(h, R, V), tl = T2(hl, 1, R), td = T2(d, R, V), tdl = T2(dl, 1, R);
		int64_t a = -1, b = -2;
		CPU->softcap_ce_bf16(&th, &tl, tg, 15, dscale, &a);
		GPU->softcap_ce_bf16(&td, &tdl, dt, 15, dscale, &b);
		CHECK(a == b && a >= 0);
		CLOSE(dl, hl, R, 2e-6);
		if (!pass) {
			free(h), free(hl), cuda_mem_free(d), cuda_mem_free(dl), cuda_mem_free(dt);
			continue;
		}
		size_t differ = 0, far = 0, notbf = 0;
		for (int64_t i = 0; i < R * V; i++) {
			notbf += bf16_round(d[i]) != d[i];
			if (d[i] != h[i]) {
				differ++;
				far += !(fabsf(d[i] - h[i]) <= 0x1p-8f * fabsf(h[i]));
			}
		}
		CHECKF(notbf == 0 && far == 0 && differ * 1000 <= (size_t)(R * V),
		       "gradient: %zu not bf16, %zu differ, %zu by more than a bf16 ulp", notbf, differ,
		       far);
		free(h), free(hl), cuda_mem_free(d), cuda_mem_free(dl), cuda_mem_free(dt);
	}
	free(lg), free(ls), free(tg);
}

/* ---- embeddings ---- */

/* one warp per row: k below and above the warp's 32 lanes */
static void gather_case(int64_t N, int64_t C, int64_t Vt, int64_t k, int64_t c0)
{
	float *tab = rnd(Vt * k, 1), *o = rnd(N * C, 1);
	bf16 *tb = xmalloc(Vt * k * 2);
	for (int64_t i = 0; i < Vt * k; i++)
		tb[i] = bf16_from_f32(tab[i]);
	int32_t *idx = xmalloc(N * 4);
	for (int64_t n = 0; n < N; n++)
		idx[n] = (int32_t)rng_below(&RG, Vt);
	float *dtab = dev(tab, Vt * k * 4), *dO = dev(o, N * C * 4);
	bf16 *dtb = dev(tb, Vt * k * 2);
	int32_t *didx = dev(idx, N * 4);
	struct tensor ht = T2(tab, Vt, k), ho = T2(o, N, C), gt = T2(dtab, Vt, k), go = T2(dO, N, C);
	struct tensor hb = { tb, TD_BF16, 2, { Vt, k, 1, 1 } }, gb = { dtb, TD_BF16, 2, { Vt, k, 1, 1 } };
	for (int acc = 0; acc < 2; acc++)
		for (int rb = 0; rb < 2; rb++) {
			CPU->embed_gather(&ho, &ht, idx, c0, rb, acc);
			GPU->embed_gather(&go, &gt, didx, c0, rb, acc);
			CLOSE(dO, o, N * C, 0);
			CPU->embed_gather(&ho, &hb, idx, c0, rb, acc);
			GPU->embed_gather(&go, &gb, idx, c0, rb, acc);   /* host indices */
			CLOSE(dO, o, N * C, 0);
		}
	free(tab), free(o), free(tb), free(idx);
	cuda_mem_free(dtab), cuda_mem_free(dO), cuda_mem_free(dtb), cuda_mem_free(didx);
}

TEST(embed_gather)
{
	gather_case(300, 40, 50, 24, 8);
	gather_case(257, 160, 70, 100, 28);
}

TEST(embed_scatter_add)
{
	int64_t N = 5000, C = 40, Vt = 70000, k = 24, c0 = 8;
	float *g = rnd(Vt * k, 1), *d = rnd(N * C, 1);
	int32_t *idx = xmalloc(N * 4);
	for (int64_t n = 0; n < N; n++)   /* many repeats, and rows above 65535 */
		idx[n] = n % 3 ? (int32_t)rng_below(&RG, 20) : (int32_t)(Vt - 1 - rng_below(&RG, 9000));
	float *dg = dev(g, Vt * k * 4), *dd = dev(d, N * C * 4);
	struct tensor hg = T2(g, Vt, k), hd = T2(d, N, C), gg = T2(dg, Vt, k), gd = T2(dd, N, C);
	CPU->embed_scatter_add(&hg, &hd, idx, c0);
	GPU->embed_scatter_add(&gg, &gd, idx, c0);
	CHECK(memcmp(dg, g, Vt * k * 4) == 0);   /* same additions, same order */
	/* a bf16 gradient table (OE tables of fp32 runs), twice: the same bits */
	bf16 *hb = xmalloc(Vt * k * 2);
	for (int64_t i = 0; i < Vt * k; i++)
		hb[i] = bf16_from_f32(g[i] * 0.01f);
	bf16 *db = dev(hb, Vt * k * 2);
	struct tensor hbt = { hb, TD_BF16, 2, { Vt, k, 1, 1 } }, gbt = { db, TD_BF16, 2, { Vt, k, 1, 1 } };
	for (int r = 0; r < 2; r++) {
		CPU->embed_scatter_add(&hbt, &hd, idx, c0);
		GPU->embed_scatter_add(&gbt, &gd, idx, c0);
	}
	CHECK(memcmp(db, hb, Vt * k * 2) == 0);
	/* new contents at the same host address: a new sort */
	for (int64_t n = 0; n < N; n += 7)
		idx[n] = (int32_t)rng_below(&RG, (uint64_t)Vt);
	CPU->embed_scatter_add(&hg, &hd, idx, c0);
	GPU->embed_scatter_add(&gg, &gd, idx, c0);
	CHECK(memcmp(dg, g, Vt * k * 4) == 0);
	GPU->zero(&gbt);
	int zero = 1;
	for (int64_t i = 0; i < Vt * k; i++)
		zero &= db[i] == 0;
	CHECK(zero);
	/* inside a pass scope the plan (sorted on the device) of device-resident
	 * indices is kept for the next scatter of the same array (wte and the
	 * value-embedding tables), until an op writes the array or the scope
	 * ends; the host writes them between scopes */
	int32_t *didx = dev(idx, N * 4);
	float *g2 = rnd(Vt * k, 1), *dg2 = dev(g2, Vt * k * 4);
	struct tensor hg2 = T2(g2, Vt, k), gg2 = T2(dg2, Vt, k), ti = T2((float *)didx, 1, N);
	GPU->scope(1);
	GPU->embed_scatter_add(&gg, &gd, didx, c0);
	GPU->embed_scatter_add(&gg2, &gd, didx, c0);   /* the kept plan */
	GPU->zero(&ti);                               /* an op writes the indices: all 0 */
	GPU->embed_scatter_add(&gg2, &gd, didx, c0);
	GPU->scope(0);
	CPU->embed_scatter_add(&hg, &hd, idx, c0);
	CPU->embed_scatter_add(&hg2, &hd, idx, c0);
	int32_t *zi = xcalloc(N, 4);
	CPU->embed_scatter_add(&hg2, &hd, zi, c0);
	CHECK(memcmp(dg, g, Vt * k * 4) == 0 && memcmp(dg2, g2, Vt * k * 4) == 0);
	for (int64_t n = 0; n < N; n++)
		idx[n] = didx[n] = (int32_t)((n * 7919) % Vt);
	GPU->scope(1);
	GPU->embed_scatter_add(&gg, &gd, didx, c0);
	GPU->scope(0);
	CPU->embed_scatter_add(&hg, &hd, idx, c0);
	CHECK(memcmp(dg, g, Vt * k * 4) == 0);
	free(zi), free(g2), cuda_mem_free(dg2), cuda_mem_free(didx);
	free(hb), cuda_mem_free(db);
	free(g), free(d), free(idx), cuda_mem_free(dg), cuda_mem_free(dd);
	/* rows wider than a block (two slices of 128 and 32 columns) and a
	 * frequent index's run of 1,000 rows, as a common token's */
	N = 3000, C = 200, Vt = 90, k = 160, c0 = 20;
	g = rnd(Vt * k, 1), d = rnd(N * C, 1), idx = xmalloc(N * 4);
	for (int64_t n = 0; n < N; n++)
		idx[n] = n % 3 ? (int32_t)rng_below(&RG, (uint64_t)Vt) : 5;
	dg = dev(g, Vt * k * 4), dd = dev(d, N * C * 4);
	hg = T2(g, Vt, k), hd = T2(d, N, C), gg = T2(dg, Vt, k), gd = T2(dd, N, C);
	CPU->embed_scatter_add(&hg, &hd, idx, c0);
	GPU->embed_scatter_add(&gg, &gd, idx, c0);
	CHECK(memcmp(dg, g, Vt * k * 4) == 0);
	hb = xmalloc(Vt * k * 2);
	for (int64_t i = 0; i < Vt * k; i++)
		hb[i] = bf16_from_f32(g[i] * 0.01f);
	db = dev(hb, Vt * k * 2);
	hbt.data = hb, hbt.shape[0] = Vt, hbt.shape[1] = k;
	gbt.data = db, gbt.shape[0] = Vt, gbt.shape[1] = k;
	CPU->embed_scatter_add(&hbt, &hd, idx, c0);
	GPU->embed_scatter_add(&gbt, &gd, idx, c0);
	CHECK(memcmp(db, hb, Vt * k * 2) == 0);
	free(hb), cuda_mem_free(db);
	free(g), free(d), free(idx), cuda_mem_free(dg), cuda_mem_free(dd);
}

/* OE rows and visit counts: the GPU's equal the CPU's exactly (integers),
 * indices in device memory and (counts) staged from the host; many repeats
 * of a few rows, so the atomic increments collide. */
TEST(ngram_rows_counts)
{
	int64_t B = 4, T = 700, N = B * T, V = 100000;
	int32_t *idx = xmalloc(N * 4), *hr = xmalloc(N * 4);
	for (int64_t n = 0; n < N; n++)
		idx[n] = (int32_t)rng_below(&RG, (uint64_t)V);
	int32_t *didx = dev(idx, N * 4), *dr = dev(hr, N * 4);
	for (int j = 0; j < 4; j++) {
		int64_t nrows = 150855 + 2 * j;
		CPU->ngram_rows(hr, idx, B, T, V, 2 + j / 2, nrows);
		GPU->ngram_rows(dr, didx, B, T, V, 2 + j / 2, nrows);
		CHECKF(memcmp(dr, hr, N * 4) == 0, "table %d", j);
	}
	int64_t nr = 300;
	for (int64_t n = 0; n < N; n++)
		hr[n] = (int32_t)(n % 4 ? idx[n] % 3 : idx[n] % nr);
	memcpy(dr, hr, N * 4);
	uint32_t *hc = xcalloc(nr, 4), *dc0 = xcalloc(nr, 4);
	uint32_t *dc = dev(hc, nr * 4);
	for (int r = 0; r < 2; r++) {   /* onto the first call's counts */
		CPU->count_rows(hc, nr, hr, N);
		GPU->count_rows(dc, nr, dr, N);
		GPU->count_rows(dc0, nr, hr, N);   /* host counts and rows, staged */
	}
	CHECK(memcmp(dc, hc, nr * 4) == 0 && memcmp(dc0, hc, nr * 4) == 0 && hc[1] > 1000);
	free(idx), free(hr), free(hc), free(dc0);
	cuda_mem_free(didx), cuda_mem_free(dr), cuda_mem_free(dc);
}

/* ---- activations and gates ---- */

/* exact; n = 5000 runs the float4 path, n = 1003 its tail, off = 1 (one
 * float past 16-byte alignment) the scalar path */
static void relu2_case(int64_t n, int off)
{
	float *h = rnd(n, 1), *o = xcalloc(n, 4), *d = rnd(n, 1), *dh = xcalloc(n, 4);
	float *bh = cuda_mem_alloc((n + 1) * 4), *bo = cuda_mem_alloc((n + 1) * 4);
	float *bd = cuda_mem_alloc((n + 1) * 4), *bdh = cuda_mem_alloc((n + 1) * 4);
	float *gh = bh + off, *go = bo + off, *gd = bd + off, *gdh = bdh + off;
	memcpy(gh, h, n * 4);
	memcpy(gd, d, n * 4);
	struct tensor th = T2(h, 1, n), to = T2(o, 1, n), td = T2(d, 1, n), tdh = T2(dh, 1, n);
	struct tensor uh = T2(gh, 1, n), uo = T2(go, 1, n), ud = T2(gd, 1, n), udh = T2(gdh, 1, n);
	CPU->relu2_fwd(&to, &th);
	GPU->relu2_fwd(&uo, &uh);
	CHECKF(memcmp(go, o, n * 4) == 0, "relu2_fwd n %lld off %d", (long long)n, off);
	CPU->relu2_bwd(&tdh, &td, &th);
	GPU->relu2_bwd(&udh, &ud, &uh);
	CHECKF(memcmp(gdh, dh, n * 4) == 0, "relu2_bwd n %lld off %d", (long long)n, off);
	free(h), free(o), free(d), free(dh);
	cuda_mem_free(bh), cuda_mem_free(bo), cuda_mem_free(bd), cuda_mem_free(bdh);
}

/* the vector path, its tail, and (one element past 16-byte alignment) the
 * scalar path */
static void relu2_sizes(void (*run)(int64_t n, int off))
{
	run(5000, 0);
	run(1003, 0);
	run(1003, 1);
}

TEST(relu2) { relu2_sizes(relu2_case); }

/* bf16 storage (backend.h mlp_bf16): the fp32 op's result on the widened
 * bf16 inputs, rounded once to nearest even, bit for bit; n = 5000 runs
 * the eight-a-thread path, n = 1003 its tail, off = 1 (one bf16 past
 * 16-byte alignment) the scalar path; h and du hold zeros and negatives
 * (relu's edge) and bf16 values with all 8 mantissa bits */
static void relu2_bf16_case(int64_t n, int off)
{
	float *h = rnd(n, 1), *d = rnd(n, 1), *o = xcalloc(n, 4), *dh = xcalloc(n, 4);
	for (int64_t i = 0; i < n; i++) {
		h[i] = i % 17 == 0 ? 0.0f : bf16_round(h[i]);
		d[i] = bf16_round(d[i]);
	}
	bf16 *bh = cuda_mem_alloc((n + 8) * 2), *bo = cuda_mem_alloc((n + 8) * 2);
	bf16 *bd = cuda_mem_alloc((n + 8) * 2), *bdh = cuda_mem_alloc((n + 8) * 2);
	bf16 *gh = bh + off, *go = bo + off, *gd = bd + off, *gdh = bdh + off;
	for (int64_t i = 0; i < n; i++) {
		gh[i] = bf16_from_f32(h[i]);
		gd[i] = bf16_from_f32(d[i]);
	}
	struct tensor th = T2(h, 1, n), to = T2(o, 1, n), td = T2(d, 1, n), tdh = T2(dh, 1, n);
	struct tensor uh = tensor_2d(gh, TD_BF16, 1, n), uo = tensor_2d(go, TD_BF16, 1, n);
	struct tensor ud = tensor_2d(gd, TD_BF16, 1, n), udh = tensor_2d(gdh, TD_BF16, 1, n);
	CPU->relu2_fwd(&to, &th);
	CPU->relu2_bwd(&tdh, &td, &th);
	GPU->relu2_fwd(&uo, &uh);
	int bad = 0;
	for (int64_t i = 0; i < n; i++)
		bad += go[i] != bf16_from_f32(o[i]);
	CHECKF(bad == 0, "relu2_fwd bf16 n %lld off %d: %d entries differ", (long long)n, off, bad);
	GPU->relu2_bwd(&udh, &ud, &uh);
	bad = 0;
	for (int64_t i = 0; i < n; i++)
		bad += gdh[i] != bf16_from_f32(dh[i]);
	CHECKF(bad == 0, "relu2_bwd bf16 n %lld off %d: %d entries differ", (long long)n, off, bad);
	/* in place, as the model runs it (dh over du) */
	GPU->relu2_bwd(&ud, &ud, &uh);
	CHECKF(memcmp(gd, gdh, n * 2) == 0, "relu2_bwd bf16 in place n %lld off %d", (long long)n, off);
	free(h), free(o), free(d), free(dh);
	cuda_mem_free(bh), cuda_mem_free(bo), cuda_mem_free(bd), cuda_mem_free(bdh);
}

TEST(relu2_bf16) { relu2_sizes(relu2_bf16_case); }

/* ---- bf16 storage of the attention's tensors (backend.h attn_bf16) ----
 * Each op on bf16 operands against the same op on fp32 operands holding
 * the same (bf16) values: the fp32 result rounded once to nearest even
 * where the output is bf16, the same bits where it is fp32. */

/* x rounded to bf16 in place, and a managed bf16 copy of it */
static bf16 *bf_dev(float *x, int64_t n)
{
	bf16 *b = cuda_mem_alloc((size_t)(n ? n : 1) * 2);
	for (int64_t i = 0; i < n; i++) {
		x[i] = bf16_round(x[i]);
		b[i] = bf16_from_f32(x[i]);
	}
	return b;
}

/* entries where bf16 b is not f rounded to nearest even */
static int64_t bf_misses(const bf16 *b, const float *f, int64_t n)
{
	int64_t bad = 0;
	for (int64_t i = 0; i < n; i++)
		bad += b[i] != bf16_from_f32(f[i]);
	return bad;
}

/* matmul_n (one batched GEMM) against n matmul calls: the same bits on the
 * emulator (on a GPU cuBLAS's batched kernels may sum in another order:
 * within 1e-5 of the magnitudes); shared and separate first operands, bf16
 * and fp32 operands, ta/tb, beta 0 and 1, bf16 and fp32 outputs; inside a
 * pass scope (kept casts) and outside; and shapes that differ run as
 * separate calls. */
static void matmul_n_case(int ta, int tb, double beta, int shared, enum tdtype adt,
			  enum tdtype odt, int scope)
{
	enum { n = 3 };
	int64_t M = 37, N = 24, K = 40;
	int64_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
	size_t oe = odt == TD_BF16 ? 2 : 4;
	void *A[n], *Bm[n], *O1[n], *O2[n];
	struct tensor ta_[n], tb_[n], to1[n], to2[n];
	for (int i = 0; i < n; i++) {
		float *a = rnd(ar * ac, 1), *b = rnd(br * bc, 1), *o = rnd(M * N, 1);
		A[i] = shared && i ? A[0] : adt == TD_BF16 ? (void *)bf_dev(a, ar * ac)
							      : (void *)dev(a, ar * ac * 4);
		Bm[i] = dev(b, br * bc * 4);
		O1[i] = cuda_mem_alloc(M * N * oe);
		O2[i] = cuda_mem_alloc(M * N * oe);
		for (int64_t j = 0; j < M * N; j++) {   /* beta 1: the same start */
			if (odt == TD_BF16)
				((bf16 *)O1[i])[j] = ((bf16 *)O2[i])[j] = bf16_from_f32(o[j]);
			else
				((float *)O1[i])[j] = ((float *)O2[i])[j] = o[j];
		}
		ta_[i] = tensor_2d(A[i], adt, ar, ac);
		tb_[i] = T2(Bm[i], br, bc);
		to1[i] = tensor_2d(O1[i], odt, M, N);
		to2[i] = tensor_2d(O2[i], odt, M, N);
		free(a), free(b), free(o);
	}
	struct tensor *po[n] = { &to2[0], &to2[1], &to2[2] };
	const struct tensor *pa[n] = { &ta_[0], &ta_[1], &ta_[2] };
	const struct tensor *pb[n] = { &tb_[0], &tb_[1], &tb_[2] };
	if (scope)
		GPU->scope(1);
	for (int i = 0; i < n; i++)
		GPU->matmul(&to1[i], &ta_[i], &tb_[i], ta, tb, 0.7, beta);
	GPU->matmul_n(n, po, pa, pb, ta, tb, 0.7, beta);
	if (scope)
		GPU->scope(0);
	int emu = on_emulator();
	int64_t bad = 0;
	for (int i = 0; i < n; i++)
		for (int64_t j = 0; j < M * N; j++) {
			double x = odt == TD_BF16 ? bf16_to_f32(((bf16 *)O1[i])[j])
						  : ((float *)O1[i])[j];
			double y = odt == TD_BF16 ? bf16_to_f32(((bf16 *)O2[i])[j])
						  : ((float *)O2[i])[j];
			bad += emu ? memcmp(&x, &y, sizeof x) != 0
				   : !(fabs(x - y) <= 1e-5 * (1 + fabs(x)));
		}
	CHECKF(bad == 0, "matmul_n ta %d tb %d beta %g shared %d a %s out %s scope %d: %lld entries "
	       "differ from matmul's", ta, tb, beta, shared, adt == TD_BF16 ? "bf16" : "fp32",
	       odt == TD_BF16 ? "bf16" : "fp32", scope, (long long)bad);
	for (int i = 0; i < n; i++) {
		if (!shared || !i)
			cuda_mem_free(A[i]);
		cuda_mem_free(Bm[i]), cuda_mem_free(O1[i]), cuda_mem_free(O2[i]);
	}
}

TEST(matmul_n)
{
	for (int t = 0; t < 4; t++)
		for (int sh = 0; sh < 2; sh++)
			matmul_n_case(t & 1, t >> 1, t & 1, sh, sh ? TD_BF16 : TD_F32, TD_F32,
				      t >> 1);
	matmul_n_case(0, 1, 0, 1, TD_BF16, TD_BF16, 1);   /* q, k, v = a W^T */
	matmul_n_case(1, 0, 1, 0, TD_BF16, TD_F32, 1);    /* dW += dX^T a */
	cuda_set_matmul_mode(CUDA_MM_F32);               /* fp32 GEMMs: separate calls */
	matmul_n_case(0, 1, 1, 1, TD_F32, TD_F32, 0);
	cuda_set_matmul_mode(CUDA_MM_BF16);
	/* shapes that differ: separate calls, the same values */
	float *a = rnd(20 * 8, 1), *b1 = rnd(8 * 5, 1), *b2 = rnd(8 * 6, 1);
	float *da = dev(a, 20 * 8 * 4), *d1 = dev(b1, 8 * 5 * 4), *d2 = dev(b2, 8 * 6 * 4);
	float *o[4];
	for (int i = 0; i < 4; i++)
		o[i] = cuda_mem_alloc(20 * 6 * 4);
	struct tensor tA = T2(da, 20, 8), tB1 = T2(d1, 8, 5), tB2 = T2(d2, 8, 6);
	struct tensor t0 = T2(o[0], 20, 5), t1 = T2(o[1], 20, 6), t2 = T2(o[2], 20, 5);
	struct tensor t3 = T2(o[3], 20, 6);
	struct tensor *po[2] = { &t0, &t1 };
	const struct tensor *pa[2] = { &tA, &tA }, *pb[2] = { &tB1, &tB2 };
	GPU->matmul_n(2, po, pa, pb, 0, 0, 1, 0);
	GPU->matmul(&t2, &tA, &tB1, 0, 0, 1, 0);
	GPU->matmul(&t3, &tA, &tB2, 0, 0, 1, 0);
	CHECK(memcmp(o[0], o[2], 20 * 5 * 4) == 0 && memcmp(o[1], o[3], 20 * 6 * 4) == 0);
	free(a), free(b1), free(b2);
	cuda_mem_free(da), cuda_mem_free(d1), cuda_mem_free(d2);
	for (int i = 0; i < 4; i++)
		cuda_mem_free(o[i]);
}

#define B3(p, N, H, D) { p, TD_BF16, 3, { N, H, D, 1 } }
#define F3(p, N, H, D) { p, TD_F32, 3, { N, H, D, 1 } }

/* RoPE + QK-norm in place on bf16 q (then with q_tau: xn bf16 too) and its
 * backward reading the bf16 out; D 16 (one lane pair) and 128 */
TEST(rope_rmsnorm_bf16)
{
	for (int dd = 0; dd < 2; dd++) {
		int64_t B = 2, T = 9, T0 = 11, H = 3, D = dd ? 128 : 16, N = B * T, n = N * H * D;
		float *x = rnd(n, 2), *cs = rnd(T0 * D / 2, 1), *sn = rnd(T0 * D / 2, 1);
		float *g = rnd(n, 1), *sv = rnd(H * D, 1), *ds0 = rnd(H * D, 1);
		bf16 *bx = bf_dev(x, n), *bn = cuda_mem_alloc(n * 2);
		float *fx = dev(x, n * 4), *fn = cuda_mem_alloc(n * 4);
		float *dc = dev(cs, T0 * D / 2 * 4), *dsn = dev(sn, T0 * D / 2 * 4);
		float *r1 = cuda_mem_alloc(N * H * 4), *r2 = cuda_mem_alloc(N * H * 4);
		float *d1 = dev(g, n * 4), *d2 = dev(g, n * 4), *ksc = dev(sv, H * D * 4);
		float *s1 = dev(ds0, H * D * 4), *s2 = dev(ds0, H * D * 4);
		struct tensor tb = B3(bx, N, H, D), tbn = B3(bn, N, H, D);
		struct tensor tf = F3(fx, N, H, D), tfn = F3(fn, N, H, D);
		struct tensor tr1 = T2(r1, 1, N * H), tr2 = T2(r2, 1, N * H);
		struct tensor tc = T2(dc, T0, D / 2), ts = T2(dsn, T0, D / 2), tk = T2(ksc, 1, H * D);
		struct tensor td1 = F3(d1, N, H, D), td2 = F3(d2, N, H, D);
		struct tensor ts1 = T2(s1, 1, H * D), ts2 = T2(s2, 1, H * D);
		for (int tau = 0; tau < 2; tau++) {
			const struct tensor *k = tau ? &tk : NULL;
			GPU->rope_rmsnorm_fwd(&tf, &tr1, tau ? &tfn : NULL, &tf, k, &tc, &ts, T, 1e-6);
			GPU->rope_rmsnorm_fwd(&tb, &tr2, tau ? &tbn : NULL, &tb, k, &tc, &ts, T, 1e-6);
			int64_t bad = bf_misses(bx, fx, n) + (tau ? bf_misses(bn, fn, n) : 0);
			CHECKF(bad == 0 && memcmp(r1, r2, N * H * 4) == 0,
			       "rope_rmsnorm_fwd bf16 D %lld tau %d: %lld entries differ", (long long)D,
			       tau, (long long)bad);
			/* the fp32 side continues from the rounded values, as the bf16 side */
			for (int64_t i = 0; i < n; i++) {
				fx[i] = bf16_to_f32(bx[i]);
				fn[i] = bf16_to_f32(bn[i]);
			}
			/* the backward in place on dout (as the model runs it), reading the
			 * forward's out (q_tau: xn) */
			struct tensor *o1 = tau ? &tfn : &tf, *o2 = tau ? &tbn : &tb;
			GPU->rope_rmsnorm_bwd(&td1, tau ? &ts1 : NULL, &td1, o1, &tr1, k, &tc, &ts, T);
			GPU->rope_rmsnorm_bwd(&td2, tau ? &ts2 : NULL, &td2, o2, &tr2, k, &tc, &ts, T);
			CHECKF(memcmp(d1, d2, n * 4) == 0 && memcmp(s1, s2, H * D * 4) == 0,
			       "rope_rmsnorm_bwd on a bf16 out, D %lld tau %d: not the same bits",
			       (long long)D, tau);
			/* and with dout and dx in bf16 too (the attention's gradients,
			 * in place): the fp32 op on the widened dout rounded once, q_tau's
			 * column sums the same bits */
			float *dg = rnd(n, 1);
			bf16 *bd = bf_dev(dg, n);
			memcpy(d1, dg, n * 4);
			memcpy(s2, s1, H * D * 4);
			struct tensor tbd = B3(bd, N, H, D);
			GPU->rope_rmsnorm_bwd(&td1, tau ? &ts1 : NULL, &td1, o1, &tr1, k, &tc, &ts,
					      T);
			GPU->rope_rmsnorm_bwd(&tbd, tau ? &ts2 : NULL, &tbd, o2, &tr2, k, &tc, &ts,
					      T);
			int64_t miss = bf_misses(bd, d1, n);
			CHECKF(miss == 0 && memcmp(s1, s2, H * D * 4) == 0,
			       "rope_rmsnorm_bwd bf16 dout/dx, D %lld tau %d: %lld entries differ, "
			       "column sums %s", (long long)D, tau, (long long)miss,
			       memcmp(s1, s2, H * D * 4) ? "differ" : "equal");
			memcpy(d2, d1, n * 4);   /* both sides go on from the same dout */
			free(dg);
			cuda_mem_free(bd);
		}
		/* and near the CPU op on the same values (its own fp64 sum order) */
		float *hx = xmalloc(n * 4), *hr = xmalloc(N * H * 4);
		for (int64_t i = 0; i < n; i++)
			hx[i] = bf16_round(x[i]);
		struct tensor thx = F3(hx, N, H, D), thr = T2(hr, 1, N * H);
		struct tensor hc = T2(cs, T0, D / 2), hs = T2(sn, T0, D / 2);
		bf16 *bx2 = bf_dev(x, n);
		struct tensor tb2 = B3(bx2, N, H, D);
		CPU->rope_rmsnorm_fwd(&thx, &thr, NULL, &thx, NULL, &hc, &hs, T, 1e-6);
		GPU->rope_rmsnorm_fwd(&tb2, &tr2, NULL, &tb2, NULL, &tc, &ts, T, 1e-6);
		float *w = xmalloc(n * 4);
		for (int64_t i = 0; i < n; i++)
			w[i] = bf16_to_f32(bx2[i]);
		CLOSE(w, hx, n, 1.0 / 256);   /* one rounding: 2^-9 of each value, under 2^-8 of the max */
		free(x), free(cs), free(sn), free(g), free(sv), free(ds0), free(hx), free(hr), free(w);
		void *all[] = { bx, bn, fx, fn, dc, dsn, r1, r2, d1, d2, ksc, s1, s2, bx2 };
		for (size_t i = 0; i < sizeof all / sizeof *all; i++)
			cuda_mem_free(all[i]);
	}
}

/* The mma attention on bf16 q, k, v and y (and then dy) against the same
 * kernels on fp32 tensors holding the same values: y the fp32 y rounded
 * once, lse, dq, dk and dv the same bits (the fp32 path rounds q, k, v to
 * bf16 itself, which is exact here, and its rowsum(dy y) reads y's rounded
 * values). Then the backend offers bf16 storage only where these kernels
 * run. */
static void attn_bf16_case(enum cuda_attn_mode mode, int64_t B, int64_t T, int64_t H,
			   int64_t window)
{
	int64_t D = 128, n = B * T * H * D, nl = B * H * T;
	double sc = 1.0 / sqrt((double)D);
	float *h[4];
	for (int i = 0; i < 4; i++)
		h[i] = rnd(n, 1);
	bf16 *bq = bf_dev(h[0], n), *bk = bf_dev(h[1], n), *bv = bf_dev(h[2], n);
	bf16 *by = cuda_mem_alloc(n * 2);
	float *fq = dev(h[0], n * 4), *fk = dev(h[1], n * 4), *fv = dev(h[2], n * 4);
	float *fy = cuda_mem_alloc(n * 4), *dy = dev(h[3], n * 4);
	float *l1 = cuda_mem_alloc(nl * 4), *l2 = cuda_mem_alloc(nl * 4);
	float *o[2][3];
	for (int a = 0; a < 2; a++)
		for (int j = 0; j < 3; j++)
			o[a][j] = cuda_mem_alloc(n * 4);
#define A4(p, t) { p, t, 4, { B, T, H, D } }
	struct tensor tq = A4(fq, TD_F32), tk = A4(fk, TD_F32), tv = A4(fv, TD_F32), ty = A4(fy, TD_F32);
	struct tensor uq = A4(bq, TD_BF16), uk = A4(bk, TD_BF16), uv = A4(bv, TD_BF16);
	struct tensor uy = A4(by, TD_BF16), tdy = A4(dy, TD_F32);
	struct tensor g1[3] = { A4(o[0][0], TD_F32), A4(o[0][1], TD_F32), A4(o[0][2], TD_F32) };
	struct tensor g2[3] = { A4(o[1][0], TD_F32), A4(o[1][1], TD_F32), A4(o[1][2], TD_F32) };
#undef A4
	struct tensor tl1 = { l1, TD_F32, 3, { B, H, T, 1 } }, tl2 = { l2, TD_F32, 3, { B, H, T, 1 } };
	cuda_set_attn_mode(mode);
	GPU->attn_fwd(&ty, &tl1, &tq, &tk, &tv, window, sc);
	GPU->attn_fwd(&uy, &tl2, &uq, &uk, &uv, window, sc);
	int64_t bad = bf_misses(by, fy, n);
	CHECKF(bad == 0 && memcmp(l1, l2, nl * 4) == 0,
	       "attn_fwd %s bf16 T %lld w %lld: %lld entries of y differ, lse %s",
	       cuda_attn_mode_name(mode), (long long)T, (long long)window, (long long)bad,
	       memcmp(l1, l2, nl * 4) ? "differs" : "equal");
	for (int64_t i = 0; i < n; i++)
		fy[i] = bf16_to_f32(by[i]);
	GPU->attn_bwd(&g1[0], &g1[1], &g1[2], &tdy, &tq, &tk, &tv, &ty, &tl1, window, sc);
	GPU->attn_bwd(&g2[0], &g2[1], &g2[2], &tdy, &uq, &uk, &uv, &uy, &tl2, window, sc);
	for (int j = 0; j < 3; j++)
		CHECKF(memcmp(o[0][j], o[1][j], n * 4) == 0, "attn_bwd %s on bf16 tensors: d%c differs",
		       cuda_attn_mode_name(mode), "qkv"[j]);
	/* and with dy in bf16 too (as the model's matmul writes it): the same
	 * bits as an fp32 dy holding the same values (the kernels read dy's
	 * bf16 copy, and rowsum(dy y) sees the same values) */
	bf16 *bdy = bf_dev(h[3], n);   /* h[3] rounded in place */
	memcpy(dy, h[3], n * 4);
	struct tensor udy = { bdy, TD_BF16, 4, { B, T, H, D } };
	GPU->attn_bwd(&g1[0], &g1[1], &g1[2], &tdy, &tq, &tk, &tv, &ty, &tl1, window, sc);
	GPU->attn_bwd(&g2[0], &g2[1], &g2[2], &udy, &uq, &uk, &uv, &uy, &tl2, window, sc);
	for (int j = 0; j < 3; j++)
		CHECKF(memcmp(o[0][j], o[1][j], n * 4) == 0, "attn_bwd %s with a bf16 dy: d%c differs",
		       cuda_attn_mode_name(mode), "qkv"[j]);
	/* and into bf16 dq, dk, dv (as the model stores them): the fp32
	 * gradients rounded once */
	bf16 *gb[3];
	struct tensor g3[3];
	for (int j = 0; j < 3; j++) {
		gb[j] = cuda_mem_alloc(n * 2);
		g3[j] = (struct tensor){ gb[j], TD_BF16, 4, { B, T, H, D } };
	}
	GPU->attn_bwd(&g3[0], &g3[1], &g3[2], &udy, &uq, &uk, &uv, &uy, &tl2, window, sc);
	for (int j = 0; j < 3; j++) {
		int64_t miss = bf_misses(gb[j], o[1][j], n);
		CHECKF(miss == 0, "attn_bwd %s into bf16: %lld entries of d%c are not the fp32 "
		       "gradient rounded", cuda_attn_mode_name(mode), (long long)miss, "qkv"[j]);
		cuda_mem_free(gb[j]);
	}
	cuda_set_attn_mode(CUDA_ATTN_F32);
	for (int i = 0; i < 4; i++)
		free(h[i]);
	void *all[] = { bq, bk, bv, by, fq, fk, fv, fy, dy, l1, l2, o[0][0], o[0][1], o[0][2],
			o[1][0], o[1][1], o[1][2], bdy };
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		cuda_mem_free(all[i]);
}

TEST(attention_bf16)
{
	attn_bf16_case(CUDA_ATTN_MMA, 2, 100, 2, 1000);
	attn_bf16_case(CUDA_ATTN_MMA, 1, 200, 2, 17);
	attn_bf16_case(CUDA_ATTN_MMA, 1, 300, 1, 150);
	/* offered with the mma kernels and bf16 GEMMs at head width 128 only */
	enum cuda_attn_mode was = cuda_get_attn_mode();
	cuda_set_attn_mode(CUDA_ATTN_MMA);
	CHECK(GPU->attn_bf16(128) && !GPU->attn_bf16(64));
	cuda_set_matmul_mode(CUDA_MM_F32);
	CHECK(!GPU->attn_bf16(128));
	cuda_set_matmul_mode(CUDA_MM_BF16);
	cuda_set_attn_mode(CUDA_ATTN_F32);
	CHECK(!GPU->attn_bf16(128) && !CPU->attn_bf16(128));
	cuda_set_attn_mode(was);
}

/* ---- bf16 storage of the norms' outputs (backend.h norm_bf16) ----
 * rmsnorm_fwd into a bf16 out: the fp32 op's out rounded once, rstd the
 * same bits; rmsnorm_bwd reading a bf16 out and cols_get a bf16 x: the
 * same bits as the fp32 ops on the widened values. Sizes: C 96 (three
 * values a lane), 512 (the benchmark's width), 40 (lanes idle); accumulate
 * and overwrite; the offer follows the GEMM mode and the switch. */
TEST(rmsnorm_bf16)
{
	static const int64_t Cs[] = { 96, 512, 40 };
	for (size_t ci = 0; ci < sizeof Cs / sizeof *Cs; ci++) {
		int64_t N = 37, C = Cs[ci], n = N * C;
		float *x = rnd(n, 2), *g = rnd(n, 1), *d0 = rnd(n, 1), *k0 = rnd(N * 7, 1);
		float *fx = dev(x, n * 4), *fo = cuda_mem_alloc(n * 4);
		bf16 *bo = cuda_mem_alloc(n * 2);
		float *r1 = cuda_mem_alloc(N * 4), *r2 = cuda_mem_alloc(N * 4);
		float *fg = dev(g, n * 4), *d1 = dev(d0, n * 4), *d2 = dev(d0, n * 4);
		float *k1 = dev(k0, N * 7 * 4), *k2 = dev(k0, N * 7 * 4);
		struct tensor tx = T2(fx, N, C), tfo = T2(fo, N, C), tg = T2(fg, N, C);
		struct tensor tbo = tensor_2d(bo, TD_BF16, N, C);
		struct tensor tr1 = T2(r1, 1, N), tr2 = T2(r2, 1, N);
		struct tensor td1 = T2(d1, N, C), td2 = T2(d2, N, C);
		struct tensor tk1 = T2(k1, N, 7), tk2 = T2(k2, N, 7);
		GPU->rmsnorm_fwd(&tfo, &tr1, &tx, 1e-6);
		GPU->rmsnorm_fwd(&tbo, &tr2, &tx, 1e-6);
		int64_t bad = bf_misses(bo, fo, n);
		CHECKF(bad == 0 && memcmp(r1, r2, N * 4) == 0,
		       "rmsnorm_fwd into bf16, C %lld: %lld entries differ", (long long)C,
		       (long long)bad);
		for (int64_t i = 0; i < n; i++)   /* the fp32 side reads the rounded values */
			fo[i] = bf16_to_f32(bo[i]);
		for (int acc = 0; acc < 2; acc++) {
			GPU->rmsnorm_bwd(&td1, &tg, &tfo, &tr1, acc);
			GPU->rmsnorm_bwd(&td2, &tg, &tbo, &tr2, acc);
			CHECKF(memcmp(d1, d2, n * 4) == 0,
			       "rmsnorm_bwd on a bf16 out, C %lld, accum %d: not the same bits",
			       (long long)C, acc);
			GPU->cols_get(&tk1, &tfo, C - 9, acc);
			GPU->cols_get(&tk2, &tbo, C - 9, acc);
			CHECKF(memcmp(k1, k2, N * 7 * 4) == 0,
			       "cols_get of a bf16 x, C %lld, accum %d: not the same bits",
			       (long long)C, acc);
		}
		/* and near the CPU op (fp64 sums) within one bf16 rounding */
		float *ho = xmalloc(n * 4), *hr = xmalloc(N * 4), *w = xmalloc(n * 4);
		struct tensor thx = T2(x, N, C), tho = T2(ho, N, C), thr = T2(hr, 1, N);
		CPU->rmsnorm_fwd(&tho, &thr, &thx, 1e-6);
		for (int64_t i = 0; i < n; i++)
			w[i] = bf16_to_f32(bo[i]);
		CLOSE(w, ho, n, 1.0 / 256);
		free(x), free(g), free(d0), free(k0), free(ho), free(hr), free(w);
		void *all[] = { fx, fo, bo, r1, r2, fg, d1, d2, k1, k2 };
		for (size_t i = 0; i < sizeof all / sizeof *all; i++)
			cuda_mem_free(all[i]);
	}
	CHECK(GPU->norm_bf16() && !CPU->norm_bf16());
	cuda_set_matmul_mode(CUDA_MM_F32);
	CHECK(!GPU->norm_bf16());
	cuda_set_matmul_mode(CUDA_MM_BF16);
	CHECK(GPU->norm_bf16());
}

/* ---- the layer's input mixing fused with its norm (backend.h
 * mix_rmsnorm_fwd, mix_bwd) ----
 * Against the separate ops (trainer/backend_mix.h on the GPU's ops: axpby, axpby (, axpby),
 * rmsnorm_fwd; dot_acc a gradient entry, axpby (, axpby), axpby), the same
 * bits: x, the norm's output (fp32 and bf16) and rstd; the lambdas'
 * gradient entries (other entries untouched), dx0, dx0w and dx. With and
 * without the third term (x0w), at sizes that take one, several and the
 * most (DOT_BLOCKS) partial sums of the dots, and xin = x0 (layer 0). */
static void mix_case(int64_t N, int64_t C, int w, int same, enum tdtype odt)
{
	int64_t n = N * C, L = 3, gi = 1;
	const double cf[3] = { 0.75, -0.375, 1.3125 };
	float *h[6], *d[2][6], *go[2], *gg[2][3], *r[2];
	void *o[2];
	for (int k = 0; k < 6; k++)   /* xin, x0, x0w, dx, dx0, dx0w */
		h[k] = rnd(n, 1);
	float *g0 = rnd(L, 1);
	for (int f = 0; f < 2; f++) {
		for (int k = 0; k < 6; k++)
			d[f][k] = dev(h[k], n * 4);
		if (same)
			cuda_mem_free(d[f][1]), d[f][1] = d[f][0];
		go[f] = cuda_mem_alloc(n * 4);
		o[f] = cuda_mem_alloc(n * tdtype_size(odt));
		r[f] = cuda_mem_alloc(N * 4);
		for (int k = 0; k < 3; k++)
			gg[f][k] = dev(g0, L * 4);
	}
	for (int f = 0; f < 2; f++) {   /* f 0: the separate ops, 1: fused */
		struct tensor t[6], x = T2(go[f], N, C), out = tensor_2d(o[f], odt, N, C);
		struct tensor rs = T2(r[f], 1, N), g[3];
		for (int k = 0; k < 6; k++)
			t[k] = T2(d[f][k], N, C);
		for (int k = 0; k < 3; k++)
			g[k] = T2(gg[f][k], 1, L);
		if (f) {
			GPU->mix_rmsnorm_fwd(&x, &out, &rs, &t[0], &t[1], w ? &t[2] : NULL, cf, 1e-6);
			GPU->mix_bwd(&t[3], &t[4], w ? &t[5] : NULL, g, gi, &t[0], &t[1],
				     w ? &t[2] : NULL, cf);
		} else {
			backend_mix_fwd_ops(GPU, &x, &out, &rs, &t[0], &t[1], w ? &t[2] : NULL, cf,
					    1e-6);
			backend_mix_bwd_ops(GPU, &t[3], &t[4], w ? &t[5] : NULL, g, gi, &t[0], &t[1],
					    w ? &t[2] : NULL, cf);
		}
	}
	int64_t bad = memcmp(go[0], go[1], n * 4) != 0;
	bad += 2 * (memcmp(o[0], o[1], n * tdtype_size(odt)) != 0);
	bad += 4 * (memcmp(r[0], r[1], N * 4) != 0);
	for (int k = 3; k < 6; k++)
		bad += 8 * (memcmp(d[0][k], d[1][k], n * 4) != 0) << (k - 3);
	for (int k = 0; k < 3; k++)
		bad += 64 * (memcmp(gg[0][k], gg[1][k], L * 4) != 0) << k;
	/* the fused side moved the gradient entry (and only that one) */
	int moved = gg[1][0][gi] != g0[gi] && gg[1][1][gi] != g0[gi] &&
		    (w ? gg[1][2][gi] != g0[gi] : gg[1][2][gi] == g0[gi]) && gg[1][0][0] == g0[0] &&
		    gg[1][1][2] == g0[2];
	CHECKF(bad == 0 && moved,
	       "mix N %lld C %lld x0w %d xin=x0 %d out %s: fused != separate (mask %lld), moved %d",
	       (long long)N, (long long)C, w, same, odt == TD_BF16 ? "bf16" : "fp32", (long long)bad,
	       moved);
	for (int k = 0; k < 6; k++)
		free(h[k]);
	free(g0);
	for (int f = 0; f < 2; f++) {
		for (int k = 0; k < 6; k++)
			if (!(same && k == 1))
				cuda_mem_free(d[f][k]);
		cuda_mem_free(go[f]), cuda_mem_free(o[f]), cuda_mem_free(r[f]);
		for (int k = 0; k < 3; k++)
			cuda_mem_free(gg[f][k]);
	}
}

TEST(mix_fused)
{
	mix_case(37, 40, 0, 0, TD_F32);      /* one block of partial sums, idle lanes */
	mix_case(37, 40, 1, 1, TD_BF16);
	mix_case(130, 512, 1, 0, TD_F32);    /* 17 blocks */
	mix_case(130, 512, 0, 1, TD_BF16);
	mix_case(8300, 512, 1, 0, TD_BF16);  /* 4.25e6 elements: DOT_BLOCKS, more a thread */
}

/* ve's gate added into a bf16 v in place: the fp32 op's v rounded once */
TEST(ve_gate_bf16)
{
	int64_t N = 30, H = 3, D = 128, C = H * D;
	float *v = rnd(N * C, 1), *gl = rnd(N * H, 2), *ve = rnd(N * C, 1);
	bf16 *bv = bf_dev(v, N * C);
	float *fv = dev(v, N * C * 4), *g = dev(gl, N * H * 4), *e = dev(ve, N * C * 4);
	struct tensor tv = T2(fv, N, C), ub = tensor_2d(bv, TD_BF16, N, C);
	struct tensor tg = T2(g, N, H), te = T2(e, N, C);
	GPU->ve_gate_fwd(&tv, &tg, &te);
	GPU->ve_gate_fwd(&ub, &tg, &te);
	int64_t bad = bf_misses(bv, fv, N * C);
	CHECKF(bad == 0, "ve_gate_fwd bf16: %lld entries differ", (long long)bad);
	/* its backward from a bf16 dv: the fp32 op's bits on the widened dv */
	float *dv = rnd(N * C, 1);
	bf16 *bd = bf_dev(dv, N * C);
	float *fd = dev(dv, N * C * 4), *o[4];
	for (int i = 0; i < 4; i++)
		o[i] = cuda_mem_alloc((size_t)N * C * 4);
	struct tensor tfd = T2(fd, N, C), tbd = tensor_2d(bd, TD_BF16, N, C);
	struct tensor g1 = T2(o[0], N, H), e1 = T2(o[1], N, C), g2 = T2(o[2], N, H);
	struct tensor e2 = T2(o[3], N, C);
	GPU->ve_gate_bwd(&g1, &e1, &tfd, &tg, &te);
	GPU->ve_gate_bwd(&g2, &e2, &tbd, &tg, &te);
	CHECKF(memcmp(o[0], o[2], N * H * 4) == 0 && memcmp(o[1], o[3], N * C * 4) == 0,
	       "ve_gate_bwd on a bf16 dv: not the fp32 op's bits (dglog %s, dve %s)",
	       memcmp(o[0], o[2], N * H * 4) ? "differs" : "equal",
	       memcmp(o[1], o[3], N * C * 4) ? "differs" : "equal");
	free(v), free(gl), free(ve), free(dv);
	cuda_mem_free(bv), cuda_mem_free(fv), cuda_mem_free(g), cuda_mem_free(e);
	cuda_mem_free(bd), cuda_mem_free(fd);
	for (int i = 0; i < 4; i++)
		cuda_mem_free(o[i]);
}
/* The gate on a table's rows (backend.h ve_gate_fwd_rows, ve_gate_bwd_rows)
 * against embed_gather and the gate on the gathered ve: the same bits for
 * v (fp32 and bf16), dglog and dve (from an fp32 and a bf16 dv); tables in
 * fp32 (rounded to bf16 and not) and bf16; D 16 and 128, rows repeated. */
static void ve_rows_case(int64_t N, int64_t H, int64_t D, int64_t Vt, enum tdtype tdt, int rb,
			 enum tdtype vdt)
{
	int64_t C = H * D;
	float *tab = rnd(Vt * C, 1), *gl = rnd(N * H, 2), *v = rnd(N * C, 1), *dv = rnd(N * C, 1);
	int32_t *ix = xmalloc((size_t)N * 4);
	for (int64_t n = 0; n < N; n++)
		ix[n] = (int32_t)rng_below(&RG, (uint64_t)Vt);
	void *dt = tdt == TD_BF16 ? (void *)bf_dev(tab, Vt * C) : (void *)dev(tab, Vt * C * 4);
	float *dg = dev(gl, N * H * 4), *ve = cuda_mem_alloc(N * C * 4);
	int32_t *di = dev(ix, N * 4);
	size_t ve_ = vdt == TD_BF16 ? 2 : 4;
	void *v1 = vdt == TD_BF16 ? (void *)bf_dev(v, N * C) : (void *)dev(v, N * C * 4);
	void *v2 = vdt == TD_BF16 ? (void *)bf_dev(v, N * C) : (void *)dev(v, N * C * 4);
	void *d1 = vdt == TD_BF16 ? (void *)bf_dev(dv, N * C) : (void *)dev(dv, N * C * 4);
	float *o[4];
	for (int i = 0; i < 4; i++)
		o[i] = cuda_mem_alloc((size_t)(i & 1 ? N * C : N * H) * 4);
	struct tensor tt = tensor_2d(dt, tdt, Vt, C), tg = T2(dg, N, H), tve = T2(ve, N, C);
	struct tensor tv1 = tensor_2d(v1, vdt, N, C), tv2 = tensor_2d(v2, vdt, N, C);
	struct tensor td = tensor_2d(d1, vdt, N, C);
	struct tensor g1 = T2(o[0], N, H), e1 = T2(o[1], N, C), g2 = T2(o[2], N, H);
	struct tensor e2 = T2(o[3], N, C);
	void *scr = cuda_mem_alloc((size_t)(N * C) * ve_);   /* the caller's scratch */
	struct tensor tsc = tensor_2d(scr, vdt, N, C);
	{
		memcpy(v2, v1, (size_t)(N * C) * ve_);
		GPU->embed_gather(&tve, &tt, di, 0, rb, 0);
		GPU->ve_gate_fwd(&tv1, &tg, &tve);
		GPU->ve_gate_fwd_rows(&tv2, &tg, &tt, di, rb, &tsc);
		GPU->ve_gate_bwd(&g1, &e1, &td, &tg, &tve);
		GPU->ve_gate_bwd_rows(&g2, &e2, &td, &tg, &tt, di, rb, &tsc);
		int same = memcmp(v1, v2, (size_t)(N * C) * ve_) == 0 &&
			   memcmp(o[0], o[2], (size_t)(N * H) * 4) == 0 &&
			   memcmp(o[1], o[3], (size_t)(N * C) * 4) == 0;
		CHECKF(same, "ve_gate on table rows, D %lld, table %s%s, v %s: not the "
		       "gathered ve's bits", (long long)D, tdt == TD_BF16 ? "bf16" : "fp32",
		       rb ? " rounded" : "", vdt == TD_BF16 ? "bf16" : "fp32");
	}
	free(tab), free(gl), free(v), free(dv), free(ix);
	void *all[] = { dt, dg, ve, di, v1, v2, d1, o[0], o[1], o[2], o[3], scr };
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		cuda_mem_free(all[i]);
}

TEST(ve_gate_rows)
{
	ve_rows_case(30, 3, 16, 7, TD_F32, 0, TD_F32);
	ve_rows_case(37, 4, 128, 50, TD_F32, 1, TD_BF16);
	ve_rows_case(37, 2, 128, 50, TD_BF16, 0, TD_BF16);
	ve_rows_case(20, 2, 128, 9, TD_F32, 1, TD_F32);
}

#undef B3
#undef F3

/* one warp per (row, head): D below and above the warp's 32 lanes */
static void ve_gate_case(int64_t N, int64_t H, int64_t D)
{
	int64_t C = H * D;
	float *v = rnd(N * C, 1), *gl = rnd(N * H, 2), *ve = rnd(N * C, 1), *dv = rnd(N * C, 1);
	float *dgl = xcalloc(N * H, 4), *dve = xcalloc(N * C, 4);
	float *a = dev(v, N * C * 4), *b = dev(gl, N * H * 4), *c = dev(ve, N * C * 4);
	float *e = dev(dv, N * C * 4), *f = dev(dgl, N * H * 4), *g = dev(dve, N * C * 4);
	struct tensor hv = T2(v, N, C), hgl = T2(gl, N, H), hve = T2(ve, N, C), hdv = T2(dv, N, C);
	struct tensor hdgl = T2(dgl, N, H), hdve = T2(dve, N, C);
	struct tensor tv = T2(a, N, C), tgl = T2(b, N, H), tve = T2(c, N, C), tdv = T2(e, N, C);
	struct tensor tdgl = T2(f, N, H), tdve = T2(g, N, C);
	CPU->ve_gate_fwd(&hv, &hgl, &hve);
	GPU->ve_gate_fwd(&tv, &tgl, &tve);
	CLOSE(a, v, N * C, 1e-6);
	CPU->ve_gate_bwd(&hdgl, &hdve, &hdv, &hgl, &hve);
	GPU->ve_gate_bwd(&tdgl, &tdve, &tdv, &tgl, &tve);
	CLOSE(f, dgl, N * H, 1e-6);
	CLOSE(g, dve, N * C, 1e-6);
	free(v), free(gl), free(ve), free(dv), free(dgl), free(dve);
	float *all[] = { a, b, c, e, f, g };
	for (int i = 0; i < 6; i++)
		cuda_mem_free(all[i]);
}

TEST(ve_gate)
{
	ve_gate_case(30, 3, 16);
	ve_gate_case(37, 4, 128);
}

TEST(mul_cols)
{
	int64_t N = 300, K = 48;
	float *x = rnd(N * K, 1), *s = rnd(K, 1), *o = xcalloc(N * K, 4), *d = rnd(N * K, 1);
	float *ds = rnd(K, 1);
	float *gx = dev(x, N * K * 4), *gs = dev(s, K * 4), *go = dev(o, N * K * 4);
	float *gd = dev(d, N * K * 4), *gds = dev(ds, K * 4);
	struct tensor hx = T2(x, N, K), hs = T2(s, 1, K), ho = T2(o, N, K), hd = T2(d, N, K);
	struct tensor hds = T2(ds, 1, K);
	struct tensor tx = T2(gx, N, K), ts = T2(gs, 1, K), to = T2(go, N, K), td = T2(gd, N, K);
	struct tensor tds = T2(gds, 1, K);
	CPU->mul_cols_fwd(&ho, &hx, &hs);
	GPU->mul_cols_fwd(&to, &tx, &ts);
	CLOSE(go, o, N * K, 0);
	CPU->mul_cols_bwd(&hd, &hds, &hd, &hx, &hs);    /* dx aliasing dout */
	GPU->mul_cols_bwd(&td, &tds, &td, &tx, &ts);
	CLOSE(gd, d, N * K, 0);
	CLOSE(gds, ds, K, 1e-6);   /* both sum the exact products in fp64, in other orders */
	free(x), free(s), free(o), free(d), free(ds);
	cuda_mem_free(gx), cuda_mem_free(gs), cuda_mem_free(go), cuda_mem_free(gd), cuda_mem_free(gds);
}

/* ---- optimizer pieces ---- */

static double rel_fro(const float *a, const float *b, size_t n)
{
	double d = 0, s = 0;
	for (size_t i = 0; i < n; i++) {
		d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
		s += (double)b[i] * b[i];
	}
	return s > 0 ? sqrt(d / s) : sqrt(d);
}

/* Polar Express against trainer/polar.c: relative Frobenius error 1e-5 in
 * fp32 (GEMM summation order through 5 iterations), 0.05 with bf16
 * arithmetic (the tolerance tests/unit/trainer/test_optim.c uses
 * against PyTorch: bf16 roundings in a different summation order). */
/* The optimizer's element-wise passes (kernels/optim.cu) against the host
 * twin (trainer/optim.c optim_device_host): the same per-element functions,
 * no contracted multiply-adds, sums in the same order: bit for bit, on a
 * tall and a wide matrix, bf16 and fp32 polar dtypes, both AdamW state
 * kinds, three steps each (the state carried); then the OE tables' passes
 * on a table of 70,001 rows with unvisited rows, two steps; then the
 * equilibrators (BiEq, MuonEq-R, MuonEq-RC) over the device's passes, and
 * Neumann-Gram (to fp64 rounding: its products are cuBLAS dgemm). */
TEST(optimizer_passes)
{
	const struct optim_device *H = optim_device_host(), *D = GPU->optim();
	CHECK(D != NULL);
	if (!D)
		return;
	size_t shapes[2][2] = { { 96, 40 }, { 24, 130 } };
	for (int sh = 0; sh < 2; sh++)
		for (int bf = 0; bf < 2; bf++) {
			size_t m = shapes[sh][0], n = shapes[sh][1], N = m * n;
			int per_row = m >= n;
			size_t ns = per_row ? m : n;
			float *w = rnd(N, 0.05), *x = xcalloc(N, 4), *dw, *dx;
			float *buf = xcalloc(N, 4), *dbuf = D->alloc(N * 4);
			double *ss = xcalloc(ns, 8), *sc = xmalloc(ns * 8);
			double *dss = D->alloc(ns * 8), *dsc = D->alloc(ns * 8);
			dw = D->alloc(N * 4), dx = D->alloc(N * 4);
			memcpy(dw, w, N * 4);
			int same = 1;
			for (int step = 0; step < 3; step++) {
				float *g = rnd(N, 0.01), *dg = D->alloc(N * 4);
				memcpy(dg, g, N * 4);
				H->nesterov(x, buf, g, N, 0.05, 0.95);
				D->nesterov(dx, dbuf, dg, N, 0.05, 0.95);
				same &= !memcmp(x, dx, N * 4) && !memcmp(buf, dbuf, N * 4);
				H->sumsq(ss, x, m, n, per_row);
				D->sumsq(dss, dx, m, n, per_row);
				same &= !memcmp(ss, dss, ns * 8);
				for (size_t k = 0; k < ns; k++)
					sc[k] = dsc[k] = bf16_round((float)(1.0 / sqrt(ss[k] + 1e-3)));
				H->muon_update(w, x, sc, m, n, per_row, 0.0234375, 0.0001, bf);
				D->muon_update(dw, dx, dsc, m, n, per_row, 0.0234375, 0.0001, bf);
				same &= !memcmp(w, dw, N * 4);
				free(g);
				D->free(dg);
			}
			CHECKF(same, "%zu x %zu, bf16 %d: the device's Muon passes differ from the host's",
			       m, n, bf);
			/* AdamW: fp32 state, then bf16 state (bf16-exact w) */
			for (int b16 = 0; b16 < 2; b16++) {
				float *am = xcalloc(N, 4), *av = xcalloc(N, 4);
				float *dam = D->alloc(N * 4), *dav = D->alloc(N * 4);
				for (size_t i = 0; i < N; i++)
					w[i] = b16 ? bf16_round(w[i]) : w[i];
				memcpy(dw, w, N * 4);
				int asame = 1;
				/* steps 1-2 update w; step 3 gives the direction U (as for
				 * Neumann-Gram) and then steps w with it; step 4 takes a
				 * g not to be rounded (a whitened gradient) */
				double *hU = xmalloc(N * 8), *dU = D->alloc(N * 8);
				for (int step = 1; step <= 4; step++) {
					float *g = rnd(N, 0.01), *dg = D->alloc(N * 4);
					memcpy(dg, g, N * 4);
					double bias2 = (float)(1 - pow(0.95f, step));
					double ss_ = (float)(0.006 / (float)(1 - pow(0.8f, step)));
					int rg = step == 4 ? 0 : b16;
					double *hu = step == 3 ? hU : NULL, *du = step == 3 ? dU : NULL;
					H->adamw(w, g, am, av, N, (float)0.2, (float)0.05, bias2, (float)1e-10,
						 ss_, b16, rg, hu);
					D->adamw(dw, dg, dam, dav, N, (float)0.2, (float)0.05, bias2,
						 (float)1e-10, ss_, b16, rg, du);
					if (step == 3) {
						asame &= !memcmp(hU, dU, N * 8);
						H->step_w(w, hU, N, ss_, b16);
						D->step_w(dw, dU, N, ss_, b16);
					}
					asame &= !memcmp(w, dw, N * 4) && !memcmp(am, dam, N * 4) &&
						 !memcmp(av, dav, N * 4);
					free(g);
					D->free(dg);
				}
				free(hU), D->free(dU);
				CHECKF(asame, "%zu x %zu: the device's AdamW (bf16 state %d) differs", m, n,
				       b16);
				free(am), free(av), D->free(dam), D->free(dav);
			}
			free(w), free(x), free(buf), free(ss), free(sc);
			D->free(dbuf), D->free(dss), D->free(dsc), D->free(dw), D->free(dx);
		}
	/* OE tables: rows above 65535 and unvisited rows, two steps */
	size_t R = 70001, C = 16, N = R * C;
	bf16 *hw = xmalloc(N * 2), *hg = xmalloc(N * 2);
	uint32_t *hc = xmalloc(R * 4);
	double *hr = xmalloc(R * 8);
	bf16 *dw = D->alloc(N * 2), *dg = D->alloc(N * 2);
	uint32_t *dc = D->alloc(R * 4);
	double *dr = D->alloc(R * 8);
	int same = 1;
	for (size_t i = 0; i < N; i++)
		hw[i] = bf16_from_f32((float)(0.02 * rng_normal(&RG)));
	memcpy(dw, hw, N * 2);
	for (int step = 0; step < 2; step++) {
		for (size_t i = 0; i < N; i++)
			hg[i] = bf16_from_f32((float)(0.01 * rng_normal(&RG)));
		for (size_t i = 0; i < R; i++)
			hc[i] = rng_below(&RG, 3) ? 0 : 1 + (uint32_t)rng_below(&RG, 9);
		memcpy(dg, hg, N * 2);
		memcpy(dc, hc, R * 4);
		H->oe_sumsq(hr, hg, hc, R, C);
		D->oe_sumsq(dr, dg, dc, R, C);
		same &= !memcmp(hr, dr, R * 8);
		H->oe_step(hw, hg, hc, R, C, 0.34, 0.0123);
		D->oe_step(dw, dg, dc, R, C, 0.34, 0.0123);
		same &= !memcmp(hw, dw, N * 2);
	}
	CHECKF(same, "the device's OE passes differ from the host's");
	free(hw), free(hg), free(hc), free(hr);
	D->free(dw), D->free(dg), D->free(dc), D->free(dr);
	/* the equilibrators on the device: BiEq, MuonEq-R, MuonEq-RC equal the
	 * host's (trainer/polar.c) bit for bit, widening and narrowing too */
	for (int sh = 0; sh < 2; sh++) {
		size_t m = sh ? 24 : 96, n = sh ? 130 : 40, N = m * n;
		float *x = rnd(N, 0.3), *dx = D->alloc(N * 4), *hx = xmalloc(N * 4);
		double *G = xmalloc(N * 8), *dG = D->alloc(N * 8), *wk = D->alloc((m + n) * 8);
		int eq = 1;
		for (int kind = 0; kind < 3; kind++) {
			for (size_t i = 0; i < N; i++)
				G[i] = x[i];
			memcpy(dx, x, N * 4);
			D->widen(dG, dx, N, 0);
			if (kind == 0) {
				bieq_apply(G, m, n, 0.36);
				bieq_apply_on(D, dG, m, n, 0.36, wk);
			} else if (kind == 1) {
				muoneq_r_apply(G, m, n);
				muoneq_r_apply_on(D, dG, m, n, wk);
			} else {
				muoneq_rc_apply(G, m, n);
				muoneq_rc_apply_on(D, dG, m, n, wk);
			}
			eq &= !memcmp(G, dG, N * 8);
			for (size_t i = 0; i < N; i++)
				hx[i] = (float)G[i];
			D->narrow(dx, dG, N);
			eq &= !memcmp(hx, dx, N * 4);
		}
		CHECKF(eq, "%zu x %zu: an equilibrator on the device differs from the host's", m, n);
		free(x), free(hx), free(G), D->free(dx), D->free(dG), D->free(wk);
	}
	/* Neumann-Gram (V x d): its dgemms are cuBLAS against OpenBLAS, so to
	 * fp64 rounding: 1e-12 of the largest entry */
	{
		size_t V = 3000, d = 64, N = V * d, nw = neumann_work_doubles(V, d);
		double *U = xmalloc(N * 8), *dU = D->alloc(N * 8), *wk = D->alloc(nw * 8);
		for (size_t i = 0; i < N; i++)
			U[i] = rng_normal(&RG) + (i % d == 3 ? 0.5 : 0.0);   /* a mean row */
		memcpy(dU, U, N * 8);
		neumann_gram_apply(U, V, d, 0.7);
		neumann_gram_apply_on(D, dU, V, d, 0.7, wk);
		double mx = 0, df = 0;
		for (size_t i = 0; i < N; i++) {
			mx = fmax(mx, fabs(U[i]));
			df = fmax(df, fabs(U[i] - dU[i]));
		}
		CHECKF(df <= 1e-12 * mx, "Neumann-Gram on the device: %.3g off (largest %.3g)", df, mx);
		free(U), D->free(dU), D->free(wk);
	}
}

/* Each arithmetic (mode: fp32, bf16 eager, bf16 compiled) against the
 * CPU's; the bf16 ones must also be nearer the CPU's result in their own
 * arithmetic than in the other bf16 one (the two differ by about 10%) */
TEST(polar_express)
{
	size_t shapes[][2] = { { 96, 32 }, { 32, 96 }, { 64, 64 } }, nb = 3;
	for (int s = 0; s < 3; s++)
		for (int mode = 0; mode < 3; mode++) {
			size_t m = shapes[s][0], n = shapes[s][1], mn = m * n;
			int bf = mode != POLAR_MODE_FP32;
			int other = mode == POLAR_MODE_BF16_EAGER ? POLAR_MODE_BF16_COMPILED
								  : POLAR_MODE_BF16_EAGER;
			float *x = rnd(nb * mn, 1), *h = dupf(x, nb * mn), *d = dev(x, nb * mn * 4);
			float *ho = dupf(x, nb * mn);
			for (size_t b = 0; b < nb; b++) {
				polar_express_f32(h + b * mn, m, n, mode);
				if (bf)
					polar_express_f32(ho + b * mn, m, n, other);
			}
			cuda_polar_express(d, nb, m, n, mode);
			double tol = bf ? 0.05 : 1e-5;
			for (size_t b = 0; b < nb; b++) {
				double e = rel_fro(d + b * mn, h + b * mn, mn);
				CHECKF(e <= tol, "%zux%zu mode %d matrix %zu: error %.3g > %.3g", m, n, mode,
				       b, e, tol);
				double eo = bf ? rel_fro(d + b * mn, ho + b * mn, mn) : INFINITY;
				CHECKF(eo > e, "%zux%zu mode %d matrix %zu: %.3g from the CPU's, %.3g from "
				       "its mode %d", m, n, mode, b, e, eo, other);
			}
			cuda_polar_express(x, nb, m, n, mode);   /* host memory, staged: same bits */
			CHECK(memcmp(x, d, nb * mn * 4) == 0);
			free(x), free(h), free(ho), cuda_mem_free(d);
		}
}

/* ---- 20 training steps on both backends ---- */

/* head width 128 so that the tensor-core attention can run; seq_len 64 with
 * the SSSL pattern gives layer 0 a window of 32; lr_scale 0.25 keeps the
 * curve smooth (5.55 -> 0.76 nats over 20 steps on the CPU) so that rounding
 * differences are not amplified by jumps */
/* with OE tables (bf16 scatter, the device's OE update) and BiEq (the
 * device's equilibrator passes) */
static const char *small_cfg[] = { "depth=2", "model_dim=256", "head_dim=128", "vocab_size=256",
				   "seq_len=64", "lr_scale=0.25", "oe=1", "oe_m=1000",
				   "muoneq=bieq", "bieq_tau=5", NULL };

/* FNV-1a 64 over every parameter's stored bytes (fp32, or bf16 for the
 * bf16-stored OE tables). */
static uint64_t params_fnv(struct model *m)
{
	struct param_table *t = model_params(m);
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < t->n; i++) {
		const struct param *p = &t->p[i];
		const unsigned char *b = p->wb ? (const unsigned char *)p->wb : (const unsigned char *)p->w;
		size_t len = p->numel * (p->wb ? sizeof(bf16) : sizeof(float));
		for (size_t j = 0; j < len; j++)
			h = (h ^ b[j]) * 0x100000001b3ull;
	}
	return h;
}

static uint64_t last_fnv;   /* of the last train() */
static size_t last_bytes;   /* model_bytes of the last train()'s model */
static const char *const *train_extra;   /* more config key=value for train() (NULL-ended) */

/* small_cfg (+ train_extra) on backend into *m and *c: 0; 1 where the
 * model does not select that backend (no CUDA selection); -1 on failure */
static int small_model(const char *backend, struct config *cp, struct model **mp)
{
	struct config c;
	struct err e = {0};
	struct model *m = NULL;
	*mp = NULL;
	config_defaults(&c);
	for (int i = 0; small_cfg[i]; i++)
		if (config_set(&c, small_cfg[i], &e) != 0)
			return printf("  config_set: %s\n", e.msg), -1;
	char kv[32];
	snprintf(kv, sizeof kv, "backend=%s", backend);
	if (config_set(&c, kv, &e) != 0)
		return printf("  config: %s\n", e.msg), -1;
	for (int i = 0; train_extra && train_extra[i]; i++)
		if (config_set(&c, train_extra[i], &e) != 0)
			return printf("  config: %s\n", e.msg), -1;
	if (config_validate(&c, &e) != 0)
		return printf("  config: %s\n", e.msg), -1;
	if (model_create(&c, &m, &e) != 0) {
		printf("  model_create: %s\n", e.msg);
		return backend_cuda_built() ? -1 : 1;
	}
	if (strcmp(model_backend(m)->name, backend) != 0) {
		model_free(m);
		return 1;   /* the model does not select the backend (yet) */
	}
	*cp = c;
	*mp = m;
	return 0;
}

static int train(const char *backend, int steps, double *loss)
{
	struct config c;
	struct err e = {0};
	struct model *m = NULL;
	struct optim *o = NULL;
	int made = small_model(backend, &c, &m);
	if (made != 0)
		return made;
	if (optim_create(&c, model_params(m), 0, &o, &e) != 0)
		return printf("  optim_create: %s\n", e.msg), model_free(m), -1;
	backend_optim_attach(o, model_backend(m));   /* as supkit train does */
	int B = 4, T = 64;
	int32_t *in = xmalloc((size_t)(B * T + 1) * 4);
	struct rng r;
	rng_seed(&r, 7);
	int rc = 0;
	for (int s = 0; s < steps && rc == 0; s++) {
		/* a learnable stream: next = (5 x + 1) mod 256, a random start per row */
		for (int b = 0; b < B; b++) {
			int32_t x = (int32_t)rng_below(&r, 256);
			for (int t = 0; t <= T && b * T + t <= B * T; t++) {
				in[b * T + t] = x;
				x = (5 * x + 1) % 256;
			}
		}
		model_zero_grad(m);
		if (model_forward_backward(m, in, in + 1, B, T, 1.0, &loss[s], &e) != 0 ||
		    optim_step(o, s, &e) != 0) {
			printf("  step %d: %s\n", s, e.msg);
			rc = -1;
		}
	}
	free(in);
	last_fnv = params_fnv(m);
	last_bytes = model_bytes(m);
	optim_free(o);
	model_free(m);
	return rc;
}

/* train()'s runs kept for reuse: a run is deterministic (train_20_steps
 * checks that two give the same bits), so a later test asking for the same
 * backend, modes in force, extra config and steps gets the kept losses,
 * weight hash and model bytes instead of emulated minutes of the same run
 * again. train_run(.., fresh 1) runs (and keeps) in any case: for a test
 * that reads the run's profile. */
static struct kept_run {
	char key[400];
	double loss[20];
	uint64_t fnv;
	size_t bytes;
} kept[16];
static int n_kept;

static int train_run(const char *backend, int steps, double *loss, int fresh)
{
	char key[400];
	int k = snprintf(key, sizeof key, "%s %d %s", backend, steps,
			 strcmp(backend, "cuda") == 0 ? GPU->modes() : "");
	for (int i = 0; train_extra && train_extra[i]; i++)
		k += snprintf(key + k, sizeof key - (size_t)k, " %s", train_extra[i]);
	int slot = 0;
	while (slot < n_kept && strcmp(kept[slot].key, key) != 0)
		slot++;
	if (slot < n_kept && !fresh) {
		memcpy(loss, kept[slot].loss, (size_t)steps * sizeof *loss);
		last_fnv = kept[slot].fnv;
		last_bytes = kept[slot].bytes;
		return 0;
	}
	int rc = train(backend, steps, loss);
	if (rc == 0 && steps <= 20 && slot < 16 && (size_t)k < sizeof key) {
		struct kept_run *r = &kept[slot];
		n_kept += slot == n_kept;
		memcpy(r->key, key, sizeof key);
		memcpy(r->loss, loss, (size_t)steps * sizeof *loss);
		r->fnv = last_fnv;
		r->bytes = last_bytes;
	}
	return rc;
}

/* a kept run if there is one, else train() (and keep it) */
static int train_kept(const char *backend, int steps, double *loss)
{
	return train_run(backend, steps, loss, 0);
}

TEST(train_20_steps)
{
	double lc[20], lg[20], lb[20], lm[20];
	if (train_kept("cpu", 20, lc) != 0) {
		CHECK(0);
		return;
	}
	cuda_set_matmul_mode(CUDA_MM_F32);
	int rc = train("cuda", 20, lg);
	cuda_set_matmul_mode(CUDA_MM_BF16);
	if (rc == 1)
		T_SKIP("libtrainer.a has no CUDA selection (built without GPU=1?)");
	CHECK(rc == 0);
	if (rc != 0)
		return;
	CHECK(train_kept("cuda", 20, lb) == 0);
	/* deterministic: the same run again gives the same losses and weights,
	 * bit for bit (no floating-point atomics, fixed reduction orders); so
	 * later tests reuse the kept runs (train_kept) */
	uint64_t fb = last_fnv;
	double lb2[20];
	CHECK(train("cuda", 20, lb2) == 0);
	CHECKF(!memcmp(lb, lb2, sizeof lb) && fb == last_fnv,
	       "two identical CUDA runs differ (weights %016llx vs %016llx)",
	       (unsigned long long)fb, (unsigned long long)last_fnv);
	cuda_set_attn_mode(CUDA_ATTN_MMA);
	CHECK(train_kept("cuda", 20, lm) == 0);
	cuda_set_attn_mode(CUDA_ATTN_F32);
	/* step 0 is a pure forward/backward on equal weights: fp32 GEMMs agree to
	 * 1e-5 nats (fp32 rounding of a loss near 5.5). Later steps: 5e-3 nats,
	 * since the optimizer's first AdamW steps act like sign(g) and amplify
	 * fp32 rounding of tiny gradient entries. bf16 GEMMs (and bf16
	 * tensor-core attention): 5e-2 nats (inputs rounded to 2^-9 shift each
	 * loss by ~1e-3 and the steps compound it), and training still lowers
	 * the loss. */
	CHECK(fabs(lg[0] - lc[0]) <= 1e-5);
	for (int s = 0; s < 20; s++) {
		printf("  step %2d cpu %.6f cuda-f32 %.6f cuda-bf16 %.6f cuda-bf16-mma %.6f\n",
		       s, lc[s], lg[s], lb[s], lm[s]);
		CHECK(fabs(lg[s] - lc[s]) <= 5e-3);
		CHECK(fabs(lb[s] - lc[s]) <= 5e-2);
		CHECK(fabs(lm[s] - lc[s]) <= 5e-2);
	}
	CHECK(lb[19] < lb[0] && lm[19] < lm[0]);
}

/* bf16 storage follows precision: the CUDA run of 20 steps with bf16
 * GEMMs (autocast, a kept run) and with fp32 GEMMs (precision = fp32),
 * beside the CPU's: both within train_20_steps's bf16 bound of the CPU
 * run, the autocast run learning, the weights differing, the model
 * exactly `less` bytes smaller under autocast. Returns 0 when the runs were
 * made (l16, l32: their losses), 1 where the build has no CUDA selection,
 * -1 on failure. */
static int storage_precision(const char *what, size_t less, double *l16, double *l32)
{
	double lc[20];
	if (train_kept("cpu", 20, lc) != 0) {
		CHECK(0);
		return -1;
	}
	/* the fp32 attention kernels in both runs, whatever mode the tests
	 * before left: the mma kernels store the attention's tensors in bf16
	 * under autocast, which would count in the difference */
	enum cuda_attn_mode was = cuda_get_attn_mode();
	cuda_set_attn_mode(CUDA_ATTN_F32);
	int rc = train_kept("cuda", 20, l16);
	size_t b16 = last_bytes;
	uint64_t f16 = last_fnv;
	cuda_set_matmul_mode(CUDA_MM_F32);
	int rc2 = rc == 0 ? train("cuda", 20, l32) : rc;
	cuda_set_matmul_mode(CUDA_MM_BF16);
	cuda_set_attn_mode(was);
	if (rc == 1)
		return 1;
	CHECK(rc == 0 && rc2 == 0);
	if (rc != 0 || rc2 != 0)
		return -1;
	CHECKF(last_bytes - b16 == less, "model bytes: %zu with %s in bf16, %zu in fp32 (expected %zu less)",
	       b16, what, last_bytes, less);
	CHECK(f16 != last_fnv);
	for (int s = 0; s < 20; s++) {
		CHECK(fabs(l16[s] - lc[s]) <= 5e-2);
		CHECK(fabs(l32[s] - lc[s]) <= 5e-2);
	}
	CHECK(l16[19] < l16[0]);
	printf("  step 19: cpu %.6f, cuda %s bf16 %.6f, fp32 %.6f; %zu bytes against %zu\n", lc[19],
	       what, l16[19], l32[19], b16, last_bytes);
	return 0;
}

/* Under autocast (bf16 GEMMs; the fp32 attention kernels here) the MLP's
 * h, u, du and dh (backend.h mlp_bf16) and each layer's norm outputs a and
 * m (norm_bf16) in bf16, against precision = fp32 (storage_precision): the
 * model holds exactly (depth + 1) x N x 4C x 2 bytes (h of each layer,
 * and u, whose buffer dh shares) and 2 depth x N x C x 2 bytes less; the
 * backend says so (mlp_bf16, norm_bf16 under autocast only), and a model
 * stores its norm outputs in bf16 under autocast, fp32 under fp32.
 * small_cfg's value-embedding gates read a's first columns (cols_get) in
 * both directions. */
TEST(train_bf16_storage)
{
	double l16[20], l32[20];
	size_t N = 4 * 64, C = 256, L = 2;   /* small_cfg, B 4, T 64 */
	int rc = storage_precision("the MLP and norm outputs",
				   (L + 1) * N * 4 * C * 2 + 2 * L * N * C * 2, l16, l32);
	if (rc == 1)
		T_SKIP("libtrainer.a has no CUDA selection (built without GPU=1?)");
	if (rc != 0)
		return;
	for (int f32 = 0; f32 < 2; f32++) {
		struct config c;
		struct model *m = NULL;
		cuda_set_matmul_mode(f32 ? CUDA_MM_F32 : CUDA_MM_BF16);
		CHECK(GPU->mlp_bf16() == !f32 && GPU->norm_bf16() == !f32);
		CHECK(small_model("cuda", &c, &m) == 0);
		if (m) {
			CHECK(model_norm_dtype(m) == (f32 ? TD_F32 : TD_BF16));
			model_free(m);
		}
	}
	cuda_set_matmul_mode(CUDA_MM_BF16);
}

/* The attention's q, k, v and y in bf16 (backend.h attn_bf16, the default
 * with bf16 GEMMs and the mma attention at head width 128) against the
 * same run on the fp32 attention kernels (SUPKIT_CUDA_ATTN=f32), which
 * store them in fp32: both track the CPU run within train_20_steps's bf16
 * bound, the model holds exactly (depth x 4 + 3) x N x C x 2 bytes less
 * (q, k, v and y of each layer, and the gradients dq, dk, dv);
 * and with q_tau (qn stored in bf16 too, the column sums of its gradient
 * read it) the same bound holds over 8 steps (emulated time), with (depth
 * x 5 + 3) x N x C x 2 bytes less. */
TEST(train_attn_bf16)
{
	static const char *const qtau[] = { "qk_scale=pair", NULL };
	for (int a = 0; a < 2; a++) {
		double lc[20], l16[20], l32[20];
		int ns = a ? 8 : 20;
		train_extra = a ? qtau : NULL;
		int rc0 = train_kept("cpu", ns, lc);
		cuda_set_attn_mode(CUDA_ATTN_MMA);
		int rc = train_kept("cuda", ns, l16);   /* base: train_20_steps's mma run */
		size_t b16 = last_bytes;
		uint64_t f16 = last_fnv;
		cuda_set_attn_mode(CUDA_ATTN_F32);
		int rc2 = train("cuda", ns, l32);
		train_extra = NULL;
		if (rc == 1)
			T_SKIP("libtrainer.a has no CUDA selection (built without GPU=1?)");
		CHECK(rc0 == 0 && rc == 0 && rc2 == 0);
		if (rc0 != 0 || rc != 0 || rc2 != 0)
			return;
		/* small_cfg, B 4, T 64; q, k, v, y (qn) of each layer, and the
		 * gradients dq, dk, dv (dy's buffer is the run dtype's: dhN's too) */
		size_t N = 4 * 64, C = 256, L = 2, k = a ? 5 : 4, less = (L * k + 3) * N * C * 2;
		CHECKF(last_bytes - b16 == less,
		       "model bytes: %zu with attention tensors in bf16, %zu in fp32 (expected %zu less)",
		       b16, last_bytes, less);
		CHECK(f16 != last_fnv);
		for (int s = 0; s < ns; s++) {
			CHECK(fabs(l16[s] - lc[s]) <= 5e-2);
			CHECK(fabs(l32[s] - lc[s]) <= 5e-2);
		}
		CHECK(l16[ns - 1] < l16[0]);
		printf("  %s step %d: cpu %.6f, cuda attention bf16 %.6f, fp32 %.6f; %zu bytes against %zu\n",
		       a ? "q_tau pair" : "base", ns - 1, lc[ns - 1], l16[ns - 1], l32[ns - 1], b16,
		       last_bytes);
	}
}

/* The benchmark's model (depth 8, B 64, T 2048) on the CUDA backend with
 * its bf16 storage: by the model's accounting one pass's activations fit
 * MODEL_GPU_ACT_BYTES (15 GiB), so pass_rows = 0 runs the micro-batch in
 * one pass. The buffers the model shares (s0 and dm, t1 and
 * dy, t2 and dm, dh and u; dx0w only with anchors) make the difference:
 * without them the one pass would need 16.4 GiB. */
TEST(benchmark_pass_rows)
{
	struct config c;
	struct err e = {0};
	config_defaults(&c);
	struct model *m = NULL;
	int rows[1] = { 0 };
	double mib[1] = { 0 };
	enum cuda_attn_mode was = cuda_get_attn_mode();
	cuda_set_attn_mode(CUDA_ATTN_MMA);   /* the backend's default at head width 128 */
	for (int i = 0; i < 1; i++) {
		int rc = config_set(&c, "backend=cuda", &e) == 0 && config_validate(&c, &e) == 0 &&
				 model_create(&c, &m, &e) == 0
			 ? 0 : -1;
		if (rc != 0) {
			cuda_set_attn_mode(was);
			if (!backend_cuda_built())
				T_SKIP("libtrainer.a has no CUDA selection (built without GPU=1?)");
			CHECKF(0, "model: %s", e.msg);
			return;
		}
		rows[i] = model_pass_rows(m, 64, 2048);
		mib[i] = (double)model_bytes_for(m, 64, 2048) / 1048576.0;
		model_free(m);
	}
	cuda_set_attn_mode(was);
	printf("  depth 8, B 64, T 2048: %d rows a pass, %.1f MiB planned\n", rows[0], mib[0]);
	CHECK(rows[0] == 64);
	CHECK(mib[0] < 22804.5);   /* PyTorch's figure at this size */
}

/* The head's big logit chunks: an evaluation of 260 rows of 64 (16,640
 * tokens: the gradient buffers dx, dx0, da hold a chunk of 16,384 rows of
 * logits, so two chunks, 16,384 and 256 rows) gives every token the same
 * loss bits as four evaluations of 65 rows (4,160 tokens: chunks of 4,096
 * and 64 rows, in those buffers too) on the emulator, whose GEMMs sum each
 * entry in an order that does not depend on the row count (tests/emu/gemm.h;
 * on a GPU, cuBLAS may pick other kernels for other row counts: within
 * 1e-4), and the CPU's losses (its chunks of 256 rows, in its own buffer)
 * within bf16 rounding. */
TEST(head_big_chunks)
{
	int B = 260, T = 64, n = B * T;
	int32_t *tok = xmalloc((size_t)(n + 1) * 4);
	for (int i = 0; i <= n; i++)
		tok[i] = (int32_t)rng_below(&RG, 256);
	float *pl[3] = { xmalloc((size_t)n * 4), xmalloc((size_t)n * 4), xmalloc((size_t)n * 4) };
	const char *bk[3] = { "cuda", "cuda", "cpu" };
	for (int r = 0; r < 3; r++) {
		struct config c;
		struct model *m = NULL;
		struct err e = {0};
		double mean = 0;
		int rc = small_model(bk[r], &c, &m);
		if (rc == 1) {
			free(tok), free(pl[0]), free(pl[1]), free(pl[2]);
			T_SKIP("libtrainer.a has no CUDA selection (built without GPU=1?)");
		}
		CHECK(rc == 0);
		if (!m)
			continue;
		int step = r == 1 ? B / 4 : B;
		for (int b0 = 0; b0 < B; b0 += step)
			CHECKF(model_forward_loss(m, tok + b0 * T, tok + b0 * T + 1, step, T,
						  pl[r] + b0 * T, &mean, &e) == 0, "%s", e.msg);
		model_free(m);
	}
	int emu = on_emulator();
	int64_t diff = 0;
	double worst = 0, sum = 0;
	for (int i = 0; i < n; i++) {
		diff += emu ? memcmp(&pl[0][i], &pl[1][i], 4) != 0
			    : fabs((double)pl[0][i] - pl[1][i]) > 1e-4;
		double d = fabs((double)pl[0][i] - pl[2][i]);
		worst = d > worst ? d : worst;
		sum += d;
	}
	printf("  %d tokens: %lld losses differ%s between chunks of 16,384 and of 4,096 rows; against "
	       "the CPU: mean %.2e, worst %.2e\n", n, (long long)diff, emu ? "" : " by over 1e-4",
	       sum / n, worst);
	CHECK(diff == 0);
	CHECK(sum / n <= 1e-2 && worst <= 0.1);
	free(tok), free(pl[0]), free(pl[1]), free(pl[2]);
}

/* The pass scope's kept casts in training: 6 steps in two passes a
 * micro-batch (pass_rows 2 of 4 rows, gradients accumulated over the
 * passes), with the fp32 attention and with the mma one (the default at
 * head width 128, which reads q, k and v through the kept casts too),
 * reuse more than half as many casts as they make. Every operand of
 * training's ops is found in the backend's allocation registry (no driver
 * lookup). */
TEST(train_cast_reuse)
{
	static const char *const two_passes[] = { "pass_rows=2", NULL };
	static const enum cuda_attn_mode modes[] = { CUDA_ATTN_F32, CUDA_ATTN_MMA };
	for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
		double l1[6];
		train_extra = two_passes;
		cuda_set_attn_mode(modes[m]);
		cuda_profile(1);
		int rc = train_run("cuda", 6, l1, 1);   /* run here: its profile is read */
		cuda_profile(0);
		char *buf = profile_text("r", 0);   /* this run's counts */
		cuda_set_attn_mode(CUDA_ATTN_F32);
		train_extra = NULL;
		if (rc == 1) {
			free(buf);
			T_SKIP("libtrainer.a has no CUDA selection (built without GPU=1?)");
			return;
		}
		const char *mn = cuda_attn_mode_name(modes[m]);
		CHECK(rc == 0);
		const char *l = buf ? strstr(buf, "bf16 operand casts: ") : NULL;
		unsigned long long made = 0, reused = 0;
		CHECKF(l && sscanf(l, "bf16 operand casts: %llu made, %llu reused", &made, &reused) == 2 &&
		       reused > made / 2, "training reuses casts: %s", buf ? buf : "");
		printf("  attention %s, 6 steps: %llu casts made, %llu reused\n", mn, made, reused);
		struct lookups k = lookups_in(buf);
		CHECKF(k.ok && k.fast > 0 && k.drv == 0,
		       "training's operands all in the allocation registry: %s", buf ? buf : "");
		printf("  operand lookups: %llu in the registry, %llu by the driver\n", k.fast, k.drv);
		free(buf);
	}
}

/* Asynchronous ops change no bit of a run: 6 steps with ops left running
 * (the default) and with every op waiting for its kernels (the profile
 * on, which makes each op wait), in two passes a
 * micro-batch, on the small config (OE tables, BiEq) plus the arms whose
 * host code runs inside the pass: q_tau (the host writes the scale vector
 * and reads its gradient after a sync), the x0 anchor's and the output's
 * lambdas and the shared anchor (their gradients summed by dot_acc on the
 * device). A missed synchronisation shows as a different loss or weight
 * hash. */
TEST(train_async_bitwise)
{
	static const char *const arms[][7] = {
		{ "pass_rows=2", NULL },
		{ "pass_rows=2", "qk_scale=pair", "wte_lambdas=1", NULL },
		{ "pass_rows=1", "qk_scale=untied", "wte_lambdas=1", "anchor=shared", "out_lambdas=1",
		  NULL },
	};
	if (!cuda_get_async())
		printf("  note: the device has no concurrent managed access; ops stay synchronous\n");
	/* then the first arm again with the mma attention (the default at head
	 * width 128) */
	size_t na = sizeof arms / sizeof *arms;
	for (size_t a = 0; a <= na; a++) {
		double l1[6], l2[6];
		train_extra = arms[a < na ? a : 0];
		cuda_set_attn_mode(a < na ? CUDA_ATTN_F32 : CUDA_ATTN_MMA);
		int rc = train_kept("cuda", 6, l1);
		uint64_t f1 = last_fnv;
		cuda_profile(1);
		int rc2 = rc == 0 ? train("cuda", 6, l2) : rc;
		cuda_profile(0);
		cuda_set_attn_mode(CUDA_ATTN_F32);
		train_extra = NULL;
		if (rc == 1)
			T_SKIP("libtrainer.a has no CUDA selection (built without GPU=1?)");
		CHECK(rc == 0 && rc2 == 0);
		CHECKF(!memcmp(l1, l2, sizeof l1) && f1 == last_fnv,
		       "arm %zu: asynchronous / waiting ops: losses %.9g / %.9g, weights "
		       "%016llx / %016llx", a, l1[5], l2[5], (unsigned long long)f1,
		       (unsigned long long)last_fnv);
		const char *const *kv = arms[a < na ? a : 0];
		printf("  arm %zu (%s ..., attention %s): loss %.6f, weights %016llx both ways\n", a,
		       kv[1] ? kv[1] : kv[0], a < na ? "f32" : "mma", l2[5],
		       (unsigned long long)last_fnv);
	}
}

/* The child processes' bad inputs: n managed indices 0, 1, .., m - 1, 0,
 * .. with bad at position at. */
static int32_t *cycled_with(int64_t n, int64_t m, int64_t at, int32_t bad)
{
	int32_t *idx = cuda_mem_alloc(n * 4);
	for (int64_t i = 0; i < n; i++)
		idx[i] = (int32_t)(i % m);
	idx[at] = bad;
	return idx;
}

/* An embed_gather index outside its table, with the op left running in a
 * pass scope: the abort comes at the scope's end, naming the op. Run in a
 * child process (this binary with the argument gather-abort). */
static int gather_abort_child(void)
{
	int64_t N = 64, k = 8, Vt = 10;
	float *tab = dev(rnd(Vt * k, 1), Vt * k * 4), *o = cuda_mem_alloc(N * k * 4);
	int32_t *idx = cycled_with(N, Vt, 37, (int32_t)Vt);   /* one past the table */
	struct tensor gt = T2(tab, Vt, k), go = T2(o, N, k);
	GPU->scope(1);
	GPU->embed_gather(&go, &gt, idx, 0, 0, 0);
	printf("gather returned\n");
	fflush(stdout);
	GPU->scope(0);
	printf("scope ended\n");   /* not reached */
	return 0;
}

/* An embed_scatter_add index outside its table (its plan is made on the
 * device): the op aborts, naming itself, and writes no row out of bounds.
 * Child process: this binary with the argument scatter-abort. */
static int scatter_abort_child(void)
{
	int64_t N = 300, k = 8, Vt = 10;
	float *g = cuda_mem_alloc(Vt * k * 4), *d = dev(rnd(N * k, 1), N * k * 4);
	int32_t *idx = cycled_with(N, Vt, 123, -1);
	struct tensor gg = T2(g, Vt, k), gd = T2(d, N, k);
	GPU->embed_scatter_add(&gg, &gd, idx, 0);
	printf("scatter returned\n");   /* not reached: the op waits outside a scope */
	return 0;
}

/* A cross-entropy target not below V with no count asked (valid NULL: the
 * targets are checked on the device): the op aborts, naming itself. Child
 * process: this binary with the argument softcap-abort. */
static int softcap_abort_child(void)
{
	int64_t R = 8, V = 50;
	float *lg = dev(rnd(R * V, 1), R * V * 4), *ls = cuda_mem_alloc(R * 4);
	int32_t *tg = cycled_with(R, V, 5, (int32_t)V);
	struct tensor tl = T2(lg, R, V), tls = T2(ls, 1, R);
	GPU->softcap_ce(&tl, &tls, tg, 15, 0.5, NULL);
	printf("softcap returned\n");
	return 0;
}

static const char *self_path;

/* Run this binary with arg; its exit status and output into out (n). */
static int run_child(const char *arg, char *out, size_t n)
{
	return t_run_self(self_path, "", arg, out, n);
}

/* the attention mode the backend sets up with (SUPKIT_CUDA_ATTN) */
static int attn_mode_child(void)
{
	printf("attention mode %s\n", cuda_attn_mode_name(cuda_get_attn_mode()));
	return 0;
}

/* SUPKIT_CUDA_ATTN at the backend's setup: mma (also unset or empty) and
 * f32 taken; any other value (wg, dev/cuda's variant, which the backend
 * does not build; tc, mma2, MMA) refused with a message naming the value,
 * before the mode is used */
TEST(attention_mode_env)
{
	static const char *const take[][2] = { { "SUPKIT_CUDA_ATTN=f32", "f32" },
						 { "SUPKIT_CUDA_ATTN=mma", "mma" },
						 { "SUPKIT_CUDA_ATTN=", "mma" },
						 { "", "mma" } };
	char out[4096], want[128];
	for (size_t i = 0; i < sizeof take / sizeof *take; i++) {
		int st = t_run_self(self_path, take[i][0], "attn-mode", out, sizeof out);
		snprintf(want, sizeof want, "attention mode %s\n", take[i][1]);
		CHECKF(st == 0 && strstr(out, want), "'%s': exit status %d, output:\n%s", take[i][0], st,
		       out);
	}
	static const char *const refuse[] = { "tc", "mma2", "wg", "MMA" };
	for (size_t i = 0; i < sizeof refuse / sizeof *refuse; i++) {
		char env[64];
		snprintf(env, sizeof env, "SUPKIT_CUDA_ATTN=%s", refuse[i]);
		int st = t_run_self(self_path, env, "attn-mode", out, sizeof out);
		snprintf(want, sizeof want, "backend_cuda: init: SUPKIT_CUDA_ATTN: '%s' is not mma or f32",
			 refuse[i]);
		CHECKF(st != 0 && strstr(out, want) && !strstr(out, "attention mode"),
		       "'%s': exit status %d, output:\n%s", env, st, out);
	}
}

/* bad indices and targets checked on the device abort with the op's name */
TEST(bad_inputs_checked_on_device)
{
	char out[4096];
	int st = run_child("scatter-abort", out, sizeof out);
	CHECKF(st != 0 && strstr(out, "embed_scatter_add: an index is outside the table") &&
	       !strstr(out, "scatter returned"), "exit status %d, output:\n%s", st, out);
	st = run_child("softcap-abort", out, sizeof out);
	CHECKF(st != 0 && strstr(out, "softcap_ce: a target is not below the vocabulary size") &&
	       !strstr(out, "softcap returned"), "exit status %d, output:\n%s", st, out);
}

/* The CUDA backend is a whole backend object, registered by kernels/ under
 * "cuda" (nothing in trainer/ names it): every entry set; the device's
 * name, its optimizer passes, a device it does not have refused by open;
 * open setting the GEMMs' arithmetic from the config key precision. */
TEST(backend_object)
{
	const char *miss = backend_missing(GPU);
	CHECKF(miss == NULL, "cuda backend: entry '%s' not set", miss ? miss : "");
	CHECK(backend_find("cuda") == GPU && !GPU->host_memory && GPU->act_budget > 0);
	char name[128] = "";
	CHECK(GPU->device_name(name, sizeof name) == 0 && name[0]);
	CHECK(GPU->optim() != NULL && GPU->optim() != optim_device_host());
	struct err e = { 0 };
	struct backend_options o = { .device = GPU->device_count(), .threads = 0 };
	CHECKF(GPU->open(&o, &e) == -1 && e.code == EXIT_USAGE && strstr(e.msg, "no such CUDA device"),
	       "%s", e.msg);
	o.device = 0;
	err_clear(&e);
	CHECK(GPU->open(&o, &e) == 0);
	/* precision: fp32 multiplies in fp32, autocast in bf16; auto keeps the
	 * mode in force (autocast, unless a test set another) */
	o.precision = BK_PRECISION_FP32;
	CHECK(GPU->open(&o, &e) == 0 && cuda_get_matmul_mode() == CUDA_MM_F32 &&
	      strcmp(GPU->precision(), "fp32") == 0 && !GPU->mlp_bf16());
	o.precision = BK_PRECISION_AUTOCAST;
	CHECK(GPU->open(&o, &e) == 0 && cuda_get_matmul_mode() == CUDA_MM_BF16 &&
	      strcmp(GPU->precision(), "autocast") == 0);
	o.precision = BK_PRECISION_AUTO;
	CHECK(GPU->open(&o, &e) == 0 && cuda_get_matmul_mode() == CUDA_MM_BF16);
	cuda_set_matmul_mode(CUDA_MM_F32);
	CHECK(GPU->open(&o, &e) == 0 && cuda_get_matmul_mode() == CUDA_MM_F32);
	cuda_set_matmul_mode(CUDA_MM_BF16);
}

TEST(async_gather_abort)
{
	char out[4096];
	int st = run_child("gather-abort", out, sizeof out);
	CHECKF(st != 0 && strstr(out, "embed_gather: an index is outside the table") &&
	       !strstr(out, "scope ended"), "exit status %d, output:\n%s", st, out);
	int on = cuda_get_async();   /* the device allows it: the op returned first */
	CHECKF(!on || strstr(out, "gather returned"), "output:\n%s", out);
}

/* The PyTorch loss curves (torch_train.py) on the GPU: fp32 GEMMs on the
 * fp32-state fixture, then the default bf16 GEMM inputs on the benchmark's
 * bf16 fixture. */
TEST(curve_vs_torch)
{
	static const char *const cuda[] = { "backend=cuda", NULL };
	cuda_set_matmul_mode(CUDA_MM_F32);
	fixture_curve("curve_fp32state_f32", cuda, 1e-2, 3e-2);
	cuda_set_matmul_mode(CUDA_MM_BF16);
	fixture_curve("curve_base_f32", cuda, 1e-1, 1e-1);
}

TEST(device)
{
	T_SKIP("no CUDA device");
}

int main(int argc, char **argv)
{
	self_path = argv[0];
	static const struct {
		const char *arg;
		int (*run)(void);
	} children[] = { { "gather-abort", gather_abort_child },
			 { "scatter-abort", scatter_abort_child },
			 { "softcap-abort", softcap_abort_child },
			 { "attn-mode", attn_mode_child } };
	/* the children draw inputs too (an unseeded generator's state is all
	 * zeros, from which rng_normal never returns) */
	rng_seed(&RG, 12345);
	for (size_t i = 0; argc > 1 && i < sizeof children / sizeof *children; i++)
		if (strcmp(argv[1], children[i].arg) == 0) {
			alarm(120);   /* a hang fails the check instead of the run */
			GPU = backend_cuda();
			return children[i].run();
		}
	if (cuda_device_count() < 1) {
		RUN(device);
		return t_done();
	}
	CPU = backend_cpu();
	GPU = backend_cuda();
	char name[128] = "?";
	cuda_device_name(name, sizeof name);
	printf("device: %s\n", name);
	RUN(backend_object);
	RUN(axpby_zero_dot);
	RUN(dot_sizes);
	RUN(dot_acc);
	RUN(cols_get_add);
	RUN(matmul_f32);
	RUN(matmul_bf16);
	RUN(matmul_n);
	RUN(matmul_cast_reuse);
	RUN(profile);
	RUN(operand_lookup);
	RUN(rmsnorm);
	RUN(rmsnorm_ref);
	RUN(rope);
	RUN(rope_rmsnorm);
	RUN(attention_d128);
	RUN(attention_small_heads);
	RUN(attention_mma);
	RUN(attention_mode_env);
	RUN(softcap_ce);
	RUN(softcap_ce_bf16);
	RUN(embed_gather);
	RUN(embed_scatter_add);
	RUN(ngram_rows_counts);
	RUN(relu2);
	RUN(relu2_bf16);
	RUN(ve_gate);
	RUN(ve_gate_bf16);
	RUN(ve_gate_rows);
	RUN(rope_rmsnorm_bf16);
	RUN(attention_bf16);
	RUN(rmsnorm_bf16);
	RUN(mix_fused);
	RUN(mul_cols);
	RUN(polar_express);
	RUN(optimizer_passes);
	RUN(train_20_steps);
	RUN(train_bf16_storage);
	RUN(train_attn_bf16);
	RUN(benchmark_pass_rows);
	RUN(head_big_chunks);
	RUN(train_cast_reuse);
	RUN(train_async_bitwise);
	RUN(async_gather_abort);
	RUN(bad_inputs_checked_on_device);
	RUN(curve_vs_torch);
	struct cuda_mem_stats ms;
	cuda_mem_stats(&ms);
	printf("memory: backend peak %zu bytes, device peak %zu of %zu bytes\n", ms.peak,
	       ms.device_peak, ms.device_total);
	return t_done();
}

/* bench_attention.c: times each attention variant of dev/cuda
 * (dev/cuda/attention_variants.h) beside the product's mma.sync kernels
 * on the same random inputs, forward and backward, and prints one line a
 * variant:
 *   RESULT variant=V B=.. T=.. H=.. window=.. fwd_ms=.. bwd_ms=.. fwd_tflops=.. bwd_tflops=..
 * then each variant's times as a ratio to mma's (above 1: slower).
 * A variant the device cannot run (wg off compute capability 9.0) is
 * reported as such and left out.
 *
 *   bench_attention [B T H WINDOW [REPS]]   (default 64 2048 4 1024 10: the
 *                                           benchmark's depth-8 shape)
 *
 * Each time is the wall time of REPS calls after one call not timed, the
 * stream waited for before and after (so a call's host work and launches
 * count, as they do in the backend). FLOPs: 4 D per visible (query, key)
 * pair forward (S = Q K^T and O = P V), 2.5 times that backward (five
 * products: S, dV, dP, dK, dQ; the kept dS saves recomputing S and dP for
 * dQ), D = 128. Nothing is asserted: on the emulated device (make
 * dev-cuda) the figures say nothing of a GPU.
 * Exit status: 0, 2 on bad arguments, 4 without a CUDA device.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dev/cuda/attention_variants.h"
#include "kernels/cuda_api.h"
#include "lib/err.h"
#include "lib/rng.h"
#include "trainer/backend.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* a positive integer argument, or exit 2 naming it */
static long long arg_pos(const char *s, const char *what)
{
	char *end;
	long long v = strtoll(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < 0 || (v == 0 && strcmp(what, "WINDOW") != 0)) {
		fprintf(stderr, "bench_attention: %s: '%s' is not a %s integer\n", what, s,
			strcmp(what, "WINDOW") ? "positive" : "non-negative");
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	int B = 64, T = 2048, H = 4, reps = 10;
	int64_t window = 1024;
	if (argc != 1 && argc != 5 && argc != 6) {
		fprintf(stderr, "usage: bench_attention [B T H WINDOW [REPS]]\n");
		return 2;
	}
	if (argc >= 5) {
		long long b = arg_pos(argv[1], "B"), t = arg_pos(argv[2], "T");
		long long h = arg_pos(argv[3], "H");
		window = arg_pos(argv[4], "WINDOW");
		reps = argc == 6 ? (int)arg_pos(argv[5], "REPS") : reps;
		if (b * h > 65535 || t > INT32_MAX) {   /* the kernels' grid: B H blocks in y */
			fprintf(stderr, "bench_attention: B %lld T %lld H %lld: B H above 65535 or T "
				"above 2^31 - 1\n", b, t, h);
			return 2;
		}
		B = (int)b, T = (int)t, H = (int)h;
	}
	if (cuda_device_count() < 1) {
		fprintf(stderr, "bench_attention: no CUDA device\n");
		return 4;
	}
	(void)backend_cuda();
	char name[128] = "?";
	cuda_device_name(name, sizeof name);
	printf("device: %s\n", name);

	int64_t n = (int64_t)B * T * H * 128, nl = (int64_t)B * H * T;
	struct rng rg;
	rng_seed(&rg, 1);
	float *p[9];   /* q k v dy y lse dq dk dv */
	for (int i = 0; i < 9; i++) {
		size_t m = (size_t)(i == 5 ? nl : n);
		p[i] = cuda_mem_alloc(m * sizeof(float));
		for (size_t j = 0; i < 4 && j < m; j++)
			p[i][j] = (float)rng_normal(&rg);
	}
	/* visible (query, key) pairs of one (b, h) */
	double pairs = 0;
	for (int64_t t = 0; t < T; t++)
		pairs += (double)(t < window ? t : window) + 1;
	double fwd_flop = 4.0 * 128 * pairs * B * H, bwd_flop = 2.5 * fwd_flop;
	float sc = 0.08838834764831845f;   /* 1 / sqrt(128) */
	double ms[ATTN_VAR_N][2] = { { 0 } };
	for (int v = 0; v < ATTN_VAR_N; v++) {
		if (!attn_variant_runs_here((enum attn_variant)v)) {
			printf("%s: this device cannot run it (wgmma: compute capability 9.0)\n",
			       attn_variant_name((enum attn_variant)v));
			continue;
		}
		for (int bwd = 0; bwd < 2; bwd++) {
			double t0 = 0;
			for (int r = 0; r <= reps; r++) {   /* r = 0: not timed */
				if (r == 1) {
					attn_variant_sync();
					t0 = now_s();
				}
				if (!bwd)
					attn_variant_fwd((enum attn_variant)v, p[4], p[5], p[0], p[1], p[2],
							 B, T, H, window, sc);
				else
					attn_variant_bwd((enum attn_variant)v, p[6], p[7], p[8], p[3], p[0],
							 p[1], p[2], p[4], p[5], B, T, H, window, sc);
			}
			attn_variant_sync();
			ms[v][bwd] = 1e3 * (now_s() - t0) / reps;
		}
		printf("RESULT variant=%s B=%d T=%d H=%d window=%lld fwd_ms=%.3f bwd_ms=%.3f "
		       "fwd_tflops=%.2f bwd_tflops=%.2f\n",
		       attn_variant_name((enum attn_variant)v), B, T, H, (long long)window, ms[v][0],
		       ms[v][1], ms[v][0] > 0 ? fwd_flop / ms[v][0] * 1e-9 : 0,
		       ms[v][1] > 0 ? bwd_flop / ms[v][1] * 1e-9 : 0);
	}
	for (int v = 1; v < ATTN_VAR_N; v++)
		if (ms[v][0] > 0 && ms[0][0] > 0 && ms[0][1] > 0)
			printf("%-5s time / mma's: forward %.2f, backward %.2f\n",
			       attn_variant_name((enum attn_variant)v), ms[v][0] / ms[0][0],
			       ms[v][1] / ms[0][1]);
	for (int i = 0; i < 9; i++)
		cuda_mem_free(p[i]);
	return 0;
}

/* bench_step.c: a micro-driver for bench/bench_train.sh and
 * bench/bench_memory.sh: builds the model and optimizer for a config (file
 * and/or key=value overrides, as `supkit train --set`), feeds random tokens
 * (seeded, uniform in [0, V)), and times whole training steps (grad_accum
 * micro-steps of forward+backward, then one optimizer step), as
 * trainer/train.c's loop does. Prints one line of key=value figures: tok_s
 * of the median step, the median and min step time, peak RSS (getrusage)
 * and the model's own byte count (model_peak_bytes), and an FNV-1a hash of
 * every parameter's bytes after the last step (w_fnv: equal hashes show that
 * a performance change left the arithmetic bit-identical).
 *
 * Leaves out: the data loader, evaluation, checkpoints (not part of a step's
 * cost). Not a test: nothing is asserted. Built by the bench scripts against
 * build/libtrainer.a and build/liblib.a (no Makefile rule).
 * Reference: docs/model.md (A step); bench/bench_train.sh, bench_memory.sh.
 *
 * usage: bench_step [-c CONFIG] [-w WARMUP] [-n STEPS] [key=value ...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lib/err.h"
#include "lib/progress.h"
#include "lib/rng.h"
#include "trainer/config.h"
#include "trainer/model.h"
#include "trainer/optim.h"
#include "trainer/param.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double rss_peak_mib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_maxrss / 1024.0;    /* ru_maxrss is in KiB on Linux */
}

/* FNV-1a 64 over the fp32 (or bf16) values and fp64 mirrors of every
 * parameter. */
static uint64_t params_fnv(struct model *m)
{
	struct param_table *t = model_params(m);
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < t->n; i++) {
		const struct param *p = &t->p[i];
		const unsigned char *b[3] = { (const unsigned char *)p->w, (const unsigned char *)p->w64,
					      (const unsigned char *)p->wb };
		size_t len[3] = { p->numel * sizeof(float), p->numel * sizeof(double),
				  p->numel * sizeof(bf16) };
		for (int k = 0; k < 3; k++)
			for (size_t j = 0; b[k] && j < len[k]; j++)
				h = (h ^ b[k][j]) * 0x100000001b3ull;
	}
	return h;
}

int main(int argc, char **argv)
{
	struct config cfg;
	struct err e = { 0 };
	int warm = 1, steps = 3, opt;
	config_defaults(&cfg);
	while ((opt = getopt(argc, argv, "c:w:n:")) != -1) {
		switch (opt) {
		case 'c':
			if (config_load_file(&cfg, optarg, &e) < 0)
				goto fail;
			break;
		case 'w': warm = atoi(optarg); break;
		case 'n': steps = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: bench_step [-c CONFIG] [-w WARMUP] [-n STEPS] [key=value ...]\n");
			return EXIT_USAGE;
		}
	}
	for (int i = optind; i < argc; i++)
		if (config_set(&cfg, argv[i], &e) < 0)
			goto fail;
	if (steps < 1 || warm < 0) {
		fprintf(stderr, "bench_step: -n must be >= 1 and -w >= 0\n");
		return EXIT_USAGE;
	}
	if (config_validate(&cfg, &e) < 0)
		goto fail;
	double rss0 = rss_peak_mib();
	struct model *m;
	struct optim *o;
	if (model_create(&cfg, &m, &e) < 0)
		goto fail;
	if (optim_create(&cfg, model_params(m), cfg.dtype == DTYPE_F64, &o, &e) < 0) {
		model_free(m);
		goto fail;
	}
	int B = cfg.batch_rows, T = cfg.seq_len, K = cfg.grad_accum;
	size_t N = (size_t)B * (size_t)T;
	int32_t *in = xmalloc(N * sizeof *in), *tg = xmalloc(N * sizeof *tg);
	double *dt = xmalloc((size_t)steps * sizeof *dt), loss = 0;
	struct rng r;
	rng_seed(&r, 1234);
	for (int s = 0; s < warm + steps; s++) {
		double t0 = now_seconds();
		model_zero_grad(m);
		for (int k = 0; k < K; k++) {
			for (size_t i = 0; i < N; i++) {
				in[i] = (int32_t)rng_below(&r, (uint64_t)cfg.vocab_size);
				tg[i] = (int32_t)rng_below(&r, (uint64_t)cfg.vocab_size);
			}
			if (model_forward_backward(m, in, tg, B, T, 1.0 / K, &loss, &e) < 0)
				goto fail_run;
		}
		if (optim_step(o, s, &e) < 0)
			goto fail_run;
		if (s >= warm)
			dt[s - warm] = now_seconds() - t0;
	}
	qsort(dt, (size_t)steps, sizeof *dt, cmp_double);
	double med = steps % 2 ? dt[steps / 2] : 0.5 * (dt[steps / 2 - 1] + dt[steps / 2]);
	printf("tok_s=%.1f step_s=%.4f min_s=%.4f steps=%d tokens_per_step=%zu loss=%.4f "
	       "peak_rss_mib=%.1f start_rss_mib=%.1f model_peak_mib=%.1f params=%zu w_fnv=%016llx\n",
	       (double)N * K / med, med, dt[0], steps, N * (size_t)K, loss, rss_peak_mib(), rss0,
	       (double)model_peak_bytes(m) / 1048576.0, model_param_count(m),
	       (unsigned long long)params_fnv(m));
	free(in);
	free(tg);
	free(dt);
	optim_free(o);
	model_free(m);
	return 0;
fail_run:
	free(in);
	free(tg);
	free(dt);
	optim_free(o);
	model_free(m);
fail:
	fprintf(stderr, "bench_step: %s\n", e.msg);
	return e.code ? e.code : EXIT_USAGE;
}

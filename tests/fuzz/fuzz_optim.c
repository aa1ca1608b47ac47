/* fuzz_optim.c: libFuzzer harness for the optimizer state reader
 * (trainer/optim.c optim_load_mem, behind optim_load), which reads a run
 * folder's checkpoint/optim.bin on --resume.
 *
 * Each input is loaded into four optimizers: over a small fixed model
 * (depth 1, d 8, V 16, T 8, OE tables, value embeddings, wte and out
 * lambdas, paired QK scales) an fp32 run (wte and value_embeds with bf16
 * state), an fp32 run with embed_state = fp32 (their fp32 master weights in
 * the file) and an fp64 run (every parameter's master in the file); and an
 * fp32 run of the same model at d 32 with the l0_hf16 mask on q_tau; and
 * an fp32 run with zeta = 1 (Zeta's second moment in the file), one with
 * malt = 1 (MALT's row and column EMAs), one with malt = 1, malt_beta = 0
 * (instantaneous MALT: no EMAs in the file), one with muon2f = 1 (Muon²-F's
 * second moment) and one with matrix_optim = adamw (AdamW moments and step
 * counters for the block matrices, no Muon buffers).
 * Invariants: a refusal carries a one-line message naming the file; an
 * accepted file is records the harness parses the same way, and the state
 * it leaves holds every value exactly: written back (optim_state_bytes)
 * each record holds the input's bits (an fp32 run keeps values fp32 holds,
 * its bf16 state values bf16 holds); masked q_tau entries have moments and
 * master 0; the state written back loads again and writes back the same
 * bytes.
 * Seeds: tests/fuzz/corpus/optim/{fp32,embed_fp32,fp64,masked,zeta,malt,
 * malt_inst,muon2f,adamw_matrix}.bin, each
 * optimizer's state after two steps; FUZZ_WRITE_SEED=DIR makes the harness
 * write them (tests/fuzz/README.md). Reference: trainer/optim.h,
 * supkit-formats(5) Optimizer state. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>

#include "lib/bf16.h"
#include "lib/fileio.h"
#include "trainer/model.h"
#include "trainer/optim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { FZ_NOPT = 9, FZ_B = 2, FZ_T = 8 };
static const char *const fz_seed_names[FZ_NOPT] = {"fp32.bin", "embed_fp32.bin", "fp64.bin", "masked.bin",
						   "zeta.bin", "malt.bin", "malt_inst.bin", "muon2f.bin",
						   "adamw_matrix.bin"};

struct fz_run {
	struct config c;
	struct model *m;
	struct optim *o;
	int fp64;
};
static struct fz_run fz[FZ_NOPT];

static void fuzz_cleanup(void)
{
	for (int k = 0; k < FZ_NOPT; k++) {
		optim_free(fz[k].o);
		model_free(fz[k].m);
	}
}

static void fuzz_fail(const struct err *e)
{
	fprintf(stderr, "fuzz_optim: %s\n", e->msg);
	abort();
}

static void fuzz_init(void)
{
	static const char *const kv[] = {"depth=1", "model_dim=8", "head_dim=8", "vocab_size=16", "seq_len=8",
					 "window_pattern=L", "ve_gate_channels=4", "init=dense", "oe=1", "oe_m=5",
					 "qk_scale=pair", "wte_lambdas=1", "out_lambdas=1", "steps=20",
					 "warmup_steps=0", NULL};
	static const char *const extra[FZ_NOPT][4] = {
		{NULL},
		{"embed_state=fp32", NULL},
		{"dtype=fp64", NULL},
		{"model_dim=32", "head_dim=32", "qk_mask=l0_hf16", NULL},
		{"zeta=1", NULL},
		{"malt=1", NULL},
		{"malt=1", "malt_beta=0", NULL},
		{"muon2f=1", NULL},
		{"matrix_optim=adamw", NULL},
	};
	struct err e = {0};
	openblas_set_num_threads(1);   /* small matrices: threads only cost */
	for (int k = 0; k < FZ_NOPT; k++) {
		struct fz_run *r = &fz[k];
		config_defaults(&r->c);
		for (size_t i = 0; kv[i]; i++)
			if (config_set(&r->c, kv[i], &e) != 0)
				fuzz_fail(&e);
		for (size_t i = 0; extra[k][i]; i++)
			if (config_set(&r->c, extra[k][i], &e) != 0)
				fuzz_fail(&e);
		r->fp64 = r->c.dtype == DTYPE_F64;
		if (config_validate(&r->c, &e) != 0 || model_create(&r->c, &r->m, &e) != 0 ||
		    optim_create(&r->c, model_params(r->m), r->fp64, &r->o, &e) != 0)
			fuzz_fail(&e);
	}
	atexit(fuzz_cleanup);
	const char *dir = getenv("FUZZ_WRITE_SEED");
	if (!dir)
		return;
	/* two steps on a fixed batch, then the state of each */
	int32_t in[FZ_B * FZ_T], tg[FZ_B * FZ_T];
	for (int i = 0; i < FZ_B * FZ_T; i++) {
		in[i] = (i * 7 + 3) % 16;
		tg[i] = (i * 5 + 1) % 16;
	}
	for (int k = 0; k < FZ_NOPT; k++) {
		for (int s = 0; s < 2; s++) {
			double loss;
			model_zero_grad(fz[k].m);
			if (model_forward_backward(fz[k].m, in, tg, FZ_B, FZ_T, 1.0, &loss, &e) != 0 ||
			    optim_step(fz[k].o, s, &e) != 0)
				fuzz_fail(&e);
		}
		char *p = path_join(dir, fz_seed_names[k]);
		if (optim_save(fz[k].o, p, &e) != 0)
			fuzz_fail(&e);
		free(p);
	}
	exit(0);
}

/* ---- the harness's own reading of the format ---- */

struct fz_rec {
	char name[160];
	uint32_t kind;
	uint64_t n;
	const uint8_t *v;   /* n values of 8 bytes */
};

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The records of a whole, well-formed file (*n of them, malloc'd), or NULL. */
static struct fz_rec *fz_parse(const uint8_t *d, size_t len, size_t *n)
{
	if (len < 16 || memcmp(d, "SUPKOPT1", 8))
		return NULL;
	uint64_t nrec = rd64(d + 8);
	if (nrec > len / 16)
		return NULL;
	struct fz_rec *r = calloc(nrec ? nrec : 1, sizeof *r);
	if (!r)
		abort();
	size_t at = 16;
	for (uint64_t i = 0; i < nrec; i++) {
		if (len - at < 4)
			goto bad;
		uint32_t nl = rd32(d + at);
		at += 4;
		if (nl >= sizeof r[i].name || len - at < (size_t)nl + 12)
			goto bad;
		memcpy(r[i].name, d + at, nl);
		r[i].name[nl] = 0;
		at += nl;
		r[i].kind = rd32(d + at);
		r[i].n = rd64(d + at + 4);
		at += 12;
		if (r[i].n > (len - at) / 8)
			goto bad;
		r[i].v = d + at;
		at += 8 * r[i].n;
	}
	if (at != len)
		goto bad;
	*n = nrec;
	return r;
bad:
	free(r);
	return NULL;
}

static const struct fz_rec *fz_find(const struct fz_rec *r, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(r[i].name, name))
			return &r[i];
	return NULL;
}

static double as_double(uint64_t u)
{
	double x;
	memcpy(&x, &u, sizeof x);
	return x;
}

static int is_f32(double x)
{
	return (double)(float)x == x;
}

static int is_bf16(double x)
{
	float f = (float)x;
	return is_f32(x) && bf16_to_f32(bf16_from_f32(f)) == f;
}

static void fuzz_check(struct fz_run *r, const uint8_t *data, size_t size, const char *name)
{
	size_t nin, nout, nout2;
	struct fz_rec *in = fz_parse(data, size, &nin);
	if (!in)
		abort();
	size_t blen, blen2;
	unsigned char *back = optim_state_bytes(r->o, &blen);
	struct fz_rec *out = fz_parse(back, blen, &nout);
	if (!out || nout != nin)
		abort();
	/* every record of the input comes back with the same bits */
	for (size_t i = 0; i < nin; i++) {
		const struct fz_rec *b = fz_find(out, nout, in[i].name);
		if (!b || b->kind != in[i].kind || b->n != in[i].n || memcmp(b->v, in[i].v, 8 * b->n))
			abort();
	}
	/* values the run's state holds */
	const struct param_table *t = model_params(r->m);
	for (size_t pi = 0; pi < t->n; pi++) {
		const struct param *p = &t->p[pi];
		int bf16_state = !r->fp64 && p->store == PARAM_BF16 && r->c.embed_state == EMBED_STATE_BF16;
		static const char *const suf[] = {"exp_avg", "exp_avg_sq", "momentum_buffer", "master",
						  "zeta_second_moment", "malt_row_ema", "malt_col_ema",
						  "muon2f_second_moment"};
		for (int k = 0; k < 8; k++) {
			char nm[192];
			snprintf(nm, sizeof nm, "%s.%s", p->name, suf[k]);
			const struct fz_rec *x = fz_find(in, nin, nm);
			for (uint64_t j = 0; x && j < x->n; j++) {
				double v = as_double(rd64(x->v + 8 * j));
				if (!isfinite(v) || (!r->fp64 && !is_f32(v)) || (bf16_state && k < 2 && !is_bf16(v)))
					abort();
				if (p->mask && p->mask[j] && k != 2 && v != 0)
					abort();
			}
		}
	}
	/* the state written back loads again and writes back the same */
	struct err e = {0};
	if (optim_load_mem(r->o, back, blen, name, &e) != 0)
		abort();
	unsigned char *back2 = optim_state_bytes(r->o, &blen2);
	struct fz_rec *out2 = fz_parse(back2, blen2, &nout2);
	if (blen2 != blen || memcmp(back2, back, blen) || !out2)
		abort();
	free(out2);
	free(back2);
	free(out);
	free(back);
	free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char name[] = "run/checkpoint/optim.bin";
	static const uint8_t empty[1];
	if (!data)
		data = empty;   /* libFuzzer's empty input */
	if (!fz[0].o)
		fuzz_init();
	for (int k = 0; k < FZ_NOPT; k++) {
		struct err e = {0};
		if (optim_load_mem(fz[k].o, data, size, name, &e) != 0) {
			if (!e.msg[0] || strchr(e.msg, '\n') || !strstr(e.msg, name))
				abort();
			continue;
		}
		fuzz_check(&fz[k], data, size, name);
	}
	return 0;
}

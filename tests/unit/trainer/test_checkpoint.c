/* test_checkpoint.c: parameter table <-> safetensors (trainer/checkpoint.c):
 * round trip through model_save and init_from, the dtypes and names in the
 * file (F64 throughout for fp64 runs, reloaded bit for bit), and refusal of files that do not fit the model (missing, extra or
 * misshapen tensors, masked q_tau entries that are not 0), each naming the
 * file and the tensor; torch.compile's "_orig_mod." names; the resume state (state.json): round trip, the
 * files' SHA-256 verified, every field range-checked, each refusal naming
 * the file and the field. Files go to a fresh temporary folder.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t.h"
#include "lib/bf16.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/safetensors.h"
#include "lib/sha256.h"
#include "trainer/checkpoint.h"
#include "trainer/model.h"
#include "trainer_fixture.h"

static char dir[] = "/tmp/supkit-ckpt-XXXXXX";

/* The model of kv (trainer_fixture.h), its config in *out when out is set. */
static struct model *make(const char *const *kv, struct config *out)
{
	struct model *m = model_make(kv);
	if (m && out)
		*out = *model_config(m);
	return m;
}

static const char *base[] = { "depth=2", "model_dim=64", "head_dim=32", "vocab_size=64", "seq_len=16",
			      "init=dense", "oe=1", "oe_m=13", "qk_scale=pair", "wte_lambdas=1",
			      "out_lambdas=1", NULL };

TEST(round_trip)
{
	struct config c;
	struct model *m = make(base, &c);
	CHECK(m != NULL);
	if (!m)
		return;
	char *path = xasprintf("%s/a.safetensors", dir);
	struct err e = {0};
	const char *meta[] = { "config_sha256", "abc", NULL };
	CHECKF(model_save(m, path, meta, &e) == 0, "%s", e.msg);
	/* names, dtypes: bf16-stored as BF16, the rest F32 */
	struct st_file f;
	CHECKF(st_open(&f, path, &e) == 0, "%s", e.msg);
	struct param_table *t = model_params(m);
	CHECK(f.n == t->n);
	for (size_t i = 0; i < t->n; i++) {
		const struct st_tensor *s = st_find(&f, t->p[i].name);
		CHECKF(s != NULL, "%s", t->p[i].name);
		if (s)
			CHECKF(s->dtype == (t->p[i].store == PARAM_BF16 ? ST_BF16 : ST_F32), "%s dtype",
			       t->p[i].name);
	}
	CHECK(st_find(&f, "transformer.wte.weight")->dtype == ST_BF16);
	CHECK(st_find(&f, "oe.3.weight") && st_find(&f, "q_tau")->ndim == 3);
	int meta_ok = 0;
	for (size_t i = 0; i < f.n_meta; i++)
		meta_ok |= !strcmp(f.meta_keys[i], "config_sha256") && !strcmp(f.meta_vals[i], "abc");
	CHECK(meta_ok);
	st_close(&f);
	/* load into a fresh model through init_from: identical values */
	struct config c2 = c;
	c2.init = INIT_BENCHMARK;
	snprintf(c2.init_from, sizeof c2.init_from, "%s", path);
	struct model *m2 = NULL;
	CHECKF(model_create(&c2, &m2, &e) == 0, "%s", e.msg);
	if (m2) {
		struct param_table *t2 = model_params(m2);
		int same = t2->n == t->n;
		for (size_t i = 0; same && i < t->n; i++)
			same &= param_values_equal(&t->p[i], &t2->p[i]);
		CHECK(same);
		model_free(m2);
	}
	/* fp64: w64 is loaded too */
	c2.dtype = DTYPE_F64;
	CHECKF(model_create(&c2, &m2, &e) == 0, "%s", e.msg);
	if (m2) {
		struct param *p = param_find(model_params(m2), "lm_head.weight");
		CHECK(p->w64 && p->w64[5] == (double)param_find(t, "lm_head.weight")->w[5]);
		model_free(m2);
	}
	free(path);
	model_free(m);
}

/* fp64 runs write their exact values (F64 for every parameter, wte's not
 * bf16-representable after training) and reload them bit for bit; an fp32
 * run reading that file gets fp32 values, bf16-stored ones rounded to bf16 */
TEST(fp64_exact_round_trip)
{
	const char *kv[32];
	int k = 0;
	for (int i = 0; base[i]; i++)
		kv[k++] = base[i];
	kv[k++] = "dtype=fp64";
	kv[k] = NULL;
	struct config c;
	struct model *m = make(kv, &c);
	CHECK(m != NULL);
	if (!m)
		return;
	struct param_table *t = model_params(m);
	/* values an fp64 run holds after some steps: neither fp32 nor bf16 */
	for (size_t i = 0; i < t->n; i++) {
		struct param *p = &t->p[i];
		for (size_t j = 0; j < p->numel; j++)
			if (!(p->mask && p->mask[j]))
				p->w64[j] += 1e-10 * (double)(j % 7 + 1) + 1.0 / 3.0;
	}
	char *path = xasprintf("%s/f64.safetensors", dir);
	struct err e = {0};
	CHECKF(model_save(m, path, NULL, &e) == 0, "%s", e.msg);
	struct st_file f;
	CHECKF(st_open(&f, path, &e) == 0, "%s", e.msg);
	int all64 = f.n == t->n;
	for (size_t i = 0; i < f.n; i++)
		all64 &= f.t[i].dtype == ST_F64;
	CHECKF(all64, "an fp64 run's checkpoint is not F64 throughout");
	st_close(&f);
	struct config c2 = c;
	c2.init = INIT_BENCHMARK;
	snprintf(c2.init_from, sizeof c2.init_from, "%s", path);
	struct model *m2 = NULL;
	CHECKF(model_create(&c2, &m2, &e) == 0, "%s", e.msg);
	if (m2) {
		struct param_table *t2 = model_params(m2);
		int same = 1;
		for (size_t i = 0; i < t->n; i++)
			same &= !memcmp(t->p[i].w64, t2->p[i].w64, t->p[i].numel * sizeof(double));
		CHECKF(same, "fp64 values not reloaded bit for bit");
		struct param *p = param_find(t2, "lm_head.weight");
		CHECK(p->w[3] == (float)p->w64[3]);
		model_free(m2);
	}
	c2.dtype = DTYPE_F32;
	CHECKF(model_create(&c2, &m2, &e) == 0, "%s", e.msg);
	if (m2) {
		struct param_table *t2 = model_params(m2);
		struct param *lm = param_find(t2, "lm_head.weight");
		struct param *wte = param_find(t2, "transformer.wte.weight");
		struct param *lm0 = param_find(t, "lm_head.weight"), *wte0 = param_find(t, "transformer.wte.weight");
		CHECK(lm->w[7] == (float)lm0->w64[7]);
		CHECK(wte->w[7] == bf16_round((float)wte0->w64[7]) && wte->w[7] != (float)wte0->w64[7]);
		model_free(m2);
	}
	free(path);
	model_free(m);
}

TEST(refuses_mismatch)
{
	struct model *m = make(base, NULL);
	const char *other[] = { "depth=2", "model_dim=64", "head_dim=32", "vocab_size=64", "seq_len=16",
				NULL };
	struct model *plain = make(other, NULL);
	CHECK(m && plain);
	if (!m || !plain) {
		model_free(m);
		model_free(plain);
		return;
	}
	char *pa = xasprintf("%s/arms.safetensors", dir), *pb = xasprintf("%s/plain.safetensors", dir);
	struct err e = {0};
	CHECK(model_save(m, pa, NULL, &e) == 0);
	CHECK(model_save(plain, pb, NULL, &e) == 0);
	/* extra tensors: the arms checkpoint into the plain model */
	CHECK(checkpoint_load(model_params(plain), pa, &e) == -1);
	CHECKF(strstr(e.msg, "arms.safetensors") && strstr(e.msg, "is not a parameter"), "%s", e.msg);
	/* missing tensors: the plain checkpoint into the arms model */
	CHECK(checkpoint_load(model_params(m), pb, &e) == -1);
	CHECKF(strstr(e.msg, "is missing"), "%s", e.msg);
	/* wrong shape: a file with lm_head of another width */
	struct st_writer w;
	st_writer_init(&w);
	struct param_table *t = model_params(plain);
	float *junk = calloc(64 * 65, sizeof(float));
	for (size_t i = 0; i < t->n; i++) {
		struct param *p = &t->p[i];
		if (!strcmp(p->name, "lm_head.weight")) {
			int64_t sh[2] = { 64, 65 };
			st_writer_add(&w, p->name, ST_F32, 2, sh, junk);
		} else {
			st_writer_add(&w, p->name, ST_F32, p->ndim, p->shape, p->w);
		}
	}
	char *pc = xasprintf("%s/shape.safetensors", dir);
	CHECK(st_write(&w, pc, &e) == 0);
	st_writer_release(&w);
	CHECK(checkpoint_load(t, pc, &e) == -1);
	CHECKF(strstr(e.msg, "'lm_head.weight' has shape [64, 65], expected [64, 64]"), "%s", e.msg);
	/* not a file */
	char *pd = xasprintf("%s/none.safetensors", dir);
	CHECK(checkpoint_load(t, pd, &e) == -1 && e.code != 0);
	/* writing into a missing folder fails and leaves nothing */
	char *pe = xasprintf("%s/no/such/x.safetensors", dir);
	CHECK(model_save(plain, pe, NULL, &e) == -1);
	CHECK(access(pe, F_OK) != 0);
	free(junk), free(pa), free(pb), free(pc), free(pd), free(pe);
	model_free(m);
	model_free(plain);
}

TEST(masked_entries_must_be_zero)
{
	const char *kv[] = { "depth=2", "model_dim=64", "head_dim=64", "vocab_size=64", "seq_len=16",
			     "qk_scale=pair", "qk_mask=l0_hf16", NULL };
	struct model *m = make(kv, NULL);
	CHECK(m != NULL);
	if (!m)
		return;
	struct param *q = param_find(model_params(m), "q_tau");
	char *path = xasprintf("%s/mask.safetensors", dir);
	struct err e = {0};
	q->w[0] = 0.5f;     /* layer 0: frozen */
	CHECK(model_save(m, path, NULL, &e) == 0);
	CHECK(checkpoint_load(model_params(m), path, &e) == -1);
	CHECKF(strstr(e.msg, "'q_tau': masked entry 0 is not 0"), "%s", e.msg);
	free(path);
	model_free(m);
}

/* t's tensors written to path, each name prefixed by pre(name) (NULL:
 * none), values as they are (F32; bf16-stored as BF16), plus one extra
 * tensor named extra (NULL: none) holding lm_head's values. */
static int write_named(struct param_table *t, const char *path, const char *(*pre)(const char *),
		       const char *extra, struct err *e)
{
	struct st_writer w;
	st_writer_init(&w);
	char **names = calloc(t->n + 1, sizeof *names);
	float **vals = calloc(t->n + 1, sizeof *vals);
	for (size_t i = 0; i < t->n; i++) {
		struct param *p = &t->p[i];
		names[i] = xasprintf("%s%s", pre ? pre(p->name) : "", p->name);
		vals[i] = malloc(p->numel * sizeof(float));
		for (size_t j = 0; j < p->numel; j++)
			vals[i][j] = param_w_at(p, j);
		st_writer_add(&w, names[i], ST_F32, p->ndim, p->shape, vals[i]);
		if (extra && !strcmp(p->name, "lm_head.weight"))
			st_writer_add(&w, extra, ST_F32, p->ndim, p->shape, vals[i]);
	}
	int r = st_write(&w, path, e);
	st_writer_release(&w);
	for (size_t i = 0; i < t->n; i++)
		free(names[i]), free(vals[i]);
	free(names);
	free(vals);
	return r;
}

static const char *all_prefixed(const char *name)
{
	(void)name;
	return "_orig_mod.";
}

static const char *some_prefixed(const char *name)
{
	return strncmp(name, "transformer.h.", 14) ? "" : "_orig_mod.";
}

/* torch.compile's "_orig_mod." before every name: read as the plain names,
 * the same values; a file that mixes the two, or names one parameter both
 * ways, is refused naming the file and the tensors. */
TEST(compile_prefix)
{
	struct model *m = make(base, NULL);
	CHECK(m != NULL);
	if (!m)
		return;
	struct param_table *t = model_params(m);
	struct config c = *model_config(m);
	char *pa = xasprintf("%s/compiled.safetensors", dir), *pb = xasprintf("%s/mixed.safetensors", dir);
	char *pc = xasprintf("%s/twice.safetensors", dir);
	struct err e = {0};
	CHECKF(write_named(t, pa, all_prefixed, NULL, &e) == 0, "%s", e.msg);
	CHECKF(write_named(t, pb, some_prefixed, NULL, &e) == 0, "%s", e.msg);
	CHECKF(write_named(t, pc, all_prefixed, "lm_head.weight", &e) == 0, "%s", e.msg);
	c.init = INIT_BENCHMARK;
	snprintf(c.init_from, sizeof c.init_from, "%s", pa);
	struct model *m2 = NULL;
	CHECKF(model_create(&c, &m2, &e) == 0, "%s", e.msg);
	if (m2) {
		struct param_table *t2 = model_params(m2);
		int same = t2->n == t->n;
		for (size_t i = 0; same && i < t->n; i++)
			same &= param_values_equal(&t->p[i], &t2->p[i]);
		CHECK(same);
		model_free(m2);
	}
	CHECK(checkpoint_load(t, pb, &e) == -1);
	CHECKF(strstr(e.msg, "mixed.safetensors': tensor '_orig_mod.transformer.h.") && strstr(e.msg, "mixes"),
	       "%s", e.msg);
	CHECK(checkpoint_load(t, pc, &e) == -1);
	CHECKF(strstr(e.msg, "twice.safetensors': tensors '_orig_mod.lm_head.weight' and 'lm_head.weight' are "
			     "one parameter"), "%s", e.msg);
	/* the prefix stays in messages about a tensor */
	struct param *lm = param_find(t, "lm_head.weight");
	int64_t keep = lm->shape[1];
	lm->shape[1] = keep - 1;   /* the model now wants [64, 63] */
	CHECK(checkpoint_load(t, pa, &e) == -1);
	CHECKF(strstr(e.msg, "'_orig_mod.lm_head.weight' has shape [64, 64], expected [64, 63]"), "%s", e.msg);
	lm->shape[1] = keep;
	free(pa), free(pb), free(pc);
	model_free(m);
}

/* ---- the resume state ---- */

/* text with the first `from` replaced by `to` (fresh string) */
static char *replaced(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	if (!at)
		return NULL;
	size_t a = (size_t)(at - text), nf = strlen(from), nt = strlen(to);
	char *r = malloc(strlen(text) - nf + nt + 1);
	memcpy(r, text, a);
	memcpy(r + a, to, nt);
	strcpy(r + a + nt, at + nf);
	return r;
}

/* A checkpoint folder ck of three files and its state at step 3. */
static void make_state(const char *ck, struct ckpt_state *st, char **text)
{
	struct err e;
	CHECK(dir_make_all(ck, &e) == 0);
	for (int i = 0; i < CKPT_NFILES; i++) {
		char *p = path_join(ck, ckpt_files[i]);
		char body[64];
		snprintf(body, sizeof body, "the bytes of %s", ckpt_files[i]);
		CHECK(file_write_atomic(p, body, strlen(body), &e) == 0);
		free(p);
	}
	memset(st, 0, sizeof *st);
	st->step = 3;
	st->training_seconds = 1.25;
	st->training_loop_seconds = 2.5;
	memset(st->config_sha256, 'a', SHA256_HEX_LEN);
	st->blas_threads = 2;
	st->curve = cJSON_CreateArray();
	for (int i = 0; i < 3; i++) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddNumberToObject(c, "loss", 6.0 - i);
		cJSON_AddNumberToObject(c, "step", i);
		cJSON_AddItemToArray(st->curve, c);
	}
	CHECKF(ckpt_state_hash(ck, st, &e) == 0, "%s", e.msg);
	char *ps = path_join(ck, "state.json");
	CHECKF(ckpt_state_write(ps, st, &e) == 0, "%s", e.msg);
	size_t n;
	CHECK(file_read_all(ps, 0, text, &n, &e) == 0);
	free(ps);
}

TEST(resume_state_round_trip_and_hashes)
{
	char *ck = path_join(dir, "ck1");
	struct ckpt_state w, r;
	char *text;
	struct err e;
	make_state(ck, &w, &text);
	char *ps = path_join(ck, "state.json");
	CHECKF(ckpt_state_read(ps, 10, &r, &e) == 0, "%s", e.msg);
	CHECK(r.step == 3 && r.training_seconds == 1.25 && r.training_loop_seconds == 2.5 && r.blas_threads == 2);
	CHECK_STREQ(r.config_sha256, w.config_sha256);
	for (int i = 0; i < CKPT_NFILES; i++) {
		char *p = path_join(ck, ckpt_files[i]);
		char hex[65];
		CHECK(sha256_file_hex(p, hex, NULL, &e) == 0);
		CHECK_STREQ(r.sha256[i], hex);   /* what sha256sum prints */
		free(p);
	}
	CHECK(cJSON_GetArraySize(r.curve) == 3);
	CHECK(strstr(text, "\"files\": {") && strstr(text, "\"optim.bin\": \""));
	CHECKF(ckpt_state_verify(ck, &r, &e) == 0, "%s", e.msg);
	/* one changed byte of any file, or a file missing, is refused naming it */
	for (int i = 0; i < CKPT_NFILES; i++) {
		char *p = path_join(ck, ckpt_files[i]), *body;
		size_t n;
		CHECK(file_read_all(p, 0, &body, &n, &e) == 0);
		body[n - 1] ^= 1;
		CHECK(file_write_atomic(p, body, n, &e) == 0);
		CHECK(ckpt_state_verify(ck, &r, &e) == -1 && e.code == EXIT_USAGE);
		CHECKF(strstr(e.msg, p) && strstr(e.msg, "SHA-256") && strstr(e.msg, "state.json records"), "%s", e.msg);
		body[n - 1] ^= 1;
		CHECK(file_write_atomic(p, body, n, &e) == 0);
		CHECK(ckpt_state_verify(ck, &r, &e) == 0);
		free(body);
		free(p);
	}
	char *pl = path_join(ck, "loader.bin");
	unlink(pl);
	CHECK(ckpt_state_verify(ck, &r, &e) == -1 && strstr(e.msg, pl) && strstr(e.msg, "cannot open") &&
	      e.code == EXIT_USAGE);
	free(pl);
	ckpt_state_release(&r);
	cJSON_Delete(w.curve);
	free(text);
	free(ps);
	free(ck);
}

TEST(resume_state_world_size)
{
	char *ck = path_join(dir, "ck_ws");
	struct ckpt_state w, r;
	char *text;
	struct err e;
	make_state(ck, &w, &text);
	char *ps = path_join(ck, "state.json");
	/* one process: not written, read as 1 */
	CHECKF(!strstr(text, "world_size"), "%s", text);
	CHECKF(ckpt_state_read(ps, 10, &r, &e) == 0, "%s", e.msg);
	CHECK(r.world_size == 1);
	ckpt_state_release(&r);
	/* several ranks: written and read back */
	w.world_size = 3;
	CHECKF(ckpt_state_write(ps, &w, &e) == 0, "%s", e.msg);
	CHECKF(ckpt_state_read(ps, 10, &r, &e) == 0, "%s", e.msg);
	CHECK(r.world_size == 3);
	ckpt_state_release(&r);
	char *t3 = ckpt_state_text(&w);
	CHECK(strstr(t3, "\"world_size\": 3") != NULL);
	const char *bad[][2] = {
		{"\"world_size\": 0", "world_size: 0 is out of range [1, 1048576]"},
		{"\"world_size\": 1048577", "world_size: 1048577 is out of range"},
		{"\"world_size\": 2.5", "world_size: 2.5 is not an integer"},
		{"\"world_size\": \"2\"", "world_size: not a number"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char *t = replaced(t3, "\"world_size\": 3", bad[i][0]);
		CHECK(t != NULL);
		if (!t)
			continue;
		CHECK(file_write_atomic(ps, t, strlen(t), &e) == 0);
		CHECKF(ckpt_state_read(ps, 10, &r, &e) == -1 && e.code == EXIT_USAGE && strstr(e.msg, bad[i][1]) &&
		       strstr(e.msg, ps), "case %zu: %s", i, e.msg);
		free(t);
	}
	free(t3);
	cJSON_Delete(w.curve);
	free(text);
	free(ps);
	free(ck);
}

TEST(resume_state_fields_checked)
{
	char *ck = path_join(dir, "ck2");
	struct ckpt_state w, r;
	char *text;
	struct err e;
	make_state(ck, &w, &text);
	char *ps = path_join(ck, "state.json");
	char hex_opt[80];
	snprintf(hex_opt, sizeof hex_opt, "\"optim.bin\": \"%s\"", w.sha256[1]);
	struct { const char *from, *to, *want; } bad[] = {
		{"\n  \"step\": 3,", "\n  \"step\": 10,", "step: 10 is out of range [0, 9]"},
		{"\n  \"step\": 3,", "\n  \"step\": -1,", "step: -1 is out of range [0, 9]"},
		{"\n  \"step\": 3,", "\n  \"step\": 2.5,", "step: 2.5 is not an integer"},
		{"\n  \"step\": 3,", "\n  \"step\": \"3\",", "step: not a number"},
		{"\n  \"step\": 3,", "\n  \"step\": 1e999,", "step: inf is not an integer"},
		{"\n  \"step\": 3,", "\n  \"step\": 2,", "curve: 3 entries, but step is 2"},
		{"\n  \"step\": 3,", "\n", "step: missing"},
		{"\"blas_threads\": 2", "\"blas_threads\": -1", "blas_threads: -1 is out of range [1, 4096]"},
		{"\"blas_threads\": 2", "\"blas_threads\": 0", "blas_threads: 0 is out of range"},
		{"\"blas_threads\": 2", "\"blas_threads\": 100000", "blas_threads: 100000 is out of range"},
		{"\"blas_threads\": 2", "\"blas_threads\": 1.5", "blas_threads: 1.5 is not an integer"},
		{"\"training_seconds\": 1.25", "\"training_seconds\": -1", "training_seconds: not a finite number"},
		{"\"training_seconds\": 1.25", "\"training_seconds\": 3", "training_loop_seconds: 2.5 is less than"},
		{"\"training_loop_seconds\": 2.5", "\"training_loop_seconds\": null", "training_loop_seconds: not a finite"},
		{"\"config_sha256\": \"aaaa", "\"config_sha256\": \"Aaaa", "config_sha256: not a SHA-256"},
		{hex_opt, "\"optim.bin\": \"0123\"", "files.optim.bin: not a SHA-256"},
		{hex_opt, "\"optim.bin \": \"0123\"", "files.optim.bin: missing"},
		{"\"files\": {", "\"extra\": 1, \"files\": {", "unknown key 'extra'"},
		{"\"step\": 1\n", "\"step\": 5\n", "curve[1]: not the object of step 1"},
		{"\"loss\": 6,", "\"loss\": \"6\",", "curve[0]: loss is not a finite number"},
		{"\"curve\": [", "\"curve\": {\"a\": [", "curve: not an array"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char *t = replaced(text, bad[i].from, bad[i].to);
		CHECKF(t != NULL, "case %zu: no '%s' in the state", i, bad[i].from);
		if (!t)
			continue;
		if (bad[i].to[0] == '"' && !strncmp(bad[i].to, "\"curve\": {", 10)) {   /* close the object */
			char *u = replaced(t, "\n  ],", "\n  ]},");
			free(t);
			t = u;
		}
		CHECK(file_write_atomic(ps, t, strlen(t), &e) == 0);
		CHECKF(ckpt_state_read(ps, 10, &r, &e) == -1 && e.code == EXIT_USAGE && strstr(e.msg, bad[i].want) &&
		       strstr(e.msg, ps), "case %zu: %s", i, e.msg);
		free(t);
	}
	/* a checkpoint of an older supkit train: no "files" */
	cJSON *j = json_parse(text, strlen(text), "state", &e);
	cJSON_DeleteItemFromObjectCaseSensitive(j, "files");
	CHECK(json_write_file(ps, j, &e) == 0);
	cJSON_Delete(j);
	CHECK(ckpt_state_read(ps, 10, &r, &e) == -1);
	CHECKF(strstr(e.msg, ps) && strstr(e.msg, "files: missing: the checkpoint records no SHA-256 of its files") &&
	       strstr(e.msg, "--force"), "%s", e.msg);
	/* the state as written is read back */
	CHECK(file_write_atomic(ps, text, strlen(text), &e) == 0);
	CHECKF(ckpt_state_read(ps, 10, &r, &e) == 0, "%s", e.msg);
	ckpt_state_release(&r);
	/* a run of steps = step has no checkpoint at that step */
	CHECK(ckpt_state_read(ps, 3, &r, &e) == -1 && strstr(e.msg, "step: 3 is out of range [0, 2]"));
	cJSON_Delete(w.curve);
	free(text);
	free(ps);
	free(ck);
}

/* The in-memory readers give what the path readers give: a checkpoint
 * (and a truncated one's message), a state.json (and ckpt_state_text is
 * what ckpt_state_write writes). */
TEST(in_memory_readers)
{
	struct model *m = make(base, NULL), *m2 = make(base, NULL);
	CHECK(m != NULL && m2 != NULL);
	if (!m || !m2)
		return;
	struct err e, e2;
	char *path = xasprintf("%s/mem.safetensors", dir), *data;
	size_t n;
	CHECKF(model_save(m, path, NULL, &e) == 0, "%s", e.msg);
	CHECK(file_read_all(path, 0, &data, &n, &e) == 0);
	CHECKF(checkpoint_load_mem(model_params(m2), data, n, path, &e) == 0, "%s", e.msg);
	struct param_table *a = model_params(m), *b = model_params(m2);
	int same = a->n == b->n;
	for (size_t i = 0; same && i < a->n; i++)
		for (size_t j = 0; same && j < a->p[i].numel; j++)
			same = param_w_at(&a->p[i], j) == param_w_at(&b->p[i], j);
	CHECK(same);
	CHECK(file_write_atomic(path, data, n - 4, &e) == 0);
	CHECK(checkpoint_load(a, path, &e) == -1 && checkpoint_load_mem(b, data, n - 4, path, &e2) == -1);
	CHECK_STREQ(e.msg, e2.msg);
	free(data);
	free(path);
	model_free(m);
	model_free(m2);

	char *ck = path_join(dir, "ckmem");
	struct ckpt_state w, r1, r2;
	char *text;
	make_state(ck, &w, &text);
	char *ps = path_join(ck, "state.json"), *again = ckpt_state_text(&w);
	CHECK_STREQ(again, text);
	CHECK(ckpt_state_read(ps, 10, &r1, &e) == 0 && ckpt_state_read_mem(text, strlen(text), ps, 10, &r2, &e) == 0);
	CHECK(r1.step == r2.step && !memcmp(r1.sha256, r2.sha256, sizeof r1.sha256) &&
	      cJSON_Compare(r1.curve, r2.curve, 1));
	ckpt_state_release(&r1);
	ckpt_state_release(&r2);
	CHECK(ckpt_state_read(ps, 3, &r1, &e) == -1 && ckpt_state_read_mem(text, strlen(text), ps, 3, &r2, &e2) == -1);
	CHECK_STREQ(e.msg, e2.msg);
	cJSON_Delete(w.curve);
	free(again);
	free(text);
	free(ps);
	free(ck);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(round_trip);
	RUN(fp64_exact_round_trip);
	RUN(refuses_mismatch);
	RUN(masked_entries_must_be_zero);
	RUN(compile_prefix);
	RUN(resume_state_round_trip_and_hashes);
	RUN(resume_state_world_size);
	RUN(resume_state_fields_checked);
	RUN(in_memory_readers);
	dir_remove_tree(dir);
	return t_done();
}

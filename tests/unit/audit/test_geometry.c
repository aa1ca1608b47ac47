/* test_geometry.c: audit/geometry.c against numpy's float64 SVD
 * (tests/fixtures/geometry/make.py): stable rank and mean-row energy of small
 * matrices (Gaussian, low rank + noise, identical rows, one nonzero row,
 * wide, bf16) and of 8192 x 512 and 2048 x 512 matrices regenerated here by
 * the script's splitmix64 formula, to 1e-10 relative, by both methods; the
 * Table 4 / 5a / 8b summaries and per-arm means of three small checkpoints;
 * missing and malformed tensors refused with the table named. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cblas.h>

#include "audit/geometry.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/rng.h"
#include "lib/safetensors.h"
#include "t.h"
#include "tfix.h"

#define REL 1e-10

static char *fix(const char *name)
{
	return t_fix_path("geometry", name);
}

static cJSON *expected(void)
{
	return t_fix_json("geometry", "expected.json");
}

static int rel_ok(double got, double want)
{
	return fabs(got - want) <= REL * fabs(want) || (got == want);
}

#define CHECK_REL(got, want, what)                                                        \
	CHECKF(rel_ok((got), (want)), "%s: %.17g, numpy %.17g (rel %.3g)", (what), (double)(got), \
	       (double)(want), fabs((got) - (want)) / fabs(want))

static void check_stats(const struct geom_stats *s, const cJSON *want, const char *name)
{
	char what[160];
	snprintf(what, sizeof what, "%s stable_rank", name);
	CHECK_REL(s->stable_rank, cJSON_GetObjectItem(want, "stable_rank")->valuedouble, what);
	snprintf(what, sizeof what, "%s mean_row_energy", name);
	CHECK_REL(s->mean_row_energy, cJSON_GetObjectItem(want, "mean_row_energy")->valuedouble, what);
	snprintf(what, sizeof what, "%s fro_sq", name);
	CHECK_REL(s->fro2, cJSON_GetObjectItem(want, "fro_sq")->valuedouble, what);
	snprintf(what, sizeof what, "%s sigma1_sq", name);
	CHECK_REL(s->spec2, cJSON_GetObjectItem(want, "sigma1_sq")->valuedouble, what);
}

TEST(small_matrices_match_numpy)
{
	cJSON *x = expected();
	if (!x) {
		CHECK(0);
		return;
	}
	struct err e;
	struct st_file f;
	char *p = fix("matrices.safetensors");
	CHECKF(st_open(&f, p, &e) == 0, "%s", e.msg);
	const cJSON *mats = cJSON_GetObjectItem(x, "matrices");
	int n = 0;
	for (const cJSON *w = mats->child; w; w = w->next, n++) {
		const struct st_tensor *t = st_find(&f, w->string);
		CHECKF(t != NULL, "%s missing", w->string);
		if (!t)
			continue;
		for (int meth = GEOM_GRAM; meth <= GEOM_SVD; meth++) {
			struct geom_stats g;
			CHECKF(geom_tensor_stats(t, (enum geom_method)meth, &g, &e) == 0, "%s", e.msg);
			check_stats(&g, w, w->string);
		}
	}
	CHECK(n == 6);
	/* Exact cases: identical rows have stable rank 1 and energy 1; a single
	 * nonzero row of 30 has stable rank 1 and energy 1/30. */
	struct geom_stats g;
	geom_tensor_stats(st_find(&f, "identical_rows_50x20"), GEOM_GRAM, &g, &e);
	CHECK(fabs(g.stable_rank - 1) < 1e-13 && fabs(g.mean_row_energy - 1) < 1e-13);
	geom_tensor_stats(st_find(&f, "single_row_30x16"), GEOM_GRAM, &g, &e);
	CHECK(fabs(g.stable_rank - 1) < 1e-13 && fabs(g.mean_row_energy - 1.0 / 30) < 1e-15);
	st_close(&f);
	free(p);
	cJSON_Delete(x);
}

/* The script's generator: splitmix64, then a uniform in [-1, 1) (exact). */
static uint64_t splitmix64(uint64_t x)
{
	uint64_t z = x + 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static double uni(uint64_t stream, uint64_t k)
{
	uint64_t h = splitmix64((stream << 40) | k);
	return (double)(h >> 11) * 0x1p-53 * 2.0 - 1.0;
}

static double *big_lowrank(int64_t m, int64_t n)
{
	double *w = xmalloc((size_t)(m * n) * sizeof *w);
	for (int64_t i = 0; i < m; i++) {
		double a = uni(1, (uint64_t)i);
		for (int64_t j = 0; j < n; j++) {
			double p = a * uni(2, (uint64_t)j);   /* separate roundings, as numpy */
			double q = 0.05 * uni(3, (uint64_t)(i * n + j));
			w[i * n + j] = p + q;
		}
	}
	return w;
}

static double *big_meanrow(int64_t m, int64_t n)
{
	double *w = xmalloc((size_t)(m * n) * sizeof *w);
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			double q = 0.3 * uni(5, (uint64_t)j);
			w[i * n + j] = uni(4, (uint64_t)(i * n + j)) + q;
		}
	return w;
}

TEST(big_matrices_match_numpy)
{
	cJSON *x = expected();
	if (!x) {
		CHECK(0);
		return;
	}
	const cJSON *big = cJSON_GetObjectItem(x, "big");
	const cJSON *probe = cJSON_GetObjectItem(big, "probe");
	struct err e;
	double *a = big_lowrank(8192, 512);
	double *b = big_meanrow(2048, 512);
	/* Same generator as the script, bit for bit. */
	CHECK(a[8191 * 512 + 511] == cJSON_GetArrayItem(probe, 0)->valuedouble);
	CHECK(b[0] == cJSON_GetArrayItem(probe, 1)->valuedouble);
	struct geom_stats s;
	CHECK(geom_matrix_stats(a, 8192, 512, GEOM_GRAM, &s, &e) == 0);
	check_stats(&s, cJSON_GetObjectItem(big, "lowrank_8192x512"), "8192x512 gram");
	/* The blocked path (a tensor of 4M elements converted block by block). */
	struct st_tensor t = {.name = "a", .dtype = ST_F64, .ndim = 2, .shape = {8192, 512}, .data = a};
	CHECK(geom_tensor_stats(&t, GEOM_GRAM, &s, &e) == 0);
	check_stats(&s, cJSON_GetObjectItem(big, "lowrank_8192x512"), "8192x512 gram blocked");
	CHECK(geom_matrix_stats(b, 2048, 512, GEOM_GRAM, &s, &e) == 0);
	check_stats(&s, cJSON_GetObjectItem(big, "meanrow_2048x512"), "2048x512 gram");
	CHECK(geom_matrix_stats(b, 2048, 512, GEOM_SVD, &s, &e) == 0);
	check_stats(&s, cJSON_GetObjectItem(big, "meanrow_2048x512"), "2048x512 svd");
	CHECK(geom_matrix_stats(b, 2048, 512, GEOM_GRAM_EVR, &s, &e) == 0);
	check_stats(&s, cJSON_GetObjectItem(big, "meanrow_2048x512"), "2048x512 gram-evr");
	/* Wide: the transpose has the same stable rank. */
	double *bt = xmalloc(2048 * 512 * sizeof *bt);
	for (int i = 0; i < 2048; i++)
		for (int j = 0; j < 512; j++)
			bt[j * 2048 + i] = b[i * 512 + j];
	struct geom_stats w;
	CHECK(geom_matrix_stats(bt, 512, 2048, GEOM_GRAM, &w, &e) == 0);
	CHECK_REL(w.stable_rank, cJSON_GetObjectItem(cJSON_GetObjectItem(big, "meanrow_2048x512"),
						       "stable_rank")->valuedouble, "512x2048 gram");
	free(bt);
	free(a);
	free(b);
	cJSON_Delete(x);
}

/* A square Gaussian matrix has a clustered top spectrum, the hard case for
 * Lanczos: the certified value agrees with dsyevr and dgesdd. */
TEST(lanczos_agrees_on_clustered_spectra)
{
	struct rng r;
	rng_seed(&r, 11);
	int64_t sizes[3][2] = {{512, 512}, {300, 100}, {64, 200}};
	for (int c = 0; c < 3; c++) {
		int64_t m = sizes[c][0], n = sizes[c][1];
		double *w = xmalloc((size_t)(m * n) * sizeof *w);
		for (int64_t i = 0; i < m * n; i++)
			w[i] = rng_normal(&r);
		struct geom_stats a, b, s;
		struct err e;
		CHECK(geom_matrix_stats(w, m, n, GEOM_GRAM, &a, &e) == 0);
		CHECK(geom_matrix_stats(w, m, n, GEOM_GRAM_EVR, &b, &e) == 0);
		CHECK(geom_matrix_stats(w, m, n, GEOM_SVD, &s, &e) == 0);
		CHECKF(fabs(a.spec2 - s.spec2) <= 1e-12 * s.spec2, "%lldx%lld lanczos %.17g svd %.17g",
		       (long long)m, (long long)n, a.spec2, s.spec2);
		CHECKF(fabs(b.spec2 - s.spec2) <= 1e-12 * s.spec2, "%lldx%lld evr %.17g svd %.17g",
		       (long long)m, (long long)n, b.spec2, s.spec2);
		free(w);
	}
}

TEST(degenerate_matrices)
{
	struct err e;
	struct geom_stats s;
	double z[12] = {0};
	CHECK(geom_matrix_stats(z, 3, 4, GEOM_GRAM, &s, &e) == 0);
	CHECK(isnan(s.stable_rank) && isnan(s.mean_row_energy) && s.fro2 == 0);
	double one[1] = {-2.5};
	CHECK(geom_matrix_stats(one, 1, 1, GEOM_GRAM, &s, &e) == 0);
	CHECK(s.stable_rank == 1 && s.mean_row_energy == 1 && s.spec2 == 6.25);
	/* diag(3, 4): sigma_1^2 = 16, ||W||_F^2 = 25 -> 25/16; mean row (1.5, 2) -> 2 * 6.25 / 25 */
	double d[4] = {3, 0, 0, 4};
	CHECK(geom_matrix_stats(d, 2, 2, GEOM_GRAM, &s, &e) == 0);
	CHECK(fabs(s.stable_rank - 25.0 / 16) < 1e-15 && fabs(s.mean_row_energy - 0.5) < 1e-15);
	/* Empty matrices (5 x 0, 0 x 5): no BLAS call with a leading dimension of
	 * 0 (OpenBLAS's dsyrk refuses it with a line on stdout), nothing defined. */
	char errf[] = "/tmp/supkit-geom-err-XXXXXX";
	int fd = mkstemp(errf);
	CHECK(fd >= 0);
	fflush(stdout);
	fflush(stderr);
	int saved = dup(2), saved1 = dup(1);
	dup2(fd, 2);
	dup2(fd, 1);
	int64_t shapes[2][2] = {{5, 0}, {0, 5}};
	for (int c = 0; c < 2; c++)
		for (int meth = GEOM_GRAM; meth <= GEOM_SVD; meth++) {
			CHECK(geom_matrix_stats(d, shapes[c][0], shapes[c][1], (enum geom_method)meth, &s, &e) == 0);
			CHECK(s.fro2 == 0 && isnan(s.stable_rank));
		}
	fflush(stdout);
	fflush(stderr);
	dup2(saved, 2);
	dup2(saved1, 1);
	close(saved);
	close(saved1);
	off_t said = lseek(fd, 0, SEEK_END);
	CHECKF(said == 0, "%lld bytes printed by empty matrices", (long long)said);
	close(fd);
	unlink(errf);
}

TEST(names_classified)
{
	enum geom_group g;
	int l;
	const char *k;
	CHECK(geom_classify("transformer.wte.weight", &g, &l, &k) == 0 && g == GG_WTE);
	CHECK(geom_classify("_orig_mod.lm_head.weight", &g, &l, &k) == 0 && g == GG_LM_HEAD);
	CHECK(geom_classify("transformer.h.13.attn.c_q.weight", &g, &l, &k) == 0 && g == GG_ATTN &&
	      l == 13 && !strcmp(k, "attn.c_q"));
	CHECK(geom_classify("transformer.h.3.mlp.c_proj.weight", &g, &l, &k) == 0 && g == GG_MLP && l == 3);
	CHECK(geom_classify("transformer.h.3.attn.ve_gate.weight", &g, &l, &k) == 0 && g == GG_VE_GATE);
	CHECK(geom_classify("value_embeds.7.weight", &g, &l, &k) == 0 && g == GG_VALUE_EMBED && l == 7);
	CHECK(geom_classify("oe.2.weight", &g, &l, &k) == 0 && g == GG_OE && l == 2);
	CHECK(geom_classify("module.oe_tables.3.weight", &g, &l, &k) == 0 && g == GG_OE && l == 3);
	CHECK(geom_classify("x0_lambdas", &g, &l, &k) == -1);
	CHECK(geom_classify("transformer.h.x.attn.c_q.weight", &g, &l, &k) == -1);
	CHECK(geom_classify("transformer.h.-1.attn.c_q.weight", &g, &l, &k) == -1);
	CHECK(geom_classify("transformer.h.1.attn.c_q.bias", &g, &l, &k) == -1);
}

/* Every number in want matches got (keys of want only), to REL. */
static void check_tree(const cJSON *got, const cJSON *want, const char *where)
{
	char w[256];
	if (cJSON_IsNull(want)) {
		CHECKF(cJSON_IsNull(got), "%s: expected null", where);
		return;
	}
	if (cJSON_IsNumber(want)) {
		CHECKF(cJSON_IsNumber(got), "%s: not a number", where);
		if (cJSON_IsNumber(got))
			CHECK_REL(got->valuedouble, want->valuedouble, where);
		return;
	}
	if (cJSON_IsString(want)) {
		CHECKF(cJSON_IsString(got) && !strcmp(got->valuestring, want->valuestring), "%s: string",
		       where);
		return;
	}
	if (cJSON_IsArray(want)) {
		CHECKF(cJSON_IsArray(got) && cJSON_GetArraySize(got) == cJSON_GetArraySize(want),
		       "%s: array size", where);
		int i = 0;
		for (const cJSON *x = want->child; x; x = x->next, i++) {
			snprintf(w, sizeof w, "%s[%d]", where, i);
			const cJSON *y = cJSON_GetArrayItem(got, i);
			if (y)
				check_tree(y, x, w);
		}
		return;
	}
	for (const cJSON *x = want->child; x; x = x->next) {
		snprintf(w, sizeof w, "%s.%s", where, x->string);
		const cJSON *y = cJSON_GetObjectItemCaseSensitive(got, x->string);
		CHECKF(y != NULL, "%s missing", w);
		if (y)
			check_tree(y, x, w);
	}
}

TEST(checkpoints_match_numpy)
{
	cJSON *x = expected();
	if (!x) {
		CHECK(0);
		return;
	}
	const cJSON *cks = cJSON_GetObjectItem(x, "checkpoints");
	char *paths[3];
	int n = 0;
	for (const cJSON *c = cks->child; c && n < 3; c = c->next)
		paths[n++] = fix(c->string);
	CHECK(n == 3);
	struct geom_opts o = {.method = GEOM_GRAM, .quiet = 1};
	struct err e;
	cJSON *rep = geom_audit(paths, n, &o, &e);
	CHECKF(rep != NULL, "%s", e.msg);
	if (rep) {
		const cJSON *got = cJSON_GetObjectItem(rep, "checkpoints");
		int i = 0;
		for (const cJSON *c = cks->child; c; c = c->next, i++) {
			const cJSON *g = cJSON_GetArrayItem(got, i);
			CHECK_STREQ(cJSON_GetObjectItem(g, "path")->valuestring, paths[i]);
			check_tree(g, c, c->string);
		}
		/* expected.json's keys are sorted: dense (file name), a (result.json), b (config) */
		CHECK_STREQ(cJSON_GetObjectItem(cJSON_GetArrayItem(got, 0), "arm_source")->valuestring,
			    "file name");
		CHECK_STREQ(cJSON_GetObjectItem(cJSON_GetArrayItem(got, 1), "arm_source")->valuestring,
			    "result.json");
		CHECK_STREQ(cJSON_GetObjectItem(cJSON_GetArrayItem(got, 2), "arm_source")->valuestring,
			    "config");
		const cJSON *arms = cJSON_GetObjectItem(rep, "arms");
		CHECK(cJSON_GetArraySize(arms) == 2);
		check_tree(arms, cJSON_GetObjectItem(x, "arms"), "arms");
		/* Deterministic bytes. */
		char *s1 = json_print(rep, 1);
		cJSON *rep2 = geom_audit(paths, n, &o, &e);
		char *s2 = json_print(rep2, 1);
		CHECK_STREQ(s1, s2);
		/* The SVD method gives the same report to 1e-10. */
		o.method = GEOM_SVD;
		cJSON *rep3 = geom_audit(paths, n, &o, &e);
		check_tree(cJSON_GetObjectItem(rep3, "arms"), cJSON_GetObjectItem(x, "arms"), "svd arms");
		/* The human tables mention each arm and the Table 5a bands. */
		char *buf = NULL;
		size_t blen = 0;
		FILE *fp = open_memstream(&buf, &blen);
		geom_print(fp, rep);
		fclose(fp);
		CHECK(strstr(buf, "12_oe_joint (n=2)") && strstr(buf, "00_dense_native (n=1)"));
		CHECK(strstr(buf, "[0, 3], [4, 11], [12, 15]") != NULL);
		free(buf);
		free(s1);
		free(s2);
		cJSON_Delete(rep2);
		cJSON_Delete(rep3);
		cJSON_Delete(rep);
	}
	for (int i = 0; i < n; i++)
		free(paths[i]);
	cJSON_Delete(x);
}

/* 1 if a comma-separated token of skip occurs in name. */
static int skipped(const char *skip, const char *name)
{
	char tok[96];
	while (*skip) {
		size_t n = strcspn(skip, ",");
		snprintf(tok, sizeof tok, "%.*s", (int)n, skip);
		if (n && strstr(name, tok))
			return 1;
		skip += n + (skip[n] == ',');
	}
	return 0;
}

/* A small random model through the writer, minus the tensors named in skip
 * (a comma-separated list), with the first tensor named in `bad` made
 * malformed (I32 or 3-D). Returns the path (caller frees). */
static char *write_model(const char *dir, const char *skip, const char *bad_dtype, const char *bad_rank,
			 const char *qtau_shape)
{
	static float buf[1 << 16];
	struct rng r;
	rng_seed(&r, 5);
	for (size_t i = 0; i < sizeof buf / sizeof buf[0]; i++)
		buf[i] = (float)rng_normal(&r);
	struct st_writer w;
	st_writer_init(&w);
	char name[96];
	int64_t sq[2] = {16, 16}, fc[2] = {64, 16}, pr[2] = {16, 64}, emb[2] = {24, 16}, vec[1] = {2};
	int64_t three[3] = {4, 4, 16};
#define ADD(nm, nd, sh)                                                                    \
	do {                                                                               \
		if (!skipped(skip, nm)) {                                                  \
			if (bad_dtype && !strcmp(bad_dtype, nm))                           \
				st_writer_add(&w, nm, ST_I32, nd, sh, buf);                \
			else if (bad_rank && !strcmp(bad_rank, nm))                        \
				st_writer_add(&w, nm, ST_F32, 3, three, buf);              \
			else                                                               \
				st_writer_add(&w, nm, ST_F32, nd, sh, buf);                \
		}                                                                          \
	} while (0)
	ADD("transformer.wte.weight", 2, emb);
	ADD("lm_head.weight", 2, emb);
	ADD("value_embeds.1.weight", 2, emb);
	for (int l = 0; l < 2; l++) {
		static const char *const k[4] = {"c_q", "c_k", "c_v", "c_proj"};
		for (int i = 0; i < 4; i++) {
			snprintf(name, sizeof name, "transformer.h.%d.attn.%s.weight", l, k[i]);
			ADD(name, 2, sq);
		}
		snprintf(name, sizeof name, "transformer.h.%d.mlp.c_fc.weight", l);
		ADD(name, 2, fc);
		snprintf(name, sizeof name, "transformer.h.%d.mlp.c_proj.weight", l);
		ADD(name, 2, pr);
	}
	ADD("resid_lambdas", 1, vec);
	ADD("x0_lambdas", 1, vec);
	ADD("oe.0.weight", 2, emb);
	ADD("oe.2.weight", 2, emb);
	if (qtau_shape) {
		int64_t qs[3];
		int nd = sscanf(qtau_shape, "%" SCNd64 ",%" SCNd64 ",%" SCNd64, &qs[0], &qs[1], &qs[2]);
		st_writer_add(&w, "q_tau", ST_F32, nd, qs, buf);
	}
#undef ADD
	char *p = path_join(dir, "m.safetensors");
	struct err e;
	if (st_write(&w, p, &e) < 0)
		printf("  %s\n", e.msg);
	st_writer_release(&w);
	return p;
}

static void expect_refused(const char *path, const char *phrase1, const char *phrase2, int allow)
{
	struct geom_opts o = {.method = GEOM_GRAM, .quiet = 1, .allow_missing = allow};
	struct err e;
	err_clear(&e);
	cJSON *j = geom_audit_file(path, &o, 0, 1, &e);
	CHECKF(j == NULL, "accepted (%s)", phrase1);
	cJSON_Delete(j);
	CHECKF(strstr(e.msg, path) && strstr(e.msg, phrase1) && (!phrase2 || strstr(e.msg, phrase2)),
	       "message: %s (want '%s', '%s')", e.msg, phrase1, phrase2 ? phrase2 : "");
	CHECK(e.code == EXIT_USAGE);
}

TEST(missing_and_malformed_tensors)
{
	char dir[] = "/tmp/supkit-geom-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	/* oe.1 missing between oe.0 and oe.2 */
	char *p = write_model(dir, "", NULL, NULL, NULL);
	expect_refused(p, "'oe.1.weight'", "oe tables", 0);
	free(p);
	p = write_model(dir, "oe.,transformer.h.1.attn.c_k.weight", NULL, NULL, NULL);
	expect_refused(p, "'transformer.h.1.attn.c_k.weight'", "square attention", 0);
	/* --allow-missing: the table averages what is there */
	struct geom_opts o = {.method = GEOM_GRAM, .quiet = 1, .allow_missing = 1};
	struct err e;
	cJSON *j = geom_audit_file(p, &o, 0, 1, &e);
	CHECKF(j != NULL, "%s", e.msg);
	if (j) {
		const cJSON *sq = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "table4"), "attn_square");
		CHECK((int)cJSON_GetObjectItem(sq, "n")->valuedouble == 7);
		CHECK(cJSON_IsNull(cJSON_GetObjectItem(j, "q_tau")));
		CHECK(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "table4"), "oe_tables")));
	}
	cJSON_Delete(j);
	free(p);
	p = write_model(dir, "oe.,transformer.wte.weight", NULL, NULL, NULL);
	expect_refused(p, "'transformer.wte.weight'", "Table 4 (wte)", 0);
	free(p);
	p = write_model(dir, "oe.,x0_lambdas", NULL, NULL, NULL);
	expect_refused(p, "'x0_lambdas'", "Table 8b", 0);
	free(p);
	p = write_model(dir, "oe.,value_embeds", NULL, NULL, NULL);
	expect_refused(p, "'value_embeds.1.weight'", "value_embeds", 0);
	free(p);
	p = write_model(dir, "oe.", "lm_head.weight", NULL, NULL);
	expect_refused(p, "tensor 'lm_head.weight'", "not a float type", 1);
	free(p);
	p = write_model(dir, "oe.", NULL, "transformer.h.0.mlp.c_fc.weight", NULL);
	expect_refused(p, "tensor 'transformer.h.0.mlp.c_fc.weight'", "2 dimensions", 1);
	free(p);
	/* q_tau: d = 16, H = 4 -> hd = 4: pair needs 2 planes; 3 fits neither */
	p = write_model(dir, "oe.", NULL, NULL, "2,4,3");
	expect_refused(p, "tensor 'q_tau'", "neither pair", 1);
	free(p);
	p = write_model(dir, "oe.", NULL, NULL, "3,4,2");
	expect_refused(p, "tensor 'q_tau'", "3 layers", 1);
	free(p);
	p = write_model(dir, "oe.", NULL, NULL, "2,4,2");
	j = geom_audit_file(p, &o, 0, 1, &e);
	CHECKF(j != NULL, "%s", e.msg);
	if (j) {
		const cJSON *q = cJSON_GetObjectItem(j, "q_tau");
		CHECK_STREQ(cJSON_GetObjectItem(q, "layout")->valuestring, "pair");
		CHECK(cJSON_IsNull(cJSON_GetObjectItem(q, "middle")));   /* L = 2: no middle layers */
	}
	cJSON_Delete(j);
	unlink(p);
	free(p);
	rmdir(dir);
}

/* A name with layer 1,000,000 and 20,000 other matrices: the presence
 * check walks the tensors there are, not the layers up to the largest index
 * (6 x 1,000,001 x 20,000 comparisons took hours). The audit runs in a
 * child that a 60 s alarm stops; it takes well under a second. */
TEST(allow_missing_bounded_by_tensors)
{
	char dir[] = "/tmp/supkit-geom-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	enum { NFILL = 20000 };
	static float one[4] = {1, 2, 3, 4};
	struct st_writer w;
	st_writer_init(&w);
	int64_t sq[2] = {2, 2}, unit[2] = {1, 1};
	static const char *const k[6] = {"attn.c_q", "attn.c_k", "attn.c_v", "attn.c_proj", "mlp.c_fc",
					 "mlp.c_proj"};
	char name[96];
	st_writer_add(&w, "transformer.wte.weight", ST_F32, 2, sq, one);
	st_writer_add(&w, "lm_head.weight", ST_F32, 2, sq, one);
	st_writer_add(&w, "value_embeds.0.weight", ST_F32, 2, sq, one);
	for (int i = 0; i < 6; i++) {
		snprintf(name, sizeof name, "transformer.h.0.%s.weight", k[i]);
		st_writer_add(&w, name, ST_F32, 2, sq, one);
	}
	st_writer_add(&w, "transformer.h.1000000.attn.c_q.weight", ST_F32, 2, sq, one);
	st_writer_add(&w, "oe.1000000.weight", ST_F32, 2, sq, one);
	for (int i = 0; i < NFILL; i++) {
		snprintf(name, sizeof name, "transformer.h.%d.attn.ve_gate.weight", 3 * i);
		st_writer_add(&w, name, ST_F32, 2, unit, one);
	}
	char *p = path_join(dir, "far.safetensors");
	struct err e;
	CHECKF(st_write(&w, p, &e) == 0, "%s", e.msg);
	st_writer_release(&w);
	/* Without --allow-missing: the first gap, found as fast. */
	struct geom_opts o = {.method = GEOM_GRAM, .quiet = 1};
	double t0 = now_seconds();
	cJSON *j = geom_audit_file(p, &o, 0, 1, &e);
	CHECK(j == NULL && strstr(e.msg, "no tensor 'transformer.h.1.attn.c_q.weight'"));
	CHECKF(now_seconds() - t0 < 30, "refusal took %.1f s", now_seconds() - t0);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(60);
		o.allow_missing = 1;
		cJSON *r = geom_audit_file(p, &o, 0, 1, &e);
		int ok = r && cJSON_GetObjectItem(r, "depth")->valuedouble == 1000001 &&
			 cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "table4"), "attn_square"),
					     "n")->valuedouble == 5 &&
			 cJSON_GetArraySize(cJSON_GetObjectItem(r, "matrices")) == 11 + NFILL;
		if (!ok)
			printf("  child: %s\n", r ? "unexpected report" : e.msg);
		cJSON_Delete(r);
		fflush(stdout);
		_exit(ok ? 0 : 1);
	}
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %s %d (60 s alarm: SIGALRM = %d)",
	       WIFEXITED(st) ? "exited" : "killed by signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
	       SIGALRM);
	unlink(p);
	free(p);
	rmdir(dir);
}

/* A q_tau of no layers ([0, H, hd/2], no block matrices, --allow-missing):
 * its final layer (L - 1 = -1) is none. q_mean read layer -1, before the
 * values (ASan: heap-buffer-overflow; the report held a garbage "final").
 * The fuzz finding tests/fuzz/regressions/geometry/crash-fe946e558205. */
TEST(q_tau_of_no_layers)
{
	char dir[] = "/tmp/supkit-geom-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	static float wte[16] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f,
				0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
	struct st_writer w;
	st_writer_init(&w);
	int64_t ws[2] = {2, 8}, qs[3] = {0, 2, 2};
	st_writer_add(&w, "transformer.wte.weight", ST_F32, 2, ws, wte);
	st_writer_add(&w, "q_tau", ST_F32, 3, qs, wte);
	char *p = path_join(dir, "q0.safetensors");
	struct err e;
	CHECKF(st_write(&w, p, &e) == 0, "%s", e.msg);
	st_writer_release(&w);
	struct geom_opts o = {.method = GEOM_GRAM, .allow_missing = 1, .quiet = 1};
	cJSON *r = geom_audit_file(p, &o, 0, 1, &e);
	CHECKF(r != NULL, "%s", e.msg);
	const cJSON *q = cJSON_GetObjectItem(r, "q_tau");
	CHECK(cJSON_IsObject(q));
	static const char *const keys[4] = {"mean", "layer0", "middle", "final"};
	for (int k = 0; q && k < 4; k++)
		CHECKF(cJSON_IsNull(cJSON_GetObjectItem(q, keys[k])), "q_tau.%s is not null", keys[k]);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(q, "by_layer")) == 0);
	cJSON_Delete(r);
	unlink(p);
	free(p);
	rmdir(dir);
}

/* ---- edges: tests/fixtures/geometry/edge (make.py edge()) ---- */

static cJSON *edge_expected(void)
{
	return t_fix_json("geometry", "edge/expected.json");
}

/* A zero Gram matrix makes dsyevr fill W with all q eigenvalues (dstebz
 * stores every one in its interval): W and ISUPPZ must hold q and 2q
 * entries. Zero, diagonal and constant matrices by every method, q = 64
 * (Lanczos' size) and q = 8 (dsyevr's for the default method). */
TEST(evr_zero_and_split_matrices)
{
	int64_t sizes[3][2] = {{64, 64}, {200, 64}, {8, 30}};
	for (int c = 0; c < 3; c++) {
		int64_t m = sizes[c][0], n = sizes[c][1], q = m < n ? m : n;
		double *w = xcalloc((size_t)(m * n), sizeof *w);
		for (int meth = GEOM_GRAM; meth <= GEOM_SVD; meth++) {
			struct geom_stats s;
			struct err e;
			CHECKF(geom_matrix_stats(w, m, n, (enum geom_method)meth, &s, &e) == 0, "%s", e.msg);
			CHECK(s.fro2 == 0 && s.spec2 == 0 && s.max_abs == 0);
			CHECK(isnan(s.stable_rank) && isnan(s.mean_row_energy));
		}
		/* diag(1 .. q) in the top rows: a tridiagonal form that splits into q blocks */
		for (int64_t i = 0; i < q; i++)
			w[i * n + i] = (double)(i + 1);
		for (int meth = GEOM_GRAM; meth <= GEOM_SVD; meth++) {
			struct geom_stats s;
			struct err e;
			CHECKF(geom_matrix_stats(w, m, n, (enum geom_method)meth, &s, &e) == 0, "%s", e.msg);
			double want = (double)(q * q), fro = (double)(q * (q + 1) * (2 * q + 1) / 6);
			CHECKF(fabs(s.spec2 - want) <= 1e-12 * want, "%lldx%lld method %d: %.17g", (long long)m,
			       (long long)n, meth, s.spec2);
			CHECK(fabs(s.stable_rank - fro / want) <= 1e-12 * fro / want);
		}
		free(w);
	}
}

/* A 21 x 21 matrix of 41 entries 3.7e19 and the rest 7e-9 down to
 * subnormals (the fuzz finding tests/fuzz/regressions/geometry/
 * crash-1924440bcc4d, its bytes cycled as doubles): with OpenBLAS on two
 * threads the Gram matrix's tridiagonal form sends dstebz's bisection for
 * the top eigenvalue alone (RANGE 'I') into a Sturm count that is not
 * monotonic (dsyevr INFO 2). The audit takes every eigenvalue then
 * (RANGE 'A', the cure LAPACK documents): every method succeeds and
 * agrees. */
TEST(evr_range_i_failure_recovered)
{
	static const unsigned char cyc[11] = {0x3e, 0x3e, 0x3e, 0x3e, 0x01, 0x00, 0x00, 0x44, 0x3e, 0x3e, 0x3e};
	enum { M = 21 };
	unsigned char *b = xmalloc(M * M * 8);
	for (size_t i = 0; i < M * M * 8; i++)
		b[i] = cyc[i % sizeof cyc];
	double *w = xmalloc(M * M * sizeof *w);
	memcpy(w, b, M * M * 8);
	int threads = openblas_get_num_threads();
	openblas_set_num_threads(2);
	struct geom_stats s[3];
	for (int meth = GEOM_GRAM; meth <= GEOM_SVD; meth++) {
		struct err e = {0};
		CHECKF(geom_matrix_stats(w, M, M, (enum geom_method)meth, &s[meth], &e) == 0, "method %d: %s", meth,
		       e.msg);
	}
	openblas_set_num_threads(threads);
	CHECK(s[0].stable_rank >= 1 && s[0].stable_rank <= M);
	for (int meth = 1; meth < 3; meth++)
		CHECKF(fabs(s[meth].stable_rank - s[0].stable_rank) <= 1e-9 * s[0].stable_rank, "method %d: %.17g vs %.17g",
		       meth, s[meth].stable_rank, s[0].stable_rank);
	free(w);
	free(b);
}

/* Entries near 1e-170 (squares underflow), 1e-310, 1e154 (the sum of
 * squares overflows), 1e200 and 1e250: the ratios match numpy's SVD of the
 * matrix as stored; the energies are scaled back where float64 holds them
 * (1e150, 1e-150) and are out of its normal range otherwise. */
TEST(scaled_matrices_match_numpy)
{
	cJSON *x = edge_expected();
	CHECK(x != NULL);
	if (!x)
		return;
	struct err e;
	struct st_file f;
	char *p = fix("edge/scaled.safetensors");
	CHECKF(st_open(&f, p, &e) == 0, "%s", e.msg);
	int n = 0;
	for (const cJSON *w = cJSON_GetObjectItem(x, "scaled")->child; w; w = w->next, n++) {
		const struct st_tensor *t = st_find(&f, w->string);
		CHECKF(t != NULL, "%s missing", w->string);
		if (!t)
			continue;
		for (int meth = GEOM_GRAM; meth <= GEOM_SVD; meth++) {
			struct geom_stats g;
			char what[160];
			CHECKF(geom_tensor_stats(t, (enum geom_method)meth, &g, &e) == 0, "%s", e.msg);
			snprintf(what, sizeof what, "%s (method %d) stable_rank", w->string, meth);
			CHECK_REL(g.stable_rank, cJSON_GetObjectItem(w, "stable_rank")->valuedouble, what);
			snprintf(what, sizeof what, "%s (method %d) mean_row_energy", w->string, meth);
			CHECK_REL(g.mean_row_energy, cJSON_GetObjectItem(w, "mean_row_energy")->valuedouble, what);
			CHECK(g.max_abs == cJSON_GetObjectItem(w, "max_abs")->valuedouble);
			const char *ab[2] = {"fro_sq", "sigma1_sq"};
			double got[2] = {g.fro2, g.spec2};
			for (int k = 0; k < 2; k++) {
				const cJSON *want = cJSON_GetObjectItem(w, ab[k]);
				snprintf(what, sizeof what, "%s (method %d) %s", w->string, meth, ab[k]);
				if (cJSON_IsNumber(want))
					CHECK_REL(got[k], want->valuedouble, what);
				else
					CHECKF(!isfinite(got[k]) || got[k] < DBL_MIN, "%s: %g, beyond float64 in numpy",
					       what, got[k]);
			}
		}
	}
	CHECK(n == 7);
	st_close(&f);
	free(p);
	/* The same matrix at 2^-600 and 2^600 scale: the same ratios to the bit
	 * (scaling by a power of two is exact). */
	double a[6] = {3, 1, -2, 5, 0.5, 7}, b[6], c[6];
	struct geom_stats s0, s1, s2;
	for (int i = 0; i < 6; i++) {
		b[i] = ldexp(a[i], -600);
		c[i] = ldexp(a[i], 600);
	}
	CHECK(geom_matrix_stats(a, 3, 2, GEOM_GRAM, &s0, &e) == 0);
	CHECK(geom_matrix_stats(b, 3, 2, GEOM_GRAM, &s1, &e) == 0);
	CHECK(geom_matrix_stats(c, 3, 2, GEOM_GRAM, &s2, &e) == 0);
	CHECK(s1.stable_rank == s0.stable_rank && s2.stable_rank == s0.stable_rank);
	CHECK(s1.mean_row_energy == s0.mean_row_energy && s2.mean_row_energy == s0.mean_row_energy);
	CHECK(s1.fro2 == ldexp(s0.fro2, -1200) && isinf(s2.fro2));
	cJSON_Delete(x);
}

/* Checkpoints whose groups have zero members (a step-0 checkpoint's c_proj;
 * a zero wte, OE table and value_embeds), and one scaled by 1e200 and
 * 1e-170: Table 4 averages the defined members, with n and n_undefined,
 * by every method (dsyevr on the zero 64 x 64 c_proj included); the
 * absolute energies beyond float64 are null in the JSON. */
TEST(edge_checkpoints_match_numpy)
{
	cJSON *x = edge_expected();
	CHECK(x != NULL);
	if (!x)
		return;
	for (const cJSON *c = cJSON_GetObjectItem(x, "checkpoints")->child; c; c = c->next) {
		char rel[96];
		snprintf(rel, sizeof rel, "edge/%s", c->string);
		char *p = fix(rel);
		for (int meth = GEOM_GRAM; meth <= GEOM_SVD; meth++) {
			struct geom_opts o = {.method = (enum geom_method)meth, .quiet = 1};
			struct err e;
			cJSON *j = geom_audit_file(p, &o, 0, 1, &e);
			CHECKF(j != NULL, "%s", e.msg);
			if (!j)
				continue;
			char where[128];
			snprintf(where, sizeof where, "%s (method %d)", c->string, meth);
			check_tree(cJSON_GetObjectItem(j, "table4"), cJSON_GetObjectItem(c, "table4"), where);
			check_tree(cJSON_GetObjectItem(j, "matrices"), cJSON_GetObjectItem(c, "matrices"), where);
			/* The table says how many were left out. */
			char *buf = NULL;
			size_t blen = 0;
			FILE *fp = open_memstream(&buf, &blen);
			cJSON *rep = cJSON_CreateObject();
			cJSON *cks = cJSON_AddArrayToObject(rep, "checkpoints");
			cJSON_AddItemToArray(cks, j);
			cJSON_AddObjectToObject(rep, "arms");
			geom_print(fp, rep);
			fclose(fp);
			if (!strcmp(c->string, "step0_d64.safetensors"))
				CHECKF(strstr(buf, " (3 of 4)") && strstr(buf, " (1 of 2)") && strstr(buf, "k of n:"),
				       "%s", buf);
			if (!strcmp(c->string, "zero_groups.safetensors"))
				CHECKF(strstr(buf, "n/a (n/a) 0 of 1") && strstr(buf, "%) 3 of 4") &&
				       strstr(buf, "n/a (0 of 1)"), "%s", buf);
			free(buf);
			cJSON_Delete(rep);
		}
		free(p);
	}
	cJSON_Delete(x);
}

/* NaN and infinities are bad input: refused before any analysis by every
 * method, naming the file, the tensor, how many and where the first is. */
TEST(nonfinite_refused)
{
	static const char *const cases[][3] = {
		{"edge/nan_cfc.safetensors", "tensor 'transformer.h.1.mlp.c_fc.weight'",
		 "3 non-finite values (NaN or infinity), the first at [2, 5]"},
		{"edge/inf_wte.safetensors", "tensor 'transformer.wte.weight'",
		 "1 non-finite value (NaN or infinity), the first at [4, 3]"},
		{"edge/nan_qtau.safetensors", "tensor 'q_tau'",
		 "1 non-finite value (NaN or infinity), the first at [1, 0, 2]"},
		{"edge/neginf_x0.safetensors", "tensor 'x0_lambdas'",
		 "1 non-finite value (NaN or infinity), the first at [1]"},
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		char *p = fix(cases[c][0]);
		for (int meth = GEOM_GRAM; meth <= GEOM_SVD; meth++) {
			struct geom_opts o = {.method = (enum geom_method)meth, .quiet = 1};
			struct err e;
			err_clear(&e);
			cJSON *j = geom_audit_file(p, &o, 0, 1, &e);
			CHECKF(j == NULL, "%s accepted (method %d)", cases[c][0], meth);
			cJSON_Delete(j);
			CHECKF(e.code == EXIT_USAGE && strstr(e.msg, p) && strstr(e.msg, cases[c][1]) &&
			       strstr(e.msg, cases[c][2]), "%s (method %d): code %d, %s", cases[c][0], meth,
			       e.code, e.msg);
		}
		free(p);
	}
	/* On doubles: each method refuses the same way. */
	double w[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
	const double bad[3] = {NAN, INFINITY, -INFINITY};
	for (int b = 0; b < 3; b++) {
		w[7] = bad[b];
		w[10] = bad[b];
		for (int meth = GEOM_GRAM; meth <= GEOM_SVD; meth++) {
			struct geom_stats s;
			struct err e;
			err_clear(&e);
			CHECK(geom_matrix_stats(w, 3, 4, (enum geom_method)meth, &s, &e) == -1);
			CHECKF(e.code == EXIT_USAGE && strstr(e.msg, "2 non-finite values (NaN or infinity), "
							      "the first at [1, 3]"), "%d: %s", e.code, e.msg);
		}
	}
}

/* Every singular value (geom_matrix_spectrum, geom_tensor_spectrum and the
 * report's "singular_values" with spectrum) against numpy's SVD
 * (tests/fixtures/geometry/spectra.json, make_spectra.py): each to 1e-12 of
 * the largest (an SVD's absolute accuracy), descending, their squares
 * summing to ||W||_F^2; the matrices near 1e-170 .. 1e250 scaled back. */
static void check_spectrum(const double *sv, int64_t q, const cJSON *want, const char *what)
{
	CHECKF(cJSON_GetArraySize(want) == q, "%s: %d values, numpy %d", what, (int)q,
	       cJSON_GetArraySize(want));
	if (cJSON_GetArraySize(want) != q)
		return;
	double s0 = cJSON_GetArrayItem(want, 0)->valuedouble;
	int i = 0;
	for (const cJSON *x = want->child; x; x = x->next, i++) {
		CHECKF(fabs(sv[i] - x->valuedouble) <= 1e-12 * s0 + 1e-323, "%s: s[%d] %.17g, numpy %.17g",
		       what, i, sv[i], x->valuedouble);
		if (i)
			CHECKF(sv[i] <= sv[i - 1], "%s: s[%d] above s[%d]", what, i, i - 1);
	}
}

TEST(spectrum_matches_numpy)
{
	cJSON *x = t_fix_json("geometry", "spectra.json");
	CHECK(x != NULL);
	if (!x)
		return;
	static const char *const files[2] = {"matrices.safetensors", "edge/scaled.safetensors"};
	static const char *const keys[2] = {"matrices", "scaled"};
	struct err e;
	int n = 0;
	for (int k = 0; k < 2; k++) {
		struct st_file f;
		char *p = fix(files[k]);
		CHECKF(st_open(&f, p, &e) == 0, "%s", e.msg);
		for (const cJSON *w = cJSON_GetObjectItem(x, keys[k])->child; w; w = w->next, n++) {
			const struct st_tensor *t = st_find(&f, w->string);
			CHECKF(t != NULL, "%s missing", w->string);
			if (!t)
				continue;
			int64_t q = t->shape[0] < t->shape[1] ? t->shape[0] : t->shape[1];
			double *sv = xcalloc((size_t)q, sizeof *sv);
			CHECKF(geom_tensor_spectrum(t, sv, &e) == 0, "%s", e.msg);
			check_spectrum(sv, q, w, w->string);
			if (k == 0) {   /* sum of squares = ||W||_F^2, s[0]^2 = sigma_1^2 */
				struct geom_stats g;
				double ss = 0;
				geom_tensor_stats(t, GEOM_SVD, &g, &e);
				for (int64_t i = 0; i < q; i++)
					ss += sv[i] * sv[i];
				CHECK_REL(ss, g.fro2, w->string);
				CHECK_REL(sv[0] * sv[0], g.spec2, w->string);
				/* the double-matrix entry point gives the same values */
				double *a = xmalloc((size_t)(t->shape[0] * t->shape[1]) * sizeof *a);
				double *sv2 = xcalloc((size_t)q, sizeof *sv2);
				st_to_f64(t, a, &e);
				CHECK(geom_matrix_spectrum(a, t->shape[0], t->shape[1], sv2, &e) == 0);
				CHECK(memcmp(sv, sv2, (size_t)q * sizeof *sv) == 0);
				free(a);
				free(sv2);
			}
			free(sv);
		}
		st_close(&f);
		free(p);
	}
	CHECK(n == 13);
	/* a NaN is refused as by the stats */
	double bad[4] = {1, NAN, 2, 3}, sv[2];
	CHECK(geom_matrix_spectrum(bad, 2, 2, sv, &e) < 0 && e.code == EXIT_USAGE);
	/* the report: "singular_values" with spectrum only */
	char *p = fix("runs/oe_joint_a/model.safetensors");
	struct geom_opts o = {.method = GEOM_GRAM, .quiet = 1, .spectrum = 1};
	cJSON *rep = geom_audit_file(p, &o, 0, 1, &e);
	CHECKF(rep != NULL, "%s", e.msg);
	int m = 0;
	for (const cJSON *w = cJSON_GetObjectItem(x, "checkpoint")->child; rep && w; w = w->next, m++) {
		const cJSON *mat = cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "matrices"), w->string);
		const cJSON *a = cJSON_GetObjectItem(mat, "singular_values");
		CHECKF(cJSON_IsArray(a), "%s: no singular_values", w->string);
		if (!cJSON_IsArray(a))
			continue;
		int q = cJSON_GetArraySize(a);
		double *v = xcalloc((size_t)(q ? q : 1), sizeof *v);
		int i = 0;
		for (const cJSON *y = a->child; y; y = y->next)
			v[i++] = y->valuedouble;
		check_spectrum(v, q, w, w->string);
		free(v);
	}
	CHECK(m == 34);
	cJSON_Delete(rep);
	o.spectrum = 0;
	rep = geom_audit_file(p, &o, 0, 1, &e);
	CHECK(rep && !cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "matrices"),
							       "lm_head.weight"), "singular_values"));
	cJSON_Delete(rep);
	free(p);
	cJSON_Delete(x);
}

int main(void)
{
	RUN(small_matrices_match_numpy);
	RUN(big_matrices_match_numpy);
	RUN(lanczos_agrees_on_clustered_spectra);
	RUN(degenerate_matrices);
	RUN(names_classified);
	RUN(checkpoints_match_numpy);
	RUN(missing_and_malformed_tensors);
	RUN(allow_missing_bounded_by_tensors);
	RUN(q_tau_of_no_layers);
	RUN(evr_zero_and_split_matrices);
	RUN(evr_range_i_failure_recovered);
	RUN(scaled_matrices_match_numpy);
	RUN(edge_checkpoints_match_numpy);
	RUN(nonfinite_refused);
	RUN(spectrum_matches_numpy);
	return t_done();
}

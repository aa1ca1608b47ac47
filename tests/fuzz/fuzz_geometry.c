/* fuzz_geometry.c: libFuzzer harness for the geometry audit
 * (audit/geometry.c) on matrices of any shape and values, and on parsed
 * checkpoints.
 *
 * Every input is first a matrix: byte 0 gives M (0..40), byte 1 N (0..40),
 * byte 2 the dtype (F64, F32, BF16, F16), the method (gram, gram-evr, svd)
 * and the OpenBLAS threads (1 or 2), the rest the values, little-endian, repeated to fill M x N (zeros when
 * there are none). geom_tensor_stats runs with that method and with the two
 * others (and geom_matrix_stats on the F64 values). Invariants: a NaN or
 * infinity is refused (EXIT_USAGE, one line, "non-finite"), anything else
 * accepted; max_abs is max |w_ij|; an all-zero matrix has neither stable
 * rank nor mean-row energy; otherwise the stable rank lies in
 * [1, min(M, N)] and below ||W||_F^2 / (the largest row or column norm^2),
 * the mean-row energy in [0, 1], both as the harness computes them in long
 * double to 1e-9, fro_sq to 1e-12 where it is in float64's range, and the
 * three methods agree on the stable rank to 1e-9 relative.
 * Then, when the input opens as a safetensors file (st_open_mem), the
 * checkpoint is audited (geom_audit_st, with and without allow_missing) as
 * DIR/model.safetensors in an empty folder. Invariants: a refusal carries a
 * one-line message naming the file; an accepted checkpoint has no NaN or
 * infinity in any tensor the audit reads; each matrix's figures are null or
 * in range (stable rank in [1, min(rows, cols)], energy in [0, 1],
 * fro_sq >= sigma1_sq); each Table 4 group counts n >= n_undefined and has
 * figures exactly when some member is not all zero; the report prints
 * (geom_print) and its JSON reads back.
 * Seeds: tests/fixtures/geometry/ (matrices, edge cases, a run), and
 * tests/fuzz/corpus/geometry/ (matrices; FUZZ_WRITE_SEED=DIR makes the
 * harness write them, tests/fuzz/README.md). Reference: audit/geometry.h. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>

#include "audit/geometry.h"
#include "lib/bf16.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/safetensors.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { FZ_MAX_DIM = 40 };
#define FZ_TOL 1e-9

static char fuzz_dir[64];
static char *fuzz_path;   /* fuzz_dir/model.safetensors (never written) */
static FILE *fuzz_null;

static void fuzz_cleanup(void)
{
	if (fuzz_dir[0])
		dir_remove_tree(fuzz_dir);
	free(fuzz_path);
	if (fuzz_null)
		fclose(fuzz_null);
}

static void fuzz_write_seeds(const char *dir);

static void fuzz_init(void)
{
	fuzz_temp_dir(fuzz_dir, sizeof fuzz_dir, "geom");
	fuzz_path = path_join(fuzz_dir, "model.safetensors");
	fuzz_null = fopen("/dev/null", "w");
	if (!fuzz_null)
		abort();
	atexit(fuzz_cleanup);
	const char *seed = getenv("FUZZ_WRITE_SEED");
	if (seed)
		fuzz_write_seeds(seed);
}

static void one_line(const struct err *e, const char *must)
{
	if (!e->msg[0] || strchr(e->msg, '\n') || (must && !strstr(e->msg, must)))
		abort();
}

/* ---- one matrix ---- */

static const enum st_dtype fz_dtypes[4] = {ST_F64, ST_F32, ST_BF16, ST_F16};

static int close_rel(double a, double b)
{
	return fabs(a - b) <= FZ_TOL * fmax(fabs(a), fabs(b));
}

static void fuzz_matrix(const uint8_t *data, size_t size)
{
	if (size < 3)
		return;
	int64_t m = data[0] % (FZ_MAX_DIM + 1), n = data[1] % (FZ_MAX_DIM + 1);
	enum st_dtype dt = fz_dtypes[(data[2] / 3) % 4];
	enum geom_method method = (enum geom_method)(data[2] % 3);
	/* OpenBLAS's results (dsyevr's reduction among them) depend on its
	 * thread count: 1 or 2 threads, by the input */
	openblas_set_num_threads(1 + (data[2] / 12) % 2);
	size_t es = st_dtype_size(dt), mn = (size_t)(m * n), vb = size - 3;
	uint8_t *buf = calloc(mn ? mn * es : 1, 1);
	if (!buf)
		abort();
	for (size_t i = 0; vb && i < mn * es; i++)
		buf[i] = data[3 + i % vb];
	struct st_tensor t = {.name = "w", .dtype = dt, .ndim = 2, .shape = {m, n}, .data = buf};
	double *w = malloc((mn ? mn : 1) * sizeof *w);
	struct err e = {0};
	if (!w || st_to_f64(&t, w, &e) != 0)
		abort();
	int finite = 1;
	double mx = 0;
	long double fro = 0, rowmax = 0, colmax = 0, cs2 = 0;
	for (size_t i = 0; i < mn; i++) {
		finite &= isfinite(w[i]) != 0;
		if (isfinite(w[i]))
			mx = fmax(mx, fabs(w[i]));
	}
	for (int64_t i = 0; finite && i < m; i++) {
		long double r = 0;
		for (int64_t j = 0; j < n; j++)
			r += (long double)w[i * n + j] * w[i * n + j];
		fro += r;
		rowmax = r > rowmax ? r : rowmax;
	}
	for (int64_t j = 0; finite && j < n; j++) {
		long double c = 0, s = 0;
		for (int64_t i = 0; i < m; i++) {
			c += (long double)w[i * n + j] * w[i * n + j];
			s += w[i * n + j];
		}
		colmax = c > colmax ? c : colmax;
		cs2 += s * s;
	}
	struct geom_stats s[3];
	for (int k = 0; k < 3; k++) {
		enum geom_method mk = (enum geom_method)((method + k) % 3);
		memset(&s[k], 0, sizeof s[k]);
		int rc = geom_tensor_stats(&t, mk, &s[k], &e);
		if (!finite) {
			if (rc == 0 || e.code != EXIT_USAGE)
				abort();
			one_line(&e, "non-finite");
			continue;
		}
		if (rc != 0)
			abort();
		const struct geom_stats *x = &s[k];
		if (x->max_abs != mx)
			abort();
		if (fro == 0) {
			if (!isnan(x->stable_rank) || !isnan(x->mean_row_energy))
				abort();
			continue;
		}
		int64_t q = m < n ? m : n;
		double bound = (double)(fro / (rowmax > colmax ? rowmax : colmax));
		if (!(x->stable_rank >= 1 - FZ_TOL && x->stable_rank <= (double)q * (1 + FZ_TOL) &&
		      x->stable_rank <= bound * (1 + FZ_TOL)))
			abort();
		double mre = (double)(cs2 / ((long double)m * fro));
		if (!(x->mean_row_energy >= 0 && x->mean_row_energy <= 1 + FZ_TOL) ||
		    fabs(x->mean_row_energy - mre) > FZ_TOL)
			abort();
		if (fro >= DBL_MIN && fro <= DBL_MAX && !close_rel(x->fro2, (double)fro))
			abort();
		if (k && !close_rel(x->stable_rank, s[0].stable_rank))
			abort();
	}
	if (dt == ST_F64) {
		struct geom_stats g;
		int rc = geom_matrix_stats(w, m, n, method, &g, &e);
		if (rc != (finite ? 0 : -1))
			abort();
		if (rc == 0 && (g.max_abs != s[0].max_abs || !(g.stable_rank == s[0].stable_rank ||
							      (isnan(g.stable_rank) && isnan(s[0].stable_rank)))))
			abort();
		if (rc != 0)
			one_line(&e, "non-finite");
	}
	free(w);
	free(buf);
}

/* ---- a checkpoint ---- */

static const char *strip(const char *name)
{
	for (;;) {
		if (!strncmp(name, "_orig_mod.", 10))
			name += 10;
		else if (!strncmp(name, "module.", 7))
			name += 7;
		else
			return name;
	}
}

/* 1 when some tensor the audit reads (a matrix of the model, a residual
 * scalar vector, q_tau) is float and holds a NaN or an infinity. */
static int reads_non_finite(const struct st_file *f)
{
	static const char *const scal[5] = {"x0_lambdas", "wte_lambdas", "resid_lambdas", "out_lambdas",
					    "q_tau"};
	for (size_t i = 0; i < f->n; i++) {
		const struct st_tensor *t = &f->t[i];
		enum geom_group g;
		int layer, read = 0;
		const char *kind;
		read = geom_classify(t->name, &g, &layer, &kind) == 0;
		for (int k = 0; k < 5 && !read; k++)
			read = !strcmp(strip(t->name), scal[k]);
		if (!read || !(t->dtype == ST_F64 || t->dtype == ST_F32 || t->dtype == ST_BF16 || t->dtype == ST_F16))
			continue;
		uint64_t ne = st_numel(t);
		double *v = malloc((ne ? ne : 1) * sizeof *v);
		struct err e;
		if (!v || st_to_f64(t, v, &e) != 0)
			abort();
		int bad = 0;
		for (uint64_t j = 0; j < ne && !bad; j++)
			bad = !isfinite(v[j]);
		free(v);
		if (bad)
			return 1;
	}
	return 0;
}

static double jnum(const cJSON *o, const char *k, int *null)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
	*null = cJSON_IsNull(x);
	if (!*null && !cJSON_IsNumber(x))
		abort();
	return *null ? NAN : x->valuedouble;
}

static void check_report(const cJSON *c)
{
	int nul, nul2;
	double widest = 0;
	for (const cJSON *x = cJSON_GetObjectItemCaseSensitive(c, "matrices")->child; x; x = x->next) {
		double rows = jnum(x, "rows", &nul), cols = jnum(x, "cols", &nul);
		double q = rows < cols ? rows : cols;
		widest = q > widest ? q : widest;
		double sr = jnum(x, "stable_rank", &nul), en = jnum(x, "mean_row_energy", &nul2);
		if (nul != nul2 || (!nul && !(sr >= 1 - FZ_TOL && sr <= q * (1 + FZ_TOL) && en >= 0 &&
					      en <= 1 + FZ_TOL)))
			abort();
		double f2 = jnum(x, "fro_sq", &nul), s2 = jnum(x, "sigma1_sq", &nul2);
		if (!nul && !nul2 && !(f2 >= s2 * (1 - FZ_TOL)))
			abort();
		double mx = jnum(x, "max_abs", &nul);
		if (nul || !(mx >= 0))
			abort();
	}
	for (const cJSON *g = cJSON_GetObjectItemCaseSensitive(c, "table4")->child; g; g = g->next) {
		if (cJSON_IsNull(g))
			continue;
		double n = jnum(g, "n", &nul), nu = jnum(g, "n_undefined", &nul2);
		if (nul || nul2 || !(n >= 1 && nu >= 0 && nu <= n))
			abort();
		double sr = jnum(g, "stable_rank", &nul), en = jnum(g, "mean_row_energy", &nul2);
		if (nul != (nu == n) || nul2 != nul)
			abort();
		if (!nul && !(sr >= 1 - FZ_TOL && sr <= widest * (1 + FZ_TOL) && en >= 0 && en <= 1 + FZ_TOL))
			abort();
	}
}

static void fuzz_checkpoint(const uint8_t *data, size_t size)
{
	struct st_file f;
	struct err e = {0};
	if (st_open_mem(&f, data, size, fuzz_path, &e) != 0)
		return;
	openblas_set_num_threads(1);
	int bad = reads_non_finite(&f);
	for (int am = 0; am < 2; am++) {
		struct geom_opts o = {.method = GEOM_GRAM, .allow_missing = am, .quiet = 1};
		cJSON *c = geom_audit_st(&f, fuzz_path, &o, 0, 1, &e);
		if (!c) {
			one_line(&e, fuzz_path);
			continue;
		}
		if (bad)
			abort();
		check_report(c);
		cJSON *rep = cJSON_CreateObject();
		cJSON_AddStringToObject(rep, "method", "gram");
		cJSON_AddItemToArray(cJSON_AddArrayToObject(rep, "checkpoints"), c);
		cJSON_AddObjectToObject(rep, "arms");
		geom_print(fuzz_null, rep);
		char *s = json_print(rep, 1);
		cJSON *back = json_parse(s, strlen(s), "report", &e);
		if (!back)
			abort();
		cJSON_Delete(back);
		free(s);
		cJSON_Delete(rep);
	}
	st_close(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t empty[1];
	if (!data)
		data = empty;   /* libFuzzer's empty input */
	if (!fuzz_dir[0])
		fuzz_init();
	fuzz_matrix(data, size);
	fuzz_checkpoint(data, size);
	return 0;
}

/* ---- seeds ---- */

static void seed(const char *dir, const char *name, int m, int n, int code, const double *v, int nv)
{
	size_t es = st_dtype_size(fz_dtypes[(code / 3) % 4]);
	uint8_t *b = calloc(3 + (size_t)nv * es, 1);
	if (!b)
		abort();
	b[0] = (uint8_t)m;
	b[1] = (uint8_t)n;
	b[2] = (uint8_t)code;
	for (int i = 0; i < nv; i++) {
		uint8_t *p = b + 3 + (size_t)i * es;
		if (es == 8) {
			memcpy(p, &v[i], 8);
		} else if (es == 4) {
			float x = (float)v[i];
			memcpy(p, &x, 4);
		} else {
			bf16 h = bf16_from_f32((float)v[i]);   /* BF16 (F16 seeds are not written) */
			memcpy(p, &h, 2);
		}
	}
	char *p = path_join(dir, name);
	struct err e;
	if (file_write_atomic(p, b, 3 + (size_t)nv * es, &e) != 0)
		abort();
	free(p);
	free(b);
}

static void fuzz_write_seeds(const char *dir)
{
	double v[400];
	for (int i = 0; i < 400; i++)
		v[i] = sin(1.0 + i * 0.7) * (i % 7 == 0 ? 3.0 : 1.0);
	seed(dir, "f64_3x2_gram", 3, 2, 0, v, 6);
	seed(dir, "f32_20x20_gram", 20, 20, 3, v, 400);
	seed(dir, "bf16_17x30_evr", 17, 30, 7, v, 400);
	seed(dir, "f64_5x8_svd", 5, 8, 2, v, 40);
	double tiny[4] = {1e-300, -3e-310, 2e-305, 0};
	seed(dir, "f64_2x2_tiny", 2, 2, 0, tiny, 4);
	double huge[4] = {1e300, -1e299, 3e307, 1.5e308};
	seed(dir, "f64_2x2_huge", 2, 2, 1, huge, 4);
	double nan[3] = {1, NAN, 2};
	seed(dir, "f64_3x1_nan", 3, 1, 0, nan, 3);
	seed(dir, "f64_4x4_zero", 4, 4, 0, NULL, 0);
	exit(0);
}

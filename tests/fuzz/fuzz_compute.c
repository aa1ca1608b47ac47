/* fuzz_compute.c: libFuzzer harness for the records supkit audit compute
 * reads: the published audit JSON of --check (audit/compute.c
 * compute_check, the input parsed by lib/json.c json_parse as
 * json_read_input does) and the run records of --runs (compute_runs_load:
 * a folder of run folders, each with a result.json).
 *
 * --check: the input is checked under the default conventions and under
 * the other ones (--neumann-count lemma2 --denominator paper
 * --tabneu-rows 1000). Invariants: a refusal carries a one-line message
 * naming the file; otherwise 0 <= disagreements <= figures compared, and
 * the report is exactly one line a disagreement, each printable.
 * --runs: the input, split at NUL bytes into at most 4 pieces, becomes
 * RUNS/rK/result.json, K = 0..; compute_runs_load(RUNS). Invariants: a
 * refusal carries a one-line message naming RUNS or a result.json under
 * it; otherwise the groups count every record once, each with an arm of
 * 1..63 printable bytes, a depth in 1..64, and means (and deltas against
 * 00_dense_native) that are finite, or NaN where no record gave one; the
 * means are >= 0 and within the records' range.
 * Seeds: the --check fixtures tests/fixtures/compute/{table1b,paper004,
 * prose001}.json, the run records tests/fixtures/compute/runs/RUN/result.json, and
 * tests/fuzz/corpus/compute/ (our own --json of one arm; four records in one
 * input, made as tests/fuzz/README.md says). Reference: audit/compute.h,
 * supkit-audit(1) COMPUTE. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/compute.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { FZ_MAX_RUNS = 4 };
static char fuzz_dir[64];
static char *fuzz_runs;

static void fuzz_cleanup(void)
{
	if (fuzz_dir[0])
		dir_remove_tree(fuzz_dir);
	free(fuzz_runs);
}

static void fuzz_init(void)
{
	fuzz_temp_dir(fuzz_dir, sizeof fuzz_dir, "compute");
	atexit(fuzz_cleanup);
	fuzz_runs = path_join(fuzz_dir, "runs");
}

static void one_line(const struct err *e, const char *name)
{
	if (!e->msg[0] || strchr(e->msg, '\n') || (name && !strstr(e->msg, name)))
		abort();
}

static void fuzz_check(const uint8_t *data, size_t size)
{
	static const char name[] = "published.json";
	struct err e = {0};
	cJSON *pub = json_parse((const char *)data, size, name, &e);
	if (!pub) {
		one_line(&e, name);
		return;
	}
	struct compute_opts o[2] = {
		{COMPUTE_NEUMANN_FULL, COMPUTE_DENOM_FORMULA, 0},
		{COMPUTE_NEUMANN_LEMMA2, COMPUTE_DENOM_PAPER, 1000},
	};
	for (int k = 0; k < 2; k++) {
		char *lines = NULL;
		int ncmp = -1;
		int nd = compute_check(pub, name, &o[k], &lines, &ncmp, NULL, &e);
		if (nd < 0) {
			one_line(&e, name);
			continue;
		}
		if (!lines || ncmp < nd)
			abort();
		int nl = 0;
		size_t len = strlen(lines);
		for (size_t i = 0; i < len; i++) {
			unsigned char c = (unsigned char)lines[i];
			if (c == '\n')
				nl++;
			else if (c < 0x20 || c == 0x7f)
				abort();
		}
		if (nl != nd || (len && lines[len - 1] != '\n'))
			abort();
		free(lines);
	}
	cJSON_Delete(pub);
}

/* The records' values of one key (NaN when absent or null), to bound the means. */
static void record_range(const char *text, size_t len, const char *key, double *lo, double *hi, int *n)
{
	struct err e;
	cJSON *j = json_parse(text, len, "r", &e);
	const cJSON *v = j ? cJSON_GetObjectItemCaseSensitive(j, key) : NULL;
	if (cJSON_IsNumber(v)) {
		*lo = *n ? fmin(*lo, v->valuedouble) : v->valuedouble;
		*hi = *n ? fmax(*hi, v->valuedouble) : v->valuedouble;
		++*n;
	}
	cJSON_Delete(j);
}

static void fuzz_runs_load(const uint8_t *data, size_t size)
{
	static const char *const keys[3] = {"peak_memory_mib", "training_seconds", "training_loop_seconds"};
	struct err e = {0};
	dir_remove_tree(fuzz_runs);
	if (mkdir(fuzz_runs, 0777) != 0)
		abort();
	const char *piece[FZ_MAX_RUNS];
	size_t plen[FZ_MAX_RUNS];
	int np = 0;
	for (size_t at = 0; np < FZ_MAX_RUNS;) {
		const uint8_t *nul = np + 1 < FZ_MAX_RUNS ? memchr(data + at, 0, size - at) : NULL;
		size_t end = nul ? (size_t)(nul - data) : size;
		piece[np] = (const char *)data + at;
		plen[np] = end - at;
		char sub[16];
		snprintf(sub, sizeof sub, "r%d", np);
		char *d = path_join(fuzz_runs, sub), *f = path_join(d, "result.json");
		if (mkdir(d, 0777) != 0)
			abort();
		fuzz_write_file(f, (const uint8_t *)piece[np], plen[np]);
		free(d);
		free(f);
		np++;
		if (!nul)
			break;
		at = end + 1;
	}
	struct compute_measured *m = NULL;
	int nm = 0;
	char *arg[1] = {fuzz_runs};
	if (compute_runs_load(arg, 1, &m, &nm, &e) != 0) {
		one_line(&e, fuzz_runs);
		return;
	}
	double lo[3], hi[3];
	int cnt[3] = {0, 0, 0};
	for (int i = 0; i < np; i++)
		for (int k = 0; k < 3; k++)
			record_range(piece[i], plen[i], keys[k], &lo[k], &hi[k], &cnt[k]);
	int runs = 0;
	for (int g = 0; g < nm; g++) {
		const struct compute_measured *x = &m[g];
		size_t al = strnlen(x->arm, sizeof x->arm);
		if (x->n < 1 || al == 0 || al >= sizeof x->arm || x->depth < 1 || x->depth > 64)
			abort();
		for (size_t i = 0; i < al; i++)
			if ((unsigned char)x->arm[i] < 0x20 || x->arm[i] == 0x7f)
				abort();
		runs += x->n;
		const double v[3] = {x->peak_memory_mib, x->training_seconds, x->training_loop_seconds};
		for (int k = 0; k < 3; k++) {
			if (isnan(v[k]))
				continue;
			if (!isfinite(v[k]) || v[k] < 0 || !cnt[k] || v[k] < lo[k] * (1 - 1e-12) ||
			    v[k] > hi[k] * (1 + 1e-12))
				abort();
		}
		const double d[3] = {x->d_peak_memory_mib, x->d_training_seconds, x->d_training_loop_seconds};
		for (int k = 0; x->has_dense && k < 3; k++)
			if (!isnan(d[k]) && !isfinite(d[k]))
				abort();
		cJSON *j = compute_measured_json(x);
		char *s = json_print(j, 0);
		cJSON *back = json_parse(s, strlen(s), "measured", &e);
		if (!back)
			abort();
		cJSON_Delete(back);
		free(s);
		cJSON_Delete(j);
	}
	if (runs != np)
		abort();
	free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t empty[1];
	if (!data)
		data = empty;   /* libFuzzer's empty input */
	if (!fuzz_dir[0])
		fuzz_init();
	fuzz_check(data, size);
	fuzz_runs_load(data, size);
	return 0;
}

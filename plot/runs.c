/* runs.c: run folders for the curves figure (contract in plots.h): the
 * curve (curve.jsonl, one JSON object a step), the record (result.json,
 * optional) and the resolved config (config.cfg, optional; "key = value"
 * lines as supkit train writes them, read here without the trainer's
 * config code: only arm, seed, depth, steps, warmup_steps,
 * warmdown_ratio, batch_rows, seq_len and grad_accum are used).
 *
 * The warm-down start is the trainer's schedule (trainer/schedule.c):
 * progress p = (t - W) / (S - W), warm-down while p >= 1 - warmdown_ratio,
 * so it starts at t = W + (1 - warmdown_ratio)(S - W). Without config.cfg
 * it is the first step whose lrm in the curve is below 1.
 */
#include "plot/plots.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/fileio.h"
#include "lib/json.h"

#define CURVE_MAX_BYTES (1u << 30)

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int has_curve(const char *dir)
{
	char *c = path_join(dir, "curve.jsonl");
	struct stat st;
	int ok = stat(c, &st) == 0 && S_ISREG(st.st_mode);
	free(c);
	return ok;
}

/* ---- config.cfg ---- */

struct cfg_vals {
	char *arm;
	double seed, depth, steps, warmup, warmdown_ratio, B, T, K;
};

/* Parse a number value; NaN when it is not one. */
static double num_or_nan(const char *v)
{
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (end == v || *end || errno == ERANGE || !isfinite(x))
		return NAN;
	return x;
}

/* 0, or -1 when the file exists but cannot be read. Missing: all NaN. */
static int cfg_read(const char *dir, struct cfg_vals *c, int *found, struct err *e)
{
	c->arm = NULL;
	c->seed = c->depth = c->steps = c->warmup = c->warmdown_ratio = c->B = c->T = c->K = NAN;
	*found = 0;
	char *path = path_join(dir, "config.cfg");
	struct stat st;
	if (stat(path, &st) != 0) {
		free(path);
		return 0;
	}
	char *buf;
	size_t len;
	if (file_read_all(path, 1u << 20, &buf, &len, e) < 0) {
		free(path);
		return -1;
	}
	*found = 1;
	static const char *const keys[] = {"seed", "depth", "steps", "warmup_steps", "warmdown_ratio",
					   "batch_rows", "seq_len", "grad_accum"};
	double *dst[] = {&c->seed, &c->depth, &c->steps, &c->warmup, &c->warmdown_ratio, &c->B, &c->T, &c->K};
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = 0;
		char *k = line, *v = eq + 1;
		while (*k == ' ' || *k == '\t')
			k++;
		for (char *t = k + strlen(k); t > k && (t[-1] == ' ' || t[-1] == '\t' || t[-1] == '\r');)
			*--t = 0;
		while (*v == ' ' || *v == '\t')
			v++;
		for (char *t = v + strlen(v); t > v && (t[-1] == ' ' || t[-1] == '\t' || t[-1] == '\r');)
			*--t = 0;
		if (!strcmp(k, "arm") && *v) {
			free(c->arm);
			c->arm = xstrdup(v);
			continue;
		}
		for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
			if (!strcmp(k, keys[i]))
				*dst[i] = num_or_nan(v);
	}
	free(buf);
	free(path);
	return 0;
}

/* ---- curve.jsonl ---- */

static void push(double **a, int *n, int *cap, double v)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 256;
		*a = xrealloc(*a, (size_t)*cap * sizeof **a);
	}
	(*a)[(*n)++] = v;
}

/* A finite number under key, or -1 naming the line. */
static int finite_field(const cJSON *o, const char *key, double *out, const char *path, long line,
			struct err *e)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!x)
		return err_set(e, EXIT_USAGE, "'%s': line %ld: no '%s'", path, line, key);
	if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
		return err_set(e, EXIT_USAGE, "'%s': line %ld: '%s' is not a finite number (%s)", path, line,
			       key, cJSON_IsNull(x) ? "null: NaN or infinity when written" : "not a number");
	*out = x->valuedouble;
	return 0;
}

/* One line [p, le) of path as a JSON value, or NULL with e naming the line
 * and column (and saying so when the text there is a NaN or an infinity,
 * which JSON cannot hold). */
static cJSON *line_parse(const char *p, const char *le, const char *path, long line, struct err *e)
{
	const char *end = NULL;
	size_t len = (size_t)(le - p);
	cJSON *o = cJSON_ParseWithLengthOpts(p, len, &end, 0);
	if (o) {
		while (end && end < le && (*end == ' ' || *end == '\t' || *end == '\r'))
			end++;
		if (!end || end == le)
			return o;
		cJSON_Delete(o);
	}
	size_t col = end && end >= p && end <= le ? (size_t)(end - p) + 1 : 1;
	const char *at = end && end >= p && end < le ? end : p;
	static const char *const nonfinite[] = {"NaN", "nan", "Infinity", "-Infinity", "inf", "-inf"};
	int nf = 0;
	for (size_t i = 0; i < sizeof nonfinite / sizeof nonfinite[0]; i++)
		nf |= (size_t)(le - at) >= strlen(nonfinite[i]) && !strncmp(at, nonfinite[i], strlen(nonfinite[i]));
	err_set(e, EXIT_USAGE, "'%s': line %ld, column %zu: %s", path, line, col,
		nf ? "a NaN or infinity, not a finite number" : "not valid JSON");
	return NULL;
}

static int curve_read(const char *dir, struct plot_run *r, struct err *e)
{
	char *path = path_join(dir, "curve.jsonl");
	char *buf;
	size_t len;
	if (file_read_all(path, CURVE_MAX_BYTES, &buf, &len, e) < 0) {
		free(path);
		return -1;
	}
	int cap = 0, cl = 0, cs = 0, vcap = 0, vcap2 = 0, vn = 0;
	int rc = 0;
	long line = 0;
	char *p = buf, *end = buf + len;
	while (p < end && rc == 0) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *le = nl ? nl : end;
		line++;
		char *q = p;
		while (q < le && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q < le) {
			cJSON *o = line_parse(p, le, path, line, e);
			if (!o) {
				rc = -1;
			} else if (!cJSON_IsObject(o)) {
				rc = err_set(e, EXIT_USAGE, "'%s': line %ld: not a JSON object", path, line);
			} else {
				double step, loss;
				if (finite_field(o, "step", &step, path, line, e) < 0 ||
				    finite_field(o, "loss", &loss, path, line, e) < 0) {
					rc = -1;
				} else if (step < 0 || step != floor(step) || step > 1e15) {
					rc = err_set(e, EXIT_USAGE, "'%s': line %ld: step %g is not an integer >= 0",
						     path, line, step);
				} else if (r->n > 0 && !(step > r->step[r->n - 1])) {
					rc = err_set(e, EXIT_USAGE, "'%s': line %ld: step %g does not follow step %g",
						     path, line, step, r->step[r->n - 1]);
				} else {
					int n0 = r->n, n1 = r->n, n2 = r->n;
					push(&r->step, &n0, &cap, step);
					push(&r->loss, &n1, &cl, loss);
					const cJSON *lrm = cJSON_GetObjectItemCaseSensitive(o, "lrm");
					push(&r->lrm, &n2, &cs, cJSON_IsNumber(lrm) ? lrm->valuedouble : NAN);
					r->n = n0;
					const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "val_bpb");
					double vb;
					if (v) {
						if (finite_field(o, "val_bpb", &vb, path, line, e) < 0) {
							rc = -1;
						} else {
							int m = vn;
							push(&r->val_x, &m, &vcap, step + 1);
							push(&r->val_bpb, &vn, &vcap2, vb);
						}
					}
				}
			}
			cJSON_Delete(o);
		}
		p = nl ? nl + 1 : end;
	}
	r->nval = vn;
	free(buf);
	if (rc == 0 && r->n == 0)
		rc = err_set(e, EXIT_USAGE, "'%s': no steps (an empty run)", path);
	free(path);
	return rc;
}

/* ---- a run ---- */

static char *folder_name(const char *dir)
{
	char *d = xstrdup(dir);
	size_t n = strlen(d);
	while (n > 1 && d[n - 1] == '/')
		d[--n] = 0;
	char *name = xstrdup(path_basename(d));
	free(d);
	return name;
}

static void run_release(struct plot_run *r);
static int run_read(const char *dir, struct plot_run *r, struct err *e);

int plot_run_read(const char *dir, struct plot_run *r, struct err *e)
{
	if (run_read(dir, r, e) == 0)
		return 0;
	run_release(r);
	memset(r, 0, sizeof *r);
	return -1;
}

static int run_read(const char *dir, struct plot_run *r, struct err *e)
{
	memset(r, 0, sizeof *r);
	r->dir = xstrdup(dir);
	r->seed = -1;
	r->depth = -1;
	r->tokens_per_step = NAN;
	r->warmdown = NAN;
	r->steps = NAN;
	if (curve_read(dir, r, e) < 0)
		return -1;
	struct cfg_vals c;
	int have_cfg;
	if (cfg_read(dir, &c, &have_cfg, e) < 0)
		return -1;
	char *rp = path_join(dir, "result.json");
	struct stat st;
	cJSON *res = NULL;
	if (stat(rp, &st) == 0) {
		res = json_read_file(rp, 64u << 20, e);
		if (!res || !cJSON_IsObject(res)) {
			if (res)
				err_set(e, EXIT_USAGE, "'%s': not a JSON object", rp);
			cJSON_Delete(res);
			free(rp);
			free(c.arm);
			return -1;
		}
	}
	const cJSON *x;
	x = cJSON_GetObjectItemCaseSensitive(res, "arm");
	if (cJSON_IsString(x) && *x->valuestring)
		r->arm = xstrdup(x->valuestring);
	else if (c.arm)
		r->arm = xstrdup(c.arm);
	else
		r->arm = folder_name(dir);
	x = cJSON_GetObjectItemCaseSensitive(res, "seed");
	if (cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble == floor(x->valuedouble))
		r->seed = (long long)x->valuedouble;
	else if (c.seed >= 0 && c.seed == floor(c.seed))
		r->seed = (long long)c.seed;
	x = cJSON_GetObjectItemCaseSensitive(res, "depth");
	if (cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble < 1e6)
		r->depth = (int)x->valuedouble;
	else if (c.depth >= 0 && c.depth < 1e6)
		r->depth = (int)c.depth;
	x = cJSON_GetObjectItemCaseSensitive(res, "steps");
	if (c.steps > 0)
		r->steps = c.steps;
	else if (cJSON_IsNumber(x) && x->valuedouble > 0)
		r->steps = x->valuedouble;
	else
		r->steps = r->step[r->n - 1] + 1;
	x = cJSON_GetObjectItemCaseSensitive(res, "tokens_per_step");
	if (cJSON_IsNumber(x) && x->valuedouble > 0)
		r->tokens_per_step = x->valuedouble;
	else if (c.B > 0 && c.T > 0 && c.K > 0)
		r->tokens_per_step = c.B * c.T * c.K;
	/* the final validation figure, after the last step */
	x = cJSON_GetObjectItemCaseSensitive(res, "val_bpb");
	if (x && !cJSON_IsNull(x)) {
		if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble)) {
			err_set(e, EXIT_USAGE, "'%s': 'val_bpb' is not a finite number", rp);
			cJSON_Delete(res);
			free(rp);
			free(c.arm);
			return -1;
		}
		double at = r->steps;
		if (!r->nval || r->val_x[r->nval - 1] < at) {
			r->val_x = xrealloc(r->val_x, (size_t)(r->nval + 1) * sizeof *r->val_x);
			r->val_bpb = xrealloc(r->val_bpb, (size_t)(r->nval + 1) * sizeof *r->val_bpb);
			r->val_x[r->nval] = at;
			r->val_bpb[r->nval++] = x->valuedouble;
		}
	}
	cJSON_Delete(res);
	free(rp);
	if (have_cfg && c.steps > 0 && c.warmup >= 0 && c.warmdown_ratio > 0 && c.steps > c.warmup) {
		r->warmdown = c.warmup + (1 - (c.warmdown_ratio > 1 ? 1 : c.warmdown_ratio)) * (c.steps - c.warmup);
	} else if (!have_cfg) {
		for (int i = 0; i < r->n; i++)
			if (r->lrm[i] < 1) {
				r->warmdown = r->step[i];
				break;
			}
	}
	free(c.arm);
	return 0;
}

static void run_release(struct plot_run *r)
{
	free(r->dir);
	free(r->arm);
	free(r->step);
	free(r->loss);
	free(r->lrm);
	free(r->val_x);
	free(r->val_bpb);
}

void plot_runs_free(struct plot_run *runs, int n)
{
	for (int i = 0; i < n; i++)
		run_release(&runs[i]);
	free(runs);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int plot_runs_read(char *const *paths, int n, struct plot_run **runs, int *nruns, struct err *e)
{
	struct plot_run *rs = NULL;
	int nr = 0;
	for (int i = 0; i < n; i++) {
		const char *p = paths[i];
		if (!is_dir(p)) {
			err_set(e, EXIT_USAGE, "'%s': not a folder (a run folder, or a folder of them)", p);
			goto fail;
		}
		char **dirs = NULL;
		int nd = 0;
		if (has_curve(p)) {
			dirs = xmalloc(sizeof *dirs);
			dirs[nd++] = xstrdup(p);
		} else {
			DIR *d = opendir(p);
			if (!d) {
				err_errno(e, EXIT_SYS, "cannot open '%s'", p);
				goto fail;
			}
			struct dirent *de;
			while ((de = readdir(d))) {
				if (de->d_name[0] == '.')
					continue;
				char *sub = path_join(p, de->d_name);
				if (is_dir(sub) && has_curve(sub)) {
					dirs = xrealloc(dirs, (size_t)(nd + 1) * sizeof *dirs);
					dirs[nd++] = sub;
				} else {
					free(sub);
				}
			}
			closedir(d);
			if (nd)
				qsort(dirs, (size_t)nd, sizeof *dirs, cmp_str);
			if (!nd) {
				free(dirs);
				err_set(e, EXIT_USAGE, "'%s': no curve.jsonl in it or in its subfolders "
					"(not a run folder)", p);
				goto fail;
			}
		}
		for (int k = 0; k < nd; k++) {
			rs = xrealloc(rs, (size_t)(nr + 1) * sizeof *rs);
			if (plot_run_read(dirs[k], &rs[nr], e) < 0) {
				for (int j = k; j < nd; j++)
					free(dirs[j]);
				free(dirs);
				goto fail;
			}
			nr++;
			free(dirs[k]);
		}
		free(dirs);
	}
	*runs = rs;
	*nruns = nr;
	return 0;
fail:
	plot_runs_free(rs, nr);
	*runs = NULL;
	*nruns = 0;
	return -1;
}

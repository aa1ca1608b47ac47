/* compute.c: `supkit audit compute`'s reports: the accounting of
 * trainer/accounting.c laid out as a report (JSON and the papers' Table 1b
 * layout), measured figures from run records, the check of a published
 * audit JSON or claims file, and the claims of the table.
 *
 * Leaves out every formula of the model and its arms (trainer/accounting.c
 * owns them); its own figure is the share's denominator (compute.h).
 *
 * Reference: supkit-audit(1), compute (formulas and reference figures);
 * papers 000/001 Table 1b (the layout and the 59.37 TFLOPs depth-6 step)
 * and paper 004 Table 5; docs/papers.md for the conventions.
 */
#include "audit/compute.h"
#include "trainer/accounting.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>

#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/claims.h"

static void fmt_int(int64_t v, char *buf, size_t n);

const char *compute_denom_name(enum compute_denom d)
{
	return d == COMPUTE_DENOM_PAPER ? "paper" : "formula";
}

/* The benchmark geometry at depth 6, whose step the papers print as 59.37 TFLOPs. */
static int is_paper_d6(const struct compute_report *r)
{
	return r->depth == 6 && r->d == 384 && r->head_dim == 128 && r->V == 8192 && r->T == 2048 &&
	       r->tokens_per_step == 524288;
}

int compute_config(const struct config *c, const struct compute_opts *o, struct compute_report *r,
		   struct err *e)
{
	struct accounting a;
	struct acct_opts ao = {o->neumann, o->tabneu_rows};
	memset(r, 0, sizeof *r);
	r->opts = *o;
	if (accounting_of(c, &ao, &a, e) != 0)
		return -1;
	snprintf(r->arm, sizeof r->arm, "%s", c->arm);
	config_sha256(c, r->config_sha256);
	r->depth = c->depth;
	r->d = config_model_dim(c);
	r->H = config_heads(c);
	r->head_dim = c->head_dim;
	r->V = c->vocab_size;
	r->T = c->seq_len;
	r->tokens_per_step = a.tokens_per_step;
	r->n_ve = a.n_ve;

	r->counts = a.counts;
	const struct param_counts *pc = &r->counts;
	r->p_wte = pc->wte;
	r->p_value_embeds = pc->value_embeds;
	r->p_lm_head = pc->lm_head;
	r->p_matrices = pc->block_matrices;
	r->p_scalars = pc->scalars;
	r->p_q_tau = pc->q_tau;
	r->p_routing = pc->routing_lambdas;
	r->p_sub_gains = pc->sub_gains;
	r->p_rope_tau = pc->rope_tau;
	r->p_backbone = pc->backbone;
	r->p_oe = pc->oe;
	r->p_total = pc->total;
	r->oe_tables = pc->oe_tables;
	r->oe_rows_total = pc->oe_rows_total;
	for (int j = 0; j < pc->oe_tables && j < COMPUTE_OE_TABLES_MAX && j < ACCOUNTING_OE_TABLES_MAX; j++)
		r->oe_rows[j] = pc->oe_rows[j];

	r->flops_token = a.flops_token;
	r->flops_step = a.flops_step;
	r->step_denominator = (o->denom == COMPUTE_DENOM_PAPER && is_paper_d6(r)) ? COMPUTE_PAPER_D6_STEP_FLOPS
										    : r->flops_step;
	r->polar_step = a.polar_step;
	for (int i = 0; i < AX_N; i++)
		r->extra[i] = a.extra[i];
	r->extra_total = a.extra_total;
	r->extra_pct = 100.0 * r->extra_total / r->step_denominator;
	for (int i = 0; i < AM_N; i++)
		r->mem[i] = a.mem[i];
	r->mem_total = a.mem_total;
	return 0;
}

#define MIB (1024.0 * 1024.0)

cJSON *compute_report_json(const struct compute_report *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "arm", r->arm);
	cJSON_AddNumberToObject(o, "depth", r->depth);
	cJSON_AddStringToObject(o, "config_sha256", r->config_sha256);

	cJSON *m = cJSON_AddObjectToObject(o, "model");
	cJSON_AddNumberToObject(m, "L", r->depth);
	cJSON_AddNumberToObject(m, "d", r->d);
	cJSON_AddNumberToObject(m, "H", r->H);
	cJSON_AddNumberToObject(m, "head_dim", r->head_dim);
	cJSON_AddNumberToObject(m, "V", (double)r->V);
	cJSON_AddNumberToObject(m, "T", (double)r->T);
	cJSON_AddNumberToObject(m, "n_ve", r->n_ve);
	cJSON_AddNumberToObject(m, "tokens_per_step", (double)r->tokens_per_step);

	cJSON_AddItemToObject(o, "params", param_counts_json(&r->counts));

	cJSON *f = cJSON_AddObjectToObject(o, "flops");
	cJSON_AddNumberToObject(f, "per_token", r->flops_token);
	cJSON_AddNumberToObject(f, "per_step", r->flops_step);
	cJSON_AddNumberToObject(f, "step_denominator", r->step_denominator);
	cJSON_AddNumberToObject(f, "polar_express_step", r->polar_step);
	cJSON *x = cJSON_AddObjectToObject(f, "extra_gflops_step");
	for (int i = 0; i < AX_N; i++)
		cJSON_AddNumberToObject(x, acct_extra_key(i), r->extra[i] / 1e9);
	cJSON_AddNumberToObject(f, "extra_gflops_step_total", r->extra_total / 1e9);
	cJSON_AddNumberToObject(f, "extra_pct", r->extra_pct);

	cJSON *mm = cJSON_AddObjectToObject(o, "memory_mib");
	for (int i = 0; i < AM_N; i++)
		cJSON_AddNumberToObject(mm, acct_mem_key(i), r->mem[i] / MIB);
	cJSON_AddNumberToObject(mm, "total", r->mem_total / MIB);

	cJSON *cv = cJSON_AddObjectToObject(o, "conventions");
	cJSON_AddStringToObject(cv, "neumann_count", acct_neumann_name(r->opts.neumann));
	cJSON_AddStringToObject(cv, "denominator", compute_denom_name(r->opts.denom));
	cJSON_AddNumberToObject(cv, "tabneu_rows", (double)r->opts.tabneu_rows);
	return o;
}

/* ---- the overrides that make a config ---- */

cJSON *compute_config_set(const struct config *c)
{
	struct config ref;
	struct err e;
	config_defaults(&ref);
	ref.depth = c->depth;
	int named = config_arm_find(c->arm) >= 0;
	if (named && config_arm_apply(&ref, c->arm, &e) != 0)
		named = 0;
	char *a = config_print(&ref), *b = config_print(c);
	cJSON *set = cJSON_CreateObject();
	/* both list every key once, in the same order */
	char *sa, *sb;
	char *la = strtok_r(a, "\n", &sa), *lb = strtok_r(b, "\n", &sb);
	for (; la && lb; la = strtok_r(NULL, "\n", &sa), lb = strtok_r(NULL, "\n", &sb)) {
		if (!strcmp(la, lb))
			continue;
		char *eq = strstr(lb, " =");
		if (!eq)
			continue;
		*eq = '\0';
		const char *v = eq[2] == ' ' ? eq + 3 : eq + 2;
		cJSON_AddStringToObject(set, lb, v);
	}
	free(a);
	free(b);
	if (!set->child) {
		cJSON_Delete(set);
		return NULL;
	}
	return set;
}

/* ---- run records ---- */

static int read_record(const char *path, char *arm, size_t armsz, int *depth, double v[3], struct err *e)
{
	struct stat st;
	char *file = NULL;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		file = path_join(path, "result.json");
	else
		file = xstrdup(path);
	cJSON *j = json_read_file(file, 64u << 20, e);
	if (!j) {
		free(file);
		return -1;
	}
	int rc = -1;
	const char *a;
	double dep;
	static const char *const keys[3] = {"peak_memory_mib", "training_seconds", "training_loop_seconds"};
	if (!cJSON_IsObject(j)) {
		err_set(e, EXIT_USAGE, "'%s': a run record is a JSON object", file);
		goto out;
	}
	if (json_get_string(j, "arm", &a, file, e) || json_get_number(j, "depth", &dep, file, e))
		goto out;
	if (dep != floor(dep) || dep < 1 || dep > 64) {
		err_set(e, EXIT_USAGE, "'%s': depth: %g is not a depth", file, dep);
		goto out;
	}
	if (!*a || strlen(a) >= armsz) {
		err_set(e, EXIT_USAGE, "'%s': arm: empty or longer than %zu bytes", file, armsz - 1);
		goto out;
	}
	for (const char *p = a; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			err_set(e, EXIT_USAGE, "'%s': arm: holds a control character", file);
			goto out;
		}
	for (int i = 0; i < 3; i++) {
		v[i] = NAN; /* optional: a CPU run may not measure peak memory */
		const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, keys[i]);
		if (!it || cJSON_IsNull(it))
			continue;
		if (json_get_number(j, keys[i], &v[i], file, e))
			goto out;
		if (!isfinite(v[i])) {   /* cJSON reads 1e400 as infinity */
			err_set(e, EXIT_USAGE, "'%s': %s: not a finite number", file, keys[i]);
			goto out;
		}
		if (v[i] < 0) {
			err_set(e, EXIT_USAGE, "'%s': %s: %g is negative", file, keys[i], v[i]);
			goto out;
		}
	}
	snprintf(arm, armsz, "%s", a);
	*depth = (int)dep;
	rc = 0;
out:
	cJSON_Delete(j);
	free(file);
	return rc;
}

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int file_exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

/* A run is DIR/result.json or a file; a folder without result.json stands for
 * its subfolders that have one (sorted by name). */
static int runs_expand(char *const *paths, int npaths, char ***out, int *nout, struct err *e)
{
	char **v = NULL;
	int n = 0, cap = 0;
	for (int i = 0; i < npaths; i++) {
		char *rj = path_join(paths[i], "result.json");
		int direct = !is_dir(paths[i]) || file_exists(rj);
		free(rj);
		if (direct) {
			if (n == cap)
				v = xrealloc(v, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *v);
			v[n++] = xstrdup(paths[i]);
			continue;
		}
		struct dirent **ents;
		int ne = scandir(paths[i], &ents, NULL, alphasort);
		if (ne < 0) {
			for (int j = 0; j < n; j++)
				free(v[j]);
			free(v);
			return err_errno(e, EXIT_SYS, "cannot read '%s'", paths[i]);
		}
		int found = 0;
		for (int k = 0; k < ne; k++) {
			if (ents[k]->d_name[0] != '.') {
				char *sub = path_join(paths[i], ents[k]->d_name);
				char *srj = path_join(sub, "result.json");
				if (is_dir(sub) && file_exists(srj)) {
					if (n == cap)
						v = xrealloc(v, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *v);
					v[n++] = sub;
					sub = NULL;
					found++;
				}
				free(sub);
				free(srj);
			}
			free(ents[k]);
		}
		free(ents);
		if (!found) {
			for (int j = 0; j < n; j++)
				free(v[j]);
			free(v);
			return err_set(e, EXIT_USAGE, "'%s': no result.json in it or in its subfolders", paths[i]);
		}
	}
	*out = v;
	*nout = n;
	return 0;
}

int compute_runs_load(char *const *argpaths, int nargs, struct compute_measured **out, int *nout, struct err *e)
{
	char **paths = NULL;
	int npaths = 0;
	if (runs_expand(argpaths, nargs, &paths, &npaths, e) != 0)
		return -1;
	struct compute_measured *m = xcalloc((size_t)npaths + 1, sizeof *m);
	int *cnt = xcalloc(3 * ((size_t)npaths + 1), sizeof *cnt);
	/* sums in long double: finite values up to DBL_MAX never overflow it */
	long double *sum = xcalloc(3 * ((size_t)npaths + 1), sizeof *sum);
	int n = 0;
	for (int i = 0; i < npaths; i++) {
		char arm[64];
		int depth;
		double v[3];
		if (read_record(paths[i], arm, sizeof arm, &depth, v, e) != 0) {
			for (int j = 0; j < npaths; j++)
				free(paths[j]);
			free(paths);
			free(m);
			free(cnt);
			free(sum);
			return -1;
		}
		int ai = config_arm_find(arm); /* short names group with their arm */
		if (ai >= 0)
			snprintf(arm, sizeof arm, "%s", config_arm_name(ai));
		int g = 0;
		while (g < n && !(m[g].depth == depth && !strcmp(m[g].arm, arm)))
			g++;
		if (g == n) {
			snprintf(m[n].arm, sizeof m[n].arm, "%s", arm);
			m[n].depth = depth;
			if (is_dir(paths[i])) {
				char *cp = path_join(paths[i], "config.cfg");
				if (file_exists(cp) && strlen(cp) < sizeof m[n].config)
					snprintf(m[n].config, sizeof m[n].config, "%s", cp);
				free(cp);
			}
			n++;
		}
		m[g].n++;
		for (int k = 0; k < 3; k++)
			if (!isnan(v[k])) {
				sum[g * 3 + k] += v[k];
				cnt[g * 3 + k]++;
			}
	}
	for (int j = 0; j < npaths; j++)
		free(paths[j]);
	free(paths);
	for (int g = 0; g < n; g++) {
		double *f[3] = {&m[g].peak_memory_mib, &m[g].training_seconds, &m[g].training_loop_seconds};
		for (int k = 0; k < 3; k++)
			*f[k] = cnt[g * 3 + k] ? (double)(sum[g * 3 + k] / cnt[g * 3 + k]) : NAN;
	}
	free(cnt);
	free(sum);
	for (int g = 0; g < n; g++)
		for (int h = 0; h < n; h++)
			if (m[h].depth == m[g].depth && !strcmp(m[h].arm, config_arm_name(0))) {
				m[g].has_dense = 1;
				m[g].d_peak_memory_mib = m[g].peak_memory_mib - m[h].peak_memory_mib;
				m[g].d_training_seconds = m[g].training_seconds - m[h].training_seconds;
				m[g].d_training_loop_seconds = m[g].training_loop_seconds - m[h].training_loop_seconds;
			}
	*out = m;
	*nout = n;
	return 0;
}

static void add_finite(cJSON *o, const char *k, double v)
{
	if (!isnan(v))
		cJSON_AddNumberToObject(o, k, v);
}

cJSON *compute_measured_json(const struct compute_measured *m)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "runs", m->n);
	add_finite(o, "peak_memory_mib", m->peak_memory_mib);
	add_finite(o, "training_seconds", m->training_seconds);
	add_finite(o, "training_loop_seconds", m->training_loop_seconds);
	if (m->has_dense) {
		cJSON *d = cJSON_AddObjectToObject(o, "delta_vs_dense");
		add_finite(d, "peak_memory_mib", m->d_peak_memory_mib);
		add_finite(d, "training_seconds", m->d_training_seconds);
		add_finite(d, "training_loop_seconds", m->d_training_loop_seconds);
	}
	return o;
}

/* ---- --check ---- */

struct sbuf {
	char *p;
	size_t n, cap;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (b->n + (size_t)m + 1 > b->cap) {
		b->cap = (b->n + (size_t)m + 1) * 2;
		b->p = xrealloc(b->p, b->cap);
	}
	va_start(ap, fmt);
	vsnprintf(b->p + b->n, (size_t)m + 1, fmt, ap);
	va_end(ap);
	b->n += (size_t)m;
}

/* A published figure: a JSON number, or a string as printed ("+24.55",
 * "26,345,772", "0.041%"). *dec = digits after the point (the precision the
 * figure was printed to). 0 or -1 when not a number. */
static int published_value(const cJSON *it, double *v, int *dec, char *text, size_t tn)
{
	char buf[64];
	if (cJSON_IsNumber(it)) {
		json_format_number(it->valuedouble, buf, sizeof buf);
	} else if (cJSON_IsString(it) && it->valuestring && strlen(it->valuestring) < sizeof buf) {
		size_t j = 0;
		for (const char *s = it->valuestring; *s; s++) {
			if (*s == ',' || (*s == '+' && s == it->valuestring) || (*s == '%' && !s[1]))
				continue;
			buf[j++] = *s;
		}
		buf[j] = 0;
	} else {
		return -1;
	}
	char *end;
	if (!buf[0])
		return -1;
	*v = strtod(buf, &end);
	if (*end || !isfinite(*v))
		return -1;
	const char *dot = strchr(buf, '.');
	*dec = 0;
	if (dot && !strchr(buf, 'e') && !strchr(buf, 'E'))
		*dec = (int)strlen(dot + 1);
	snprintf(text, tn, "%s", cJSON_IsString(it) ? it->valuestring : buf);
	return 0;
}

/* Does computed x print as the published value at dec decimals? */
static int agrees(double x, double pub, int dec)
{
	double half = 0.5 * pow(10.0, -dec);
	return fabs(x - pub) <= half * (1 + 1e-9) + 1e-12 * fabs(pub);
}

static const cJSON *json_path(const cJSON *root, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", path);
	const cJSON *cur = root;
	for (char *tok = strtok(buf, "."); tok && cur; tok = strtok(NULL, ".")) {
		if (cJSON_IsArray(cur)) {
			char *end;
			long i = strtol(tok, &end, 10);
			cur = (*end || i < 0 || i >= cJSON_GetArraySize(cur)) ? NULL : cJSON_GetArrayItem(cur, (int)i);
		} else {
			cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
		}
	}
	return cur;
}

static const char *figure_formula(const char *path)
{
	static const struct {
		const char *path, *formula;
	} f[] = {
		{"flops.step_denominator", "FLOPs/token x tokens/step (--denominator paper: 59.37e12 at depth 6)"},
		{"flops.extra_pct", "100 x extra FLOPs/step / step FLOPs"},
	};
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		if (!strcmp(f[i].path, path))
			return f[i].formula;
	const char *a = acct_figure_formula(path);
	return a ? a : "see supkit-audit(1)";
}

struct check_ctx {
	const char *name;
	const char *label;             /* "d6 12_oe_joint" */
	const struct config *cfg;
	const struct compute_opts *opts;
	cJSON *ours[4];                /* [neumann alt][denom alt] bits: 0 = as selected */
	struct sbuf out;
	int ndis, ncmp;
	int table_neumann;
	const struct compute_report *rep;
	cJSON *items;                  /* one object per figure, or NULL */
	int claim;                     /* claim index, or -1 */
};

/* %.*f of x with dec + 2 decimals, or an integer when x is one. */
static void fmt_recomputed(double x, int dec, char *buf, size_t n)
{
	snprintf(buf, n, "%.*f", x == floor(x) && fabs(x) < 1e15 ? 0 : dec + 2, x);
}

static void add_item(struct check_ctx *k, const char *path, const char *ptxt, double x, int agree,
		     const char *note)
{
	if (!k->items)
		return;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "label", k->label);
	cJSON_AddStringToObject(o, "path", path);
	cJSON_AddStringToObject(o, "published", ptxt);
	char xs[64];
	json_format_number(x, xs, sizeof xs);
	cJSON_AddStringToObject(o, "recomputed", xs);
	cJSON_AddBoolToObject(o, "agrees", agree);
	cJSON_AddStringToObject(o, "formula", figure_formula(path));
	if (note)
		cJSON_AddStringToObject(o, "note", note);
	if (k->claim >= 0)
		cJSON_AddNumberToObject(o, "claim", k->claim);
	cJSON_AddItemToArray(k->items, o);
}

static void check_leaf(struct check_ctx *k, const char *path, const cJSON *pub)
{
	double pv;
	int dec;
	char ptxt[80];
	if (published_value(pub, &pv, &dec, ptxt, sizeof ptxt) != 0)
		return; /* caller checked */
	const cJSON *mine = json_path(k->ours[0], path);
	double x = mine->valuedouble;
	k->ncmp++;
	if (agrees(x, pv, dec)) {
		add_item(k, path, ptxt, x, 1, NULL);
		return;
	}
	k->ndis++;
	char xs[40];
	fmt_recomputed(x, dec, xs, sizeof xs);
	sb_printf(&k->out, "%s %s: published %s, recomputed %s [%s]", k->label, path, ptxt, xs,
		  figure_formula(path));
	struct sbuf note = {0};
	/* which other convention, if any, the published figure follows */
	static const char *const alt[4] = {NULL, "--neumann-count %s", "--denominator %s",
					   "--neumann-count %s --denominator %s"};
	int found = 0;
	for (int a = 1; a < 4 && !found; a++) {
		const cJSON *v = json_path(k->ours[a], path);
		if (v && agrees(v->valuedouble, pv, dec)) {
			char opt[96];
			const char *nn = acct_neumann_name(k->opts->neumann == ACCT_NEUMANN_FULL
								   ? ACCT_NEUMANN_LEMMA2
								   : ACCT_NEUMANN_FULL);
			const char *dd = compute_denom_name(k->opts->denom == COMPUTE_DENOM_FORMULA ? COMPUTE_DENOM_PAPER
											  : COMPUTE_DENOM_FORMULA);
			if (a == 1)
				snprintf(opt, sizeof opt, alt[a], nn);
			else if (a == 2)
				snprintf(opt, sizeof opt, alt[a], dd);
			else
				snprintf(opt, sizeof opt, alt[a], nn, dd);
			fmt_recomputed(v->valuedouble, dec, xs, sizeof xs);
			sb_printf(&note, "follows the convention %s (%s)", opt, xs);
			found = 1;
		}
	}
	/* a total printed as the sum of its rounded components */
	if (!found && (!strcmp(path, "memory_mib.total") || !strcmp(path, "flops.extra_gflops_step_total"))) {
		const cJSON *sec = json_path(k->ours[0], path[0] == 'm' ? "memory_mib" : "flops.extra_gflops_step");
		double sum = 0, scale = pow(10.0, dec);
		for (const cJSON *c = sec ? sec->child : NULL; c; c = c->next)
			if (strcmp(c->string, "total"))
				sum += round(c->valuedouble * scale) / scale;
		if (agrees(sum, pv, dec)) {
			sb_printf(&note, "the published total is the sum of its components rounded to %d decimals (%.*f)",
				  dec, dec, sum);
			found = 1;
		}
	}
	/* Table-Neumann counts every row unless told the visited rows: say
	 * how many visited rows the published figure implies */
	int implied = 0;
	if (!found && k->table_neumann && k->opts->tabneu_rows == 0 &&
	    (!strcmp(path, "flops.extra_gflops_step_total") ||
	     !strcmp(path, "flops.extra_gflops_step.table_neumann") || !strcmp(path, "flops.extra_pct"))) {
		const struct compute_report *r = k->rep;
		double per_row = acct_tabneu_per_row(r->d, r->opts.neumann);
		double pub_flops = pv * 1e9;
		if (!strcmp(path, "flops.extra_pct"))
			pub_flops = pv / 100.0 * r->step_denominator;
		double other = r->extra_total - r->extra[AX_TABLE_NEUMANN];
		double cst = r->extra[AX_TABLE_NEUMANN] - per_row * (double)r->oe_rows_total;
		if (!strcmp(path, "flops.extra_gflops_step.table_neumann"))
			other = 0;
		double R = (pub_flops - other - cst) / per_row;
		if (R > 0) {
			sb_printf(&note, "Table-Neumann over all %lld OE rows, the published figure implies about %.0f visited rows a step (--tabneu-rows)",
				  (long long)r->oe_rows_total, R);
			implied = 1;
		}
	}
	if (!found)
		sb_printf(&note, "%sfollows no supported convention", implied ? "; " : "");
	sb_printf(&k->out, "; %s\n", note.p);
	add_item(k, path, ptxt, x, 0, note.p);
	free(note.p);
}

static int check_walk(struct check_ctx *k, const cJSON *node, const char *path, int idx, struct err *e)
{
	if (cJSON_IsArray(node)) {
		int i = 0;
		for (const cJSON *c = node->child; c; c = c->next, i++) {
			char p[256];
			snprintf(p, sizeof p, "%s.%d", path, i);
			if (check_walk(k, c, p, idx, e) != 0)
				return -1;
		}
		return 0;
	}
	if (cJSON_IsObject(node)) {
		for (const cJSON *c = node->child; c; c = c->next) {
			char p[256];
			snprintf(p, sizeof p, "%s.%s", path, c->string);
			if (check_walk(k, c, p, idx, e) != 0)
				return -1;
		}
		return 0;
	}
	double v;
	int dec;
	char t[80];
	const cJSON *mine = json_path(k->ours[0], path);
	if (!mine || !cJSON_IsNumber(mine))
		return err_set(e, EXIT_USAGE, "'%s': arms[%d]: %s is not a figure supkit audit compute derives",
			       k->name, idx, path);
	if (published_value(node, &v, &dec, t, sizeof t) != 0)
		return err_set(e, EXIT_USAGE, "'%s': arms[%d]: %s is not a number", k->name, idx, path);
	check_leaf(k, path, node);
	return 0;
}

/* 1 when a key or string anywhere under node holds a control character
 * (messages quote them and must stay one line). */
static int has_control(const cJSON *node)
{
	for (const cJSON *c = node; c; c = c->next) {
		const char *strs[2] = {c->string, cJSON_IsString(c) ? c->valuestring : NULL};
		for (int i = 0; i < 2; i++)
			for (const char *p = strs[i]; p && *p; p++)
				if ((unsigned char)*p < 0x20 || *p == 0x7f)
					return 1;
		if (c->child && has_control(c->child))
			return 1;
	}
	return 0;
}

/* An arm's own conventions ({"neumann_count", "denominator", "tabneu_rows"},
 * as compute --json writes them) over o. */
static int arm_conventions(const cJSON *cv, const char *ctx, struct compute_opts *o, struct err *e)
{
	if (!cv)
		return 0;
	if (!cJSON_IsObject(cv))
		return err_set(e, EXIT_USAGE, "%s: \"conventions\" must be an object", ctx);
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(cv, "neumann_count");
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(cv, "denominator");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(cv, "tabneu_rows");
	if (n) {
		if (cJSON_IsString(n) && !strcmp(n->valuestring, "full"))
			o->neumann = ACCT_NEUMANN_FULL;
		else if (cJSON_IsString(n) && !strcmp(n->valuestring, "lemma2"))
			o->neumann = ACCT_NEUMANN_LEMMA2;
		else
			return err_set(e, EXIT_USAGE, "%s: conventions.neumann_count is not \"full\" or \"lemma2\"", ctx);
	}
	if (d) {
		if (cJSON_IsString(d) && !strcmp(d->valuestring, "formula"))
			o->denom = COMPUTE_DENOM_FORMULA;
		else if (cJSON_IsString(d) && !strcmp(d->valuestring, "paper"))
			o->denom = COMPUTE_DENOM_PAPER;
		else
			return err_set(e, EXIT_USAGE, "%s: conventions.denominator is not \"formula\" or \"paper\"", ctx);
	}
	if (t) {
		if (!cJSON_IsNumber(t) || t->valuedouble < 0 || t->valuedouble > 1099511627776.0 ||
		    t->valuedouble != floor(t->valuedouble))
			return err_set(e, EXIT_USAGE, "%s: conventions.tabneu_rows is not a row count", ctx);
		o->tabneu_rows = (int64_t)t->valuedouble;
	}
	return 0;
}

int compute_check(const cJSON *published, const char *name, const struct compute_opts *o, char **lines,
		  int *ncompared, cJSON *items, struct err *e)
{
	*lines = NULL;
	*ncompared = 0;
	const cJSON *arms = cJSON_GetObjectItemCaseSensitive(published, "arms");
	if (!cJSON_IsArray(arms))
		return err_set(e, EXIT_USAGE, "'%s': expected an object with an \"arms\" array", name);
	struct sbuf out = {0};
	int ndis = 0, ncmp = 0, idx = 0;
	for (const cJSON *a = arms->child; a; a = a->next, idx++) {
		const char *arm;
		double depth;
		char ctx[300];
		snprintf(ctx, sizeof ctx, "'%s': arms[%d]", name, idx);
		if (!cJSON_IsObject(a))
			goto bad_entry;
		if (a->child && has_control(a->child)) {
			err_set(e, EXIT_USAGE, "'%s': arms[%d]: a key or string holds a control character", name, idx);
			goto fail;
		}
		if (json_get_string(a, "arm", &arm, ctx, e) || json_get_number(a, "depth", &depth, ctx, e))
			goto fail;
		if (depth != floor(depth) || depth < 1 || depth > 64) {
			err_set(e, EXIT_USAGE, "%s: depth %g is not a depth", ctx, depth);
			goto fail;
		}
		struct compute_opts ao = *o;
		if (arm_conventions(cJSON_GetObjectItemCaseSensitive(a, "conventions"), ctx, &ao, e) != 0)
			goto fail;
		struct config c;
		config_defaults(&c);
		c.depth = (int)depth;
		const cJSON *set = cJSON_GetObjectItemCaseSensitive(a, "set");
		if (set && !cJSON_IsObject(set)) {
			err_set(e, EXIT_USAGE, "'%s': arms[%d]: \"set\" must be an object of key: value", name, idx);
			goto fail;
		}
		/* an arm that is not a named one is the baseline with its "set" (which names it) */
		if (config_arm_find(arm) >= 0 || !cJSON_GetObjectItemCaseSensitive(set, "arm")) {
			if (config_arm_apply(&c, arm, e) != 0) {
				err_prefix(e, "'%s': arms[%d]", name, idx);
				goto fail;
			}
		}
		for (const cJSON *s = set ? set->child : NULL; s; s = s->next) {
			char kv[700], num[40];
			const char *val = cJSON_IsString(s) ? s->valuestring : NULL;
			if (cJSON_IsNumber(s)) {
				json_format_number(s->valuedouble, num, sizeof num);
				val = num;
			}
			if (!val) {
				err_set(e, EXIT_USAGE, "'%s': arms[%d]: set.%s: expected a string or number", name, idx,
					s->string);
				goto fail;
			}
			snprintf(kv, sizeof kv, "%s=%s", s->string, val);
			if (config_set(&c, kv, e) != 0) {
				err_prefix(e, "'%s': arms[%d]", name, idx);
				goto fail;
			}
		}
		if (config_validate(&c, e) != 0) {
			err_prefix(e, "'%s': arms[%d]", name, idx);
			goto fail;
		}
		struct check_ctx k = {0};
		struct compute_report reps[4];
		k.name = name;
		k.items = items;
		k.claim = -1;
		char label[600];
		const cJSON *note = cJSON_GetObjectItemCaseSensitive(a, "note");
		const cJSON *claim = cJSON_GetObjectItemCaseSensitive(a, "claim");
		const cJSON *where = cJSON_GetObjectItemCaseSensitive(a, "where");
		if (cJSON_IsNumber(claim)) {
			k.claim = (int)claim->valuedouble;
			snprintf(label, sizeof label, "claim %d (%s)", k.claim,
				 cJSON_IsString(where) ? where->valuestring : arm);
		} else if (cJSON_IsString(note)) {
			snprintf(label, sizeof label, "d%d %s (%s)", c.depth, arm, note->valuestring);
		} else {
			snprintf(label, sizeof label, "d%d %s", c.depth, arm);
		}
		k.label = label;
		k.cfg = &c;
		k.opts = &ao;
		k.table_neumann = c.oe && c.table_neumann;
		for (int v = 0; v < 4; v++) {
			struct compute_opts oo = ao;
			if (v & 1)
				oo.neumann = ao.neumann == ACCT_NEUMANN_FULL ? ACCT_NEUMANN_LEMMA2 : ACCT_NEUMANN_FULL;
			if (v & 2)
				oo.denom = ao.denom == COMPUTE_DENOM_FORMULA ? COMPUTE_DENOM_PAPER : COMPUTE_DENOM_FORMULA;
			if (compute_config(&c, &oo, &reps[v], e) != 0) {
				for (int w = 0; w < v; w++)
					cJSON_Delete(k.ours[w]);
				err_prefix(e, "'%s': arms[%d]", name, idx);
				goto fail;
			}
			k.ours[v] = compute_report_json(&reps[v]);
		}
		k.rep = &reps[0];
		k.out = out;
		int rc = 0;
		static const char *const sections[] = {"params", "flops", "memory_mib", "model"};
		for (int s = 0; s < 4 && rc == 0; s++) {
			const cJSON *sec = cJSON_GetObjectItemCaseSensitive(a, sections[s]);
			if (sec)
				rc = check_walk(&k, sec, sections[s], idx, e);
		}
		static const char *const known[] = {"arm", "depth", "set", "params", "flops", "memory_mib", "id",
						    "note", "model", "config_sha256", "conventions", "measured",
						    "claim", "where"};
		for (const cJSON *ch = a->child; ch && rc == 0; ch = ch->next) {
			size_t q = 0;
			while (q < sizeof known / sizeof *known && strcmp(ch->string, known[q]))
				q++;
			if (q == sizeof known / sizeof *known)
				rc = err_set(e, EXIT_USAGE, "'%s': arms[%d]: unknown key \"%s\"", name, idx, ch->string);
		}
		const cJSON *sha = cJSON_GetObjectItemCaseSensitive(a, "config_sha256");
		if (rc == 0 && sha) {
			if (!cJSON_IsString(sha)) {
				rc = err_set(e, EXIT_USAGE, "'%s': arms[%d]: config_sha256 must be a string", name, idx);
			} else {
				k.ncmp++;
				int same = !strcmp(sha->valuestring, reps[0].config_sha256);
				if (!same) {
					k.ndis++;
					sb_printf(&k.out, "%s config_sha256: published %s, recomputed %s [SHA-256 of the canonical config]\n",
						  k.label, sha->valuestring, reps[0].config_sha256);
				}
				if (items) {
					cJSON *it = cJSON_CreateObject();
					cJSON_AddStringToObject(it, "label", k.label);
					cJSON_AddStringToObject(it, "path", "config_sha256");
					cJSON_AddStringToObject(it, "published", sha->valuestring);
					cJSON_AddStringToObject(it, "recomputed", reps[0].config_sha256);
					cJSON_AddBoolToObject(it, "agrees", same);
					cJSON_AddStringToObject(it, "formula", "SHA-256 of the canonical config");
					if (k.claim >= 0)
						cJSON_AddNumberToObject(it, "claim", k.claim);
					cJSON_AddItemToArray(items, it);
				}
			}
		}
		out = k.out;
		for (int v = 0; v < 4; v++)
			cJSON_Delete(k.ours[v]);
		if (rc != 0)
			goto fail;
		ndis += k.ndis;
		ncmp += k.ncmp;
	}
	*lines = out.p ? out.p : xstrdup("");
	*ncompared = ncmp;
	return ndis;
bad_entry:
	err_set(e, EXIT_USAGE, "'%s': arms[%d]: expected an object", name, idx);
fail:
	free(out.p);
	return -1;
}

/* ---- claims ---- */

/* "a.b.c" as nested objects ending in value (taken), added to obj. */
static void nest(cJSON *obj, const char *path, cJSON *value)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", path);
	char *save, *tok = strtok_r(buf, ".", &save);
	cJSON *cur = obj;
	while (tok) {
		char *next = strtok_r(NULL, ".", &save);
		if (!next) {
			cJSON_AddItemToObject(cur, tok, value);
			return;
		}
		cJSON *c = cJSON_GetObjectItemCaseSensitive(cur, tok);
		if (!c)
			c = cJSON_AddObjectToObject(cur, tok);
		cur = c;
		tok = next;
	}
	cJSON_Delete(value);
}

int compute_claims_arms(const cJSON *claims, const char *name, cJSON **out, int *n_other, struct err *e)
{
	*out = NULL;
	*n_other = 0;
	cJSON *root = cJSON_CreateObject(), *arms = cJSON_AddArrayToObject(root, "arms");
	int i = 0;
	for (const cJSON *c = claims_list(claims)->child; c; c = c->next, i++) {
		if (!claims_of(claims, c, "supkit-audit", "compute")) {
			(*n_other)++;
			continue;
		}
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, "figure");
		const cJSON *arm = cJSON_GetObjectItemCaseSensitive(f, "arm");
		const cJSON *depth = cJSON_GetObjectItemCaseSensitive(f, "depth");
		const cJSON *path = cJSON_GetObjectItemCaseSensitive(f, "path");
		if (!cJSON_IsString(arm) || !cJSON_IsNumber(depth) || !cJSON_IsString(path) ||
		    strlen(path->valuestring) > 200) {
			cJSON_Delete(root);
			return err_set(e, EXIT_USAGE, "'%s': claims[%d]: a compute figure needs \"arm\", \"depth\" and "
				       "\"path\"", name, i);
		}
		const char *p = path->valuestring;
		int sha = !strcmp(p, "config_sha256");
		if (!sha && strncmp(p, "params.", 7) && strncmp(p, "flops.", 6) && strncmp(p, "memory_mib.", 11) &&
		    strncmp(p, "model.", 6)) {
			cJSON_Delete(root);
			return err_set(e, EXIT_USAGE, "'%s': claims[%d]: path '%s' is not a figure of supkit audit compute",
				       name, i, p);
		}
		cJSON *a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "arm", arm->valuestring);
		cJSON_AddNumberToObject(a, "depth", depth->valuedouble);
		static const char *const copy[] = {"set", "conventions"};
		for (int k = 0; k < 2; k++) {
			const cJSON *x = cJSON_GetObjectItemCaseSensitive(f, copy[k]);
			if (x)
				cJSON_AddItemToObject(a, copy[k], cJSON_Duplicate(x, 1));
		}
		cJSON_AddNumberToObject(a, "claim", i);
		cJSON_AddStringToObject(a, "where", cJSON_GetObjectItemCaseSensitive(c, "where")->valuestring);
		const char *value = cJSON_GetObjectItemCaseSensitive(c, "value")->valuestring;
		if (sha)
			cJSON_AddStringToObject(a, "config_sha256", value);
		else
			nest(a, p, cJSON_CreateString(value));
		cJSON_AddItemToArray(arms, a);
	}
	*out = root;
	return 0;
}

/* Figures of the Table 1b row of r, as compute_print_table prints them. */
void compute_claims_add(cJSON *file, const struct compute_report *r, const cJSON *set, const cJSON *derivation)
{
	char label[120];
	snprintf(label, sizeof label, "compute table: row d%d %s", r->depth, r->arm);
	struct {
		const char *col, *path;
		double v;
		int dec, plus, comma, pct; /* plus: 1 "+" when > 0, 2 always a sign (%+f) */
	} cols[] = {
		{"backbone", "params.backbone", (double)r->p_backbone, 0, 0, 1, 0},
		{"OE", "params.oe", (double)r->p_oe, 0, 0, 1, 0},
		{"total params", "params.total", (double)r->p_total, 0, 0, 1, 0},
		{"extra GFLOPs/step", "flops.extra_gflops_step_total", r->extra_total / 1e9, 2, 1, 0, 0},
		{"extra share of the step", "flops.extra_pct", r->extra_pct, 3, 1, 0, 1},
		{"memory MiB", "memory_mib.total", r->mem_total / MIB, 2, 2, 0, 0},
	};
	for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) {
		char v[64], where[200];
		if (cols[i].comma)
			fmt_int((int64_t)cols[i].v, v, sizeof v);
		else
			snprintf(v, sizeof v, "%s%.*f%s", cols[i].plus == 2 && cols[i].v >= 0 ? "+"
							  : cols[i].plus && cols[i].v > 0 ? "+" : "",
				 cols[i].dec, cols[i].v, cols[i].pct ? "%" : "");
		snprintf(where, sizeof where, "%s, column %s", label, cols[i].col);
		cJSON *f = cJSON_CreateObject();
		cJSON_AddStringToObject(f, "arm", r->arm);
		cJSON_AddNumberToObject(f, "depth", r->depth);
		cJSON_AddStringToObject(f, "path", cols[i].path);
		if (set)
			cJSON_AddItemToObject(f, "set", cJSON_Duplicate(set, 1));
		cJSON *cv = cJSON_AddObjectToObject(f, "conventions");
		cJSON_AddStringToObject(cv, "neumann_count", acct_neumann_name(r->opts.neumann));
		cJSON_AddStringToObject(cv, "denominator", compute_denom_name(r->opts.denom));
		cJSON_AddNumberToObject(cv, "tabneu_rows", (double)r->opts.tabneu_rows);
		claims_add(file, v, where, derivation, f);
	}
}

/* ---- human output ---- */

/* 1234567 -> "1,234,567" */
static void fmt_int(int64_t v, char *buf, size_t n)
{
	char t[32];
	snprintf(t, sizeof t, "%lld", (long long)(v < 0 ? -v : v));
	size_t len = strlen(t), j = 0;
	if (v < 0 && j + 1 < n)
		buf[j++] = '-';
	for (size_t i = 0; i < len && j + 2 < n; i++) {
		buf[j++] = t[i];
		if ((len - i - 1) % 3 == 0 && i + 1 < len)
			buf[j++] = ',';
	}
	buf[j] = 0;
}

/* 13733.4 -> "13,733.4" with dec decimals */
static void fmt_fixed(double v, int dec, char *buf, size_t n)
{
	if (isnan(v)) {
		snprintf(buf, n, "-");
		return;
	}
	char t[64];
	snprintf(t, sizeof t, "%.*f", dec, fabs(v));
	char *dot = strchr(t, '.');
	size_t ilen = dot ? (size_t)(dot - t) : strlen(t), j = 0;
	if (v < 0 && round(v * pow(10, dec)) != 0)
		buf[j++] = '-';
	for (size_t i = 0; i < ilen && j + 2 < n; i++) {
		buf[j++] = t[i];
		if ((ilen - i - 1) % 3 == 0 && i + 1 < ilen)
			buf[j++] = ',';
	}
	snprintf(buf + j, n - j, "%s", dot ? dot : "");
}

void compute_print_table(FILE *f, const struct compute_report *r, int n, const struct compute_measured *m, int nm)
{
	fprintf(f, "%-34s %10s   %10s   %11s  %-21s %10s", "arm", "backbone", "OE", "total params",
		"extra GFLOPs/step (%)", "memory MiB");
	if (nm > 0)
		fprintf(f, "  %-22s %s", "peak MiB (delta)", "timed / full loop s");
	fprintf(f, "\n");
	for (int i = 0; i < n; i++) {
		char label[80], b[32], o[32], t[32], line[128], ex[64];
		snprintf(label, sizeof label, "d%d %s", r[i].depth, r[i].arm);
		fmt_int(r[i].p_backbone, b, sizeof b);
		fmt_int(r[i].p_oe, o, sizeof o);
		fmt_int(r[i].p_total, t, sizeof t);
		snprintf(line, sizeof line, "%10s + %10s = %11s", b, o, t);
		snprintf(ex, sizeof ex, "%s%.2f (%s%.3f%%)", r[i].extra_total > 0 ? "+" : "", r[i].extra_total / 1e9,
			 r[i].extra_pct > 0 ? "+" : "", r[i].extra_pct);
		fprintf(f, "%-34s %s  %-21s %+10.2f", label, line, ex, r[i].mem_total / MIB);
		for (int j = 0; j < nm; j++) {
			if (m[j].depth != r[i].depth || strcmp(m[j].arm, r[i].arm))
				continue;
			char pk[32], dl[32], col[96];
			fmt_fixed(m[j].peak_memory_mib, 1, pk, sizeof pk);
			if (m[j].has_dense) {
				fmt_fixed(m[j].d_peak_memory_mib, 1, dl, sizeof dl);
				snprintf(col, sizeof col, "%s (%s%s)", pk, m[j].d_peak_memory_mib >= 0 ? "+" : "", dl);
			} else {
				snprintf(col, sizeof col, "%s (no dense)", pk);
			}
			char ts[32], tl[32];
			snprintf(ts, sizeof ts, isnan(m[j].training_seconds) ? "-" : "%.1fs", m[j].training_seconds);
			snprintf(tl, sizeof tl, isnan(m[j].training_loop_seconds) ? "-" : "%.1fs",
				 m[j].training_loop_seconds);
			fprintf(f, "  %-22s %s / %s (n=%d)", col, ts, tl, m[j].n);
		}
		fprintf(f, "\n");
	}
	if (n > 0)
		fprintf(f, "conventions: Neumann-Gram count %s, step-FLOPs denominator %s, Table-Neumann rows %s\n",
			acct_neumann_name(r[0].opts.neumann), compute_denom_name(r[0].opts.denom),
			r[0].opts.tabneu_rows ? "as given" : "all (upper bound)");
}

void compute_print_detail(FILE *f, const struct compute_report *r, const struct compute_measured *m)
{
	char a[32], b[32];
	fprintf(f, "arm %s, depth %d (L=%d, d=%d, H=%d, hd=%d, V=%lld, T=%lld, n_ve=%d, %lld tokens/step)\n",
		r->arm, r->depth, r->depth, r->d, r->H, r->head_dim, (long long)r->V, (long long)r->T, r->n_ve,
		(long long)r->tokens_per_step);
	fprintf(f, "config sha256 %s\n\nparameters\n", r->config_sha256);
	const struct {
		const char *name;
		int64_t v;
	} p[] = {
		{"wte", r->p_wte}, {"value_embeds", r->p_value_embeds}, {"lm_head", r->p_lm_head},
		{"block matrices", r->p_matrices}, {"scalars", r->p_scalars}, {"q_tau", r->p_q_tau},
		{"routing lambdas", r->p_routing}, {"sub_gains", r->p_sub_gains},
		{"rope_tau", r->p_rope_tau},
		{"backbone (num_params)", r->p_backbone},
		{"OE rows total", r->oe_rows_total}, {"OE params", r->p_oe}, {"total", r->p_total},
	};
	for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
		fmt_int(p[i].v, a, sizeof a);
		fprintf(f, "  %-24s %16s\n", p[i].name, a);
	}
	if (r->oe_tables) {
		fprintf(f, "  %-24s", "OE rows per table");
		for (int j = 0; j < r->oe_tables && j < COMPUTE_OE_TABLES_MAX; j++) {
			fmt_int(r->oe_rows[j], a, sizeof a);
			fprintf(f, " %s", a);
		}
		fprintf(f, "\n");
	}
	fmt_int((int64_t)llround(r->flops_token), a, sizeof a);
	fprintf(f, "\nFLOPs\n  %-24s %16s\n", "per token", a);
	fprintf(f, "  %-24s %16.4f TFLOPs\n", "per step", r->flops_step / 1e12);
	fprintf(f, "  %-24s %16.4f TFLOPs (%s)\n", "share denominator", r->step_denominator / 1e12,
		compute_denom_name(r->opts.denom));
	fprintf(f, "  %-24s %16.4f GFLOPs (baseline Muon, not extra)\n", "Polar Express/step", r->polar_step / 1e9);
	fprintf(f, "  extra GFLOPs/step\n");
	for (int i = 0; i < AX_N; i++)
		fprintf(f, "    %-22s %16.4f\n", acct_extra_key(i), r->extra[i] / 1e9);
	fprintf(f, "    %-22s %16.4f (%.4f%% of the step)\n", "sum", r->extra_total / 1e9, r->extra_pct);
	fprintf(f, "\npersistent memory delta MiB\n");
	for (int i = 0; i < AM_N; i++)
		fprintf(f, "  %-24s %16.2f\n", acct_mem_key(i), r->mem[i] / MIB);
	fprintf(f, "  %-24s %16.2f\n", "total", r->mem_total / MIB);
	if (m) {
		fmt_fixed(m->peak_memory_mib, 1, a, sizeof a);
		fprintf(f, "\nmeasured (%d runs)\n  %-24s %16s", m->n, "peak memory MiB", a);
		if (m->has_dense) {
			fmt_fixed(m->d_peak_memory_mib, 1, b, sizeof b);
			fprintf(f, " (%s%s vs dense)", m->d_peak_memory_mib >= 0 ? "+" : "", b);
		}
		fmt_fixed(m->training_seconds, 1, a, sizeof a);
		fmt_fixed(m->training_loop_seconds, 1, b, sizeof b);
		fprintf(f, "\n  %-24s %16s\n  %-24s %16s\n", "timed loop s", a, "full loop s", b);
	}
	fprintf(f, "\nconventions: Neumann-Gram count %s, Table-Neumann rows %s\n", acct_neumann_name(r->opts.neumann),
		r->opts.tabneu_rows ? "as given" : "all (upper bound)");
}

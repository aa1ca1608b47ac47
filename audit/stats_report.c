/* stats_report.c: the outputs of supkit audit stats: Markdown tables in the
 * papers' layout (Table 2: per-cell seeds and mean +- SD; Table 3: paired
 * contrasts with t intervals, per-seed deltas, k/n improved and ratios), the
 * deterministic JSON record, and the rounding-aware check of a published
 * file against the records.
 *
 * Reference: SPEC section 6 (printing: BPB to 6 decimals, percentages to 1);
 * papers 000/001, Tables 2 and 3; shared/vectors/README.md and stats.json (the
 * layout --check reads). Left out: LaTeX output.
 */
#include "audit/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"

static const char *split_key[STATS_NSPLIT] = {"val", "heldout"};

/* ---- Markdown ---------------------------------------------------------------- */

static void fmt6(double v, int plus, char *buf, size_t n)
{
	stats_printed_format(v, 6, plus, buf, n);
}

/* Text for a Markdown table cell: '|' escaped. */
static void md_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', f);
		fputc(*s, f);
	}
}

static int long_cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

static void print_cells(FILE *f, const struct stats_cells *cells)
{
	long *seeds = NULL;
	size_t ns = 0;
	for (size_t i = 0; i < cells->n; i++)
		for (size_t k = 0; k < cells->c[i].n; k++) {
			size_t j = 0;
			while (j < ns && seeds[j] != cells->c[i].seeds[k])
				j++;
			if (j == ns) {
				seeds = xrealloc(seeds, (ns + 1) * sizeof *seeds);
				seeds[ns++] = cells->c[i].seeds[k];
			}
		}
	if (ns)
		qsort(seeds, ns, sizeof *seeds, long_cmp);
	fprintf(f, "| Cell (`dDEPTH/ARM`) |");
	for (size_t j = 0; j < ns; j++)
		fprintf(f, " Seed %ld (`Val / Held-Out`) |", seeds[j]);
	fprintf(f, " n | Validation BPB (`Mean ± SD`) | Held-Out BPB (`Mean ± SD`) |\n| :--- |");
	for (size_t j = 0; j < ns; j++)
		fprintf(f, " :--- |");
	fprintf(f, " ---: | :--- | :--- |\n");
	for (size_t i = 0; i < cells->n; i++) {
		const struct stats_cell *c = &cells->c[i];
		fprintf(f, "| `d%d/%s` |", c->depth, c->arm);
		for (size_t j = 0; j < ns; j++) {
			size_t k = 0;
			while (k < c->n && c->seeds[k] != seeds[j])
				k++;
			if (k == c->n) {
				fprintf(f, " — |");
				continue;
			}
			char a[64], b[64];
			fmt6(c->bpb[STATS_VAL][k], 0, a, sizeof a);
			fmt6(c->bpb[STATS_HO][k], 0, b, sizeof b);
			fprintf(f, " `%s / %s` |", a, b);
		}
		fprintf(f, " %zu |", c->n);
		for (int s = 0; s < STATS_NSPLIT; s++) {
			char a[64], b[64];
			fmt6(c->sum[s].mean, 0, a, sizeof a);
			if (c->n < 2)
				fprintf(f, " `%s` |", a);
			else {
				fmt6(c->sum[s].sd, 0, b, sizeof b);
				fprintf(f, " `%s ± %s` |", a, b);
			}
		}
		fputc('\n', f);
	}
	free(seeds);
}

struct scope_key {
	int depth;
	const char *scope;
};

static int scope_cmp(const void *a, const void *b)
{
	const struct scope_key *x = a, *y = b;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return strcmp(x->scope, y->scope);
}

static void print_contrast_cell(FILE *f, const struct stats_contrast *c, int s,
				const struct stats_results *res)
{
	const struct stats_summary *m = &c->sum[s];
	char a[64], b[64], lo[64], hi[64];
	fmt6(m->mean, 1, a, sizeof a);
	fmt6(m->sd, 0, b, sizeof b);
	fmt6(m->ci[0], 1, lo, sizeof lo);
	fmt6(m->ci[1], 1, hi, sizeof hi);
	fprintf(f, " `%s ± %s` (`[%s, %s]`, `[", a, b, lo, hi);
	for (size_t i = 0; i < c->n; i++) {
		fmt6(c->delta[s][i], 1, a, sizeof a);
		fprintf(f, "%s%s", i ? ", " : "", a);
	}
	fprintf(f, "]`, `%zu/%zu`", m->improved, m->n);
	for (size_t r = 0; r < c->n_ratios; r++) {
		const struct stats_contrast *ref = &res->c[c->ratios[r].ref];
		char p[64];
		stats_printed_format(c->ratios[r].pct[s], 1, 0, p, sizeof p);
		fprintf(f, ", `%s%%`", p);
		if (ref != c) {
			fprintf(f, " of ");
			md_text(f, ref->def->name);
		}
	}
	fprintf(f, ") |");
}

static void print_contrasts(FILE *f, const struct stats_results *res)
{
	struct scope_key *sc = xmalloc((res->n + 1) * sizeof *sc);
	size_t nsc = 0;
	for (size_t i = 0; i < res->n; i++) {
		size_t j = 0;
		while (j < nsc && strcmp(sc[j].scope, res->c[i].scope))
			j++;
		if (j == nsc) {
			sc[nsc].depth = res->c[i].depth;
			sc[nsc].scope = res->c[i].scope;
			nsc++;
		}
	}
	qsort(sc, nsc, sizeof *sc, scope_cmp);
	fprintf(f, "| Paired Contrast |");
	for (size_t j = 0; j < nsc; j++)
		fprintf(f, " `%s` Val Δ (`Mean ± SD`, `95%% t-CI`, `[per seed]`, `k/n`, ratio) |"
			" `%s` Held-Out Δ (`Mean ± SD`, `95%% t-CI`, `[per seed]`, `k/n`, ratio) |",
			sc[j].scope, sc[j].scope);
	fprintf(f, "\n| :--- |");
	for (size_t j = 0; j < nsc; j++)
		fprintf(f, " :--- | :--- |");
	fputc('\n', f);
	/* One row per contrast definition, in spec order. */
	for (size_t i = 0; i < res->n; i++) {
		size_t di = res->c[i].def_index;
		int first = 1;
		for (size_t k = 0; k < i; k++)
			if (res->c[k].def_index == di)
				first = 0;
		if (!first)
			continue;
		fprintf(f, "| **");
		md_text(f, res->c[i].def->name);
		fprintf(f, "** (");
		md_text(f, res->c[i].def->expr);
		fprintf(f, ") |");
		for (size_t j = 0; j < nsc; j++) {
			const struct stats_contrast *c = NULL;
			for (size_t k = 0; k < res->n; k++)
				if (res->c[k].def_index == di && !strcmp(res->c[k].scope, sc[j].scope))
					c = &res->c[k];
			for (int s = 0; s < STATS_NSPLIT; s++) {
				if (!c)
					fprintf(f, " — |");
				else
					print_contrast_cell(f, c, s, res);
			}
		}
		fputc('\n', f);
	}
	free(sc);
}

void stats_print_markdown(FILE *f, const struct stats_cells *cells, const struct stats_results *res)
{
	fprintf(f, "### Per-cell BPB\n\n");
	print_cells(f, cells);
	if (res && res->n) {
		fprintf(f, "\n### Paired contrasts (delta < 0: lower BPB, better; 95%% t interval, "
			"df = n - 1)\n\n");
		print_contrasts(f, res);
	}
	int notes = 0;
	for (size_t i = 0; res && i < res->n; i++) {
		const struct stats_contrast *c = &res->c[i];
		if (!c->dropped)
			continue;
		if (!notes++)
			fputc('\n', f);
		fprintf(f, "- %s at %s: paired seeds ", c->def->name, c->scope);
		for (size_t k = 0; k < c->n; k++)
			fprintf(f, "%s%ld", k ? ", " : "", c->seeds[k]);
		fprintf(f, "; dropped %s\n", c->dropped);
	}
	for (size_t i = 0; res && i < res->n_skipped; i++) {
		if (!notes++)
			fputc('\n', f);
		fprintf(f, "- skipped: %s\n", res->skipped[i]);
	}
}

/* ---- JSON ------------------------------------------------------------------- */

static cJSON *num_array(const double *x, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(x[i]));
	return a;
}

static cJSON *seed_array(const long *x, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber((double)x[i]));
	return a;
}

static cJSON *summary_json(const struct stats_summary *s, const double *x, const char *xkey)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, xkey, num_array(x, s->n));
	cJSON_AddNumberToObject(o, "mean", s->mean);
	cJSON_AddNumberToObject(o, "sd", s->sd);
	double ci[2] = {s->ci[0], s->ci[1]};
	cJSON_AddItemToObject(o, "ci95", num_array(ci, 2));
	cJSON_AddNumberToObject(o, "improved", (double)s->improved);
	return o;
}

cJSON *stats_to_json(const struct stats_cells *cells, const struct stats_results *res,
		     const struct stats_records *rec)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *ca = cJSON_AddArrayToObject(root, "cells");
	for (size_t i = 0; i < cells->n; i++) {
		const struct stats_cell *c = &cells->c[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "arm", c->arm);
		cJSON_AddNumberToObject(o, "depth", c->depth);
		cJSON_AddNumberToObject(o, "n", (double)c->n);
		cJSON_AddItemToObject(o, "seeds", seed_array(c->seeds, c->n));
		for (int s = 0; s < STATS_NSPLIT; s++) {
			cJSON *so = summary_json(&c->sum[s], c->bpb[s], "bpb");
			cJSON_DeleteItemFromObject(so, "improved");
			cJSON_DeleteItemFromObject(so, "ci95");
			cJSON_AddItemToObject(o, split_key[s], so);
		}
		cJSON_AddItemToArray(ca, o);
	}
	cJSON *xa = cJSON_AddArrayToObject(root, "contrasts");
	for (size_t i = 0; res && i < res->n; i++) {
		const struct stats_contrast *c = &res->c[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", c->def->name);
		cJSON_AddStringToObject(o, "expression", c->def->expr);
		cJSON_AddStringToObject(o, "scope", c->scope);
		cJSON *ta = cJSON_AddArrayToObject(o, "terms");
		for (size_t t = 0; t < c->def->n_terms; t++) {
			cJSON *to = cJSON_CreateObject();
			cJSON_AddNumberToObject(to, "coef", c->def->terms[t].coef);
			cJSON_AddStringToObject(to, "arm", c->cells[t]->arm);
			cJSON_AddNumberToObject(to, "depth", c->cells[t]->depth);
			cJSON_AddItemToArray(ta, to);
		}
		cJSON_AddNumberToObject(o, "n", (double)c->n);
		cJSON_AddNumberToObject(o, "df", (double)c->n - 1);
		cJSON_AddNumberToObject(o, "t", c->sum[0].t);
		cJSON_AddItemToObject(o, "seeds", seed_array(c->seeds, c->n));
		if (c->dropped)
			cJSON_AddStringToObject(o, "dropped", c->dropped);
		else
			cJSON_AddNullToObject(o, "dropped");
		for (int s = 0; s < STATS_NSPLIT; s++)
			cJSON_AddItemToObject(o, split_key[s], summary_json(&c->sum[s], c->delta[s], "deltas"));
		cJSON *ra = cJSON_AddArrayToObject(o, "ratios_pct");
		for (size_t r = 0; r < c->n_ratios; r++) {
			cJSON *ro = cJSON_CreateObject();
			cJSON_AddStringToObject(ro, "of", res->c[c->ratios[r].ref].def->name);
			for (int s = 0; s < STATS_NSPLIT; s++)
				cJSON_AddNumberToObject(ro, split_key[s], c->ratios[r].pct[s]);
			cJSON_AddItemToArray(ra, ro);
		}
		cJSON_AddItemToArray(xa, o);
	}
	cJSON *sa = cJSON_AddArrayToObject(root, "skipped");
	for (size_t i = 0; res && i < res->n_skipped; i++)
		cJSON_AddItemToArray(sa, cJSON_CreateString(res->skipped[i]));
	cJSON *ia = cJSON_AddArrayToObject(root, "ignored_runs");
	for (size_t i = 0; rec && i < rec->n_ignored; i++)
		cJSON_AddItemToArray(ia, cJSON_CreateString(rec->ignored[i]));
	return root;
}

/* ---- the check ------------------------------------------------------------------ */

struct checker {
	const char *file;
	const struct stats_cells *cells;
	double h;  /* half a unit of the inputs' last place */
	cJSON *out;
	struct stats_check_counts *counts;
	struct err *e;
};

static void count(struct checker *k, enum stats_verdict v)
{
	switch (v) {
	case STATS_OK: k->counts->ok++; break;
	case STATS_ROUNDING: k->counts->rounding++; break;
	case STATS_INCONSISTENT: k->counts->inconsistent++; break;
	case STATS_MISSING: k->counts->missing++; break;
	}
}

static cJSON *item_new(const char *id, const char *split, const char *figure)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", id);
	cJSON_AddStringToObject(o, "split", split);
	cJSON_AddStringToObject(o, "figure", figure);
	return o;
}

static void item_missing(struct checker *k, const char *id, const char *split, const char *why)
{
	cJSON *o = item_new(id, split, "*");
	cJSON_AddStringToObject(o, "status", "missing");
	cJSON_AddStringToObject(o, "why", why);
	cJSON_AddItemToArray(k->out, o);
	count(k, STATS_MISSING);
}

/* A figure as printed: a JSON string, or a number (its shortest form). */
static int printed_of(const cJSON *v, char *buf, size_t n)
{
	if (cJSON_IsString(v))
		snprintf(buf, n, "%s", v->valuestring);
	else if (cJSON_IsNumber(v))
		json_format_number(v->valuedouble, buf, n);
	else
		return -1;
	double x;
	int d;
	return stats_printed_parse(buf, &x, &d);
}

static int item_figure(struct checker *k, const char *id, const char *split, const char *figure,
		       const cJSON *pub, double computed, double rmin, double rmax)
{
	char p[64];
	if (printed_of(pub, p, sizeof p) < 0)
		return err_set(k->e, EXIT_USAGE, "'%s': '%s' %s: '%s' is not a printed number",
			       k->file, id, split, figure);
	double v;
	int dec;
	stats_printed_parse(p, &v, &dec);
	enum stats_verdict vd = stats_judge(computed, rmin, rmax, p);
	char c[64], a[64], b[64];
	int plus = p[0] == '+';
	stats_printed_format(computed, dec, plus, c, sizeof c);
	stats_printed_format(rmin, dec + 1, plus, a, sizeof a);
	stats_printed_format(rmax, dec + 1, plus, b, sizeof b);
	cJSON *o = item_new(id, split, figure);
	cJSON_AddStringToObject(o, "published", p);
	cJSON_AddStringToObject(o, "computed", c);
	cJSON *r = cJSON_AddArrayToObject(o, "reachable");
	cJSON_AddItemToArray(r, cJSON_CreateString(a));
	cJSON_AddItemToArray(r, cJSON_CreateString(b));
	cJSON_AddStringToObject(o, "status", stats_verdict_name(vd));
	cJSON_AddItemToArray(k->out, o);
	count(k, vd);
	return 0;
}

static int split_of(const cJSON *entry, const char *file, const char *id, int *split,
		    const char **name, struct err *e)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(entry, "split");
	if (!cJSON_IsString(s))
		return err_set(e, EXIT_USAGE, "'%s': '%s': missing 'split'", file, id);
	*name = s->valuestring;
	if (!strcmp(s->valuestring, "val"))
		*split = STATS_VAL;
	else if (!strcmp(s->valuestring, "ho") || !strcmp(s->valuestring, "heldout"))
		*split = STATS_HO;
	else
		return err_set(e, EXIT_USAGE, "'%s': '%s': split '%s' is not 'val' or 'ho'", file, id,
			       s->valuestring);
	return 0;
}

/* "dN/ARM" -> cell; NULL with why filled when absent. */
static const struct stats_cell *cell_of(struct checker *k, const char *ref, char *why, size_t n,
					int *bad)
{
	int depth = 0, off = 0;
	*bad = 0;
	if (sscanf(ref, "d%d/%n", &depth, &off) != 1 || off == 0 || depth < 1 || !ref[off]) {
		*bad = 1;
		err_set(k->e, EXIT_USAGE, "'%s': cell '%s' is not 'dDEPTH/ARM'", k->file, ref);
		return NULL;
	}
	int amb = 0;
	const struct stats_cell *c = stats_cells_find(k->cells, ref + off, depth, &amb);
	if (!c)
		snprintf(why, n, "%s: %s", ref, amb ? "ambiguous arm" : "no runs in the records");
	return c;
}

static int seed_list(const cJSON *entry, const char *file, const char *id, long **out, size_t *n,
		     struct err *e)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(entry, "seeds");
	if (!cJSON_IsArray(s) || !cJSON_GetArraySize(s))
		return err_set(e, EXIT_USAGE, "'%s': '%s': missing 'seeds'", file, id);
	*n = (size_t)cJSON_GetArraySize(s);
	*out = xmalloc(*n * sizeof **out);
	size_t i = 0;
	for (const cJSON *x = s->child; x; x = x->next, i++) {
		char *end = NULL;
		if (cJSON_IsNumber(x))
			(*out)[i] = (long)x->valuedouble;
		else if (cJSON_IsString(x) && ((*out)[i] = strtol(x->valuestring, &end, 10), *end == '\0') &&
			 x->valuestring[0])
			;
		else {
			free(*out);
			return err_set(e, EXIT_USAGE, "'%s': '%s': a seed is not an integer", file, id);
		}
	}
	return 0;
}

static const char *entry_id(const cJSON *entry, const char *fallback_key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(entry, "id");
	if (cJSON_IsString(v))
		return v->valuestring;
	v = cJSON_GetObjectItemCaseSensitive(entry, fallback_key);
	return cJSON_IsString(v) ? v->valuestring : "?";
}

/* Merged terms [[sign, "dN/ARM"], ...] resolved to cells. Returns the count,
 * 0 when a cell is missing (why filled), -1 on a malformed list. */
static int terms_of(struct checker *k, const cJSON *entry, const char *id,
		    const struct stats_cell **cell, double *coef, size_t max, char *why, size_t wn)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(entry, "terms");
	if (!cJSON_IsArray(t) || !cJSON_GetArraySize(t))
		return err_set(k->e, EXIT_USAGE, "'%s': '%s': missing 'terms'", k->file, id);
	size_t n = 0;
	for (const cJSON *x = t->child; x; x = x->next) {
		const cJSON *sg = cJSON_GetArrayItem(x, 0), *cr = cJSON_GetArrayItem(x, 1);
		if (!cJSON_IsArray(x) || cJSON_GetArraySize(x) != 2 || !cJSON_IsNumber(sg) ||
		    !cJSON_IsString(cr))
			return err_set(k->e, EXIT_USAGE, "'%s': '%s': a term is not [sign, \"dN/ARM\"]",
				       k->file, id);
		int bad;
		const struct stats_cell *c = cell_of(k, cr->valuestring, why, wn, &bad);
		if (bad)
			return -1;
		if (!c)
			return 0;
		size_t i = 0;
		while (i < n && cell[i] != c)
			i++;
		if (i == n) {
			if (n == max)
				return err_set(k->e, EXIT_USAGE, "'%s': '%s': too many terms", k->file, id);
			cell[n] = c;
			coef[n++] = 0;
		}
		coef[i] += sg->valuedouble;
	}
	return (int)n;
}

#define MAX_TERMS 64

/* Per-seed deltas of merged terms over seeds; 0 when a seed is missing. */
static int deltas_of(const struct stats_cell **cell, const double *coef, size_t nt, int split,
		     const long *seeds, size_t n, double *d, double *w, double h, char *why,
		     size_t wn)
{
	for (size_t i = 0; i < n; i++) {
		d[i] = 0;
		w[i] = 0;
		for (size_t t = 0; t < nt; t++) {
			size_t k = 0;
			while (k < cell[t]->n && cell[t]->seeds[k] != seeds[i])
				k++;
			if (k == cell[t]->n) {
				snprintf(why, wn, "d%d/%s: no run of seed %ld", cell[t]->depth, cell[t]->arm,
					 seeds[i]);
				return 0;
			}
			d[i] += coef[t] * cell[t]->bpb[split][k];
			w[i] += fabs(coef[t]) * h;
		}
	}
	return 1;
}

static int check_cell_stats(struct checker *k, const cJSON *entry)
{
	const char *id = entry_id(entry, "cell"), *sp;
	int split;
	if (split_of(entry, k->file, id, &split, &sp, k->e) < 0)
		return -1;
	const cJSON *cr = cJSON_GetObjectItemCaseSensitive(entry, "cell");
	if (!cJSON_IsString(cr))
		return err_set(k->e, EXIT_USAGE, "'%s': '%s': missing 'cell'", k->file, id);
	char why[256];
	int bad;
	const struct stats_cell *c = cell_of(k, cr->valuestring, why, sizeof why, &bad);
	if (bad)
		return -1;
	if (!c) {
		item_missing(k, id, sp, why);
		return 0;
	}
	long *seeds;
	size_t n;
	if (seed_list(entry, k->file, id, &seeds, &n, k->e) < 0)
		return -1;
	double *x = xmalloc(n * sizeof *x), *w = xmalloc(n * sizeof *w);
	double *lo = xmalloc(n * sizeof *lo), *hi = xmalloc(n * sizeof *hi), coef = 1;
	int rc = 0;
	if (!deltas_of(&c, &coef, 1, split, seeds, n, x, w, k->h, why, sizeof why)) {
		item_missing(k, id, sp, why);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		lo[i] = x[i] - w[i];
		hi[i] = x[i] + w[i];
	}
	struct stats_summary s;
	stats_summarize(x, n, &s);
	static const struct {
		const char *key, *fig;
		enum stats_figure f;
	} figs[] = {{"published_mean", "mean", STATS_FIG_MEAN}, {"published_sd", "sd", STATS_FIG_SD}};
	for (size_t f = 0; f < 2 && rc == 0; f++) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(entry, figs[f].key);
		if (!p || (figs[f].f == STATS_FIG_SD && n < 2))
			continue;
		double rmin, rmax;
		stats_range(figs[f].f, lo, hi, n, &rmin, &rmax);
		rc = item_figure(k, id, sp, figs[f].fig, p, figs[f].f == STATS_FIG_MEAN ? s.mean : s.sd,
				 rmin, rmax);
	}
out:
	free(seeds);
	free(x);
	free(w);
	free(lo);
	free(hi);
	return rc;
}

static int check_contrast(struct checker *k, const cJSON *entry)
{
	const char *id = entry_id(entry, "definition"), *sp;
	int split;
	if (split_of(entry, k->file, id, &split, &sp, k->e) < 0)
		return -1;
	const struct stats_cell *cell[MAX_TERMS];
	double coef[MAX_TERMS];
	char why[256];
	int nt = terms_of(k, entry, id, cell, coef, MAX_TERMS, why, sizeof why);
	if (nt < 0)
		return -1;
	if (nt == 0) {
		item_missing(k, id, sp, why);
		return 0;
	}
	const cJSON *pub = cJSON_GetObjectItemCaseSensitive(entry, "published");
	if (!cJSON_IsObject(pub))
		return err_set(k->e, EXIT_USAGE, "'%s': '%s': missing 'published'", k->file, id);
	long *seeds;
	size_t n;
	if (seed_list(entry, k->file, id, &seeds, &n, k->e) < 0)
		return -1;
	double *d = xmalloc(n * sizeof *d), *w = xmalloc(n * sizeof *w);
	double *lo = xmalloc(n * sizeof *lo), *hi = xmalloc(n * sizeof *hi);
	int rc = 0;
	if (!deltas_of(cell, coef, (size_t)nt, split, seeds, n, d, w, k->h, why, sizeof why)) {
		item_missing(k, id, sp, why);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		lo[i] = d[i] - w[i];
		hi[i] = d[i] + w[i];
	}
	struct stats_summary s;
	stats_summarize(d, n, &s);
	double rmin, rmax;
	const cJSON *p;
	if ((p = cJSON_GetObjectItemCaseSensitive(pub, "mean"))) {
		stats_range(STATS_FIG_MEAN, lo, hi, n, &rmin, &rmax);
		if ((rc = item_figure(k, id, sp, "mean", p, s.mean, rmin, rmax)) < 0)
			goto out;
	}
	if (n >= 2 && (p = cJSON_GetObjectItemCaseSensitive(pub, "sd"))) {
		stats_range(STATS_FIG_SD, lo, hi, n, &rmin, &rmax);
		if ((rc = item_figure(k, id, sp, "sd", p, s.sd, rmin, rmax)) < 0)
			goto out;
	}
	p = cJSON_GetObjectItemCaseSensitive(pub, "ci");
	if (n >= 2 && p) {
		if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2) {
			rc = err_set(k->e, EXIT_USAGE, "'%s': '%s': 'ci' is not [low, high]", k->file, id);
			goto out;
		}
		stats_range(STATS_FIG_CI_LO, lo, hi, n, &rmin, &rmax);
		if ((rc = item_figure(k, id, sp, "ci_low", cJSON_GetArrayItem(p, 0), s.ci[0], rmin,
				      rmax)) < 0)
			goto out;
		stats_range(STATS_FIG_CI_HI, lo, hi, n, &rmin, &rmax);
		if ((rc = item_figure(k, id, sp, "ci_high", cJSON_GetArrayItem(p, 1), s.ci[1], rmin,
				      rmax)) < 0)
			goto out;
	}
	p = cJSON_GetObjectItemCaseSensitive(pub, "seed_deltas");
	if (p) {
		if (!cJSON_IsArray(p) || (size_t)cJSON_GetArraySize(p) != n) {
			rc = err_set(k->e, EXIT_USAGE, "'%s': '%s': 'seed_deltas' does not have one value "
				     "per seed", k->file, id);
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			char fig[48];
			snprintf(fig, sizeof fig, "delta[%ld]", seeds[i]);
			if ((rc = item_figure(k, id, sp, fig, cJSON_GetArrayItem(p, (int)i), d[i], lo[i],
					      hi[i])) < 0)
				goto out;
		}
	}
	p = cJSON_GetObjectItemCaseSensitive(pub, "k_improved");
	if (p) {
		unsigned kk, nn;
		if (!cJSON_IsString(p) || sscanf(p->valuestring, "%u/%u", &kk, &nn) != 2) {
			rc = err_set(k->e, EXIT_USAGE, "'%s': '%s': 'k_improved' is not \"k/n\"", k->file, id);
			goto out;
		}
		size_t kmin = 0, kmax = 0;
		for (size_t i = 0; i < n; i++) {
			kmin += hi[i] < 0;
			kmax += lo[i] < 0;
		}
		enum stats_verdict vd = nn != n ? STATS_INCONSISTENT
				       : kk == s.improved ? STATS_OK
				       : kk >= kmin && kk <= kmax ? STATS_ROUNDING : STATS_INCONSISTENT;
		char c[32], a[32], b[32];
		snprintf(c, sizeof c, "%zu/%zu", s.improved, n);
		snprintf(a, sizeof a, "%zu/%zu", kmin, n);
		snprintf(b, sizeof b, "%zu/%zu", kmax, n);
		cJSON *o = item_new(id, sp, "k_improved");
		cJSON_AddStringToObject(o, "published", p->valuestring);
		cJSON_AddStringToObject(o, "computed", c);
		cJSON *r = cJSON_AddArrayToObject(o, "reachable");
		cJSON_AddItemToArray(r, cJSON_CreateString(a));
		cJSON_AddItemToArray(r, cJSON_CreateString(b));
		cJSON_AddStringToObject(o, "status", stats_verdict_name(vd));
		cJSON_AddItemToArray(k->out, o);
		count(k, vd);
	}
	p = cJSON_GetObjectItemCaseSensitive(entry, "t_crit");
	if (p && n >= 2)
		rc = item_figure(k, id, sp, "t_crit", p, s.t, s.t, s.t);
out:
	free(seeds);
	free(d);
	free(w);
	free(lo);
	free(hi);
	return rc;
}

/* Add side's mean coefficients (coef / n per (cell, seed)) into the variables. */
static int ratio_side(struct checker *k, const cJSON *side, const char *id, int split,
		      const struct stats_cell **vc, long *vs, double *vx, double *a, double *b,
		      size_t *m, size_t maxv, int which, char *why, size_t wn)
{
	const struct stats_cell *cell[MAX_TERMS];
	double coef[MAX_TERMS];
	int nt = terms_of(k, side, id, cell, coef, MAX_TERMS, why, wn);
	if (nt <= 0)
		return nt;
	long *seeds;
	size_t n;
	if (seed_list(side, k->file, id, &seeds, &n, k->e) < 0)
		return -1;
	for (int t = 0; t < nt; t++)
		for (size_t i = 0; i < n; i++) {
			size_t q = 0;
			while (q < cell[t]->n && cell[t]->seeds[q] != seeds[i])
				q++;
			if (q == cell[t]->n) {
				snprintf(why, wn, "d%d/%s: no run of seed %ld", cell[t]->depth, cell[t]->arm,
					 seeds[i]);
				free(seeds);
				return 0;
			}
			size_t j = 0;
			while (j < *m && !(vc[j] == cell[t] && vs[j] == seeds[i]))
				j++;
			if (j == *m) {
				if (*m == maxv) {
					free(seeds);
					return err_set(k->e, EXIT_USAGE, "'%s': '%s': too many inputs",
						       k->file, id);
				}
				vc[j] = cell[t];
				vs[j] = seeds[i];
				vx[j] = cell[t]->bpb[split][q];
				a[j] = b[j] = 0;
				(*m)++;
			}
			(which ? b : a)[j] += coef[t] / (double)n;
		}
	free(seeds);
	return 1;
}

static int check_ratio(struct checker *k, const cJSON *entry)
{
	const char *id = entry_id(entry, "formula"), *sp;
	int split;
	if (split_of(entry, k->file, id, &split, &sp, k->e) < 0)
		return -1;
	const cJSON *num = cJSON_GetObjectItemCaseSensitive(entry, "numerator");
	const cJSON *den = cJSON_GetObjectItemCaseSensitive(entry, "denominator");
	const cJSON *pub = cJSON_GetObjectItemCaseSensitive(entry, "published_pct");
	if (!cJSON_IsObject(num) || !cJSON_IsObject(den) || !pub)
		return err_set(k->e, EXIT_USAGE, "'%s': '%s': a ratio needs 'numerator', "
			       "'denominator' and 'published_pct'", k->file, id);
	enum { MAXV = 512 };
	const struct stats_cell **vc = xmalloc(MAXV * sizeof *vc);
	long *vs = xmalloc(MAXV * sizeof *vs);
	double *vx = xmalloc(MAXV * sizeof *vx), *a = xmalloc(MAXV * sizeof *a);
	double *b = xmalloc(MAXV * sizeof *b), *lo = xmalloc(MAXV * sizeof *lo);
	double *hi = xmalloc(MAXV * sizeof *hi);
	size_t m = 0;
	char why[256];
	int rc = ratio_side(k, num, id, split, vc, vs, vx, a, b, &m, MAXV, 0, why, sizeof why);
	if (rc > 0)
		rc = ratio_side(k, den, id, split, vc, vs, vx, a, b, &m, MAXV, 1, why, sizeof why);
	if (rc == 0)
		item_missing(k, id, sp, why);
	if (rc > 0) {
		double sa = 0, sb = 0;
		for (size_t j = 0; j < m; j++) {
			sa += a[j] * vx[j];
			sb += b[j] * vx[j];
			lo[j] = vx[j] - k->h;
			hi[j] = vx[j] + k->h;
		}
		double rmin, rmax;
		stats_range_ratio(a, b, lo, hi, m, &rmin, &rmax);
		rc = item_figure(k, id, sp, "ratio_pct", pub, 100.0 * sa / sb, rmin, rmax);
	}
	free(vc);
	free(vs);
	free(vx);
	free(a);
	free(b);
	free(lo);
	free(hi);
	return rc < 0 ? -1 : 0;
}

int stats_check_published(const cJSON *pub, const char *name, const struct stats_cells *cells,
			  int input_decimals, cJSON *out, struct stats_check_counts *counts,
			  struct err *e)
{
	struct checker k = {name, cells, 0.5 * pow(10.0, -input_decimals), out, counts, e};
	if (!cJSON_IsObject(pub))
		return err_set(e, EXIT_USAGE, "'%s': expected a JSON object", name);
	static const struct {
		const char *key;
		int (*fn)(struct checker *, const cJSON *);
	} parts[] = {{"cell_stats", check_cell_stats}, {"contrasts", check_contrast},
		     {"ratios", check_ratio}};
	int any = 0;
	for (size_t p = 0; p < 3; p++) {
		const cJSON *arr = cJSON_GetObjectItemCaseSensitive(pub, parts[p].key);
		if (!arr)
			continue;
		if (!cJSON_IsArray(arr))
			return err_set(e, EXIT_USAGE, "'%s': '%s' is not an array", name, parts[p].key);
		any = 1;
		int i = 0;
		for (const cJSON *x = arr->child; x; x = x->next, i++) {
			if (!cJSON_IsObject(x))
				return err_set(e, EXIT_USAGE, "'%s': %s[%d] is not an object", name,
					       parts[p].key, i);
			if (parts[p].fn(&k, x) < 0) {
				err_prefix(e, "%s[%d]", parts[p].key, i);
				return -1;
			}
		}
	}
	if (!any)
		return err_set(e, EXIT_USAGE, "'%s': no 'cell_stats', 'contrasts' or 'ratios' to check",
			       name);
	return 0;
}

void stats_print_check(FILE *f, const cJSON *items, const struct stats_check_counts *counts,
		       int verbose)
{
	for (const cJSON *o = items->child; o; o = o->next) {
		const char *st = cJSON_GetObjectItemCaseSensitive(o, "status")->valuestring;
		if (!verbose && !strcmp(st, "ok"))
			continue;
		const char *id = cJSON_GetObjectItemCaseSensitive(o, "id")->valuestring;
		const char *sp = cJSON_GetObjectItemCaseSensitive(o, "split")->valuestring;
		const char *fig = cJSON_GetObjectItemCaseSensitive(o, "figure")->valuestring;
		if (!strcmp(st, "missing")) {
			fprintf(f, "%-12s %s [%s]: %s\n", st, id, sp,
				cJSON_GetObjectItemCaseSensitive(o, "why")->valuestring);
			continue;
		}
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "reachable");
		fprintf(f, "%-12s %s [%s] %s: published %s, computed %s (inputs within half a unit "
			"reach %s .. %s)\n", st, id, sp, fig,
			cJSON_GetObjectItemCaseSensitive(o, "published")->valuestring,
			cJSON_GetObjectItemCaseSensitive(o, "computed")->valuestring,
			cJSON_GetArrayItem(r, 0)->valuestring, cJSON_GetArrayItem(r, 1)->valuestring);
	}
	fprintf(f, "%zu figures: %zu ok, %zu rounding, %zu inconsistent, %zu missing\n",
		counts->ok + counts->rounding + counts->inconsistent + counts->missing, counts->ok,
		counts->rounding, counts->inconsistent, counts->missing);
}

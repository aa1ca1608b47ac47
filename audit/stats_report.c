/* stats_report.c: the outputs of supkit audit stats: Markdown tables in the
 * papers' layout (Table 2: per-cell seeds and mean +- SD; Table 3: paired
 * contrasts with t intervals, per-seed deltas, k/n improved and ratios), the
 * deterministic JSON record, and the rounding-aware check of a published
 * file against the records.
 *
 * Reference: supkit-audit(1), stats (printing: BPB to 6 decimals, ratios to
 * 1); papers 000/001, Tables 2 and 3; docs/papers.md, and
 * tests/fixtures/stats/stats.json (the layout --check reads). Left out: LaTeX output.
 */
#include "audit/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/claims.h"
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
	int claim; /* the claim an item belongs to, or -1 */
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

static cJSON *item_new_k(const struct checker *k, const char *id, const char *split, const char *figure)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", id);
	cJSON_AddStringToObject(o, "split", split);
	cJSON_AddStringToObject(o, "figure", figure);
	if (k->claim >= 0)
		cJSON_AddNumberToObject(o, "claim", k->claim);
	return o;
}
#define item_new(id, split, figure) item_new_k(k, id, split, figure)

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
	/* one seed's value, as printed in the table */
	const cJSON *pv = cJSON_GetObjectItemCaseSensitive(entry, "published_value");
	if (pv) {
		const cJSON *sd = cJSON_GetObjectItemCaseSensitive(entry, "seed");
		size_t i = 0;
		while (cJSON_IsNumber(sd) && i < n && seeds[i] != (long)sd->valuedouble)
			i++;
		if (!cJSON_IsNumber(sd) || i == n) {
			rc = err_set(k->e, EXIT_USAGE, "'%s': '%s': 'seed' is not one of 'seeds'", k->file, id);
			goto out;
		}
		char fig[48];
		snprintf(fig, sizeof fig, "value[%ld]", seeds[i]);
		rc = item_figure(k, id, sp, fig, pv, x[i], lo[i], hi[i]);
	}
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
	static const char *const one_ci[2] = {"ci_low", "ci_high"};
	for (int b = 0; b < 2 && n >= 2; b++) {
		if (!(p = cJSON_GetObjectItemCaseSensitive(pub, one_ci[b])))
			continue;
		stats_range(b ? STATS_FIG_CI_HI : STATS_FIG_CI_LO, lo, hi, n, &rmin, &rmax);
		if ((rc = item_figure(k, id, sp, one_ci[b], p, s.ci[b], rmin, rmax)) < 0)
			goto out;
	}
	if ((p = cJSON_GetObjectItemCaseSensitive(pub, "delta"))) {
		const cJSON *sd = cJSON_GetObjectItemCaseSensitive(entry, "seed");
		size_t i = 0;
		while (cJSON_IsNumber(sd) && i < n && seeds[i] != (long)sd->valuedouble)
			i++;
		if (!cJSON_IsNumber(sd) || i == n) {
			rc = err_set(k->e, EXIT_USAGE, "'%s': '%s': 'seed' is not one of 'seeds'", k->file, id);
			goto out;
		}
		char fig[48];
		snprintf(fig, sizeof fig, "delta[%ld]", seeds[i]);
		if ((rc = item_figure(k, id, sp, fig, p, d[i], lo[i], hi[i])) < 0)
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
	struct checker k = {name, cells, 0.5 * pow(10.0, -input_decimals), out, counts, e, -1};
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

/* ---- its own --json, read back ------------------------------------------------ */

/* A number of the --json record agrees when it is within 1e-12 of the
 * recomputed one, relative (the same records give the same numbers up to the
 * last bits of the t quantile's library). */
static int own_close(double x, double p)
{
	double m = fabs(x) > fabs(p) ? fabs(x) : fabs(p);
	return x == p || fabs(x - p) <= 1e-12 * m || fabs(x - p) <= 1e-300;
}

static void own_item(struct checker *k, const char *id, const char *split, const char *fig,
		     const cJSON *pub, double x)
{
	char p[64], c[64];
	if (cJSON_IsNumber(pub))
		json_format_number(pub->valuedouble, p, sizeof p);
	else
		snprintf(p, sizeof p, "%s", cJSON_IsNull(pub) ? "null" : "not a number");
	json_format_number(x, c, sizeof c);
	int ok = cJSON_IsNumber(pub) ? own_close(x, pub->valuedouble) : (cJSON_IsNull(pub) && !isfinite(x));
	cJSON *o = item_new(id, split, fig);
	cJSON_AddStringToObject(o, "published", p);
	cJSON_AddStringToObject(o, "computed", c);
	cJSON *r = cJSON_AddArrayToObject(o, "reachable");
	cJSON_AddItemToArray(r, cJSON_CreateString(c));
	cJSON_AddItemToArray(r, cJSON_CreateString(c));
	cJSON_AddStringToObject(o, "status", ok ? "ok" : "inconsistent");
	cJSON_AddItemToArray(k->out, o);
	count(k, ok ? STATS_OK : STATS_INCONSISTENT);
}

static const cJSON *get(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* Seeds of a --json cell or contrast; -1 on a malformed list. */
static int own_seeds(struct checker *k, const cJSON *o, const char *id, long **seeds, size_t *n)
{
	const cJSON *s = get(o, "seeds");
	if (!cJSON_IsArray(s))
		return err_set(k->e, EXIT_USAGE, "'%s': '%s': 'seeds' is not an array", k->file, id);
	*n = (size_t)cJSON_GetArraySize(s);
	*seeds = xmalloc((*n + 1) * sizeof **seeds);
	size_t i = 0;
	for (const cJSON *x = s->child; x; x = x->next, i++) {
		if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble)) {
			free(*seeds);
			return err_set(k->e, EXIT_USAGE, "'%s': '%s': a seed is not an integer", k->file, id);
		}
		(*seeds)[i] = (long)x->valuedouble;
	}
	return 0;
}

/* Compare a published array of numbers (one per seed) with x. */
static void own_array(struct checker *k, const char *id, const char *sp, const char *what,
		      const cJSON *arr, const long *seeds, const double *x, size_t n)
{
	if (!cJSON_IsArray(arr))
		return;
	size_t i = 0;
	for (const cJSON *v = arr->child; v; v = v->next, i++) {
		char fig[64];
		snprintf(fig, sizeof fig, "%s[%ld]", what, i < n ? seeds[i] : -1L);
		if (i < n)
			own_item(k, id, sp, fig, v, x[i]);
	}
	if (i != n) {
		char why[128];
		snprintf(why, sizeof why, "%s: %zu values for %zu seeds", what, i, n);
		item_missing(k, id, sp, why);
	}
}

static void own_summary(struct checker *k, const char *id, const char *sp, const cJSON *o,
			const struct stats_summary *s, int with_ci)
{
	const cJSON *p;
	if ((p = get(o, "mean")))
		own_item(k, id, sp, "mean", p, s->mean);
	if ((p = get(o, "sd")))
		own_item(k, id, sp, "sd", p, s->sd);
	if (!with_ci)
		return;
	p = get(o, "ci95");
	if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 2) {
		own_item(k, id, sp, "ci_low", cJSON_GetArrayItem(p, 0), s->ci[0]);
		own_item(k, id, sp, "ci_high", cJSON_GetArrayItem(p, 1), s->ci[1]);
	}
	if ((p = get(o, "improved")))
		own_item(k, id, sp, "improved", p, (double)s->improved);
}

static int own_cells(struct checker *k, const cJSON *arr)
{
	int i = 0;
	for (const cJSON *o = arr->child; o; o = o->next, i++) {
		const cJSON *arm = get(o, "arm"), *depth = get(o, "depth");
		if (!cJSON_IsObject(o) || !cJSON_IsString(arm) || !cJSON_IsNumber(depth))
			return err_set(k->e, EXIT_USAGE, "'%s': cells[%d]: expected an object with 'arm' and 'depth'",
				       k->file, i);
		char id[300];
		snprintf(id, sizeof id, "d%d/%s", (int)depth->valuedouble, arm->valuestring);
		int amb = 0;
		const struct stats_cell *c = stats_cells_find(k->cells, arm->valuestring, (int)depth->valuedouble, &amb);
		if (!c) {
			item_missing(k, id, "*", amb ? "ambiguous arm" : "no runs in the records");
			continue;
		}
		long *seeds;
		size_t n;
		if (own_seeds(k, o, id, &seeds, &n) < 0)
			return -1;
		const cJSON *pn = get(o, "n");
		if (pn)
			own_item(k, id, "*", "n", pn, (double)c->n);
		double *x = xmalloc((n + 1) * sizeof *x);
		for (int sp = 0; sp < STATS_NSPLIT; sp++) {
			const cJSON *so = get(o, split_key[sp]);
			if (!so)
				continue;
			char why[400] = "";
			for (size_t q = 0; q < n && !why[0]; q++) {
				size_t j = 0;
				while (j < c->n && c->seeds[j] != seeds[q])
					j++;
				if (j == c->n)
					snprintf(why, sizeof why, "%s: no run of seed %ld", id, seeds[q]);
				else
					x[q] = c->bpb[sp][j];
			}
			if (why[0]) {
				item_missing(k, id, split_key[sp], why);
				continue;
			}
			own_array(k, id, split_key[sp], "bpb", get(so, "bpb"), seeds, x, n);
			struct stats_summary s;
			stats_summarize(x, n, &s);
			own_summary(k, id, split_key[sp], so, &s, 0);
		}
		free(x);
		free(seeds);
	}
	return 0;
}

/* Per-seed deltas and summaries of a --json contrast; 0 when a cell or seed
 * is missing (why filled), -1 on a malformed contrast. */
static int own_contrast_eval(struct checker *k, const cJSON *o, const char *id, long **seeds, size_t *n,
			     double *d[STATS_NSPLIT], struct stats_summary s[STATS_NSPLIT], char *why, size_t wn)
{
	const cJSON *terms = get(o, "terms");
	if (!cJSON_IsArray(terms) || !cJSON_GetArraySize(terms))
		return err_set(k->e, EXIT_USAGE, "'%s': '%s': 'terms' is missing", k->file, id);
	if (own_seeds(k, o, id, seeds, n) < 0)
		return -1;
	for (int sp = 0; sp < STATS_NSPLIT; sp++)
		d[sp] = xcalloc(*n + 1, sizeof *d[sp]);
	for (const cJSON *t = terms->child; t; t = t->next) {
		const cJSON *arm = get(t, "arm"), *depth = get(t, "depth"), *coef = get(t, "coef");
		if (!cJSON_IsString(arm) || !cJSON_IsNumber(depth) || !cJSON_IsNumber(coef))
			return err_set(k->e, EXIT_USAGE, "'%s': '%s': a term is not {\"arm\", \"coef\", \"depth\"}",
				       k->file, id);
		int amb = 0;
		const struct stats_cell *c = stats_cells_find(k->cells, arm->valuestring, (int)depth->valuedouble, &amb);
		if (!c) {
			snprintf(why, wn, "d%d/%s: no runs in the records", (int)depth->valuedouble, arm->valuestring);
			return 0;
		}
		for (size_t q = 0; q < *n; q++) {
			size_t j = 0;
			while (j < c->n && c->seeds[j] != (*seeds)[q])
				j++;
			if (j == c->n) {
				snprintf(why, wn, "d%d/%s: no run of seed %ld", c->depth, c->arm, (*seeds)[q]);
				return 0;
			}
			for (int sp = 0; sp < STATS_NSPLIT; sp++)
				d[sp][q] += coef->valuedouble * c->bpb[sp][j];
		}
	}
	for (int sp = 0; sp < STATS_NSPLIT; sp++)
		stats_summarize(d[sp], *n, &s[sp]);
	return 1;
}

static int own_contrasts(struct checker *k, const cJSON *arr)
{
	int i = 0;
	for (const cJSON *o = arr->child; o; o = o->next, i++) {
		const cJSON *nm = get(o, "name"), *sc = get(o, "scope");
		if (!cJSON_IsObject(o) || !cJSON_IsString(nm))
			return err_set(k->e, EXIT_USAGE, "'%s': contrasts[%d]: expected an object with a 'name'",
				       k->file, i);
		char id[600];
		snprintf(id, sizeof id, "%s at %s", nm->valuestring, cJSON_IsString(sc) ? sc->valuestring : "?");
		long *seeds = NULL;
		size_t n = 0;
		double *d[STATS_NSPLIT] = {NULL, NULL};
		struct stats_summary s[STATS_NSPLIT];
		char why[300];
		int rc = own_contrast_eval(k, o, id, &seeds, &n, d, s, why, sizeof why);
		if (rc < 0) {
			free(seeds);
			for (int sp = 0; sp < STATS_NSPLIT; sp++)
				free(d[sp]);
			return -1;
		}
		if (rc == 0) {
			item_missing(k, id, "*", why);
		} else {
			const cJSON *p;
			if ((p = get(o, "n")))
				own_item(k, id, "*", "n", p, (double)n);
			if ((p = get(o, "df")))
				own_item(k, id, "*", "df", p, (double)n - 1);
			if ((p = get(o, "t")))
				own_item(k, id, "*", "t", p, s[0].t);
			for (int sp = 0; sp < STATS_NSPLIT; sp++) {
				const cJSON *so = get(o, split_key[sp]);
				if (!so)
					continue;
				own_array(k, id, split_key[sp], "delta", get(so, "deltas"), seeds, d[sp], n);
				own_summary(k, id, split_key[sp], so, &s[sp], 1);
			}
			/* ratios: this contrast's mean over the named one's at the same scope */
			const cJSON *ra = get(o, "ratios_pct");
			for (const cJSON *r = cJSON_IsArray(ra) ? ra->child : NULL; r; r = r->next) {
				const cJSON *of = get(r, "of");
				const cJSON *ref = NULL;
				for (const cJSON *x = arr->child; x && cJSON_IsString(of); x = x->next) {
					const cJSON *xn = get(x, "name"), *xs = get(x, "scope");
					if (cJSON_IsString(xn) && !strcmp(xn->valuestring, of->valuestring) &&
					    cJSON_IsString(xs) && cJSON_IsString(sc) && !strcmp(xs->valuestring, sc->valuestring))
						ref = x;
				}
				char fig[600];
				snprintf(fig, sizeof fig, "ratio_pct of %s", cJSON_IsString(of) ? of->valuestring : "?");
				if (!ref) {
					item_missing(k, id, "*", "ratio: its reference contrast is not in the file");
					continue;
				}
				long *rs = NULL;
				size_t rn = 0;
				double *rd[STATS_NSPLIT] = {NULL, NULL};
				struct stats_summary rsum[STATS_NSPLIT];
				int r2 = own_contrast_eval(k, ref, fig, &rs, &rn, rd, rsum, why, sizeof why);
				if (r2 > 0)
					for (int sp = 0; sp < STATS_NSPLIT; sp++)
						if ((p = get(r, split_key[sp])))
							own_item(k, id, split_key[sp], fig, p,
								 100.0 * s[sp].mean / rsum[sp].mean);
				if (r2 == 0)
					item_missing(k, id, "*", why);
				free(rs);
				for (int sp = 0; sp < STATS_NSPLIT; sp++)
					free(rd[sp]);
				if (r2 < 0) {
					rc = -1;
					break;
				}
			}
		}
		free(seeds);
		for (int sp = 0; sp < STATS_NSPLIT; sp++)
			free(d[sp]);
		if (rc < 0)
			return -1;
	}
	return 0;
}

int stats_check_own(const cJSON *pub, const char *name, const struct stats_cells *cells, cJSON *out,
		    struct stats_check_counts *counts, struct err *e)
{
	struct checker k = {name, cells, 0, out, counts, e, -1};
	const cJSON *c = get(pub, "cells"), *x = get(pub, "contrasts");
	if (!cJSON_IsArray(c))
		return err_set(e, EXIT_USAGE, "'%s': 'cells' is not an array", name);
	if (own_cells(&k, c) < 0)
		return -1;
	if (x && !cJSON_IsArray(x))
		return err_set(e, EXIT_USAGE, "'%s': 'contrasts' is not an array", name);
	if (x && own_contrasts(&k, x) < 0)
		return -1;
	return 0;
}

int stats_is_own(const cJSON *pub)
{
	return cJSON_IsObject(pub) && cJSON_IsArray(get(pub, "cells"));
}

/* ---- claims --------------------------------------------------------------------- */

int stats_check_claims(const cJSON *claims, const char *name, const struct stats_cells *cells,
		       int input_decimals, cJSON *out, struct stats_check_counts *counts, int *n_other,
		       struct err *e)
{
	struct checker k = {name, cells, 0, out, counts, e, -1};
	*n_other = 0;
	int i = 0;
	for (const cJSON *c = claims_list(claims)->child; c; c = c->next, i++) {
		if (!claims_of(claims, c, "supkit-audit", "stats")) {
			(*n_other)++;
			continue;
		}
		const cJSON *f = get(c, "figure");
		const char *value = get(c, "value")->valuestring, *where = get(c, "where")->valuestring;
		const cJSON *tab = get(f, "table"), *stat = get(f, "stat"), *idec = get(f, "input_decimals");
		k.claim = i;
		int dec = input_decimals;
		if (dec < 0)
			dec = cJSON_IsNumber(idec) && idec->valuedouble >= 0 && idec->valuedouble <= 15
				      ? (int)idec->valuedouble : -1;
		k.h = dec < 0 ? 0 : 0.5 * pow(10.0, -dec);
		if (!cJSON_IsString(tab))
			return err_set(e, EXIT_USAGE, "'%s': claims[%d]: figure.table is not \"cell\", "
				       "\"contrast\" or \"ratio\"", name, i);
		/* the claim as an entry of the published layout, with its one figure */
		cJSON *entry = cJSON_Duplicate(f, 1);
		cJSON_DeleteItemFromObjectCaseSensitive(entry, "id");
		cJSON_AddStringToObject(entry, "id", where);
		int rc;
		const char *st = cJSON_IsString(stat) ? stat->valuestring : "";
		if (!strcmp(tab->valuestring, "cell")) {
			static const char *const keys[][2] = {{"mean", "published_mean"}, {"sd", "published_sd"},
							      {"value", "published_value"}};
			size_t q = 0;
			while (q < 3 && strcmp(st, keys[q][0]))
				q++;
			if (q == 3) {
				cJSON_Delete(entry);
				return err_set(e, EXIT_USAGE, "'%s': claims[%d]: a cell's stat is mean, sd or value",
					       name, i);
			}
			cJSON_AddStringToObject(entry, keys[q][1], value);
			rc = check_cell_stats(&k, entry);
		} else if (!strcmp(tab->valuestring, "contrast")) {
			static const char *const stats_ok[] = {"mean", "sd", "ci_low", "ci_high", "delta", "k_improved"};
			size_t q = 0;
			while (q < 6 && strcmp(st, stats_ok[q]))
				q++;
			if (q == 6 && strcmp(st, "t")) {
				cJSON_Delete(entry);
				return err_set(e, EXIT_USAGE, "'%s': claims[%d]: a contrast's stat is mean, sd, ci_low, "
					       "ci_high, delta, k_improved or t", name, i);
			}
			cJSON *pub = cJSON_CreateObject();
			if (q < 6)
				cJSON_AddStringToObject(pub, st, value);
			else
				cJSON_AddStringToObject(entry, "t_crit", value);
			cJSON_AddItemToObject(entry, "published", pub);
			rc = check_contrast(&k, entry);
		} else if (!strcmp(tab->valuestring, "ratio")) {
			cJSON_AddStringToObject(entry, "published_pct", value);
			rc = check_ratio(&k, entry);
		} else {
			cJSON_Delete(entry);
			return err_set(e, EXIT_USAGE, "'%s': claims[%d]: figure.table is not \"cell\", \"contrast\" "
				       "or \"ratio\"", name, i);
		}
		cJSON_Delete(entry);
		if (rc < 0) {
			err_prefix(e, "claims[%d]", i);
			return -1;
		}
	}
	return 0;
}

static cJSON *terms_json(const struct stats_contrast *c)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t t = 0; t < c->def->n_terms; t++) {
		cJSON *x = cJSON_CreateArray();
		char cell[300];
		snprintf(cell, sizeof cell, "d%d/%s", c->cells[t]->depth, c->cells[t]->arm);
		cJSON_AddItemToArray(x, cJSON_CreateNumber(c->def->terms[t].coef));
		cJSON_AddItemToArray(x, cJSON_CreateString(cell));
		cJSON_AddItemToArray(a, x);
	}
	return a;
}

static const char *split_word[STATS_NSPLIT] = {"validation", "held-out"};

static void claim6(cJSON *file, double v, int plus, const char *where, const cJSON *deriv, cJSON *fig)
{
	char buf[64];
	stats_printed_format(v, 6, plus, buf, sizeof buf);
	claims_add(file, buf, where, deriv, fig);
}

void stats_claims_add(cJSON *file, const struct stats_cells *cells, const struct stats_results *res,
		      const cJSON *deriv)
{
	char where[1200];
	for (size_t i = 0; i < cells->n; i++) {
		const struct stats_cell *c = &cells->c[i];
		char cell[300];
		snprintf(cell, sizeof cell, "d%d/%s", c->depth, c->arm);
		for (int s = 0; s < STATS_NSPLIT; s++) {
			for (size_t k = 0; k <= c->n + 1; k++) {
				const char *stat = k < c->n ? "value" : k == c->n ? "mean" : "sd";
				if (k == c->n + 1 && c->n < 2)
					continue;
				cJSON *f = cJSON_CreateObject();
				cJSON_AddStringToObject(f, "table", "cell");
				cJSON_AddStringToObject(f, "cell", cell);
				cJSON_AddStringToObject(f, "split", split_key[s]);
				cJSON_AddItemToObject(f, "seeds", seed_array(c->seeds, c->n));
				cJSON_AddStringToObject(f, "stat", stat);
				double v;
				if (k < c->n) {
					cJSON_AddNumberToObject(f, "seed", (double)c->seeds[k]);
					snprintf(where, sizeof where, "per-cell table: row %s, seed %ld, %s BPB", cell,
						 c->seeds[k], split_word[s]);
					v = c->bpb[s][k];
				} else {
					snprintf(where, sizeof where, "per-cell table: row %s, %s BPB %s", cell, split_word[s],
						 stat);
					v = k == c->n ? c->sum[s].mean : c->sum[s].sd;
				}
				claim6(file, v, 0, where, deriv, f);
			}
		}
	}
	for (size_t i = 0; res && i < res->n; i++) {
		const struct stats_contrast *c = &res->c[i];
		for (int s = 0; s < STATS_NSPLIT; s++) {
			const struct stats_summary *m = &c->sum[s];
			struct fig {
				const char *stat;
				double v;
				int plus;
				long seed;
			} figs[64];
			size_t nf = 0;
			figs[nf++] = (struct fig){"mean", m->mean, 1, -1};
			if (c->n >= 2) {
				figs[nf++] = (struct fig){"sd", m->sd, 0, -1};
				figs[nf++] = (struct fig){"ci_low", m->ci[0], 1, -1};
				figs[nf++] = (struct fig){"ci_high", m->ci[1], 1, -1};
			}
			for (size_t q = 0; q < c->n && nf < 63; q++)
				figs[nf++] = (struct fig){"delta", c->delta[s][q], 1, c->seeds[q]};
			for (size_t q = 0; q <= nf; q++) {
				cJSON *f = cJSON_CreateObject();
				cJSON_AddStringToObject(f, "table", "contrast");
				cJSON_AddItemToObject(f, "terms", terms_json(c));
				cJSON_AddItemToObject(f, "seeds", seed_array(c->seeds, c->n));
				cJSON_AddStringToObject(f, "split", split_key[s]);
				if (q == nf) {
					char kn[64];
					snprintf(kn, sizeof kn, "%zu/%zu", m->improved, m->n);
					cJSON_AddStringToObject(f, "stat", "k_improved");
					snprintf(where, sizeof where, "contrasts table: %s at %s, %s, k/n seeds improved",
						 c->def->name, c->scope, split_word[s]);
					claims_add(file, kn, where, deriv, f);
					continue;
				}
				cJSON_AddStringToObject(f, "stat", figs[q].stat);
				if (figs[q].seed >= 0) {
					cJSON_AddNumberToObject(f, "seed", (double)figs[q].seed);
					snprintf(where, sizeof where, "contrasts table: %s at %s, %s, delta of seed %ld",
						 c->def->name, c->scope, split_word[s], figs[q].seed);
				} else {
					snprintf(where, sizeof where, "contrasts table: %s at %s, %s, %s", c->def->name,
						 c->scope, split_word[s], figs[q].stat);
				}
				claim6(file, figs[q].v, figs[q].plus, where, deriv, f);
			}
			for (size_t r = 0; r < c->n_ratios; r++) {
				const struct stats_contrast *ref = &res->c[c->ratios[r].ref];
				cJSON *f = cJSON_CreateObject();
				cJSON_AddStringToObject(f, "table", "ratio");
				cJSON_AddStringToObject(f, "split", split_key[s]);
				cJSON *num = cJSON_AddObjectToObject(f, "numerator");
				cJSON_AddItemToObject(num, "terms", terms_json(c));
				cJSON_AddItemToObject(num, "seeds", seed_array(c->seeds, c->n));
				cJSON *den = cJSON_AddObjectToObject(f, "denominator");
				cJSON_AddItemToObject(den, "terms", terms_json(ref));
				cJSON_AddItemToObject(den, "seeds", seed_array(ref->seeds, ref->n));
				char p[64];
				stats_printed_format(c->ratios[r].pct[s], 1, 0, p, sizeof p);
				snprintf(where, sizeof where, "contrasts table: %s at %s, %s, ratio (%%) of %s", c->def->name,
					 c->scope, split_word[s], ref->def->name);
				claims_add(file, p, where, deriv, f);
			}
		}
	}
}

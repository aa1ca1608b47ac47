/* stats.c: the numbers of supkit audit stats: t quantiles, summaries, cells,
 * contrast evaluation, and the ranges behind the rounding-aware check.
 *
 * Reference: supkit-audit(1), stats (mean, sample SD, t interval, k/n
 * improved, ratios); docs/papers.md (rounding: a figure recomputed from
 * 6-decimal inputs may differ from the printed one; the check asks whether
 * some inputs within half a unit of the printed ones give the printed figure).
 *
 * Ranges are exact for linear figures (means, deltas, ratios: a linear-
 * fractional function, solved by bisection on a separable test) and for the
 * convex/concave ones (SD, interval bounds) the maximum of a convex function
 * over a box is taken at a vertex (all 2^n enumerated for n <= 20 seeds) and
 * the minimum by cyclic coordinate descent with golden-section line searches
 * (plus the all-equal point where the boxes meet, where the SD is not smooth).
 * Left out: anything but 95% two-sided intervals.
 */
#include "audit/stats.h"

#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double stats_t_quantile(double p, double df)
{
	return gsl_cdf_tdist_Pinv(p, df);
}

void stats_summarize(const double *x, size_t n, struct stats_summary *s)
{
	memset(s, 0, sizeof *s);
	s->n = n;
	s->mean = s->sd = s->t = s->ci[0] = s->ci[1] = NAN;
	if (n == 0)
		return;
	double sum = 0;
	for (size_t i = 0; i < n; i++) {
		sum += x[i];
		if (x[i] < 0)
			s->improved++;
	}
	s->mean = sum / (double)n;
	if (n < 2)
		return;
	double ss = 0;
	for (size_t i = 0; i < n; i++)
		ss += (x[i] - s->mean) * (x[i] - s->mean);
	s->sd = sqrt(ss / (double)(n - 1));
	s->t = stats_t_quantile(0.975, (double)(n - 1));
	double hw = s->t * s->sd / sqrt((double)n);
	s->ci[0] = s->mean - hw;
	s->ci[1] = s->mean + hw;
}

/* ---- cells ---------------------------------------------------------------- */

static int run_cmp(const void *a, const void *b)
{
	const struct stats_run *x = *(const struct stats_run *const *)a;
	const struct stats_run *y = *(const struct stats_run *const *)b;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	int c = strcmp(x->arm, y->arm);
	if (c)
		return c;
	return x->seed < y->seed ? -1 : x->seed > y->seed;
}

void stats_cells_build(const struct stats_records *r, struct stats_cells *cells)
{
	memset(cells, 0, sizeof *cells);
	if (!r->n)
		return;
	const struct stats_run **v = xmalloc(r->n * sizeof *v);
	for (size_t i = 0; i < r->n; i++)
		v[i] = &r->runs[i];
	qsort(v, r->n, sizeof *v, run_cmp);
	cells->c = xcalloc(r->n, sizeof *cells->c);
	for (size_t i = 0; i < r->n;) {
		size_t j = i;
		while (j < r->n && v[j]->depth == v[i]->depth && !strcmp(v[j]->arm, v[i]->arm))
			j++;
		struct stats_cell *c = &cells->c[cells->n++];
		c->arm = xstrdup(v[i]->arm);
		c->depth = v[i]->depth;
		c->n = j - i;
		c->seeds = xmalloc(c->n * sizeof *c->seeds);
		for (int s = 0; s < STATS_NSPLIT; s++)
			c->bpb[s] = xmalloc(c->n * sizeof *c->bpb[s]);
		for (size_t k = 0; k < c->n; k++) {
			c->seeds[k] = v[i + k]->seed;
			for (int s = 0; s < STATS_NSPLIT; s++)
				c->bpb[s][k] = v[i + k]->bpb[s];
		}
		for (int s = 0; s < STATS_NSPLIT; s++)
			stats_summarize(c->bpb[s], c->n, &c->sum[s]);
		i = j;
	}
	free(v);
}

void stats_cells_free(struct stats_cells *cells)
{
	for (size_t i = 0; i < cells->n; i++) {
		free(cells->c[i].arm);
		free(cells->c[i].seeds);
		for (int s = 0; s < STATS_NSPLIT; s++)
			free(cells->c[i].bpb[s]);
	}
	free(cells->c);
	memset(cells, 0, sizeof *cells);
}

const struct stats_cell *stats_cells_find(const struct stats_cells *cells, const char *arm,
					  int depth, int *ambiguous)
{
	const struct stats_cell *hit = NULL;
	size_t len = strlen(arm);
	int n = 0;
	if (ambiguous)
		*ambiguous = 0;
	for (size_t i = 0; i < cells->n; i++)
		if (cells->c[i].depth == depth && !strcmp(cells->c[i].arm, arm))
			return &cells->c[i];
	for (size_t i = 0; i < cells->n; i++) {
		const struct stats_cell *c = &cells->c[i];
		if (c->depth == depth && !strncmp(c->arm, arm, len) && c->arm[len] == '_') {
			hit = c;
			n++;
		}
	}
	if (n > 1) {
		if (ambiguous)
			*ambiguous = 1;
		return NULL;
	}
	return hit;
}

static ptrdiff_t cell_seed_index(const struct stats_cell *c, long seed)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->seeds[i] == seed)
			return (ptrdiff_t)i;
	return -1;
}

/* ---- contrast evaluation ---------------------------------------------------- */

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static void add_skip(struct stats_results *res, char *why)
{
	res->skipped = xrealloc(res->skipped, (res->n_skipped + 1) * sizeof *res->skipped);
	res->skipped[res->n_skipped++] = why;
}

static void contrast_clear(struct stats_contrast *c)
{
	free(c->scope);
	free(c->cells);
	free(c->seeds);
	for (int s = 0; s < STATS_NSPLIT; s++)
		free(c->delta[s]);
	free(c->dropped);
	free(c->ratios);
	memset(c, 0, sizeof *c);
}

/* Evaluate def at depth (0: fixed terms only). Returns 1 when evaluated, 0
 * when skipped (built-in spec, note added), -1 on error. */
static int contrast_eval(const struct stats_spec *spec, size_t di, int depth,
			 const struct stats_cells *cells, struct stats_results *res, struct err *e)
{
	const struct stats_contrast_def *d = &spec->c[di];
	struct stats_contrast c;
	memset(&c, 0, sizeof c);
	c.def = d;
	c.def_index = di;
	c.depth = depth;
	c.cells = xcalloc(d->n_terms, sizeof *c.cells);
	for (size_t t = 0; t < d->n_terms; t++) {
		int at = d->terms[t].depth ? d->terms[t].depth : depth, amb = 0;
		c.cells[t] = stats_cells_find(cells, d->terms[t].arm, at, &amb);
		if (amb) {
			contrast_clear(&c);
			return err_set(e, EXIT_USAGE, "'%s': line %d: arm '%s' is ambiguous at depth %d "
				       "(several arms start with '%s_')", spec->name, d->line,
				       d->terms[t].arm, at, d->terms[t].arm);
		}
		if (!c.cells[t]) {
			if (spec->builtin) {
				add_skip(res, xasprintf("%s at d%d: no runs of arm '%s'", d->name, at,
							d->terms[t].arm));
				contrast_clear(&c);
				return 0;
			}
			contrast_clear(&c);
			return err_set(e, EXIT_USAGE, "'%s': line %d: unknown arm '%s' at depth %d "
				       "(no runs)", spec->name, d->line, d->terms[t].arm, at);
		}
	}
	/* Scope text. */
	if (depth) {
		c.scope = xasprintf("d%d", depth);
	} else {
		int *ds = xmalloc(d->n_terms * sizeof *ds);
		size_t nd = 0;
		for (size_t t = 0; t < d->n_terms; t++)
			ds[nd++] = d->terms[t].depth;
		qsort(ds, nd, sizeof *ds, int_cmp);
		char buf[256] = "";
		size_t len = 0;
		for (size_t i = 0; i < nd && len < sizeof buf; i++)
			if (i == 0 || ds[i] != ds[i - 1])
				len += (size_t)snprintf(buf + len, sizeof buf - len, "%sd%d", i ? "," : "",
							ds[i]);
		c.scope = xstrdup(buf);
		free(ds);
	}
	/* Paired seeds: those every cell has; the others are dropped. */
	long *all = NULL;
	size_t n_all = 0;
	for (size_t t = 0; t < d->n_terms; t++)
		for (size_t k = 0; k < c.cells[t]->n; k++) {
			long s = c.cells[t]->seeds[k];
			size_t i = 0;
			while (i < n_all && all[i] != s)
				i++;
			if (i == n_all) {
				all = xrealloc(all, (n_all + 1) * sizeof *all);
				all[n_all++] = s;
			}
		}
	/* ascending */
	for (size_t i = 1; i < n_all; i++)
		for (size_t j = i; j > 0 && all[j - 1] > all[j]; j--) {
			long tmp = all[j];
			all[j] = all[j - 1];
			all[j - 1] = tmp;
		}
	c.seeds = xmalloc((n_all ? n_all : 1) * sizeof *c.seeds);
	char drop[1024] = "";
	size_t dl = 0;
	for (size_t i = 0; i < n_all; i++) {
		char missing[512] = "";
		size_t ml = 0;
		for (size_t t = 0; t < d->n_terms; t++) {
			const struct stats_cell *x = c.cells[t];
			int seen = 0;
			for (size_t u = 0; u < t; u++)
				seen |= c.cells[u] == x;
			if (!seen && cell_seed_index(x, all[i]) < 0 && ml < sizeof missing)
				ml += (size_t)snprintf(missing + ml, sizeof missing - ml, "%sd%d/%s",
						       ml ? ", " : "", x->depth, x->arm);
		}
		if (ml) {
			if (dl < sizeof drop)
				dl += (size_t)snprintf(drop + dl, sizeof drop - dl, "%s%ld (not in %s)",
						       dl ? "; " : "", all[i], missing);
		} else {
			c.seeds[c.n++] = all[i];
		}
	}
	free(all);
	if (dl)
		c.dropped = xstrdup(drop);
	if (c.n < 2) {
		if (spec->builtin) {
			add_skip(res, xasprintf("%s at %s: %zu paired seed%s", d->name, c.scope, c.n,
						c.n == 1 ? "" : "s"));
			contrast_clear(&c);
			return 0;
		}
		err_set(e, EXIT_USAGE, "'%s': line %d: '%s' at %s has %zu paired seed%s, needs 2%s%s",
			spec->name, d->line, d->name, c.scope, c.n, c.n == 1 ? "" : "s",
			c.dropped ? "; dropped " : "", c.dropped ? c.dropped : "");
		contrast_clear(&c);
		return -1;
	}
	for (int s = 0; s < STATS_NSPLIT; s++) {
		c.delta[s] = xcalloc(c.n, sizeof *c.delta[s]);
		for (size_t i = 0; i < c.n; i++) {
			double v = 0;
			for (size_t t = 0; t < d->n_terms; t++)
				v += d->terms[t].coef *
				     c.cells[t]->bpb[s][cell_seed_index(c.cells[t], c.seeds[i])];
			c.delta[s][i] = v;
		}
		stats_summarize(c.delta[s], c.n, &c.sum[s]);
	}
	res->c = xrealloc(res->c, (res->n + 1) * sizeof *res->c);
	res->c[res->n++] = c;
	return 1;
}

int stats_evaluate(const struct stats_spec *spec, const struct stats_cells *cells,
		   struct stats_results *res, struct err *e)
{
	memset(res, 0, sizeof *res);
	int *depths = xmalloc((cells->n + 1) * sizeof *depths);
	for (size_t di = 0; di < spec->n; di++) {
		const struct stats_contrast_def *d = &spec->c[di];
		int per_depth = 0;
		for (size_t t = 0; t < d->n_terms; t++)
			if (!d->terms[t].depth)
				per_depth = 1;
		if (!per_depth) {
			if (contrast_eval(spec, di, 0, cells, res, e) < 0)
				goto fail;
			continue;
		}
		/* Every depth at which some per-depth arm has runs. */
		size_t nd = 0;
		for (size_t i = 0; i < cells->n; i++) {
			int dep = cells->c[i].depth, hit = 0;
			if (nd && depths[nd - 1] == dep)
				continue;
			for (size_t t = 0; t < d->n_terms && !hit; t++)
				if (!d->terms[t].depth && stats_cells_find(cells, d->terms[t].arm, dep, NULL))
					hit = 1;
			if (hit)
				depths[nd++] = dep;
		}
		if (!nd) {
			if (spec->builtin) {
				add_skip(res, xasprintf("%s: no runs of its arms", d->name));
				continue;
			}
			err_set(e, EXIT_USAGE, "'%s': line %d: unknown arm '%s' (no runs at any depth)",
				spec->name, d->line, d->terms[0].arm);
			goto fail;
		}
		for (size_t k = 0; k < nd; k++)
			if (contrast_eval(spec, di, depths[k], cells, res, e) < 0)
				goto fail;
	}
	free(depths);
	/* Ratios: numerator instance / the denominator's instance at the same scope. */
	for (size_t ri = 0; ri < spec->n_r; ri++) {
		const struct stats_ratio_def *rd = &spec->r[ri];
		for (size_t i = 0; i < res->n; i++) {
			struct stats_contrast *num = &res->c[i];
			if (num->def_index != rd->num)
				continue;
			size_t j = 0;
			while (j < res->n && !(res->c[j].def_index == rd->den &&
					       !strcmp(res->c[j].scope, num->scope)))
				j++;
			if (j == res->n) {
				if (spec->builtin) {
					add_skip(res, xasprintf("ratio %s / %s at %s: no denominator",
								num->def->name, spec->c[rd->den].name,
								num->scope));
					continue;
				}
				return err_set(e, EXIT_USAGE, "'%s': line %d: ratio: '%s' was not "
					       "evaluated at %s", spec->name, rd->line,
					       spec->c[rd->den].name, num->scope);
			}
			num->ratios = xrealloc(num->ratios, (num->n_ratios + 1) * sizeof *num->ratios);
			struct stats_ratio_value *rv = &num->ratios[num->n_ratios++];
			rv->ref = j;
			for (int s = 0; s < STATS_NSPLIT; s++)
				rv->pct[s] = 100.0 * num->sum[s].mean / res->c[j].sum[s].mean;
		}
	}
	return 0;
fail:
	free(depths);
	return -1;
}

void stats_results_free(struct stats_results *res)
{
	for (size_t i = 0; i < res->n; i++)
		contrast_clear(&res->c[i]);
	free(res->c);
	for (size_t i = 0; i < res->n_skipped; i++)
		free(res->skipped[i]);
	free(res->skipped);
	memset(res, 0, sizeof *res);
}

/* ---- printed figures ------------------------------------------------------ */

/* Printed decimal -> sign, integer units of its last place, decimals. */
static int printed_units(const char *s, int *neg, long long *units, int *decimals)
{
	const char *p = s;
	*neg = 0;
	if (*p == '+' || *p == '-')
		*neg = *p++ == '-';
	if (!(*p >= '0' && *p <= '9'))
		return -1;
	long long u = 0;
	int dec = 0, dot = 0, digits = 0;
	for (; *p; p++) {
		if (*p == '.' && !dot) {
			dot = 1;
			continue;
		}
		if (*p < '0' || *p > '9')
			return -1;
		if (++digits > 17)
			return -1;
		u = u * 10 + (*p - '0');
		if (dot)
			dec++;
	}
	if (dot && !dec)
		return -1;
	*units = u;
	*decimals = dec;
	if (u == 0)
		*neg = 0;
	return 0;
}

int stats_printed_parse(const char *s, double *v, int *decimals)
{
	int neg;
	long long u;
	if (!s || printed_units(s, &neg, &u, decimals) < 0)
		return -1;
	*v = strtod(s, NULL);
	return 0;
}

void stats_printed_format(double v, int decimals, int plus, char *buf, size_t n)
{
	if (!isfinite(v)) {
		snprintf(buf, n, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
		return;
	}
	snprintf(buf, n, plus ? "%+.*f" : "%.*f", decimals, v);
	/* "-0.000000" prints as zero, with the sign the caller asked for. */
	int neg;
	long long u;
	int d;
	if (printed_units(buf, &neg, &u, &d) == 0 && u == 0 && buf[0] == '-')
		snprintf(buf, n, plus ? "%+.*f" : "%.*f", decimals, 0.0);
}

const char *stats_verdict_name(enum stats_verdict v)
{
	switch (v) {
	case STATS_OK: return "ok";
	case STATS_ROUNDING: return "rounding";
	case STATS_INCONSISTENT: return "inconsistent";
	case STATS_MISSING: return "missing";
	}
	return "?";
}

enum stats_verdict stats_judge(double computed, double rmin, double rmax, const char *printed)
{
	double v;
	int dec, neg, neg2, dec2;
	long long u, u2;
	if (stats_printed_parse(printed, &v, &dec) < 0 || printed_units(printed, &neg, &u, &dec))
		return STATS_INCONSISTENT;
	char buf[64];
	stats_printed_format(computed, dec, 0, buf, sizeof buf);
	if (printed_units(buf, &neg2, &u2, &dec2) == 0 && neg == neg2 && u == u2)
		return STATS_OK;
	double half = 0.5 * pow(10.0, -dec);
	double tol = 1e-12 * (fabs(v) > 1 ? fabs(v) : 1);
	if (v - half <= rmax + tol && v + half >= rmin - tol)
		return STATS_ROUNDING;
	return STATS_INCONSISTENT;
}

/* ---- ranges over boxes ----------------------------------------------------- */

static double fig_value(enum stats_figure fig, const double *x, size_t n)
{
	struct stats_summary s;
	stats_summarize(x, n, &s);
	switch (fig) {
	case STATS_FIG_MEAN: return s.mean;
	case STATS_FIG_SD: return s.sd;
	case STATS_FIG_CI_LO: return s.ci[0];
	case STATS_FIG_CI_HI: return s.ci[1];
	}
	return NAN;
}

/* Largest sign*f over the vertices of the box (exact for convex sign*f). */
static double vertex_max(enum stats_figure fig, double sign, const double *lo, const double *hi,
			 size_t n)
{
	double *x = xmalloc(n * sizeof *x), best = -INFINITY;
	if (n <= 20) {
		for (unsigned long m = 0; m < (1ul << n); m++) {
			for (size_t i = 0; i < n; i++)
				x[i] = (m >> i) & 1 ? hi[i] : lo[i];
			double v = sign * fig_value(fig, x, n);
			if (v > best)
				best = v;
		}
	} else {
		/* Local search over vertices: flip while it helps. */
		for (size_t i = 0; i < n; i++)
			x[i] = lo[i];
		best = sign * fig_value(fig, x, n);
		for (int changed = 1; changed;) {
			changed = 0;
			for (size_t i = 0; i < n; i++) {
				double keep = x[i];
				x[i] = x[i] == lo[i] ? hi[i] : lo[i];
				double v = sign * fig_value(fig, x, n);
				if (v > best) {
					best = v;
					changed = 1;
				} else {
					x[i] = keep;
				}
			}
		}
	}
	free(x);
	return sign * best;
}

/* Smallest sign*f over the box (sign*f convex): cyclic coordinate descent,
 * golden-section search on each coordinate. */
static double convex_min(enum stats_figure fig, double sign, const double *lo, const double *hi,
			 size_t n)
{
	const double g = 0.6180339887498949;
	double *x = xmalloc(n * sizeof *x);
	for (size_t i = 0; i < n; i++)
		x[i] = 0.5 * (lo[i] + hi[i]);
	double best = sign * fig_value(fig, x, n);
	for (int sweep = 0; sweep < 200; sweep++) {
		double before = best;
		for (size_t i = 0; i < n; i++) {
			double a = lo[i], b = hi[i];
			double c = b - g * (b - a), d = a + g * (b - a);
			x[i] = c;
			double fc = sign * fig_value(fig, x, n);
			x[i] = d;
			double fd = sign * fig_value(fig, x, n);
			for (int it = 0; it < 90 && b - a > 0; it++) {
				if (fc <= fd) {
					b = d;
					d = c;
					fd = fc;
					c = b - g * (b - a);
					x[i] = c;
					fc = sign * fig_value(fig, x, n);
				} else {
					a = c;
					c = d;
					fc = fd;
					d = a + g * (b - a);
					x[i] = d;
					fd = sign * fig_value(fig, x, n);
				}
			}
			/* Keep the best of the bracket ends and the search point. */
			double cand[3] = {fc <= fd ? c : d, lo[i], hi[i]};
			double bv = INFINITY, bx = x[i];
			for (int k = 0; k < 3; k++) {
				x[i] = cand[k];
				double v = sign * fig_value(fig, x, n);
				if (v < bv) {
					bv = v;
					bx = cand[k];
				}
			}
			x[i] = bx;
			best = bv;
		}
		if (before - best <= 1e-18)
			break;
	}
	free(x);
	return sign * best;
}

/* Smallest sample SD over the box: min over c of sum dist(c, [lo,hi])^2. */
static double sd_min(const double *lo, const double *hi, size_t n)
{
	double a = INFINITY, b = -INFINITY;
	for (size_t i = 0; i < n; i++) {
		if (lo[i] < a)
			a = lo[i];
		if (hi[i] > b)
			b = hi[i];
	}
	double best = INFINITY;
	for (int it = 0; it < 200; it++) {
		double c1 = a + (b - a) / 3, c2 = b - (b - a) / 3, f[2];
		for (int k = 0; k < 2; k++) {
			double c = k ? c2 : c1, s = 0;
			for (size_t i = 0; i < n; i++) {
				double dd = c < lo[i] ? lo[i] - c : c > hi[i] ? c - hi[i] : 0;
				s += dd * dd;
			}
			f[k] = s;
			if (s < best)
				best = s;
		}
		if (f[0] <= f[1])
			b = c2;
		else
			a = c1;
	}
	return sqrt(best / (double)(n - 1));
}

void stats_range(enum stats_figure fig, const double *lo, const double *hi, size_t n,
		 double *rmin, double *rmax)
{
	if (n == 0 || (n < 2 && fig != STATS_FIG_MEAN)) {
		*rmin = *rmax = NAN;
		return;
	}
	/* Where all boxes meet, the SD can be 0 at a common value in [ml, mh]. */
	double ml = -INFINITY, mh = INFINITY;
	for (size_t i = 0; i < n; i++) {
		if (lo[i] > ml)
			ml = lo[i];
		if (hi[i] < mh)
			mh = hi[i];
	}
	switch (fig) {
	case STATS_FIG_MEAN:
		*rmin = fig_value(fig, lo, n);
		*rmax = fig_value(fig, hi, n);
		break;
	case STATS_FIG_SD:
		*rmin = sd_min(lo, hi, n);
		*rmax = vertex_max(fig, 1, lo, hi, n);
		break;
	case STATS_FIG_CI_HI: /* convex */
		*rmin = convex_min(fig, 1, lo, hi, n);
		if (ml <= mh && ml < *rmin)
			*rmin = ml;
		*rmax = vertex_max(fig, 1, lo, hi, n);
		break;
	case STATS_FIG_CI_LO: /* concave */
		*rmin = vertex_max(fig, -1, lo, hi, n);
		*rmax = convex_min(fig, -1, lo, hi, n);
		if (ml <= mh && mh > *rmax)
			*rmax = mh;
		break;
	}
}

/* max over the box of c.x */
static double lin_max(const double *c, const double *lo, const double *hi, size_t m)
{
	double s = 0;
	for (size_t j = 0; j < m; j++)
		s += c[j] >= 0 ? c[j] * hi[j] : c[j] * lo[j];
	return s;
}

void stats_range_ratio(const double *a, const double *b, const double *lo, const double *hi,
		       size_t m, double *rmin, double *rmax)
{
	double *na = xmalloc(m * sizeof *na), *nb = xmalloc(m * sizeof *nb);
	double *c = xmalloc(m * sizeof *c);
	double dmax = lin_max(b, lo, hi, m);
	for (size_t j = 0; j < m; j++)
		nb[j] = -b[j];
	double dmin = -lin_max(nb, lo, hi, m);
	if (dmin <= 0 && dmax >= 0) {
		*rmin = -INFINITY;
		*rmax = INFINITY;
		goto out;
	}
	/* Make the denominator positive. */
	double sg = dmin > 0 ? 1 : -1;
	for (size_t j = 0; j < m; j++) {
		na[j] = sg * a[j];
		nb[j] = sg * b[j];
	}
	/* R >= r is reachable iff max (a - r b).x >= 0; that max falls as r grows. */
	double num = 0, den = 0;
	for (size_t j = 0; j < m; j++) {
		double mid = 0.5 * (lo[j] + hi[j]);
		num += na[j] * mid;
		den += nb[j] * mid;
	}
	double r0 = num / den;
	for (int side = 0; side < 2; side++) {
		/* side 0: upper end (max R); side 1: lower end (min R = -max of -R). */
		double s = side ? -1 : 1;
		double inside = s * r0, step = fabs(r0) * 1e-6 + 1e-12, outside;
		for (;;) {
			outside = inside + step;
			for (size_t j = 0; j < m; j++)
				c[j] = s * na[j] - outside * nb[j];
			if (lin_max(c, lo, hi, m) < 0)
				break;
			inside = outside;
			step *= 2;
		}
		for (int it = 0; it < 200; it++) {
			double mid = 0.5 * (inside + outside);
			for (size_t j = 0; j < m; j++)
				c[j] = s * na[j] - mid * nb[j];
			if (lin_max(c, lo, hi, m) >= 0)
				inside = mid;
			else
				outside = mid;
		}
		if (side)
			*rmin = -100.0 * inside;
		else
			*rmax = 100.0 * inside;
	}
out:
	free(na);
	free(nb);
	free(c);
}

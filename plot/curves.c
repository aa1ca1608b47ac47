/* curves.c: the learning-curves figure (contract in plots.h): training
 * loss and validation BPB of run folders, grouped by arm.
 *
 * The arm's mean at a step averages the seeds that all have that step (the
 * steps of the arm's first run that every other run has too); the band is
 * mean +- SD (n - 1 in the denominator) where the arm has two or more
 * seeds. Smoothing is the debiased exponential moving average that
 * TensorBoard draws (weight w: s_i = w s_{i-1} + (1 - w) y_i from s = 0,
 * shown as s_i / (1 - w^(i+1))), over every step of the curve before
 * --from cuts the x range.
 */
#include "plot/plots.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void plot_smooth(const double *y, int n, double w, double *out)
{
	double s = 0, wk = 1;
	for (int i = 0; i < n; i++) {
		s = w * s + (1 - w) * y[i];
		wk *= w;
		out[i] = w > 0 ? s / (1 - wk) : y[i];
	}
}

/* Index of x in the sorted a[0..n), or -1. */
static int find(const double *a, int n, double x)
{
	int lo = 0, hi = n - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (a[mid] == x)
			return mid;
		if (a[mid] < x)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

struct arm {
	const char *name;
	int n;          /* runs */
	int *idx;       /* into runs */
};

/* One arm's series (xs[k], ys[k], k < nr runs, each len[k]) averaged: the
 * x of the first run that every run has; mean and SD into fresh arrays. */
static int arm_mean(double *const *xs, double *const *ys, const int *len, int nr, double **mx,
		    double **my, double **sd)
{
	int n0 = len[0], m = 0;
	*mx = xmalloc((size_t)(n0 ? n0 : 1) * sizeof **mx);
	*my = xmalloc((size_t)(n0 ? n0 : 1) * sizeof **my);
	*sd = xmalloc((size_t)(n0 ? n0 : 1) * sizeof **sd);
	double *v = xmalloc((size_t)nr * sizeof *v);
	for (int i = 0; i < n0; i++) {
		double x = xs[0][i];
		int ok = 1;
		for (int k = 0; k < nr && ok; k++) {
			int j = k ? find(xs[k], len[k], x) : i;
			if (j < 0)
				ok = 0;
			else
				v[k] = ys[k][j];
		}
		if (!ok)
			continue;
		double s = 0;
		for (int k = 0; k < nr; k++)
			s += v[k];
		double mean = s / nr, ss = 0;
		for (int k = 0; k < nr; k++)
			ss += (v[k] - mean) * (v[k] - mean);
		(*mx)[m] = x;
		(*my)[m] = mean;
		(*sd)[m] = nr > 1 ? sqrt(ss / (nr - 1)) : NAN;
		m++;
	}
	free(v);
	return m;
}

static struct plot_style style(struct plot_rgb c, double alpha, double width, enum plot_mark mark,
			       double ms)
{
	struct plot_style s = {c, alpha, width, PLOT_SOLID, mark, ms};
	return s;
}

/* x of a step for the figure (step or tokens). */
static double to_x(const struct plot_run *r, double step, int tokens)
{
	return tokens ? step * r->tokens_per_step : step;
}

/* Draw one quantity of an arm's runs into panel p: thin lines per run (or
 * a band), the bold mean. val: validation series with markers. */
static void draw_arm(struct plot_panel *p, const struct plot_run *runs, const struct arm *a,
		     struct plot_rgb c, const struct plot_curves_opts *o, int val)
{
	int nr = a->n;
	double **xs = xcalloc((size_t)nr, sizeof *xs), **ys = xcalloc((size_t)nr, sizeof *ys);
	int *len = xcalloc((size_t)nr, sizeof *len);
	for (int k = 0; k < nr; k++) {
		const struct plot_run *r = &runs[a->idx[k]];
		int n = val ? r->nval : r->n;
		const double *sx = val ? r->val_x : r->step;
		double *sm = NULL;
		if (!val) {
			sm = xmalloc((size_t)n * sizeof *sm);
			plot_smooth(r->loss, n, o->smooth, sm);
		}
		xs[k] = xmalloc((size_t)(n ? n : 1) * sizeof **xs);
		ys[k] = xmalloc((size_t)(n ? n : 1) * sizeof **ys);
		double *rx = xmalloc((size_t)(n ? n : 1) * sizeof *rx), *ry = xmalloc((size_t)(n ? n : 1) * sizeof *ry);
		int m = 0, mr = 0;
		for (int i = 0; i < n; i++) {
			if (sx[i] < o->from)
				continue;
			xs[k][m] = sx[i];   /* steps here; to x when drawn */
			ys[k][m++] = val ? r->val_bpb[i] : sm[i];
			rx[mr] = to_x(r, sx[i], o->tokens);
			ry[mr++] = val ? r->val_bpb[i] : r->loss[i];
		}
		len[k] = m;
		/* raw loss, faint, when smoothing */
		if (!val && o->smooth > 0 && mr) {
			struct plot_style s = style(c, 0.25, 0.5, PLOT_MARK_NONE, 0);
			plot_add_line(p, &s, mr, rx, ry);
		}
		/* each seed thin (not for a single run: its mean is itself; not with a band) */
		if (nr > 1 && !o->band && m) {
			for (int i = 0; i < m; i++)
				rx[i] = to_x(r, xs[k][i], o->tokens);
			struct plot_style s = style(c, 0.5, 0.7, val ? PLOT_MARK_DOT : PLOT_MARK_NONE, 2.2);
			plot_add_line(p, &s, m, rx, ys[k]);
		}
		free(rx);
		free(ry);
		free(sm);
	}
	double *mx, *my, *sd;
	int m = len[0] ? arm_mean(xs, ys, len, nr, &mx, &my, &sd) : 0;
	if (m) {
		const struct plot_run *r0 = &runs[a->idx[0]];
		for (int i = 0; i < m; i++)
			mx[i] = to_x(r0, mx[i], o->tokens);
		if (o->band && nr > 1) {
			double *lo = xmalloc((size_t)m * sizeof *lo), *hi = xmalloc((size_t)m * sizeof *hi);
			for (int i = 0; i < m; i++) {
				lo[i] = my[i] - sd[i];
				hi[i] = my[i] + sd[i];
			}
			plot_add_band(p, c, 0.22, m, mx, lo, hi);
			free(lo);
			free(hi);
		}
		struct plot_style s = style(c, 1, 1.8, val ? PLOT_MARK_DOT : PLOT_MARK_NONE, 3.6);
		plot_add_line(p, &s, m, mx, my);
	}
	if (len[0]) {
		free(mx);
		free(my);
		free(sd);
	}
	for (int k = 0; k < nr; k++) {
		free(xs[k]);
		free(ys[k]);
	}
	free(xs);
	free(ys);
	free(len);
}

int plot_curves(struct plot_figure *f, const struct plot_run *runs, int n,
		const struct plot_curves_opts *o, struct err *e)
{
	if (n < 1)
		return err_set(e, EXIT_USAGE, "no runs");
	if (!(o->smooth >= 0 && o->smooth < 1))
		return err_set(e, EXIT_USAGE, "smoothing weight %g is not in [0, 1)", o->smooth);
	for (int i = 0; o->tokens && i < n; i++)
		if (!(runs[i].tokens_per_step > 0))
			return err_set(e, EXIT_USAGE, "'%s': tokens per step unknown (no result.json "
				       "tokens_per_step, no config.cfg batch_rows, seq_len, grad_accum)",
				       runs[i].dir);
	/* arms in order of first appearance */
	struct arm *arms = xcalloc((size_t)n, sizeof *arms);
	int na = 0, any_val = 0;
	for (int i = 0; i < n; i++) {
		int a = 0;
		while (a < na && strcmp(arms[a].name, runs[i].arm))
			a++;
		if (a == na) {
			arms[na].name = runs[i].arm;
			arms[na].idx = xcalloc((size_t)n, sizeof *arms[na].idx);
			na++;
		}
		arms[a].idx[arms[a].n++] = i;
		for (int k = 0; k < runs[i].nval; k++)
			any_val |= runs[i].val_x[k] >= o->from;
	}
	plot_figure_init(f, 1, any_val ? 2 : 1);
	f->cell_w = 280;
	f->cell_h = 210;
	struct plot_panel *pl = plot_panel_at(f, 0, 0), *pv = any_val ? plot_panel_at(f, 0, 1) : NULL;
	plot_panel_title(pl, "training loss");
	plot_axis_label(&pl->y, "loss (nats)");
	if (pv) {
		plot_panel_title(pv, "validation");
		plot_axis_label(&pv->y, "val BPB (bits per byte)");
	}
	for (int k = 0; k < 1 + (pv != NULL); k++) {
		struct plot_panel *p = k ? pv : pl;
		plot_axis_label(&p->x, o->tokens ? "tokens" : "step");
		p->x.log = o->log_x;
		p->x.integer = !o->tokens;
	}
	/* warm-down starts, each distinct one once */
	struct plot_style wd = {{0.35, 0.35, 0.35}, 1, 0.8, PLOT_DASHED, PLOT_MARK_NONE, 0};
	int any_wd = 0;
	for (int i = 0; i < n; i++) {
		double x = to_x(&runs[i], runs[i].warmdown, o->tokens);
		if (!isfinite(x) || runs[i].warmdown < o->from)
			continue;
		int seen = 0;
		for (int j = 0; j < i; j++)
			seen |= fabs(to_x(&runs[j], runs[j].warmdown, o->tokens) - x) <= 1e-9 * fabs(x);
		if (seen)
			continue;
		plot_add_ref(pl, 1, x, &wd);
		if (pv)
			plot_add_ref(pv, 1, x, &wd);
		any_wd = 1;
	}
	for (int a = 0; a < na; a++) {
		struct plot_rgb c = plot_color(a);
		draw_arm(pl, runs, &arms[a], c, o, 0);
		if (pv)
			draw_arm(pv, runs, &arms[a], c, o, 1);
	}
	/* legend: arms, then what the line styles mean */
	int multi = 0;
	for (int a = 0; a < na; a++) {
		char lab[512];
		long long s0 = runs[arms[a].idx[0]].seed;
		if (arms[a].n == 1 && s0 >= 0)
			snprintf(lab, sizeof lab, "%s (seed %lld)", arms[a].name, s0);
		else
			snprintf(lab, sizeof lab, "%s (%d seed%s)", arms[a].name, arms[a].n,
				 arms[a].n == 1 ? "" : "s");
		struct plot_style s = style(plot_color(a), 1, 1.8, PLOT_MARK_NONE, 0);
		plot_legend_add(f, PLOT_LEGEND_LINE, lab, &s);
		multi |= arms[a].n > 1;
	}
	struct plot_rgb grey = {0.3, 0.3, 0.3};
	if (multi) {
		struct plot_style s = style(grey, 1, 1.8, PLOT_MARK_NONE, 0);
		if (o->band) {
			plot_legend_add(f, PLOT_LEGEND_BAND, "mean +- SD of seeds", &s);
		} else {
			plot_legend_add(f, PLOT_LEGEND_LINE, "mean of seeds", &s);
			s = style(grey, 0.5, 0.7, PLOT_MARK_NONE, 0);
			plot_legend_add(f, PLOT_LEGEND_LINE, "one seed", &s);
		}
	}
	if (o->smooth > 0) {
		char lab[96];
		snprintf(lab, sizeof lab, "loss, raw (thin) and EMA %g", o->smooth);
		struct plot_style s = style(grey, 0.25, 0.5, PLOT_MARK_NONE, 0);
		plot_legend_add(f, PLOT_LEGEND_LINE, lab, &s);
	}
	if (any_wd)
		plot_legend_add(f, PLOT_LEGEND_LINE, "warm-down start", &wd);
	/* title from the data */
	if (o->title) {
		plot_set_title(f, o->title);
	} else {
		char t[1024];
		size_t u = (size_t)snprintf(t, sizeof t, "Learning curves: ");
		for (int a = 0; a < na && u < sizeof t; a++)
			u += (size_t)snprintf(t + u, sizeof t - u, "%s%s", a ? (a == na - 1 ? " vs " : ", ") : "",
					      arms[a].name);
		int d = runs[0].depth;
		for (int i = 1; i < n; i++)
			if (runs[i].depth != d)
				d = -1;
		if (d >= 0 && u < sizeof t)
			snprintf(t + u, sizeof t - u, ", depth %d", d);
		plot_set_title(f, t);
	}
	for (int a = 0; a < na; a++)
		free(arms[a].idx);
	free(arms);
	return 0;
}

/* figure.c: the figure as data (contract in figure.h): panels and what
 * they hold, the legend, axis ranges and ticks in 1-2-5 steps, tick labels.
 * Drawing is render.c's. */
#include "plot/figure.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int plot_format_of(const char *path, enum plot_format *f, struct err *e)
{
	const char *dot = strrchr(path, '.');
	const char *slash = strrchr(path, '/');
	if (dot && (!slash || dot > slash)) {
		if (!strcasecmp(dot, ".png")) {
			*f = PLOT_PNG;
			return 0;
		}
		if (!strcasecmp(dot, ".svg")) {
			*f = PLOT_SVG;
			return 0;
		}
		if (!strcasecmp(dot, ".pdf")) {
			*f = PLOT_PDF;
			return 0;
		}
	}
	return err_set(e, EXIT_USAGE, "'%s': the output's name must end in .png, .svg or .pdf", path);
}

const char *plot_format_name(enum plot_format f)
{
	return f == PLOT_PNG ? "PNG" : f == PLOT_SVG ? "SVG" : "PDF";
}

/* Okabe & Ito (2008) without yellow, then three darker shades. */
static const struct plot_rgb palette[PLOT_NCOLORS] = {
	{0x00 / 255.0, 0x72 / 255.0, 0xB2 / 255.0},   /* blue */
	{0xD5 / 255.0, 0x5E / 255.0, 0x00 / 255.0},   /* vermillion */
	{0x00 / 255.0, 0x9E / 255.0, 0x73 / 255.0},   /* bluish green */
	{0xCC / 255.0, 0x79 / 255.0, 0xA7 / 255.0},   /* reddish purple */
	{0xE6 / 255.0, 0x9F / 255.0, 0x00 / 255.0},   /* orange */
	{0x56 / 255.0, 0xB4 / 255.0, 0xE9 / 255.0},   /* sky blue */
	{0x00 / 255.0, 0x00 / 255.0, 0x00 / 255.0},   /* black */
	{0x7F / 255.0, 0x3C / 255.0, 0x8D / 255.0},   /* dark purple */
	{0x8C / 255.0, 0x56 / 255.0, 0x1C / 255.0},   /* brown */
	{0x4D / 255.0, 0x4D / 255.0, 0x4D / 255.0},   /* grey */
};

struct plot_rgb plot_color(int i)
{
	if (i < 0)
		i = -i;
	return palette[i % PLOT_NCOLORS];
}

void plot_figure_init(struct plot_figure *f, int rows, int cols)
{
	memset(f, 0, sizeof *f);
	f->rows = rows;
	f->cols = cols;
	f->panels = xcalloc((size_t)(rows * cols > 0 ? rows * cols : 1), sizeof *f->panels);
	f->cell_w = 300;
	f->cell_h = 230;
}

static void axis_release(struct plot_axis *a)
{
	free(a->label);
	for (int i = 0; i < a->ncat; i++)
		free(a->cat[i]);
	free(a->cat);
}

void plot_figure_release(struct plot_figure *f)
{
	for (int i = 0; i < f->rows * f->cols; i++) {
		struct plot_panel *p = &f->panels[i];
		free(p->title);
		axis_release(&p->x);
		axis_release(&p->y);
		for (int k = 0; k < p->nlines; k++) {
			free(p->lines[k].x);
			free(p->lines[k].y);
		}
		for (int k = 0; k < p->nbands; k++) {
			free(p->bands[k].x);
			free(p->bands[k].lo);
			free(p->bands[k].hi);
		}
		free(p->lines);
		free(p->bands);
		free(p->bars);
		free(p->refs);
	}
	free(f->panels);
	for (int i = 0; i < f->nlegend; i++)
		free(f->legend[i].label);
	free(f->legend);
	free(f->title);
	memset(f, 0, sizeof *f);
}

struct plot_panel *plot_panel_at(struct plot_figure *f, int row, int col)
{
	return &f->panels[row * f->cols + col];
}

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s ? xstrdup(s) : NULL;
}

void plot_set_title(struct plot_figure *f, const char *title) { set_str(&f->title, title); }
void plot_panel_title(struct plot_panel *p, const char *title) { set_str(&p->title, title); }
void plot_axis_label(struct plot_axis *a, const char *label) { set_str(&a->label, label); }

void plot_axis_categories(struct plot_axis *a, char *const *labels, int n)
{
	for (int i = 0; i < a->ncat; i++)
		free(a->cat[i]);
	free(a->cat);
	a->cat = xcalloc((size_t)(n ? n : 1), sizeof *a->cat);
	for (int i = 0; i < n; i++)
		a->cat[i] = xstrdup(labels[i]);
	a->ncat = n;
}

void plot_axis_fix(struct plot_axis *a, double lo, double hi)
{
	a->fixed = 1;
	a->lo = lo;
	a->hi = hi;
}

static double *dup_arr(const double *x, int n)
{
	double *y = xmalloc((size_t)(n ? n : 1) * sizeof *y);
	if (n)
		memcpy(y, x, (size_t)n * sizeof *y);
	return y;
}

void plot_add_line(struct plot_panel *p, const struct plot_style *st, int n, const double *x,
		   const double *y)
{
	p->lines = xrealloc(p->lines, (size_t)(p->nlines + 1) * sizeof *p->lines);
	struct plot_line *l = &p->lines[p->nlines++];
	l->st = *st;
	l->n = n;
	l->x = dup_arr(x, n);
	l->y = dup_arr(y, n);
}

void plot_add_band(struct plot_panel *p, struct plot_rgb c, double alpha, int n, const double *x,
		   const double *lo, const double *hi)
{
	p->bands = xrealloc(p->bands, (size_t)(p->nbands + 1) * sizeof *p->bands);
	struct plot_band *b = &p->bands[p->nbands++];
	b->c = c;
	b->alpha = alpha;
	b->n = n;
	b->x = dup_arr(x, n);
	b->lo = dup_arr(lo, n);
	b->hi = dup_arr(hi, n);
}

void plot_add_bar(struct plot_panel *p, const struct plot_style *st, double y, double lo, double mid,
		  double hi, int filled)
{
	p->bars = xrealloc(p->bars, (size_t)(p->nbars + 1) * sizeof *p->bars);
	p->bars[p->nbars++] = (struct plot_errbar){*st, y, lo, hi, mid, filled};
}

void plot_add_ref(struct plot_panel *p, int vertical, double at, const struct plot_style *st)
{
	p->refs = xrealloc(p->refs, (size_t)(p->nrefs + 1) * sizeof *p->refs);
	p->refs[p->nrefs++] = (struct plot_ref){vertical, at, *st};
}

void plot_legend_add(struct plot_figure *f, enum plot_legend_kind kind, const char *label,
		     const struct plot_style *st)
{
	f->legend = xrealloc(f->legend, (size_t)(f->nlegend + 1) * sizeof *f->legend);
	struct plot_legend_item *it = &f->legend[f->nlegend++];
	memset(it, 0, sizeof *it);
	it->kind = kind;
	it->label = xstrdup(label);
	if (st)
		it->st = *st;
}

/* ---- ticks ---- */

#define MAX_INTERVALS 8

/* Linear ticks: the smallest step m 10^k (m in 1, 2, 5; >= 1 for integer
 * axes) that covers [lo, hi] with at most MAX_INTERVALS intervals; with
 * widen the range becomes the enclosing multiples of the step. */
static void linear_ticks(struct plot_axis *a, double lo, double hi, int widen)
{
	double span = hi - lo;
	int k = (int)floor(log10(span / MAX_INTERVALS)) - 1;
	static const double mult[3] = {1, 2, 5};
	double step = 0;
	long long kl = 0, kh = 0;
	for (int tries = 0; tries < 12 && !step; tries++, k++) {
		for (int m = 0; m < 3; m++) {
			double s = mult[m] * pow(10.0, k);
			if (a->integer && s < 1)
				continue;
			long long l = widen ? (long long)floor(lo / s + 1e-9) : (long long)ceil(lo / s - 1e-9);
			long long h = widen ? (long long)ceil(hi / s - 1e-9) : (long long)floor(hi / s + 1e-9);
			if (h - l <= MAX_INTERVALS) {
				step = s;
				kl = l;
				kh = h;
				break;
			}
		}
	}
	if (!step) {   /* unreachable for finite ranges; keep the range as it is */
		a->lo = lo;
		a->hi = hi;
		a->nticks = 0;
		a->step = span;
		return;
	}
	a->step = step;
	if (widen) {
		a->lo = (double)kl * step;
		a->hi = (double)kh * step;
	} else {
		a->lo = lo;
		a->hi = hi;
	}
	a->nticks = 0;
	for (long long i = kl; i <= kh && a->nticks < 64; i++) {
		double v = (double)i * step;
		if (fabs(v) < step * 1e-9)
			v = 0;
		a->ticks[a->nticks++] = v;
	}
}

static void log_ticks(struct plot_axis *a, double lo, double hi, int widen)
{
	int e0 = (int)floor(log10(lo) + 1e-9), e1 = (int)ceil(log10(hi) - 1e-9);
	if (e1 <= e0)
		e1 = e0 + 1;
	if (widen) {
		a->lo = pow(10.0, e0);
		a->hi = pow(10.0, e1);
	} else {
		a->lo = lo;
		a->hi = hi;
	}
	a->nticks = 0;
	a->step = 0;
	int dec = e1 - e0;
	if (dec <= 2) {
		static const double mult[3] = {1, 2, 5};
		for (int e = e0; e <= e1; e++)
			for (int m = 0; m < 3 && a->nticks < 64; m++) {
				double v = mult[m] * pow(10.0, e);
				if (v >= a->lo * (1 - 1e-9) && v <= a->hi * (1 + 1e-9))
					a->ticks[a->nticks++] = v;
			}
		return;
	}
	int every = (dec + MAX_INTERVALS - 1) / MAX_INTERVALS;
	for (int e = e0; e <= e1 && a->nticks < 64; e++) {
		if ((e - e0) % every)
			continue;
		double v = pow(10.0, e);
		if (v >= a->lo * (1 - 1e-9) && v <= a->hi * (1 + 1e-9))
			a->ticks[a->nticks++] = v;
	}
}

void plot_axis_ticks(struct plot_axis *a, double dlo, double dhi)
{
	if (a->ncat > 0) {
		a->lo = -0.5;
		a->hi = a->ncat - 0.5;
		a->nticks = 0;
		a->step = 1;
		return;
	}
	int widen = !a->fixed;
	double lo = a->fixed ? a->lo : dlo, hi = a->fixed ? a->hi : dhi;
	if (a->log) {
		if (!(lo > 0) || !isfinite(lo) || !isfinite(hi) || !(hi > 0)) {
			lo = 1;
			hi = 10;
		}
		if (hi < lo) {
			double t = lo;
			lo = hi;
			hi = t;
		}
		log_ticks(a, lo, hi, widen);
		return;
	}
	if (!isfinite(lo) || !isfinite(hi)) {
		lo = 0;
		hi = 1;
	}
	if (hi < lo) {
		double t = lo;
		lo = hi;
		hi = t;
	}
	if (hi - lo <= fabs(hi) * 1e-12 || hi == lo) {   /* one value: a range around it */
		double d = lo != 0 ? fabs(lo) * 0.1 : 1;
		if (a->integer && d < 1)
			d = 1;
		lo -= d;
		hi += d;
	}
	linear_ticks(a, lo, hi, widen);
}

/* v in scientific form with the fewest mantissa digits (up to 15) that
 * give v back to 1e-9 of scale: "2e-7", "1.5e-7", "3e+12" as "3e12". */
static void sci(double v, double scale, char *buf, size_t n)
{
	char t[64];
	for (int p = 0; p <= 14; p++) {
		snprintf(t, sizeof t, "%.*e", p, v);
		if (fabs(strtod(t, NULL) - v) <= fabs(scale) * 1e-9)
			break;
	}
	char *e = strchr(t, 'e');
	if (!e) {
		snprintf(buf, n, "%s", t);
		return;
	}
	*e = 0;
	int ex = atoi(e + 1);
	snprintf(buf, n, "%se%d", t, ex);
}

/* "%.*f" with dec decimals, "-0" written as "0". */
static void fixed(double v, int dec, char *buf, size_t n)
{
	snprintf(buf, n, "%.*f", dec, v);
	if (!strncmp(buf, "-0", 2) && strspn(buf + 2, ".0") == strlen(buf + 2))
		memmove(buf, buf + 1, strlen(buf));
}

/* Decimals that show multiples of step (1, 2 or 5 times a power of ten). */
static int decimals(double step)
{
	int dec = step > 0 ? (int)-floor(log10(step) + 1e-9) : 0;
	return dec < 0 ? 0 : dec;
}

void plot_tick_label(const struct plot_axis *a, double v, char *buf, size_t n)
{
	if (a->ncat > 0) {
		int i = (int)lround(v);
		snprintf(buf, n, "%s", i >= 0 && i < a->ncat ? a->cat[i] : "");
		return;
	}
	if (v == 0) {
		snprintf(buf, n, "0");
		return;
	}
	static const struct {
		double u;
		const char *s;
	} si[4] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
	/* the magnitude that picks the form: the value's own on a log axis,
	 * the range's on a linear one (so one axis keeps one form) */
	double m = a->log ? fabs(v) : fmax(fabs(a->lo), fabs(a->hi));
	double step = a->log || !(a->step > 0) ? fabs(v) : a->step;
	if (m >= 1e15 || m < 1e-3) {
		sci(v, step, buf, n);
		return;
	}
	if (m >= 1e4) {
		int i = 0;
		while (i < 3 && m < si[i].u)
			i++;
		char num[64];
		fixed(v / si[i].u, decimals(step / si[i].u), num, sizeof num);
		snprintf(buf, n, "%s%s", num, si[i].s);
		return;
	}
	fixed(v, decimals(step), buf, n);
}

/* test_render.c: the drawn pictures against their data, read back from the
 * PNG bytes through cairo's PNG reader. For each plot kind a figure of
 * known points is rendered at 144 dpi (2 pixels a point); the test finds
 * each panel's frame in the pixels (the dark edges near where the layout
 * put the box), then checks, from the data and the axis range the tick
 * rule gives (asserted first), that the series' colour is at the expected
 * pixel of several points and absent a little way off, that tick marks are
 * at the ticks' pixels and not between them, and kind by kind what else
 * must be where (warm-down line, zero line, interval ends, filled and
 * hollow markers). Then: the same figure gives the same PNG and PDF
 * bytes; the PDF's date is SOURCE_DATE_EPOCH's or none. */
#define _GNU_SOURCE
#include <cairo.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/fileio.h"
#include "lib/json.h"
#include "plot/figure.h"
#include "plot/plots.h"
#include "t.h"

#define DPI 144.0
#define S (DPI / 72.0)

static char tmpdir[256];

/* ---- the image ---- */

struct img {
	cairo_surface_t *s;
	int w, h, stride;
	const unsigned char *d;
};

struct rd {
	const unsigned char *p;
	size_t n, at;
};

static cairo_status_t rd_fn(void *c, unsigned char *data, unsigned int len)
{
	struct rd *r = c;
	if (r->at + len > r->n)
		return CAIRO_STATUS_READ_ERROR;
	memcpy(data, r->p + r->at, len);
	r->at += len;
	return CAIRO_STATUS_SUCCESS;
}

static int img_load(const unsigned char *png, size_t n, struct img *im)
{
	struct rd r = {png, n, 0};
	im->s = cairo_image_surface_create_from_png_stream(rd_fn, &r);
	if (cairo_surface_status(im->s) != CAIRO_STATUS_SUCCESS)
		return -1;
	cairo_surface_flush(im->s);
	im->w = cairo_image_surface_get_width(im->s);
	im->h = cairo_image_surface_get_height(im->s);
	im->stride = cairo_image_surface_get_stride(im->s);
	im->d = cairo_image_surface_get_data(im->s);
	return 0;
}

static void pix(const struct img *im, int x, int y, int c[3])
{
	if (x < 0 || y < 0 || x >= im->w || y >= im->h) {
		c[0] = c[1] = c[2] = 255;
		return;
	}
	uint32_t v = *(const uint32_t *)(im->d + (size_t)y * (size_t)im->stride + 4 * (size_t)x);
	c[0] = (v >> 16) & 255;
	c[1] = (v >> 8) & 255;
	c[2] = v & 255;
}

static int maxc(const int c[3])
{
	int m = c[0] > c[1] ? c[0] : c[1];
	return m > c[2] ? m : c[2];
}

/* Render f to PNG at DPI and load it. */
static int render_png(struct plot_figure *f, struct img *im)
{
	unsigned char *buf;
	size_t n;
	struct err e;
	if (plot_render(f, PLOT_PNG, DPI, &buf, &n, &e) < 0) {
		printf("  render: %s\n", e.msg);
		return -1;
	}
	int rc = img_load(buf, n, im);
	free(buf);
	return rc;
}

/* ---- the frame, found in the pixels ---- */

struct frame {
	double x0, x1, y0, y1;   /* pixel coordinates of the edges' centres */
};

/* Darkness-weighted centre of a frame edge near g (pixels): vertical edges
 * (vert) over rows a..b, horizontal ones over columns a..b. Pixels lighter
 * than 200 (grid lines, white) count nothing; a line counts only if most
 * of its length is dark (the edge, not a data line crossing it). NaN when
 * no edge is there. */
static double edge(const struct img *im, double g, int a, int b, int vert)
{
	double sw = 0, sx = 0;
	for (int k = (int)floor(g) - 4; k <= (int)floor(g) + 4; k++) {
		double w = 0;
		int hits = 0;
		for (int t = a; t <= b; t++) {
			int c[3];
			pix(im, vert ? k : t, vert ? t : k, c);
			if (maxc(c) < 200) {
				w += 200 - maxc(c);
				hits++;
			}
		}
		if (hits < 0.8 * (b - a + 1))
			continue;
		sw += w;
		sx += (k + 0.5) * w;
	}
	return sw > 0 ? sx / sw : NAN;
}

/* The panel's frame in the image: found near the layout's box, and
 * checked to lie within a pixel of it. */
static int find_frame(const struct img *im, const struct plot_panel *p, struct frame *fr)
{
	double bx0 = p->box.x0 * S, bx1 = p->box.x1 * S, by0 = p->box.y0 * S, by1 = p->box.y1 * S;
	int ya = (int)(by0 + 6), yb = (int)(by1 - 6), xa = (int)(bx0 + 6), xb = (int)(bx1 - 6);
	fr->x0 = edge(im, bx0, ya, yb, 1);
	fr->x1 = edge(im, bx1, ya, yb, 1);
	fr->y0 = edge(im, by0, xa, xb, 0);
	fr->y1 = edge(im, by1, xa, xb, 0);
	int ok = fabs(fr->x0 - bx0) < 1 && fabs(fr->x1 - bx1) < 1 && fabs(fr->y0 - by0) < 1 &&
		 fabs(fr->y1 - by1) < 1;
	if (!ok)
		printf("  frame found at x %.2f..%.2f y %.2f..%.2f, laid out at x %.2f..%.2f y %.2f..%.2f\n",
		       fr->x0, fr->x1, fr->y0, fr->y1, bx0, bx1, by0, by1);
	return ok ? 0 : -1;
}

/* Data to pixels: linear or log10 between the axis ends. */
static double frac(double v, double lo, double hi, int lg)
{
	return lg ? (log10(v) - log10(lo)) / (log10(hi) - log10(lo)) : (v - lo) / (hi - lo);
}

struct ax {
	double lo, hi;
	int log;
};

static double to_px(const struct frame *f, struct ax x, double v)
{
	return f->x0 + frac(v, x.lo, x.hi, x.log) * (f->x1 - f->x0);
}

static double to_py(const struct frame *f, struct ax y, double v)
{
	return f->y1 - frac(v, y.lo, y.hi, y.log) * (f->y1 - f->y0);
}

/* Some pixel within r of (x, y) has colour c (each channel within tol). */
static int colour_near(const struct img *im, double x, double y, int r, const int c[3], int tol)
{
	for (int dy = -r; dy <= r; dy++)
		for (int dx = -r; dx <= r; dx++) {
			int p[3];
			pix(im, (int)floor(x) + dx, (int)floor(y) + dy, p);
			if (abs(p[0] - c[0]) <= tol && abs(p[1] - c[1]) <= tol && abs(p[2] - c[2]) <= tol)
				return 1;
		}
	return 0;
}

static void rgb255(struct plot_rgb c, int o[3])
{
	o[0] = (int)lround(c.r * 255);
	o[1] = (int)lround(c.g * 255);
	o[2] = (int)lround(c.b * 255);
}

static const int BLACK[3] = {0, 0, 0};

/* A grey pixel (dashed reference lines) within a pixel of (x, y). */
static int grey_near(const struct img *im, double x, double y)
{
	for (int dx = -1; dx <= 1; dx++) {
		int p[3];
		pix(im, (int)floor(x) + dx, (int)floor(y), p);
		if (maxc(p) < 190 && abs(p[0] - p[1]) < 8 && abs(p[1] - p[2]) < 8)
			return 1;
	}
	return 0;
}

/* The series (colour c) passes through the pixel of (x, y) and not through
 * the pixel off_y data units above or below (log axis: off_y times y). */
static void check_point(const struct img *im, const struct frame *f, struct ax ax, struct ax ay, double x,
			double y, double off_y, const int c[3], const char *what)
{
	double px = to_px(f, ax, x), py = to_py(f, ay, y);
	CHECKF(colour_near(im, px, py, 1, c, 40), "%s: (%g, %g) not drawn at pixel (%.1f, %.1f)", what, x, y,
	       px, py);
	if (off_y == 0)
		return;
	double qy = to_py(f, ay, ay.log ? y * off_y : y + off_y);
	CHECKF(!colour_near(im, px, qy, 1, c, 40), "%s: colour found off the point, at (%g, %g)", what, x,
	       y + off_y);
}

/* Tick marks: dark just outside the frame at each tick, not half-way. */
static void check_ticks(const struct img *im, const struct frame *f, struct ax a, const double *ticks, int n,
			int xaxis, const char *what)
{
	for (int i = 0; i < n; i++) {
		double p = xaxis ? to_px(f, a, ticks[i]) : to_py(f, a, ticks[i]);
		double qx = xaxis ? p : f->x0 - 4, qy = xaxis ? f->y1 + 4 : p;
		CHECKF(colour_near(im, qx, qy, 1, BLACK, 110), "%s: no tick mark at %g (pixel %.1f)", what, ticks[i], p);
		if (i + 1 < n) {
			double m = xaxis ? to_px(f, a, a.log ? sqrt(ticks[i] * ticks[i + 1]) : (ticks[i] + ticks[i + 1]) / 2)
					 : to_py(f, a, a.log ? sqrt(ticks[i] * ticks[i + 1]) : (ticks[i] + ticks[i + 1]) / 2);
			double rx = xaxis ? m : f->x0 - 4, ry = xaxis ? f->y1 + 4 : m;
			CHECKF(!colour_near(im, rx, ry, 1, BLACK, 110), "%s: a mark between ticks %g and %g", what,
			       ticks[i], ticks[i + 1]);
		}
	}
}

/* The axis range the tick rule gave is the one expected. */
static int axis_is(const struct plot_axis *a, double lo, double hi, const char *what)
{
	int ok = fabs(a->lo - lo) <= 1e-9 * fmax(1, fabs(lo)) && fabs(a->hi - hi) <= 1e-9 * fmax(1, fabs(hi));
	CHECKF(ok, "%s: range [%g, %g], expected [%g, %g]", what, a->lo, a->hi, lo, hi);
	return ok;
}

/* ---- files ---- */

static void write_file(const char *dir, const char *name, const char *text)
{
	char *p = path_join(dir, name);
	FILE *f = fopen(p, "w");
	fputs(text, f);
	fclose(f);
	free(p);
}

/* ---- curves ---- */

/* One run of 100 steps: loss 4 - 0.02 t at steps 0..99; validation after
 * steps 20, 40, 60, 80 (curve steps 19 .. 79) and the final one at 100;
 * warm-down from config: 0 + (1 - 0.35)(100 - 0) = 65. */
static char *curves_run(void)
{
	char *d = path_join(tmpdir, "run_a");
	mkdir(d, 0755);
	char *buf = xmalloc(1 << 16);
	size_t u = 0;
	static const double val[4] = {1.8, 1.6, 1.5, 1.45};
	for (int t = 0; t < 100; t++) {
		u += (size_t)snprintf(buf + u, (1 << 16) - u, "{\"step\":%d,\"loss\":%.17g,\"lrm\":1", t, 4 - 0.02 * t);
		if ((t + 1) % 20 == 0 && t < 99)
			u += (size_t)snprintf(buf + u, (1 << 16) - u, ",\"val_bpb\":%g", val[(t + 1) / 20 - 1]);
		u += (size_t)snprintf(buf + u, (1 << 16) - u, "}\n");
	}
	write_file(d, "curve.jsonl", buf);
	write_file(d, "config.cfg", "arm = a\nseed = 1\nsteps = 100\nwarmup_steps = 0\nwarmdown_ratio = 0.35\n");
	write_file(d, "result.json", "{\"arm\":\"a\",\"seed\":1,\"val_bpb\":1.4,\"steps\":100}");
	free(buf);
	return d;
}

TEST(curves_pixels)
{
	char *d = curves_run();
	struct plot_run *runs;
	int n;
	struct err e;
	char *paths[1] = {d};
	CHECKF(plot_runs_read(paths, 1, &runs, &n, &e) == 0, "%s", e.msg);
	if (t_cur_failed)
		return;
	struct plot_figure f;
	memset(&f, 0, sizeof f);
	struct plot_curves_opts o = {.smooth = 0};
	CHECKF(plot_curves(&f, runs, n, &o, &e) == 0, "%s", e.msg);
	plot_runs_free(runs, n);
	struct img im;
	CHECK(f.cols == 2 && render_png(&f, &im) == 0);
	if (t_cur_failed) {
		plot_figure_release(&f);
		return;
	}
	int c[3];
	rgb255(plot_color(0), c);
	/* loss: x 0..100 (ticks 0, 20, ..., 100), y 2..4 (ticks 2, 2.5, .., 4) */
	struct plot_panel *pl = plot_panel_at(&f, 0, 0), *pv = plot_panel_at(&f, 0, 1);
	struct frame fr;
	CHECK(axis_is(&pl->x, 0, 100, "loss x") && axis_is(&pl->y, 2, 4, "loss y"));
	CHECK(find_frame(&im, pl, &fr) == 0);
	struct ax ax = {0, 100, 0}, ay = {2, 4, 0};
	for (int t = 5; t < 100; t += 22)
		check_point(&im, &fr, ax, ay, t, 4 - 0.02 * t, t < 50 ? -0.4 : 0.4, c, "loss");
	double xt[6] = {0, 20, 40, 60, 80, 100}, yt[5] = {2, 2.5, 3, 3.5, 4};
	check_ticks(&im, &fr, ax, xt, 6, 1, "loss x");
	check_ticks(&im, &fr, ay, yt, 5, 0, "loss y");
	/* the warm-down line at step 65: grey dashes down the panel, none 3 px off */
	int hits = 0, off = 0, rows = 0;
	for (int y = (int)fr.y0 + 3; y < (int)fr.y1 - 3; y += 2, rows++) {
		hits += grey_near(&im, to_px(&fr, ax, 65), y);
		off += grey_near(&im, to_px(&fr, ax, 65) + 3, y);
	}
	CHECKF(hits > rows / 3 && off == 0, "warm-down line: %d of %d rows, %d off", hits, rows, off);
	/* validation: x 20..100 (step 10), y 1.4..1.8 (step 0.05) */
	CHECK(axis_is(&pv->x, 20, 100, "val x") && axis_is(&pv->y, 1.4, 1.8, "val y"));
	CHECK(find_frame(&im, pv, &fr) == 0);
	struct ax vx = {20, 100, 0}, vy = {1.4, 1.8, 0};
	static const double vv[5] = {1.8, 1.6, 1.5, 1.45, 1.4};
	for (int k = 1; k < 4; k++)   /* the first and last lie on the frame */
		check_point(&im, &fr, vx, vy, 20 * (k + 1), vv[k], k < 2 ? -0.1 : 0.1, c, "val");
	double vxt[9] = {20, 30, 40, 50, 60, 70, 80, 90, 100};
	check_ticks(&im, &fr, vx, vxt, 9, 1, "val x");
	/* tokens on a log axis: the same run at 1000 tokens a step */
	write_file(d, "result.json", "{\"arm\":\"a\",\"seed\":1,\"val_bpb\":1.4,\"steps\":100,\"tokens_per_step\":1000}");
	CHECK(plot_runs_read(paths, 1, &runs, &n, &e) == 0);
	struct plot_figure g;
	memset(&g, 0, sizeof g);
	struct plot_curves_opts ot = {.smooth = 0, .tokens = 1, .log_x = 1};
	CHECK(plot_curves(&g, runs, n, &ot, &e) == 0);
	plot_runs_free(runs, n);
	struct img im2;
	CHECK(render_png(&g, &im2) == 0);
	pl = plot_panel_at(&g, 0, 0);
	/* 1000 .. 100000 tokens: 1e3 .. 1e5 (two decades: 1, 2, 5 ticks) */
	CHECK(axis_is(&pl->x, 1e3, 1e5, "log tokens x"));
	CHECK(find_frame(&im2, pl, &fr) == 0);
	struct ax lx = {1e3, 1e5, 1};
	for (int t = 2; t < 100; t *= 3)
		check_point(&im2, &fr, lx, ay, t * 1000.0, 4 - 0.02 * t, t < 50 ? -0.4 : 0.4, c, "log loss");
	double lt[7] = {1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5};
	check_ticks(&im2, &fr, lx, lt, 7, 1, "log x");
	cairo_surface_destroy(im2.s);
	cairo_surface_destroy(im.s);
	plot_figure_release(&g);
	plot_figure_release(&f);
	free(d);
}

/* ---- stats ---- */

static const char stats_json[] =
	"{\"cells\":[],\"spec\":\"t\",\"contrasts\":["
	"{\"name\":\"c0\",\"scope\":\"d2\",\"n\":2,"
	" \"val\":{\"mean\":-0.02,\"ci95\":[-0.025,-0.015],\"deltas\":[-0.022,-0.018]},"
	" \"heldout\":{\"mean\":-0.018,\"ci95\":[-0.024,-0.012],\"deltas\":[-0.02,-0.016]}},"
	"{\"name\":\"c1\",\"scope\":\"d2\",\"n\":2,"
	" \"val\":{\"mean\":0.001,\"ci95\":[-0.003,0.005],\"deltas\":[0,0.002]},"
	" \"heldout\":{\"mean\":0.0015,\"ci95\":[-0.002,0.005],\"deltas\":[0.001,0.002]}},"
	"{\"name\":\"c2\",\"scope\":\"d2\",\"n\":1,"
	" \"val\":{\"mean\":-0.01,\"sd\":null,\"ci95\":[null,null],\"deltas\":[-0.01]},"
	" \"heldout\":{\"mean\":-0.011,\"ci95\":[null,null],\"deltas\":[-0.011]}}]}";

TEST(stats_pixels)
{
	cJSON *rep = cJSON_Parse(stats_json);
	struct plot_figure f;
	memset(&f, 0, sizeof f);
	struct err e;
	CHECKF(plot_stats(&f, rep, "s.json", NULL, &e) == 0, "%s", e.msg);
	cJSON_Delete(rep);
	struct img im;
	CHECK(render_png(&f, &im) == 0);
	if (t_cur_failed) {
		plot_figure_release(&f);
		return;
	}
	int c[3], zero[3] = {77, 77, 77};
	rgb255(plot_color(0), c);
	static const double mean[2][3] = {{-0.02, 0.001, -0.01}, {-0.018, 0.0015, -0.011}};
	static const double lo[2][2] = {{-0.025, -0.003}, {-0.024, -0.002}},
			    hi[2][2] = {{-0.015, 0.005}, {-0.012, 0.005}};
	for (int s = 0; s < 2; s++) {
		struct plot_panel *p = plot_panel_at(&f, 0, s);
		struct frame fr;
		/* both sides on one range, -0.025 .. 0.005 by 0.005; rows 0..2 top down */
		CHECK(axis_is(&p->x, -0.025, 0.005, "stats x"));
		CHECK(find_frame(&im, p, &fr) == 0);
		struct ax ax = {-0.025, 0.005, 0};
		double h = fr.y1 - fr.y0;
		for (int r = 0; r < 3; r++) {
			double y = fr.y0 + (r + 0.5) / 3 * h, x = to_px(&fr, ax, mean[s][r]);
			int centre[3];
			pix(&im, (int)floor(x), (int)floor(y), centre);
			if (r == 0 || r == 2) {   /* filled: its interval excludes 0 (row 2: no interval, ring) */
				if (r == 0)
					CHECKF(colour_near(&im, x, y, 0, c, 30), "row %d: no filled marker at the mean", r);
				else
					CHECKF(maxc(centre) > 230 && colour_near(&im, x, y, 6, c, 40),
					       "row %d: not a ring at the mean", r);
			} else {
				CHECKF(maxc(centre) > 230 && colour_near(&im, x, y, 6, c, 40), "row %d: not a ring", r);
			}
			if (r < 2) {   /* the interval's ends (caps) */
				CHECKF(colour_near(&im, to_px(&fr, ax, lo[s][r]), y - 4, 1, c, 40), "row %d: no cap at lo", r);
				CHECKF(colour_near(&im, to_px(&fr, ax, hi[s][r]), y - 4, 1, c, 40), "row %d: no cap at hi", r);
				CHECKF(!colour_near(&im, to_px(&fr, ax, lo[s][r]) - 6, y, 0, c, 40),
				       "row %d: the bar runs past lo", r);
			} else {   /* no interval: nothing left of the marker */
				CHECKF(!colour_near(&im, x - 16, y, 1, c, 40), "row 2: a bar without an interval");
			}
			/* between rows: nothing at the mean */
			CHECKF(!colour_near(&im, x, fr.y0 + (r + 1) / 3.0 * h - 1, 0, c, 40), "row %d: colour between rows", r);
		}
		/* the zero line */
		double zx = to_px(&fr, ax, 0);
		CHECKF(colour_near(&im, zx, fr.y0 + h / 3, 0, zero, 30), "no zero line");
		double xt[7] = {-0.025, -0.02, -0.015, -0.01, -0.005, 0, 0.005};
		check_ticks(&im, &fr, ax, xt, 7, 1, "stats x");
	}
	cairo_surface_destroy(im.s);
	plot_figure_release(&f);
	/* refusals */
	static const struct {
		const char *json, *want;
	} bad[] = {
		{"{\"cells\":[],\"contrasts\":[]}", "no contrasts to draw"},
		{"{\"cells\":[],\"contrasts\":[{\"n\":1}]}", "contrasts[0]: 'name' is missing"},
		{"{\"cells\":[],\"contrasts\":[{\"name\":\"x\",\"n\":1,\"val\":{\"mean\":\"a\"}}]}",
		 "contrasts[0].val: 'mean' is of another type"},
		{"{\"cells\":[],\"contrasts\":[{\"name\":\"x\",\"n\":1,\"val\":{\"mean\":1,\"ci95\":[1]}}]}",
		 "holds 1 numbers, not 2"},
		{"{\"cells\":[],\"contrasts\":[{\"name\":\"x\",\"n\":1,\"val\":{\"mean\":1,\"ci95\":[2,1]}}]}",
		 "reversed"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cJSON *j = cJSON_Parse(bad[i].json);
		struct plot_figure g;
		memset(&g, 0, sizeof g);
		err_clear(&e);
		CHECKF(plot_stats(&g, j, "s.json", NULL, &e) < 0 && strstr(e.msg, bad[i].want) &&
		       strstr(e.msg, "'s.json'"), "%s: '%s'", bad[i].want, e.msg);
		plot_figure_release(&g);
		cJSON_Delete(j);
	}
}

/* ---- geometry ---- */

static const char geom_json[] =
	"{\"method\":\"gram\",\"arms\":{},\"checkpoints\":[{\"arm\":\"a\",\"matrices\":{"
	"\"transformer.h.0.attn.c_q.weight\":{\"stable_rank\":2,\"mean_row_energy\":0.01,"
	"  \"singular_values\":[5,2,1,0.5,0.1,0.02]},"
	"\"transformer.h.1.attn.c_q.weight\":{\"stable_rank\":4,\"mean_row_energy\":0.02,"
	"  \"singular_values\":[5,2,1,0.5,0.1,0.02]},"
	"\"transformer.h.2.attn.c_q.weight\":{\"stable_rank\":6,\"mean_row_energy\":0.03,"
	"  \"singular_values\":[5,2,1,0.5,0.1,0.02]},"
	"\"transformer.h.3.attn.c_q.weight\":{\"stable_rank\":8,\"mean_row_energy\":0.04,"
	"  \"singular_values\":[5,2,1,0.5,0.1,0.02]},"
	"\"q_tau\":{\"stable_rank\":1,\"mean_row_energy\":1}}}]}";

TEST(geometry_pixels)
{
	cJSON *rep = cJSON_Parse(geom_json);
	struct plot_figure f;
	memset(&f, 0, sizeof f);
	struct err e;
	CHECKF(plot_geometry(&f, rep, "g.json", 0, NULL, &e) == 0, "%s", e.msg);
	struct img im;
	CHECK(f.rows == 2 && f.cols == 1 && render_png(&f, &im) == 0);
	if (t_cur_failed) {
		cJSON_Delete(rep);
		plot_figure_release(&f);
		return;
	}
	int c[3];
	rgb255(plot_color(0), c);
	struct frame fr;
	/* stable rank: layers 0..3 (integer ticks), 2..8 by 1 */
	struct plot_panel *p = plot_panel_at(&f, 0, 0);
	CHECK(axis_is(&p->x, 0, 3, "layer") && axis_is(&p->y, 2, 8, "stable rank"));
	CHECK(find_frame(&im, p, &fr) == 0);
	struct ax ax = {0, 3, 0}, ay = {2, 8, 0};
	for (int l = 0; l < 4; l++)
		check_point(&im, &fr, ax, ay, l, 2 + 2 * l, l < 2 ? 1.5 : -1.5, c, "stable rank");
	double xt[4] = {0, 1, 2, 3}, yt[7] = {2, 3, 4, 5, 6, 7, 8};
	check_ticks(&im, &fr, ax, xt, 4, 1, "layer");
	check_ticks(&im, &fr, ay, yt, 7, 0, "stable rank");
	/* energy in percent: 1..4 by 0.5 */
	p = plot_panel_at(&f, 1, 0);
	CHECK(axis_is(&p->y, 1, 4, "energy"));
	CHECK(find_frame(&im, p, &fr) == 0);
	struct ax ey = {1, 4, 0};
	for (int l = 0; l < 4; l++)
		check_point(&im, &fr, ax, ey, l, 1 + l, l < 2 ? 0.8 : -0.8, c, "energy");
	cairo_surface_destroy(im.s);
	plot_figure_release(&f);
	/* spectrum: log-log, index 1..10 (ticks 1, 2, 5, 10), values 0.01..10 */
	memset(&f, 0, sizeof f);
	CHECKF(plot_geometry(&f, rep, "g.json", 1, NULL, &e) == 0, "%s", e.msg);
	CHECK(render_png(&f, &im) == 0);
	p = plot_panel_at(&f, 0, 0);
	CHECK(axis_is(&p->x, 1, 10, "index") && axis_is(&p->y, 0.01, 10, "sigma"));
	CHECK(find_frame(&im, p, &fr) == 0);
	struct ax sx = {1, 10, 1}, sy = {0.01, 10, 1};
	static const double sig[6] = {5, 2, 1, 0.5, 0.1, 0.02};
	for (int i = 2; i <= 5; i++)
		check_point(&im, &fr, sx, sy, i, sig[i - 1], i < 4 ? 3 : 0.33, c, "spectrum");
	double st[4] = {1, 2, 5, 10}, sv[4] = {0.01, 0.1, 1, 10};
	check_ticks(&im, &fr, sx, st, 4, 1, "index");
	check_ticks(&im, &fr, sy, sv, 4, 0, "sigma");
	cairo_surface_destroy(im.s);
	plot_figure_release(&f);
	cJSON_Delete(rep);
	/* refusals: a report without spectra, malformed fields */
	static const struct {
		const char *json, *want;
		int spectrum;
	} bad[] = {
		{"{\"arms\":{},\"checkpoints\":[{\"arm\":\"a\",\"matrices\":{\"lm_head.weight\":"
		 "{\"stable_rank\":1,\"mean_row_energy\":0.5}}}]}", "no 'singular_values'", 1},
		{"{\"arms\":{},\"checkpoints\":[]}", "no checkpoints", 0},
		{"{\"arms\":{},\"checkpoints\":[{\"arm\":\"a\",\"matrices\":{}}]}", "no model matrices", 0},
		{"{\"arms\":{},\"checkpoints\":[{\"arm\":\"a\"}]}", "'matrices' is missing", 0},
		{"{\"arms\":{},\"checkpoints\":[{\"arm\":\"a\",\"matrices\":{\"lm_head.weight\":"
		 "{\"stable_rank\":true,\"mean_row_energy\":0.5}}}]}", "'stable_rank' is of another type", 0},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cJSON *j = cJSON_Parse(bad[i].json);
		struct plot_figure g;
		memset(&g, 0, sizeof g);
		err_clear(&e);
		CHECKF(plot_geometry(&g, j, "g.json", bad[i].spectrum, NULL, &e) < 0 && strstr(e.msg, bad[i].want),
		       "%s: '%s'", bad[i].want, e.msg);
		plot_figure_release(&g);
		cJSON_Delete(j);
	}
}

/* ---- step0 ---- */

static const char traj_json[] =
	"{\"arm\":\"a\",\"seed\":42,\"dtype\":\"fp64\",\"modes\":["
	"{\"mode\":\"none\",\"wte_lambdas_switched_on\":false,\"steps\":["
	" {\"step\":0,\"loss\":6,\"value\":{\"x0_lambdas\":[0.1,9]},\"value_after\":{\"x0_lambdas\":[0.3,9]}},"
	" {\"step\":1,\"loss\":5,\"value\":{\"x0_lambdas\":[0.3,9]},\"value_after\":{\"x0_lambdas\":[0.5,9]}},"
	" {\"step\":2,\"loss\":4,\"value\":{\"x0_lambdas\":[0.5,9]},\"value_after\":{\"x0_lambdas\":[0.7,9]}}]},"
	"{\"mode\":\"nostep0\",\"wte_lambdas_switched_on\":true,\"steps\":["
	" {\"step\":0,\"loss\":6,\"value\":{\"x0_lambdas\":[0.1,9]},\"value_after\":{\"x0_lambdas\":[0.1,9]}},"
	" {\"step\":1,\"loss\":5.5,\"value\":{\"x0_lambdas\":[0.1,9]},\"value_after\":{\"x0_lambdas\":[0.2,9]}},"
	" {\"step\":2,\"loss\":5,\"value\":{\"x0_lambdas\":[0.2,9]},\"value_after\":{\"x0_lambdas\":[0.4,9]}}]}]}";

TEST(step0_pixels)
{
	cJSON *rep = cJSON_Parse(traj_json);
	struct plot_figure f;
	memset(&f, 0, sizeof f);
	struct err e;
	CHECKF(plot_step0(&f, rep, "t.json", 0, NULL, &e) == 0, "%s", e.msg);
	struct img im;
	CHECK(f.cols == 2 && render_png(&f, &im) == 0);
	if (t_cur_failed) {
		cJSON_Delete(rep);
		plot_figure_release(&f);
		return;
	}
	int c0[3], c1[3];
	rgb255(plot_color(0), c0);
	rgb255(plot_color(1), c1);
	struct frame fr;
	/* loss: steps 0..2, 4..6 by 0.5 */
	struct plot_panel *p = plot_panel_at(&f, 0, 0);
	CHECK(axis_is(&p->x, 0, 2, "loss x") && axis_is(&p->y, 4, 6, "loss y"));
	CHECK(find_frame(&im, p, &fr) == 0);
	struct ax ax = {0, 2, 0}, ay = {4, 6, 0};
	check_point(&im, &fr, ax, ay, 1, 5, 0.4, c0, "none loss");
	check_point(&im, &fr, ax, ay, 2, 4, 0.4, c0, "none loss");
	check_point(&im, &fr, ax, ay, 1, 5.5, -0.25, c1, "nostep0 loss");
	check_point(&im, &fr, ax, ay, 2, 5, -0.5, c1, "nostep0 loss");
	double lxt[3] = {0, 1, 2}, lyt[5] = {4, 4.5, 5, 5.5, 6};
	check_ticks(&im, &fr, ax, lxt, 3, 1, "loss x");
	check_ticks(&im, &fr, ay, lyt, 5, 0, "loss y");
	/* x0_lambdas[0]: steps taken 0..3, 0.1..0.7 by 0.1 */
	p = plot_panel_at(&f, 0, 1);
	CHECK(axis_is(&p->x, 0, 3, "x0 x") && axis_is(&p->y, 0.1, 0.7, "x0 y"));
	CHECK(find_frame(&im, p, &fr) == 0);
	struct ax vx = {0, 3, 0}, vy = {0.1, 0.7, 0};
	static const double v0[4] = {0.1, 0.3, 0.5, 0.7}, v1[4] = {0.1, 0.1, 0.2, 0.4};
	for (int k = 1; k < 4; k++) {
		check_point(&im, &fr, vx, vy, k, v0[k], -0.12, c0, "none x0");
		check_point(&im, &fr, vx, vy, k, v1[k], k == 1 ? 0.12 : 0.1, c1, "nostep0 x0");
	}
	double yt[7] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7}, xt[4] = {0, 1, 2, 3};
	check_ticks(&im, &fr, vy, yt, 7, 0, "x0 y");
	check_ticks(&im, &fr, vx, xt, 4, 1, "x0 x");
	cairo_surface_destroy(im.s);
	plot_figure_release(&f);
	/* entry 1: the constant 9; entry 2: refused */
	memset(&f, 0, sizeof f);
	CHECK(plot_step0(&f, rep, "t.json", 1, NULL, &e) == 0);
	plot_figure_release(&f);
	memset(&f, 0, sizeof f);
	CHECK(plot_step0(&f, rep, "t.json", 2, NULL, &e) < 0 && strstr(e.msg, "has 2 entries, no entry 2"));
	plot_figure_release(&f);
	cJSON_Delete(rep);
	cJSON *j = cJSON_Parse("{\"modes\":[{\"mode\":\"x\",\"steps\":[{\"step\":0,\"loss\":null}]}]}");
	memset(&f, 0, sizeof f);
	CHECK(plot_step0(&f, j, "t.json", 0, NULL, &e) < 0 && strstr(e.msg, "'loss' is not a finite number"));
	plot_figure_release(&f);
	cJSON_Delete(j);
}

/* ---- bytes ---- */

TEST(same_figure_same_bytes)
{
	cJSON *rep = cJSON_Parse(stats_json);
	struct plot_figure f;
	memset(&f, 0, sizeof f);
	struct err e;
	CHECK(plot_stats(&f, rep, "s.json", NULL, &e) == 0);
	cJSON_Delete(rep);
	unsetenv("SOURCE_DATE_EPOCH");
	for (int fmt = PLOT_PNG; fmt <= PLOT_PDF; fmt++) {
		if (fmt == PLOT_SVG)   /* cairo numbers SVG surfaces per process: tests/cli/plot.sh */
			continue;
		unsigned char *a, *b;
		size_t na, nb;
		CHECK(plot_render(&f, (enum plot_format)fmt, 150, &a, &na, &e) == 0);
		CHECK(plot_render(&f, (enum plot_format)fmt, 150, &b, &nb, &e) == 0);
		CHECKF(na == nb && memcmp(a, b, na) == 0, "%s differs", plot_format_name((enum plot_format)fmt));
		if (fmt == PLOT_PDF)
			CHECK(!memmem(a, na, "CreationDate", 12));
		free(a);
		free(b);
	}
	/* SOURCE_DATE_EPOCH dates the PDF; a bad one is refused */
	setenv("SOURCE_DATE_EPOCH", "86400", 1);
	unsigned char *a;
	size_t na;
	CHECK(plot_render(&f, PLOT_PDF, 150, &a, &na, &e) == 0);
	CHECK(memmem(a, na, "CreationDate", 12) && memmem(a, na, "19700102000000", 14));
	free(a);
	setenv("SOURCE_DATE_EPOCH", "yesterday", 1);
	CHECK(plot_render(&f, PLOT_PDF, 150, &a, &na, &e) < 0 && strstr(e.msg, "SOURCE_DATE_EPOCH"));
	unsetenv("SOURCE_DATE_EPOCH");
	CHECK(plot_render(&f, PLOT_PNG, 20, &a, &na, &e) < 0 && strstr(e.msg, "dpi"));
	/* plot_write: nothing on failure, the file on success */
	char *bad = path_join(tmpdir, "nowhere/x.png"), *good = path_join(tmpdir, "x.png");
	CHECK(plot_write(&f, bad, PLOT_PNG, 150, &e) < 0);
	struct stat st;
	CHECK(stat(bad, &st) != 0);
	CHECK(plot_write(&f, good, PLOT_PNG, 150, &e) == 0 && stat(good, &st) == 0 && st.st_size > 1000);
	free(bad);
	free(good);
	plot_figure_release(&f);
}

int main(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/supkit-test-render-XXXXXX");
	if (!mkdtemp(tmpdir))
		return 4;
	RUN(curves_pixels);
	RUN(stats_pixels);
	RUN(geometry_pixels);
	RUN(step0_pixels);
	RUN(same_figure_same_bytes);
	dir_remove_tree(tmpdir);
	return t_done();
}

/* render.c: lay out and draw a figure with cairo (contract in figure.h).
 *
 * Layout, in points: the title on top, the legend in a column on the right,
 * the panels in a grid. A panel's cell is its plot box plus margins: on the
 * left the y axis's label and tick labels (the widest in the column), below
 * the x tick labels (turned 45 degrees when categorical labels would
 * overlap) and label, above the panel's title. With the figure's size
 * unset, every box is cell_w x cell_h; with it set, the boxes share what
 * the margins leave.
 *
 * Text: DejaVu Sans from its file through FreeType (cairo_ft), hinting and
 * metric hinting off, so text measures the same on every surface. Strings
 * from the data are drawn with invalid UTF-8 and control bytes as '?'.
 *
 * Left out: text wrapping (long titles run on), legends inside the panels.
 */
#include "plot/figure.h"

#include <cairo.h>
#include <cairo-ft.h>
#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <ft2build.h>
#include FT_FREETYPE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/cli.h"
#include "lib/fileio.h"
#include "lib/utf8.h"

/* Sizes, points. */
#define MARGIN 8.0
#define FS_TITLE 12.0
#define FS_PANEL 10.0
#define FS_LABEL 9.0
#define FS_TICK 8.0
#define FS_LEGEND 8.5
#define TICK_LEN 3.5
#define FRAME_W 0.8
#define RIGHT_PAD 12.0
#define SWATCH_W 22.0

struct fonts {
	cairo_font_face_t *regular, *bold;
};

/* ---- fonts ---- */

static const cairo_user_data_key_t face_key;

static void face_done(void *face)
{
	FT_Done_Face(face);
}

static cairo_font_face_t *load_face(FT_Library lib, const char *path, struct err *e)
{
	FT_Face face;
	FT_Error fe = FT_New_Face(lib, path, 0, &face);
	if (fe)
		return err_set(e, EXIT_SYS, "cannot load font '%s' (FreeType error %d; Debian package "
			       "fonts-dejavu-core)", path, (int)fe), NULL;
	cairo_font_face_t *ff = cairo_ft_font_face_create_for_ft_face(face, FT_LOAD_NO_HINTING);
	/* cairo may keep the face in its caches: FT_Done_Face when it lets go */
	if (cairo_font_face_status(ff) != CAIRO_STATUS_SUCCESS ||
	    cairo_font_face_set_user_data(ff, &face_key, face, face_done) !=
		    CAIRO_STATUS_SUCCESS) {
		cairo_font_face_destroy(ff);
		FT_Done_Face(face);
		return err_set(e, EXIT_SYS, "cannot use font '%s' with cairo", path), NULL;
	}
	return ff;
}

/* The FreeType library lives as long as the process: cairo's font caches
 * may hold faces beyond one figure. */
static int fonts_open(struct fonts *f, struct err *e)
{
	static FT_Library lib;
	memset(f, 0, sizeof *f);
	if (!lib && FT_Init_FreeType(&lib))
		return err_set(e, EXIT_SYS, "cannot initialise FreeType");
	if (!(f->regular = load_face(lib, PLOT_FONT_REGULAR, e)))
		return -1;
	if (!(f->bold = load_face(lib, PLOT_FONT_BOLD, e))) {
		cairo_font_face_destroy(f->regular);
		return -1;
	}
	return 0;
}

static void fonts_close(struct fonts *f)
{
	if (f->regular)
		cairo_font_face_destroy(f->regular);
	if (f->bold)
		cairo_font_face_destroy(f->bold);
}

/* ---- text ---- */

/* s with invalid UTF-8 and control bytes as '?' (caller frees). */
static char *text_clean(const char *s)
{
	size_t n = strlen(s), o = 0;
	char *out = xmalloc(n + 1);
	for (size_t i = 0; i < n;) {
		size_t k = utf8_seq((const unsigned char *)s + i, n - i);
		if (k == 0 || ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)) {
			out[o++] = '?';
			i += k ? k : 1;
			continue;
		}
		memcpy(out + o, s + i, k);
		o += k;
		i += k;
	}
	out[o] = 0;
	return out;
}

static void use_font(cairo_t *cr, const struct fonts *f, int bold, double size)
{
	cairo_set_font_face(cr, bold ? f->bold : f->regular);
	cairo_set_font_size(cr, size);
}

static double text_w(cairo_t *cr, const struct fonts *f, int bold, double size, const char *s)
{
	if (!s || !*s)
		return 0;
	use_font(cr, f, bold, size);
	char *c = text_clean(s);
	cairo_text_extents_t ex;
	cairo_text_extents(cr, c, &ex);
	free(c);
	return ex.x_advance;
}

/* Draw s with its anchor at (x, y): ha 0 left, 0.5 centre, 1 right; va 0
 * top, 0.5 middle, 1 baseline; turned by angle (radians, counter-clockwise
 * on the page) about the anchor. */
static void draw_text(cairo_t *cr, const struct fonts *f, int bold, double size, const char *s,
		      double x, double y, double ha, double va, double angle)
{
	if (!s || !*s)
		return;
	use_font(cr, f, bold, size);
	char *c = text_clean(s);
	cairo_text_extents_t ex;
	cairo_font_extents_t fe;
	cairo_text_extents(cr, c, &ex);
	cairo_font_extents(cr, &fe);
	double asc = fe.ascent * 0.8;   /* cap height, near enough for centring */
	double dy = va == 1 ? 0 : va == 0 ? asc : asc / 2;
	cairo_save(cr);
	cairo_translate(cr, x, y);
	cairo_rotate(cr, -angle);
	cairo_move_to(cr, -ha * ex.x_advance, dy);
	cairo_show_text(cr, c);
	cairo_restore(cr);
	free(c);
}

/* ---- mapping ---- */

static int axis_ok(const struct plot_axis *a, double v)
{
	return isfinite(v) && (!a->log || v > 0);
}

/* Fraction 0..1 along the axis (may lie outside for values out of range). */
static double axis_t(const struct plot_axis *a, double v)
{
	if (a->log)
		return (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
	return (v - a->lo) / (a->hi - a->lo);
}

static double map_x(const struct plot_panel *p, double v)
{
	return p->box.x0 + axis_t(&p->x, v) * (p->box.x1 - p->box.x0);
}

static double map_y(const struct plot_panel *p, double v)
{
	double t = axis_t(&p->y, v);
	if (p->y.ncat > 0 && p->y.reverse)
		t = 1 - t;
	return p->box.y1 - t * (p->box.y1 - p->box.y0);
}

/* ---- layout ---- */

static void extend(double *lo, double *hi, const struct plot_axis *a, double v)
{
	if (!axis_ok(a, v))
		return;
	if (isnan(*lo) || v < *lo)
		*lo = v;
	if (isnan(*hi) || v > *hi)
		*hi = v;
}

/* Every panel's axis ranges and ticks from what it holds. */
static void panel_ranges(struct plot_panel *p)
{
	double xl = NAN, xh = NAN, yl = NAN, yh = NAN;
	for (int i = 0; i < p->nlines; i++)
		for (int k = 0; k < p->lines[i].n; k++) {
			double x = p->lines[i].x[k], y = p->lines[i].y[k];
			if (!axis_ok(&p->x, x) || !axis_ok(&p->y, y))
				continue;
			extend(&xl, &xh, &p->x, x);
			extend(&yl, &yh, &p->y, y);
		}
	for (int i = 0; i < p->nbands; i++)
		for (int k = 0; k < p->bands[i].n; k++) {
			const struct plot_band *b = &p->bands[i];
			if (!axis_ok(&p->x, b->x[k]))
				continue;
			extend(&xl, &xh, &p->x, b->x[k]);
			extend(&yl, &yh, &p->y, b->lo[k]);
			extend(&yl, &yh, &p->y, b->hi[k]);
		}
	for (int i = 0; i < p->nbars; i++) {
		extend(&xl, &xh, &p->x, p->bars[i].lo);
		extend(&xl, &xh, &p->x, p->bars[i].hi);
		extend(&xl, &xh, &p->x, p->bars[i].mid);
		extend(&yl, &yh, &p->y, p->bars[i].y);
	}
	for (int i = 0; i < p->nrefs; i++) {
		if (p->refs[i].vertical)
			extend(&xl, &xh, &p->x, p->refs[i].at);
		else
			extend(&yl, &yh, &p->y, p->refs[i].at);
	}
	p->empty = isnan(xl) && isnan(yl) && p->x.ncat == 0 && p->y.ncat == 0;
	plot_axis_ticks(&p->x, xl, xh);
	plot_axis_ticks(&p->y, yl, yh);
}

/* Tick positions of an axis: categorical 0..ncat-1, else its ticks. */
static int tick_count(const struct plot_axis *a)
{
	return a->ncat > 0 ? a->ncat : a->nticks;
}

static double tick_at(const struct plot_axis *a, int i)
{
	return a->ncat > 0 ? (double)i : a->ticks[i];
}

static double widest_tick(cairo_t *cr, const struct fonts *fo, const struct plot_axis *a)
{
	double w = 0;
	char b[256];
	for (int i = 0; i < tick_count(a); i++) {
		plot_tick_label(a, tick_at(a, i), b, sizeof b);
		double t = text_w(cr, fo, 0, FS_TICK, b);
		w = t > w ? t : w;
	}
	return w;
}

struct layout {
	double title_h, legend_w, legend_h;
	double *left, *right, *top, *bottom;   /* per column, column, row, row */
	int *rot;                      /* per panel: x tick labels turned */
};

static double legend_row_h(void) { return FS_LEGEND * 1.55; }

static void layout(struct plot_figure *f, cairo_t *cr, const struct fonts *fo, struct layout *L)
{
	int np = f->rows * f->cols;
	for (int i = 0; i < np; i++)
		panel_ranges(&f->panels[i]);
	L->title_h = f->title && *f->title ? FS_TITLE * 1.9 : 0;
	double lw = 0;
	for (int i = 0; i < f->nlegend; i++) {
		const struct plot_legend_item *it = &f->legend[i];
		double w = text_w(cr, fo, it->kind == PLOT_LEGEND_HEADING, FS_LEGEND, it->label) +
			   (it->kind == PLOT_LEGEND_HEADING ? 0 : SWATCH_W + 5);
		lw = w > lw ? w : lw;
	}
	L->legend_w = f->nlegend ? lw + 16 : 0;
	L->legend_h = f->nlegend ? f->nlegend * legend_row_h() + 10 : 0;
	L->left = xcalloc((size_t)f->cols, sizeof *L->left);
	L->right = xcalloc((size_t)f->cols, sizeof *L->right);
	L->top = xcalloc((size_t)f->rows, sizeof *L->top);
	L->bottom = xcalloc((size_t)f->rows, sizeof *L->bottom);
	L->rot = xcalloc((size_t)(np ? np : 1), sizeof *L->rot);
	for (int r = 0; r < f->rows; r++)
		for (int c = 0; c < f->cols; c++) {
			struct plot_panel *p = plot_panel_at(f, r, c);
			if (p->hidden)
				continue;
			double yl = p->y.label && *p->y.label ? FS_LABEL * 1.5 : 0;
			double tw = p->y.hide_labels ? 0 : widest_tick(cr, fo, &p->y) + 3;
			double left = yl + tw + TICK_LEN + 2;
			/* half an x tick label may stick out on either side */
			double half = p->x.hide_labels || p->x.ncat ? 0 : widest_tick(cr, fo, &p->x) / 2 + 4;
			left = half > left ? half : left;
			L->left[c] = left > L->left[c] ? left : L->left[c];
			double right = half > RIGHT_PAD ? half : RIGHT_PAD;
			L->right[c] = right > L->right[c] ? right : L->right[c];
			double top = p->title && *p->title ? FS_PANEL * 1.7 : 6;
			L->top[r] = top > L->top[r] ? top : L->top[r];
		}
	/* Box widths: fixed by cell_w, or shared out of the figure's width. */
	double bw = f->cell_w;
	if (f->width > 0) {
		double used = 2 * MARGIN + L->legend_w;
		for (int c = 0; c < f->cols; c++)
			used += L->left[c] + L->right[c];
		bw = (f->width - used) / f->cols;
		if (bw < 40)
			bw = 40;
	}
	for (int r = 0; r < f->rows; r++)
		for (int c = 0; c < f->cols; c++) {
			struct plot_panel *p = plot_panel_at(f, r, c);
			if (p->hidden)
				continue;
			double th = FS_TICK * 1.3;
			if (!p->x.hide_labels && p->x.ncat > 0) {
				double wmax = widest_tick(cr, fo, &p->x);
				if (wmax + 4 > bw / p->x.ncat) {
					L->rot[r * f->cols + c] = 1;
					th = wmax * 0.71 + FS_TICK;
				}
			}
			if (p->x.hide_labels)
				th = 0;
			double bot = TICK_LEN + 3 + th + (p->x.label && *p->x.label ? FS_LABEL * 1.6 : 0);
			L->bottom[r] = bot > L->bottom[r] ? bot : L->bottom[r];
		}
	double bh = f->cell_h;
	double grid_h_fixed = 0;
	for (int r = 0; r < f->rows; r++)
		grid_h_fixed += L->top[r] + L->bottom[r];
	if (f->height > 0) {
		bh = (f->height - 2 * MARGIN - L->title_h - grid_h_fixed) / f->rows;
		if (bh < 40)
			bh = 40;
	}
	f->page_w = f->width;
	f->page_h = f->height;
	if (f->width <= 0) {
		f->page_w = 2 * MARGIN + L->legend_w + f->cols * bw;
		for (int c = 0; c < f->cols; c++)
			f->page_w += L->left[c] + L->right[c];
	}
	if (f->height <= 0) {
		double gh = f->rows * bh + grid_h_fixed;
		f->page_h = 2 * MARGIN + L->title_h + (gh > L->legend_h ? gh : L->legend_h);
	}
	f->page_w = ceil(f->page_w);   /* whole points: a PDF's MediaBox, an SVG's size */
	f->page_h = ceil(f->page_h);
	/* Boxes. */
	double y = MARGIN + L->title_h;
	for (int r = 0; r < f->rows; r++) {
		double x = MARGIN;
		for (int c = 0; c < f->cols; c++) {
			struct plot_panel *p = plot_panel_at(f, r, c);
			p->box.x0 = x + L->left[c];
			p->box.x1 = p->box.x0 + bw;
			p->box.y0 = y + L->top[r];
			p->box.y1 = p->box.y0 + bh;
			x = p->box.x1 + L->right[c];
		}
		y += L->top[r] + bh + L->bottom[r];
	}
}

static void layout_release(struct layout *L)
{
	free(L->left);
	free(L->right);
	free(L->top);
	free(L->bottom);
	free(L->rot);
}

/* ---- drawing ---- */

static void set_color(cairo_t *cr, struct plot_rgb c, double alpha)
{
	cairo_set_source_rgba(cr, c.r, c.g, c.b, alpha);
}

static void set_line(cairo_t *cr, const struct plot_style *st)
{
	cairo_set_line_width(cr, st->width);
	cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
	static const double dashed[2] = {4.0, 2.5}, dotted[2] = {0.1, 2.2};
	if (st->dash == PLOT_DASHED) {
		cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
		cairo_set_dash(cr, dashed, 2, 0);
	} else if (st->dash == PLOT_DOTTED) {
		cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
		cairo_set_dash(cr, dotted, 2, 0);
	} else {
		cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
		cairo_set_dash(cr, NULL, 0, 0);
	}
	set_color(cr, st->c, st->alpha);
}

static void draw_marker(cairo_t *cr, const struct plot_style *st, double x, double y, int filled)
{
	double r = st->mark_size / 2;
	cairo_new_path(cr);
	cairo_set_dash(cr, NULL, 0, 0);
	if (st->mark == PLOT_MARK_SQUARE)
		cairo_rectangle(cr, x - r, y - r, 2 * r, 2 * r);
	else
		cairo_arc(cr, x, y, r, 0, 2 * M_PI);
	if (st->mark == PLOT_MARK_RING || !filled) {
		cairo_set_source_rgba(cr, 1, 1, 1, st->alpha);
		cairo_fill_preserve(cr);
		set_color(cr, st->c, st->alpha);
		cairo_set_line_width(cr, st->width > 0 ? fmin(st->width, 1.2) : 1.0);
		cairo_stroke(cr);
	} else {
		set_color(cr, st->c, st->alpha);
		cairo_fill(cr);
	}
}

static void draw_lines(cairo_t *cr, const struct plot_panel *p)
{
	for (int i = 0; i < p->nlines; i++) {
		const struct plot_line *l = &p->lines[i];
		if (!(l->st.width > 0))
			continue;
		cairo_new_path(cr);
		int pen = 0;
		for (int k = 0; k < l->n; k++) {
			if (!axis_ok(&p->x, l->x[k]) || !axis_ok(&p->y, l->y[k])) {
				pen = 0;
				continue;
			}
			double x = map_x(p, l->x[k]), y = map_y(p, l->y[k]);
			if (pen)
				cairo_line_to(cr, x, y);
			else
				cairo_move_to(cr, x, y);
			pen = 1;
		}
		set_line(cr, &l->st);
		cairo_stroke(cr);
	}
}

/* Whether v lies in the axis's range (markers are drawn unclipped). */
static int in_range(const struct plot_axis *a, double v)
{
	if (!axis_ok(a, v))
		return 0;
	double t = axis_t(a, v);
	return t >= -1e-9 && t <= 1 + 1e-9;
}

static void draw_marks(cairo_t *cr, const struct plot_panel *p)
{
	for (int i = 0; i < p->nlines; i++) {
		const struct plot_line *l = &p->lines[i];
		if (l->st.mark == PLOT_MARK_NONE)
			continue;
		for (int k = 0; k < l->n; k++)
			if (in_range(&p->x, l->x[k]) && in_range(&p->y, l->y[k]))
				draw_marker(cr, &l->st, map_x(p, l->x[k]), map_y(p, l->y[k]),
					    l->st.mark != PLOT_MARK_RING);
	}
}

static void draw_bands(cairo_t *cr, const struct plot_panel *p)
{
	for (int i = 0; i < p->nbands; i++) {
		const struct plot_band *b = &p->bands[i];
		/* each run of drawable points is one polygon */
		int k = 0;
		while (k < b->n) {
			while (k < b->n && !(axis_ok(&p->x, b->x[k]) && axis_ok(&p->y, b->lo[k]) &&
					      axis_ok(&p->y, b->hi[k])))
				k++;
			int s = k;
			while (k < b->n && axis_ok(&p->x, b->x[k]) && axis_ok(&p->y, b->lo[k]) &&
			       axis_ok(&p->y, b->hi[k]))
				k++;
			if (k - s < 2)
				continue;
			cairo_new_path(cr);
			for (int j = s; j < k; j++)
				cairo_line_to(cr, map_x(p, b->x[j]), map_y(p, b->hi[j]));
			for (int j = k - 1; j >= s; j--)
				cairo_line_to(cr, map_x(p, b->x[j]), map_y(p, b->lo[j]));
			cairo_close_path(cr);
			set_color(cr, b->c, b->alpha);
			cairo_fill(cr);
		}
	}
}

static void draw_refs(cairo_t *cr, const struct plot_panel *p)
{
	for (int i = 0; i < p->nrefs; i++) {
		const struct plot_ref *r = &p->refs[i];
		cairo_new_path(cr);
		if (r->vertical) {
			if (!axis_ok(&p->x, r->at))
				continue;
			double x = map_x(p, r->at);
			cairo_move_to(cr, x, p->box.y0);
			cairo_line_to(cr, x, p->box.y1);
		} else {
			if (!axis_ok(&p->y, r->at))
				continue;
			double y = map_y(p, r->at);
			cairo_move_to(cr, p->box.x0, y);
			cairo_line_to(cr, p->box.x1, y);
		}
		set_line(cr, &r->st);
		cairo_stroke(cr);
	}
}

static void draw_bars(cairo_t *cr, const struct plot_panel *p)
{
	for (int i = 0; i < p->nbars; i++) {
		const struct plot_errbar *b = &p->bars[i];
		double y = map_y(p, b->y);
		if (axis_ok(&p->x, b->lo) && axis_ok(&p->x, b->hi)) {
			double x0 = map_x(p, b->lo), x1 = map_x(p, b->hi), cap = b->st.mark_size * 0.45;
			cairo_new_path(cr);
			cairo_move_to(cr, x0, y);
			cairo_line_to(cr, x1, y);
			cairo_move_to(cr, x0, y - cap);
			cairo_line_to(cr, x0, y + cap);
			cairo_move_to(cr, x1, y - cap);
			cairo_line_to(cr, x1, y + cap);
			set_line(cr, &b->st);
			cairo_stroke(cr);
		}
		if (axis_ok(&p->x, b->mid) && b->st.mark != PLOT_MARK_NONE)
			draw_marker(cr, &b->st, map_x(p, b->mid), y, b->filled);
	}
}

static void draw_grid(cairo_t *cr, const struct plot_panel *p)
{
	cairo_new_path(cr);
	for (int i = 0; i < tick_count(&p->x) && p->x.ncat == 0; i++) {
		double x = map_x(p, tick_at(&p->x, i));
		cairo_move_to(cr, x, p->box.y0);
		cairo_line_to(cr, x, p->box.y1);
	}
	for (int i = 0; i < tick_count(&p->y); i++) {
		double y = map_y(p, tick_at(&p->y, i));
		cairo_move_to(cr, p->box.x0, y);
		cairo_line_to(cr, p->box.x1, y);
	}
	cairo_set_line_width(cr, 0.5);
	cairo_set_dash(cr, NULL, 0, 0);
	cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
	cairo_stroke(cr);
}

static void draw_axes(cairo_t *cr, const struct fonts *fo, const struct plot_panel *p, int rot)
{
	const struct plot_box *b = &p->box;
	cairo_new_path(cr);
	cairo_rectangle(cr, b->x0, b->y0, b->x1 - b->x0, b->y1 - b->y0);
	cairo_set_line_width(cr, FRAME_W);
	cairo_set_line_join(cr, CAIRO_LINE_JOIN_MITER);
	cairo_set_dash(cr, NULL, 0, 0);
	cairo_set_source_rgb(cr, 0, 0, 0);
	cairo_stroke(cr);
	char lab[256];
	/* x ticks below the frame */
	cairo_new_path(cr);
	for (int i = 0; i < tick_count(&p->x); i++) {
		double x = map_x(p, tick_at(&p->x, i));
		cairo_move_to(cr, x, b->y1);
		cairo_line_to(cr, x, b->y1 + TICK_LEN);
	}
	for (int i = 0; i < tick_count(&p->y); i++) {
		double y = map_y(p, tick_at(&p->y, i));
		cairo_move_to(cr, b->x0, y);
		cairo_line_to(cr, b->x0 - TICK_LEN, y);
	}
	cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
	cairo_stroke(cr);
	double lab_y = b->y1 + TICK_LEN + 2;
	double bottom_of_ticks = lab_y + FS_TICK * 1.1;
	if (!p->x.hide_labels)
		for (int i = 0; i < tick_count(&p->x); i++) {
			double v = tick_at(&p->x, i), x = map_x(p, v);
			plot_tick_label(&p->x, v, lab, sizeof lab);
			if (rot) {
				draw_text(cr, fo, 0, FS_TICK, lab, x + 2, lab_y + 1, 1, 0.5, M_PI / 4);
				double w = text_w(cr, fo, 0, FS_TICK, lab) * 0.71 + FS_TICK;
				bottom_of_ticks = fmax(bottom_of_ticks, lab_y + w);
			} else {
				draw_text(cr, fo, 0, FS_TICK, lab, x, lab_y, 0.5, 0, 0);
			}
		}
	double wmax = 0;
	if (!p->y.hide_labels)
		for (int i = 0; i < tick_count(&p->y); i++) {
			double v = tick_at(&p->y, i), y = map_y(p, v);
			plot_tick_label(&p->y, v, lab, sizeof lab);
			draw_text(cr, fo, 0, FS_TICK, lab, b->x0 - TICK_LEN - 2, y, 1, 0.5, 0);
			double w = text_w(cr, fo, 0, FS_TICK, lab);
			wmax = w > wmax ? w : wmax;
		}
	if (p->x.label)
		draw_text(cr, fo, 0, FS_LABEL, p->x.label, (b->x0 + b->x1) / 2, bottom_of_ticks + 2, 0.5, 0, 0);
	if (p->y.label)
		draw_text(cr, fo, 0, FS_LABEL, p->y.label, b->x0 - TICK_LEN - 2 - (wmax ? wmax + 3 : 0) -
			  FS_LABEL * 0.35, (b->y0 + b->y1) / 2, 0.5, 1, M_PI / 2);
	if (p->title)
		draw_text(cr, fo, 1, FS_PANEL, p->title, (b->x0 + b->x1) / 2, b->y0 - FS_PANEL * 0.6, 0.5, 1, 0);
	if (p->empty)
		draw_text(cr, fo, 0, FS_LABEL, "no data", (b->x0 + b->x1) / 2, (b->y0 + b->y1) / 2, 0.5, 0.5, 0);
}

static void draw_panel(cairo_t *cr, const struct fonts *fo, const struct plot_panel *p, int rot)
{
	if (p->hidden)
		return;
	draw_grid(cr, p);
	cairo_save(cr);
	cairo_rectangle(cr, p->box.x0, p->box.y0, p->box.x1 - p->box.x0, p->box.y1 - p->box.y0);
	cairo_clip(cr);
	draw_bands(cr, p);
	draw_refs(cr, p);
	draw_lines(cr, p);
	cairo_restore(cr);
	draw_axes(cr, fo, p, rot);
	draw_marks(cr, p);
	draw_bars(cr, p);
}

static void draw_legend(cairo_t *cr, const struct fonts *fo, const struct plot_figure *f,
			const struct layout *L)
{
	if (!f->nlegend)
		return;
	double x = f->page_w - MARGIN - L->legend_w + 8, y = MARGIN + L->title_h + 10;
	for (int i = 0; i < f->nlegend; i++, y += legend_row_h()) {
		const struct plot_legend_item *it = &f->legend[i];
		double cy = y + legend_row_h() / 2;
		if (it->kind == PLOT_LEGEND_HEADING) {
			cairo_set_source_rgb(cr, 0, 0, 0);
			draw_text(cr, fo, 1, FS_LEGEND, it->label, x, cy, 0, 0.5, 0);
			continue;
		}
		if (it->kind == PLOT_LEGEND_BAND) {
			cairo_new_path(cr);
			cairo_rectangle(cr, x, cy - 4, SWATCH_W, 8);
			set_color(cr, it->st.c, 0.25);
			cairo_fill(cr);
		}
		if (it->st.width > 0) {
			cairo_new_path(cr);
			cairo_move_to(cr, x, cy);
			cairo_line_to(cr, x + SWATCH_W, cy);
			set_line(cr, &it->st);
			cairo_stroke(cr);
		}
		if (it->st.mark != PLOT_MARK_NONE)
			draw_marker(cr, &it->st, x + SWATCH_W / 2, cy, it->st.mark != PLOT_MARK_RING);
		cairo_set_source_rgb(cr, 0, 0, 0);
		draw_text(cr, fo, 0, FS_LEGEND, it->label, x + SWATCH_W + 5, cy, 0, 0.5, 0);
	}
}

static void draw_figure(cairo_t *cr, const struct fonts *fo, const struct plot_figure *f,
			const struct layout *L)
{
	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	cairo_set_source_rgb(cr, 0, 0, 0);
	if (f->title)
		draw_text(cr, fo, 1, FS_TITLE, f->title, MARGIN, MARGIN + FS_TITLE * 0.15, 0, 0, 0);
	for (int r = 0; r < f->rows; r++)
		for (int c = 0; c < f->cols; c++) {
			cairo_set_source_rgb(cr, 0, 0, 0);
			draw_panel(cr, fo, plot_panel_at((struct plot_figure *)f, r, c), L->rot[r * f->cols + c]);
		}
	draw_legend(cr, fo, f, L);
}

/* ---- surfaces ---- */

struct membuf {
	unsigned char *p;
	size_t n, cap;
};

static cairo_status_t mem_write(void *closure, const unsigned char *data, unsigned int len)
{
	struct membuf *m = closure;
	if (m->n + len > m->cap) {
		size_t cap = m->cap ? m->cap : 65536;
		while (cap < m->n + len)
			cap *= 2;
		m->p = xrealloc(m->p, cap);
		m->cap = cap;
	}
	memcpy(m->p + m->n, data, len);
	m->n += len;
	return CAIRO_STATUS_SUCCESS;
}

static void font_options(cairo_t *cr)
{
	cairo_font_options_t *o = cairo_font_options_create();
	cairo_font_options_set_hint_style(o, CAIRO_HINT_STYLE_NONE);
	cairo_font_options_set_hint_metrics(o, CAIRO_HINT_METRICS_OFF);
	cairo_set_font_options(cr, o);
	cairo_font_options_destroy(o);
}

/* SOURCE_DATE_EPOCH as "YYYY-MM-DDTHH:MM:SSZ", or "" when unset. */
static int pdf_date(char *buf, size_t n, struct err *e)
{
	const char *s = getenv("SOURCE_DATE_EPOCH");
	buf[0] = 0;
	if (!s)
		return 0;
	int64_t t;
	if (cli_parse_i64(s, 0, 253402300799LL, &t, "SOURCE_DATE_EPOCH", e) < 0)
		return -1;
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return 0;
}

int plot_render(struct plot_figure *f, enum plot_format format, double dpi, unsigned char **out,
		size_t *len, struct err *e)
{
	*out = NULL;
	*len = 0;
	if (!(dpi >= 72 && dpi <= 1200))
		return err_set(e, EXIT_USAGE, "dpi %g is out of range [72, 1200]", dpi);
	char date[32];
	if (format == PLOT_PDF && pdf_date(date, sizeof date, e) < 0)
		return -1;
	struct fonts fo;
	if (fonts_open(&fo, e) < 0)
		return -1;
	/* Measure on a scratch surface, in points. */
	cairo_surface_t *scratch = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
	cairo_t *mc = cairo_create(scratch);
	font_options(mc);
	struct layout L;
	memset(&L, 0, sizeof L);
	layout(f, mc, &fo, &L);
	cairo_destroy(mc);
	cairo_surface_destroy(scratch);

	struct membuf m = {0};
	cairo_surface_t *s;
	double scale = format == PLOT_PNG ? dpi / 72.0 : 1.0;
	if (format == PLOT_PNG)
		s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)ceil(f->page_w * scale),
					       (int)ceil(f->page_h * scale));
	else if (format == PLOT_SVG)
		s = cairo_svg_surface_create_for_stream(mem_write, &m, f->page_w, f->page_h);
	else
		s = cairo_pdf_surface_create_for_stream(mem_write, &m, f->page_w, f->page_h);
	if (format == PLOT_PDF && cairo_surface_status(s) == CAIRO_STATUS_SUCCESS) {
		char *t = text_clean(f->title ? f->title : "");
		cairo_pdf_surface_set_metadata(s, CAIRO_PDF_METADATA_TITLE, t);
		free(t);
		cairo_pdf_surface_set_metadata(s, CAIRO_PDF_METADATA_CREATOR, "supkit plot " SUPKIT_VERSION);
		/* "" leaves the creation date out */
		cairo_pdf_surface_set_metadata(s, CAIRO_PDF_METADATA_CREATE_DATE, date);
	}
	cairo_t *cr = cairo_create(s);
	font_options(cr);
	cairo_scale(cr, scale, scale);
	draw_figure(cr, &fo, f, &L);
	cairo_status_t st = cairo_status(cr);
	cairo_destroy(cr);
	if (st == CAIRO_STATUS_SUCCESS && format == PLOT_PNG)
		st = cairo_surface_write_to_png_stream(s, mem_write, &m);
	cairo_surface_finish(s);
	if (st == CAIRO_STATUS_SUCCESS)
		st = cairo_surface_status(s);
	cairo_surface_destroy(s);
	fonts_close(&fo);
	layout_release(&L);
	if (st != CAIRO_STATUS_SUCCESS) {
		free(m.p);
		return err_set(e, EXIT_SYS, "cairo could not draw the %s: %s", plot_format_name(format),
			       cairo_status_to_string(st));
	}
	*out = m.p;
	*len = m.n;
	return 0;
}

int plot_write(struct plot_figure *f, const char *path, enum plot_format format, double dpi,
	       struct err *e)
{
	unsigned char *buf;
	size_t n;
	if (plot_render(f, format, dpi, &buf, &n, e) < 0)
		return -1;
	int rc = file_write_atomic(path, buf, n, e);
	free(buf);
	return rc;
}

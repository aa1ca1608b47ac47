/* figure.h: a figure as data (panels of lines, bands, intervals and
 * reference lines on axes, a legend, a title) and its drawing with cairo
 * into PNG, SVG or PDF bytes.
 *
 * The plot kinds (plots.h) build a struct plot_figure from their inputs;
 * plot_render lays it out and draws it. Lengths are in points (1/72 inch):
 * SVG and PDF pages are width x height points, a PNG is that times dpi/72
 * pixels. Text is drawn through cairo's FreeType backend with DejaVu Sans
 * read from its file (Debian fonts-dejavu-core), never looked up through
 * fontconfig, and with hinting off, so the layout is the same in every
 * format and on every machine with that font file.
 *
 * Axes: linear axes run from the data's range widened to whole multiples
 * of a tick step of 1, 2 or 5 times a power of ten, the smallest that needs
 * at most 8 intervals (plot_axis_ticks); log axes from the decade at or below the smallest
 * value to the decade at or above the largest, ticks at 1, 2 and 5 times
 * each power of ten when the axis spans at most two decades, at the powers
 * of ten otherwise. A categorical axis puts its labels at 0 .. ncat-1.
 *
 * Determinism: the same figure gives the same bytes. PNG: cairo's image
 * surface and its PNG writer (no time chunk). PDF: no creation date unless
 * SOURCE_DATE_EPOCH is set (then that date); font subsets are tagged from
 * their glyphs by cairo. SVG: cairo numbers its surfaces per process, so
 * the bytes are the same from one run of a command to the next (one
 * figure a process), not for a second figure drawn by the same process.
 *
 * Ownership: the figure owns every string and array handed to it (copies);
 * plot_figure_release frees them.
 */
#ifndef SUPKIT_PLOT_FIGURE_H
#define SUPKIT_PLOT_FIGURE_H

#include <stddef.h>
#include "lib/err.h"

enum plot_format { PLOT_PNG, PLOT_SVG, PLOT_PDF };

/* The format named by path's extension (.png, .svg, .pdf, any case);
 * EXIT_USAGE for any other. */
int plot_format_of(const char *path, enum plot_format *f, struct err *e);
const char *plot_format_name(enum plot_format f);   /* "PNG", "SVG", "PDF" */

struct plot_rgb {
	double r, g, b;   /* 0..1 */
};
/* The i-th colour of the palette (Okabe and Ito's colour-blind safe set
 * without its yellow, then darker shades), cycling after PLOT_NCOLORS. */
#define PLOT_NCOLORS 10
struct plot_rgb plot_color(int i);

enum plot_mark { PLOT_MARK_NONE, PLOT_MARK_DOT, PLOT_MARK_RING, PLOT_MARK_SQUARE };
enum plot_dash { PLOT_SOLID, PLOT_DASHED, PLOT_DOTTED };

struct plot_style {
	struct plot_rgb c;
	double alpha;         /* 0..1 */
	double width;         /* line width, points; 0: no line */
	enum plot_dash dash;
	enum plot_mark mark;
	double mark_size;     /* marker diameter, points */
};

/* A polyline through (x[i], y[i]); a NaN coordinate, or a point a log axis
 * cannot show (<= 0), breaks the line there. */
struct plot_line {
	struct plot_style st;
	int n;
	double *x, *y;
};

/* The area between lo and hi over x (a mean +- SD band). */
struct plot_band {
	struct plot_rgb c;
	double alpha;
	int n;
	double *x, *lo, *hi;
};

/* A horizontal interval [lo, hi] at height y with a marker at mid (a
 * forest plot's row); no bar when lo or hi is NaN. filled: the marker is
 * filled, otherwise a ring. */
struct plot_errbar {
	struct plot_style st;
	double y, lo, hi, mid;
	int filled;
};

/* A line across the whole panel at x = at (vertical) or y = at. */
struct plot_ref {
	int vertical;
	double at;
	struct plot_style st;
};

struct plot_axis {
	char *label;
	int log;              /* base-10 logarithmic */
	int integer;          /* linear: tick steps of at least 1 */
	int reverse;          /* categorical: label 0 at the top (y) */
	int ncat;             /* categorical when > 0: labels at 0 .. ncat-1 */
	char **cat;
	int hide_labels;      /* no tick labels (a row shared with the panel on the left) */
	int fixed;            /* lo, hi set by the caller (plot_axis_fix) */
	/* set by plot_axis_ticks */
	double lo, hi;        /* the axis range */
	int nticks;
	double ticks[64];
	double step;          /* linear: the tick step */
};

struct plot_box {
	double x0, y0, x1, y1;   /* the plot area (inside the frame), points, y down */
};

struct plot_panel {
	char *title;
	struct plot_axis x, y;
	int nlines, nbands, nbars, nrefs;
	struct plot_line *lines;
	struct plot_band *bands;
	struct plot_errbar *bars;
	struct plot_ref *refs;
	struct plot_box box;     /* set by plot_render */
	int empty;               /* nothing to draw: "no data" in the frame */
	int hidden;              /* not drawn at all (a grid's unused cells) */
};

enum plot_legend_kind { PLOT_LEGEND_LINE, PLOT_LEGEND_BAND, PLOT_LEGEND_HEADING };

struct plot_legend_item {
	enum plot_legend_kind kind;
	char *label;
	struct plot_style st;
};

struct plot_figure {
	char *title;
	double width, height;    /* points asked for; 0: from the panels' cells */
	double page_w, page_h;   /* points drawn, set by plot_render */
	int rows, cols;
	struct plot_panel *panels;   /* rows x cols, row-major */
	int nlegend;
	struct plot_legend_item *legend;
	double cell_w, cell_h;   /* a panel's cell when width/height are 0 (points) */
};

/* A figure of rows x cols empty panels (cell 300 x 230 points unless set). */
void plot_figure_init(struct plot_figure *f, int rows, int cols);
void plot_figure_release(struct plot_figure *f);
struct plot_panel *plot_panel_at(struct plot_figure *f, int row, int col);
void plot_set_title(struct plot_figure *f, const char *title);
void plot_panel_title(struct plot_panel *p, const char *title);
void plot_axis_label(struct plot_axis *a, const char *label);
/* Categorical labels (copied). */
void plot_axis_categories(struct plot_axis *a, char *const *labels, int n);
void plot_axis_fix(struct plot_axis *a, double lo, double hi);

/* Copies of the arrays. */
void plot_add_line(struct plot_panel *p, const struct plot_style *st, int n, const double *x,
		   const double *y);
void plot_add_band(struct plot_panel *p, struct plot_rgb c, double alpha, int n, const double *x,
		   const double *lo, const double *hi);
void plot_add_bar(struct plot_panel *p, const struct plot_style *st, double y, double lo, double mid,
		  double hi, int filled);
void plot_add_ref(struct plot_panel *p, int vertical, double at, const struct plot_style *st);
void plot_legend_add(struct plot_figure *f, enum plot_legend_kind kind, const char *label,
		     const struct plot_style *st);

/* The range and ticks of an axis whose data lie in [dlo, dhi] (NaN when
 * there are none): see the header comment. A fixed axis keeps its range
 * and gets the ticks inside it. Log axes need dlo > 0 (else 1..10). */
void plot_axis_ticks(struct plot_axis *a, double dlo, double dhi);
/* The label of tick value v on axis a ("0.25", "1.5k", "2M", "1e-05"). */
void plot_tick_label(const struct plot_axis *a, double v, char *buf, size_t n);

/* Lay the figure out (axes' ranges from their data, panel boxes, size)
 * and draw it as format; *out (caller frees) holds *len bytes. dpi: PNG
 * pixels per inch (72 .. 1200). 0 or -1 (e: a cairo failure or a missing
 * font, EXIT_SYS). */
int plot_render(struct plot_figure *f, enum plot_format format, double dpi, unsigned char **out,
		size_t *len, struct err *e);
/* plot_render, then an atomic write of path (nothing is written on error). */
int plot_write(struct plot_figure *f, const char *path, enum plot_format format, double dpi,
	       struct err *e);

/* The font files (DejaVu Sans regular and bold). */
#define PLOT_FONT_DIR "/usr/share/fonts/truetype/dejavu"
#define PLOT_FONT_REGULAR PLOT_FONT_DIR "/DejaVuSans.ttf"
#define PLOT_FONT_BOLD PLOT_FONT_DIR "/DejaVuSans-Bold.ttf"

#endif

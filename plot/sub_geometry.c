/* sub_geometry.c: supkit plot geometry: stable rank and mean-row energy
 * per layer, or singular spectra, from supkit audit geometry --json (thin:
 * options, plot/layers.c, write). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot/plot_cmds.h"
#include "plot/plots.h"

enum { OPT_SPECTRUM = 256 };

static const struct cli_opt opts[] = {
	PLOT_COMMON_OPTS,
	{"spectrum", OPT_SPECTRUM, NULL, "the singular spectra (a report of audit geometry --spectrum)"},
	{NULL, 0, NULL, NULL},
};

static const char usage[] =
	"usage: supkit plot geometry [options] GEOMETRY.json -o FILE\n"
	"\n"
	"Stable rank and mean-row energy share of each matrix against layer, one\n"
	"column a matrix family, one colour an arm; with --spectrum the singular\n"
	"values of each matrix on log-log axes, one panel a family.";

struct ctx {
	struct plot_out out;
	int spectrum;
};

static int on_opt(int key, const char *arg, void *vc, struct err *e)
{
	struct ctx *c = vc;
	int r = plot_out_opt(&c->out, key, arg, e);
	if (r <= 0)
		return r;
	if (key == OPT_SPECTRUM)
		c->spectrum = 1;
	return 0;
}

int plot_geometry_main(int argc, char **argv)
{
	struct ctx c;
	memset(&c, 0, sizeof c);
	int n;
	char **files = cli_parse_operands(argc, argv, opts, usage, on_opt, &c, &n);
	const char *in = n == 1 ? files[0] : NULL;
	free(files);
	if (n != 1)
		cli_usage_error(n ? "one GEOMETRY.json at a time" : "no GEOMETRY.json given");
	plot_out_check(&c.out);
	struct err e;
	err_clear(&e);
	cJSON *rep = plot_report_read(in, PLOT_REPORT_GEOMETRY, &e);
	if (!rep)
		return err_report(&e);
	struct plot_figure f;
	memset(&f, 0, sizeof f);
	int rc = plot_geometry(&f, rep, in, c.spectrum, c.out.title, &e);
	cJSON_Delete(rep);
	if (rc < 0) {
		plot_figure_release(&f);
		return err_report(&e);
	}
	return plot_out_write(&c.out, &f);
}

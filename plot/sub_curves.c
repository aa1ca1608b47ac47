/* sub_curves.c: supkit plot curves: training loss and validation BPB of
 * run folders (thin: options, plot/runs.c, plot/curves.c, write). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot/plot_cmds.h"
#include "plot/plots.h"

enum { OPT_X = 256, OPT_LOG_X, OPT_BAND, OPT_SMOOTH, OPT_FROM };

static const struct cli_opt opts[] = {
	PLOT_COMMON_OPTS,
	{"x", OPT_X, "step|tokens", "the x axis: steps (default) or tokens seen"},
	{"log-x", OPT_LOG_X, NULL, "logarithmic x axis"},
	{"band", OPT_BAND, NULL, "each arm's mean +- SD over seeds as a band, no line a seed"},
	{"smooth", OPT_SMOOTH, "W", "EMA weight for the training loss, in [0, 1) (default 0.9; 0: raw)"},
	{"from", OPT_FROM, "STEP", "leave out the steps before STEP"},
	{NULL, 0, NULL, NULL},
};

static const char usage[] =
	"usage: supkit plot curves [options] RUNDIR... -o FILE\n"
	"\n"
	"Training loss (raw and smoothed) and validation BPB of run folders against\n"
	"step or tokens: one colour per arm, each seed a thin line, the arm's mean\n"
	"in bold, the warm-down start dashed. A RUNDIR is a run folder or a folder\n"
	"of run folders.";

struct ctx {
	struct plot_out out;
	struct plot_curves_opts c;
};

static int on_opt(int key, const char *arg, void *vc, struct err *e)
{
	struct ctx *c = vc;
	int r = plot_out_opt(&c->out, key, arg, e);
	if (r <= 0)
		return r;
	switch (key) {
	case OPT_X:
		if (!strcmp(arg, "step"))
			c->c.tokens = 0;
		else if (!strcmp(arg, "tokens"))
			c->c.tokens = 1;
		else
			return err_set(e, EXIT_USAGE, "--x: '%s' is not step or tokens", arg);
		return 0;
	case OPT_LOG_X: c->c.log_x = 1; return 0;
	case OPT_BAND: c->c.band = 1; return 0;
	case OPT_SMOOTH:
		if (cli_parse_double(arg, &c->c.smooth, "--smooth", e) < 0)
			return -1;
		if (!(c->c.smooth >= 0 && c->c.smooth < 1))
			return err_set(e, EXIT_USAGE, "--smooth: %s is not in [0, 1)", arg);
		return 0;
	case OPT_FROM: {
		int64_t v;
		if (cli_parse_i64(arg, 0, INT64_MAX / 2, &v, "--from", e) < 0)
			return -1;
		c->c.from = (double)v;
		return 0;
	}
	}
	return 0;
}

int plot_curves_main(int argc, char **argv)
{
	struct ctx c;
	memset(&c, 0, sizeof c);
	c.c.smooth = 0.9;
	int n;
	char **dirs = cli_parse_operands(argc, argv, opts, usage, on_opt, &c, &n);
	if (!n) {
		free(dirs);
		cli_usage_error("no run folder given");
	}
	plot_out_check(&c.out);
	c.c.title = c.out.title;
	struct err e;
	err_clear(&e);
	struct plot_run *runs;
	int nr;
	int rc = plot_runs_read(dirs, n, &runs, &nr, &e);
	free(dirs);
	if (rc < 0)
		return err_report(&e);
	struct plot_figure f;
	memset(&f, 0, sizeof f);
	rc = plot_curves(&f, runs, nr, &c.c, &e);
	plot_runs_free(runs, nr);
	if (rc < 0) {
		plot_figure_release(&f);
		return err_report(&e);
	}
	return plot_out_write(&c.out, &f);
}

/* sub_step0.c: supkit plot step0: the step-0 trajectories of supkit audit
 * trajectory --json (thin: options, plot/trajectory.c, write). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot/plot_cmds.h"
#include "plot/plots.h"

enum { OPT_ENTRY = 256 };

static const struct cli_opt opts[] = {
	PLOT_COMMON_OPTS,
	{"entry", OPT_ENTRY, "N", "which entry of each scalar family (default 0, the first layer's)"},
	{NULL, 0, NULL, NULL},
};

static const char usage[] =
	"usage: supkit plot step0 [options] TRAJECTORY.json -o FILE\n"
	"\n"
	"The step-0 trajectories of supkit audit trajectory --json: the loss and\n"
	"each scalar family's entry N against steps taken, one colour a mode.";

struct ctx {
	struct plot_out out;
	int64_t entry;
};

static int on_opt(int key, const char *arg, void *vc, struct err *e)
{
	struct ctx *c = vc;
	int r = plot_out_opt(&c->out, key, arg, e);
	if (r <= 0)
		return r;
	if (key == OPT_ENTRY)
		return cli_parse_i64(arg, 0, 1000000, &c->entry, "--entry", e);
	return 0;
}

int plot_step0_main(int argc, char **argv)
{
	struct ctx c;
	memset(&c, 0, sizeof c);
	int n;
	char **files = cli_parse_operands(argc, argv, opts, usage, on_opt, &c, &n);
	const char *in = n == 1 ? files[0] : NULL;
	free(files);
	if (n != 1)
		cli_usage_error(n ? "one TRAJECTORY.json at a time" : "no TRAJECTORY.json given");
	plot_out_check(&c.out);
	struct err e;
	err_clear(&e);
	cJSON *rep = plot_report_read(in, PLOT_REPORT_TRAJECTORY, &e);
	if (!rep)
		return err_report(&e);
	struct plot_figure f;
	memset(&f, 0, sizeof f);
	int rc = plot_step0(&f, rep, in, (int)c.entry, c.out.title, &e);
	cJSON_Delete(rep);
	if (rc < 0) {
		plot_figure_release(&f);
		return err_report(&e);
	}
	return plot_out_write(&c.out, &f);
}

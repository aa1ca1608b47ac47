/* sub_stats.c: supkit plot stats: the paired contrasts of supkit audit
 * stats --json as a forest plot (thin: options, plot/forest.c, write). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot/plot_cmds.h"
#include "plot/plots.h"

static const struct cli_opt opts[] = {
	PLOT_COMMON_OPTS,
	{NULL, 0, NULL, NULL},
};

static const char usage[] =
	"usage: supkit plot stats [options] STATS.json -o FILE\n"
	"\n"
	"The paired contrasts of supkit audit stats --json as a forest plot: per\n"
	"contrast the difference of means with its 95% t-interval and each seed's\n"
	"difference, validation and held-out side by side, a line at zero.";

static int on_opt(int key, const char *arg, void *vc, struct err *e)
{
	return plot_out_opt(vc, key, arg, e) < 0 ? -1 : 0;
}

int plot_stats_main(int argc, char **argv)
{
	struct plot_out o;
	memset(&o, 0, sizeof o);
	int n;
	char **files = cli_parse_operands(argc, argv, opts, usage, on_opt, &o, &n);
	const char *in = n == 1 ? files[0] : NULL;
	free(files);
	if (n != 1)
		cli_usage_error(n ? "one STATS.json at a time" : "no STATS.json given");
	plot_out_check(&o);
	struct err e;
	err_clear(&e);
	cJSON *rep = plot_report_read(in, PLOT_REPORT_STATS, &e);
	if (!rep)
		return err_report(&e);
	struct plot_figure f;
	memset(&f, 0, sizeof f);
	int rc = plot_stats(&f, rep, in, o.title, &e);
	cJSON_Delete(rep);
	if (rc < 0) {
		plot_figure_release(&f);
		return err_report(&e);
	}
	return plot_out_write(&o, &f);
}

/* sub_common.c: the options and the output step shared by the
 * subcommands of supkit-plot (plot_cmds.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot/plot_cmds.h"

int plot_out_opt(struct plot_out *o, int key, const char *arg, struct err *e)
{
	switch (key) {
	case 'o':
		o->output = arg;
		return 0;
	case PLOT_OPT_TITLE:
		o->title = arg;
		return 0;
	case PLOT_OPT_DPI: {
		int64_t v;
		if (cli_parse_i64(arg, 72, 1200, &v, "--dpi", e) < 0)
			return -1;
		o->dpi = (double)v;
		return 0;
	}
	case PLOT_OPT_SIZE: {
		const char *x = strchr(arg, 'x');
		int64_t w, h;
		if (!x)
			return err_set(e, EXIT_USAGE, "--size: '%s' is not WxH (points, e.g. 640x360)", arg);
		char *ws = xstrndup(arg, (size_t)(x - arg));
		int rc = cli_parse_i64(ws, 100, 10000, &w, "--size width", e);
		free(ws);
		if (rc < 0 || cli_parse_i64(x + 1, 100, 10000, &h, "--size height", e) < 0)
			return -1;
		o->width = (double)w;
		o->height = (double)h;
		return 0;
	}
	}
	return 1;
}

void plot_out_check(struct plot_out *o)
{
	struct err e;
	if (!o->output)
		cli_usage_error("no output given (-o FILE.png, FILE.svg or FILE.pdf)");
	if (plot_format_of(o->output, &o->format, &e) < 0)
		cli_usage_error("%s", e.msg);
	if (!(o->dpi > 0))
		o->dpi = 150;
}

int plot_out_write(struct plot_out *o, struct plot_figure *f)
{
	struct err e;
	err_clear(&e);
	f->width = o->width;
	f->height = o->height;
	int rc = plot_write(f, o->output, o->format, o->dpi, &e);
	if (rc == 0) {
		if (o->format == PLOT_PNG)
			printf("%s: PNG, %d x %d px\n", o->output, (int)ceil(f->page_w * o->dpi / 72),
			       (int)ceil(f->page_h * o->dpi / 72));
		else
			printf("%s: %s, %g x %g pt\n", o->output, plot_format_name(o->format), round(f->page_w),
			       round(f->page_h));
	}
	plot_figure_release(f);
	return rc == 0 ? EXIT_OK : err_report(&e);
}

/* plot_cmds.h: the subcommands of supkit-plot (plot/sub_<name>.c, thin:
 * parse, read, build the figure, write it) and what they share
 * (sub_common.c: the output options, the write and its report line). Each
 * main takes argv from the subcommand name on and returns the exit status. */
#ifndef SUPKIT_PLOT_CMDS_H
#define SUPKIT_PLOT_CMDS_H

#include "lib/cli.h"
#include "plot/figure.h"

int plot_curves_main(int argc, char **argv);
int plot_stats_main(int argc, char **argv);
int plot_geometry_main(int argc, char **argv);
int plot_step0_main(int argc, char **argv);

/* The options every subcommand has. */
enum { PLOT_OPT_TITLE = 300, PLOT_OPT_SIZE, PLOT_OPT_DPI };
#define PLOT_COMMON_OPTS                                                                          \
	{"output", 'o', "FILE", "the figure to write: FILE.png, FILE.svg or FILE.pdf (required)"}, \
	{"title", PLOT_OPT_TITLE, "TEXT", "the figure's title (default: from the data)"},          \
	{"size", PLOT_OPT_SIZE, "WxH", "page size in points (default: from the panels)"},          \
	{"dpi", PLOT_OPT_DPI, "N", "PNG pixels per inch (default 150)"}

struct plot_out {
	const char *output, *title;
	double width, height, dpi;
	enum plot_format format;
};

/* Handle a common option (0, 1 when key is not one, -1 with e). */
int plot_out_opt(struct plot_out *o, int key, const char *arg, struct err *e);
/* Check -o was given and names a known format (usage error otherwise). */
void plot_out_check(struct plot_out *o);
/* Size the figure, write it atomically, print "FILE: FORMAT, W x H unit";
 * returns the exit status (the figure is released in every case). */
int plot_out_write(struct plot_out *o, struct plot_figure *f);

#endif

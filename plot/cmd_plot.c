/* cmd_plot.c: supkit-plot, git-style dispatch to its subcommands
 * (plot/sub_*.c). */
#include "lib/cli.h"
#include "plot/plot_cmds.h"

static const struct cli_sub subs[] = {
	{"curves", plot_curves_main, "training loss and validation BPB of run folders, by arm"},
	{"stats", plot_stats_main, "forest plot of the paired contrasts of audit stats --json"},
	{"geometry", plot_geometry_main, "stable rank, mean-row energy or spectra of audit geometry --json"},
	{"step0", plot_step0_main, "step-0 trajectories of audit trajectory --json"},
	{NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
	return cli_dispatch(argc, argv, "plot", "a plot", subs);
}

/* cmd_audit.c: supkit-audit, git-style dispatch to its subcommands
 * (audit/sub_*.c). */
#include <stdio.h>
#include <string.h>

#include "audit/audit_cmds.h"
#include "lib/cli.h"
#include "lib/err.h"

static const struct cli_sub subs[] = {
	{"compute", audit_compute_main, "parameter, FLOP and memory accounting of configs and arms"},
	{"stats", audit_stats_main, "per-cell seed tables and paired contrasts from run records"},
	{"geometry", audit_geometry_main, "stable rank and mean-row energy of checkpoint matrices"},
	{"digest", audit_digest_main, "content SHA-256 of a safetensors checkpoint"},
	{"step0", audit_step0_main, "float64 vs bf16 gradient of the scalar families at step 0"},
	{"trajectory", audit_trajectory_main, "steps 0..11 of each step-0 mode, as JSON"},
	{NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
	return cli_dispatch(argc, argv, "audit", "an audit", subs);
}

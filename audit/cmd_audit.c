/* cmd_audit.c: supkit-audit, git-style dispatch to its subcommands
 * (audit/sub_*.c). */
#include <stdio.h>
#include <string.h>

#include "audit/audit_cmds.h"
#include "lib/cli.h"
#include "lib/err.h"

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *what;
} subs[] = {
	{"compute", audit_compute_main, "parameter, FLOP and memory accounting of configs and arms"},
	{"stats", audit_stats_main, "per-cell seed tables and paired contrasts from run records"},
	{"geometry", audit_geometry_main, "stable rank and mean-row energy of checkpoint matrices"},
	{"digest", audit_digest_main, "content SHA-256 of a safetensors checkpoint"},
	{"step0", audit_step0_main, "float64 vs bf16 gradient of the scalar families at step 0"},
	{"trajectory", audit_trajectory_main, "steps 0..11 of each step-0 mode, as JSON"},
	{NULL, NULL, NULL},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: supkit audit <subcommand> [options] [args]\n\nsubcommands:\n");
	for (int i = 0; subs[i].name; i++)
		fprintf(f, "  %-11s %s\n", subs[i].name, subs[i].what);
	fprintf(f, "\n'supkit audit <subcommand> --help' shows its options; man supkit-audit.\n");
}

int main(int argc, char **argv)
{
	cli_set_prog("supkit-audit");
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("supkit-audit %s\n", SUPKIT_VERSION);
		return EXIT_OK;
	}
	for (int i = 0; subs[i].name; i++) {
		if (strcmp(subs[i].name, argv[1]) != 0)
			continue;
		static char prog[64];
		snprintf(prog, sizeof prog, "supkit-audit %s", subs[i].name);
		err_prog = prog;
		return subs[i].fn(argc - 1, argv + 1);
	}
	cli_usage_error("'%s' is not an audit subcommand", argv[1]);
}

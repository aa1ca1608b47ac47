/* step0_args.h: the command line that `supkit audit step0` and `supkit audit
 * trajectory` share (config, shards, --set overrides, --init-from, output
 * flags) plus each one's own whole-number option (--tokens, --steps).
 * Reference: supkit-audit(1), step0 and trajectory. */
#ifndef SUPKIT_AUDIT_STEP0_ARGS_H
#define SUPKIT_AUDIT_STEP0_ARGS_H

#include <stdint.h>
#include <stdio.h>

#include "lib/json.h"

struct step0_args {
	const char *config, *init_from, *output;
	const char **data, **sets; /* argv pointers; arrays owned (step0_args_free) */
	int n_data, n_sets, json, quiet;
	int64_t n; /* the value of the subcommand's own option */
	const char *command, *own; /* "step0" (argv[0]) and the own option's name, for the record */
};

/* The subcommand's own option: "--<name> N", help line, range [lo, hi]. */
struct step0_n_opt {
	const char *name, *help;
	int64_t lo, hi;
};

/* Parse argv (argv[0] = the subcommand name) into *a; a->n must hold the
 * default of the own option. noun names the JSON output in the help ("report",
 * "record"). Operands are shard paths, added after the --data ones. --help
 * prints and exits 0; a usage error (including a missing --config) exits 2. */
void step0_args_parse(int argc, char **argv, const char *usage, const struct step0_n_opt *own,
		      const char *noun, struct step0_args *a);
void step0_args_free(struct step0_args *a);

/* Report rep (NULL: the step failed, e says why): write it to --output
 * (atomically) when asked, then print it as JSON (--json) or with print.
 * With --json or --output the JSON carries its derivation record
 * (lib/derivation.h: --json, --config, each --data, each --set, --init-from,
 * the own option; parse starts the log of files read). Errors go to stderr
 * as one line; returns the exit status. */
int step0_args_report(const struct step0_args *a, cJSON *rep,
		      void (*print)(FILE *f, const cJSON *rep), struct err *e);

#endif

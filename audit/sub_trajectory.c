/* sub_trajectory.c: `supkit audit trajectory`: steps 0..11 (--steps) of
 * training under each step-0 mode, the scalar families' values, gradients,
 * AdamW counters and moments per step, as JSON (thin: options, config,
 * shards, then audit/step0.c). Reference: supkit-audit(1), trajectory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit_cmds.h"
#include "audit/step0.h"
#include "audit/step0_args.h"
#include "lib/cli.h"
#include "lib/json.h"

static const char usage[] =
	"usage: supkit audit trajectory --config CFG [--data SHARDS]... [options] [SHARDS...]\n"
	"\n"
	"Train steps 0..11 under each step-0 mode (none, nostep0, mom_only_nodisp,\n"
	"disp_only_nomom, disp_stepcount_nomom, nostep0_all) and record per step\n"
	"the loss and, for each scalar family, the values, gradients, AdamW step\n"
	"counters and moments.";

static const struct step0_n_opt own = {
	"steps", "train steps 0..N-1 under each mode (default 12)", 1, 100000};

int audit_trajectory_main(int argc, char **argv)
{
	struct step0_args c = {0};
	c.n = 12;
	step0_args_parse(argc, argv, usage, &own, "record", &c);
	struct err e;
	err_clear(&e);

	struct config cfg;
	char **shards = NULL;
	int ns = 0;
	cJSON *rep = NULL;
	if (step0_config_load(c.config, c.sets, c.n_sets, c.init_from, &cfg, &e) >= 0 &&
	    step0_shards_resolve(c.data, c.n_data, cfg.data_dir, &shards, &ns, &e) >= 0)
		rep = step0_trajectory(&cfg, (const char *const *)shards, ns, (int)c.n, c.quiet, &e);
	int rc = step0_args_report(&c, rep, step0_trajectory_print, &e);
	cJSON_Delete(rep);
	step0_shards_free(shards, ns);
	step0_args_free(&c);
	return rc;
}

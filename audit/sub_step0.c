/* sub_step0.c: `supkit audit step0`: the gradient of the loss on the scalar
 * families at step 0, float64 at eps in {0, 2^-23, 1e-6} against the
 * trainer's arithmetic (thin: options, config, shards, then audit/step0.c).
 * Leaves out: the CUDA bf16 autocast path. Reference: supkit-audit(1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit_cmds.h"
#include "audit/step0.h"
#include "audit/step0_args.h"
#include "lib/cli.h"
#include "lib/json.h"

static const char usage[] =
	"usage: supkit audit step0 --config CFG [--data SHARDS]... [options] [SHARDS...]\n"
	"\n"
	"Gradient of the loss on resid_lambdas, x0_lambdas (and wte_lambdas,\n"
	"out_lambdas) for the first optimizer batch at step 0: float64 at eps = 0,\n"
	"2^-23 and 1e-6, its closed form (man supkit-audit), and the trainer's own\n"
	"arithmetic at the config's eps, with the ratio, the sign agreement and the\n"
	"AdamW displacement of step 0.";

static const struct step0_n_opt own = {
	"tokens", "audit only the first N tokens of the first batch", 1, INT64_MAX};

int audit_step0_main(int argc, char **argv)
{
	struct step0_args c = {0};
	step0_args_parse(argc, argv, usage, &own, "report", &c);
	struct err e;
	err_clear(&e);

	struct config cfg;
	char **shards = NULL;
	int ns = 0;
	struct step0_batch b = {0};
	cJSON *rep = NULL;
	if (step0_config_load(c.config, c.sets, c.n_sets, c.init_from, &cfg, &e) >= 0 &&
	    step0_shards_resolve(c.data, c.n_data, cfg.data_dir, &shards, &ns, &e) >= 0 &&
	    step0_batch_load(&cfg, (const char *const *)shards, ns, c.n, &b, &e) >= 0)
		rep = step0_audit(&cfg, &b, (const char *const *)shards, ns, c.quiet, &e);
	int rc = step0_args_report(&c, rep, step0_print, &e);
	cJSON_Delete(rep);
	step0_batch_free(&b);
	step0_shards_free(shards, ns);
	step0_args_free(&c);
	return rc;
}

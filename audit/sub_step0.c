/* sub_step0.c: `supkit audit step0`: the gradient of the loss on the scalar
 * families at step 0, float64 at eps in {0, 2^-23, 1e-6} against the
 * trainer's arithmetic (thin: options, config, shards, then audit/step0.c).
 * Leaves out: the CUDA bf16 autocast path. Reference: SPEC section 8. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit_cmds.h"
#include "audit/step0.h"
#include "lib/cli.h"
#include "lib/json.h"

enum { OPT_JSON = 256, OPT_CONFIG, OPT_DATA, OPT_SET, OPT_INIT_FROM, OPT_TOKENS };

static const struct cli_opt opts[] = {
	{"config", OPT_CONFIG, "CFG", "the trainer config (required)"},
	{"data", OPT_DATA, "SHARDS", "a folder of train_*.bin shards or a shard file (repeatable; "
				     "default: the config's data_dir)"},
	{"set", OPT_SET, "KEY=VALUE", "override a config key (repeatable)"},
	{"init-from", OPT_INIT_FROM, "FILE", "start from this checkpoint instead of the config's seed"},
	{"tokens", OPT_TOKENS, "N", "audit only the first N tokens of the first batch"},
	{"json", OPT_JSON, NULL, "print the report as one JSON object"},
	{"output", 'o', "FILE", "also write the JSON report to FILE (atomically)"},
	{"quiet", 'q', NULL, "no progress on stderr"},
	{NULL, 0, NULL, NULL},
};

static const char usage[] =
	"usage: supkit audit step0 --config CFG [--data SHARDS]... [options] [SHARDS...]\n"
	"\n"
	"Gradient of the loss on resid_lambdas, x0_lambdas (and wte_lambdas,\n"
	"out_lambdas) for the first optimizer batch at step 0: float64 at eps = 0,\n"
	"2^-23 and 1e-6, the closed form of SPEC section 8, and the trainer's own\n"
	"arithmetic at the config's eps, with the ratio, the sign agreement and the\n"
	"AdamW displacement of step 0.";

struct ctx {
	const char *config, *init_from, *output;
	const char **data, **sets;
	int n_data, n_sets, json, quiet;
	int64_t tokens;
};

static int on_opt(int key, const char *arg, void *vc, struct err *e)
{
	struct ctx *c = vc;
	switch (key) {
	case OPT_CONFIG: c->config = arg; return 0;
	case OPT_DATA: c->data[c->n_data++] = arg; return 0;
	case OPT_SET: c->sets[c->n_sets++] = arg; return 0;
	case OPT_INIT_FROM: c->init_from = arg; return 0;
	case OPT_TOKENS: return cli_parse_i64(arg, 1, INT64_MAX, &c->tokens, "--tokens", e);
	case OPT_JSON: c->json = 1; return 0;
	case 'o': c->output = arg; return 0;
	case 'q': c->quiet = 1; return 0;
	}
	return 0;
}

int audit_step0_main(int argc, char **argv)
{
	struct ctx c = {0};
	struct err e;
	err_clear(&e);
	c.data = xcalloc((size_t)argc + 1, sizeof *c.data);
	c.sets = xcalloc((size_t)argc + 1, sizeof *c.sets);
	int oi;
	if (cli_parse(argc, argv, opts, usage, on_opt, &c, &oi, &e) < 0)
		cli_usage_error("%s", e.msg);
	for (int i = oi; i < argc; i++)
		c.data[c.n_data++] = argv[i];
	if (!c.config)
		cli_usage_error("--config is required");

	struct config cfg;
	char **shards = NULL;
	int ns = 0, rc = EXIT_OK;
	struct step0_batch b = {0};
	cJSON *rep = NULL;
	if (step0_config_load(c.config, c.sets, c.n_sets, c.init_from, &cfg, &e) < 0 ||
	    step0_shards_resolve(c.data, c.n_data, cfg.data_dir, &shards, &ns, &e) < 0 ||
	    step0_batch_load(&cfg, (const char *const *)shards, ns, c.tokens, &b, &e) < 0 ||
	    !(rep = step0_audit(&cfg, &b, (const char *const *)shards, ns, c.quiet, &e)) ||
	    (c.output && json_write_file(c.output, rep, &e) < 0)) {
		err_print(err_prog, &e);
		rc = e.code ? e.code : EXIT_SYS;
	} else if (c.json) {
		json_print_stdout(rep);
	} else {
		step0_print(stdout, rep);
	}
	cJSON_Delete(rep);
	step0_batch_free(&b);
	step0_shards_free(shards, ns);
	free(c.data);
	free(c.sets);
	return rc;
}

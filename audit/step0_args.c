/* step0_args.c: the shared command line of `supkit audit step0` and
 * `supkit audit trajectory` (see step0_args.h). Leaves out what each does with
 * it (audit/sub_step0.c, audit/sub_trajectory.c). Reference: supkit-audit(1). */
#include "audit/step0_args.h"

#include <stdio.h>
#include <stdlib.h>

#include "lib/cli.h"
#include "lib/derivation.h"

enum { OPT_JSON = 256, OPT_CONFIG, OPT_DATA, OPT_SET, OPT_INIT_FROM, OPT_N };

struct parse_ctx {
	struct step0_args *a;
	const struct step0_n_opt *own;
};

static int on_opt(int key, const char *arg, void *vc, struct err *e)
{
	struct parse_ctx *p = vc;
	struct step0_args *a = p->a;
	switch (key) {
	case OPT_CONFIG: a->config = arg; return 0;
	case OPT_DATA:
		cli_no_stdin(arg, "--data (shards are mapped from files)");
		a->data[a->n_data++] = arg;
		return 0;
	case OPT_SET: a->sets[a->n_sets++] = arg; return 0;
	case OPT_INIT_FROM:
		cli_no_stdin(arg, "--init-from (checkpoints are mapped from files)");
		a->init_from = arg;
		return 0;
	case OPT_N: {
		char what[64];
		snprintf(what, sizeof what, "--%s", p->own->name);
		return cli_parse_i64(arg, p->own->lo, p->own->hi, &a->n, what, e);
	}
	case OPT_JSON: a->json = 1; return 0;
	case 'o':
		cli_no_stdout(arg, "--output (use --json for the JSON on standard output)");
		a->output = arg;
		return 0;
	case 'q': a->quiet = 1; return 0;
	}
	return 0;
}

void step0_args_parse(int argc, char **argv, const char *usage, const struct step0_n_opt *own,
		      const char *noun, struct step0_args *a)
{
	char json_help[80], output_help[80];
	snprintf(json_help, sizeof json_help, "print the %s as one JSON object", noun);
	snprintf(output_help, sizeof output_help, "also write the JSON %s to FILE (atomically)", noun);
	const struct cli_opt opts[] = {
		{"config", OPT_CONFIG, "CFG", "the trainer config (required; - for standard input)"},
		{"data", OPT_DATA, "SHARDS", "a folder of train_*.bin shards or a shard file (repeatable; "
					     "default: the config's data_dir)"},
		{"set", OPT_SET, "KEY=VALUE", "override a config key (repeatable)"},
		{"init-from", OPT_INIT_FROM, "FILE", "start from this checkpoint instead of the config's seed"},
		{own->name, OPT_N, "N", own->help},
		{"json", OPT_JSON, NULL, json_help},
		{"output", 'o', "FILE", output_help},
		{"quiet", 'q', NULL, "no progress on stderr"},
		{NULL, 0, NULL, NULL},
	};
	struct parse_ctx p = {a, own};
	struct err e;
	err_clear(&e);
	a->data = xcalloc((size_t)argc + 1, sizeof *a->data);
	a->sets = xcalloc((size_t)argc + 1, sizeof *a->sets);
	int oi;
	if (cli_parse(argc, argv, opts, usage, on_opt, &p, &oi, &e) < 0) {
		step0_args_free(a);
		cli_usage_error("%s", e.msg);
	}
	for (int i = oi; i < argc; i++) {
		cli_no_stdin(argv[i], "SHARDS (shards are mapped from files)");
		a->data[a->n_data++] = argv[i];
	}
	if (!a->config) {
		step0_args_free(a);
		cli_usage_error("--config is required");
	}
	a->command = argv[0];
	a->own = own->name;
	if (a->json || a->output)
		deriv_log_start();   /* the files read, for the derivation record */
}

void step0_args_free(struct step0_args *a)
{
	free(a->data);
	free(a->sets);
	a->data = NULL;
	a->sets = NULL;
}

int step0_args_report(const struct step0_args *a, cJSON *rep,
		      void (*print)(FILE *f, const cJSON *rep), struct err *e)
{
	if (!rep)
		return err_report(e);
	if (a->json || a->output) {
		/* the command as supkit verify re-runs it */
		struct deriv d;
		char num[32];
		deriv_init(&d, "supkit-audit", a->command);
		deriv_arg(&d, "--json");
		deriv_arg(&d, "--config");
		deriv_path_arg(&d, a->config);
		for (int i = 0; i < a->n_data; i++) {
			deriv_arg(&d, "--data");
			deriv_path_arg(&d, a->data[i]);
		}
		for (int i = 0; i < a->n_sets; i++) {
			deriv_arg(&d, "--set");
			deriv_arg(&d, a->sets[i]);
		}
		if (a->init_from) {
			deriv_arg(&d, "--init-from");
			deriv_path_arg(&d, a->init_from);
		}
		if (a->n > 0) { /* 0: the own option was not given and has no default */
			snprintf(num, sizeof num, "--%s", a->own);
			deriv_arg(&d, num);
			snprintf(num, sizeof num, "%lld", (long long)a->n);
			deriv_arg(&d, num);
		}
		int rc = deriv_attach(&d, rep, e);
		deriv_release(&d);
		if (rc < 0)
			return err_report(e);
	}
	if (a->output && json_write_file(a->output, rep, e) < 0)
		return err_report(e);
	if (a->json)
		json_print_stdout(rep);
	else
		print(stdout, rep);
	return EXIT_OK;
}

/* sub_compute.c: `supkit audit compute`: parse, pick the configs, call
 * audit/compute.c, report (human table, --json, --check, --print-config).
 *
 * Leaves out every formula (trainer/accounting.c) and the config format
 * (trainer/config.c). Reference: supkit-audit(1), compute.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit_cmds.h"
#include "audit/compute.h"
#include "lib/claims.h"
#include "lib/cli.h"
#include "lib/derivation.h"
#include "lib/json.h"
#include "lib/stream.h"

enum {
	OPT_DEPTH = 256, OPT_ARM, OPT_SET, OPT_TABLE, OPT_RUNS, OPT_CHECK, OPT_JSON, OPT_PRINT_CONFIG,
	OPT_LIST_ARMS, OPT_NEUMANN, OPT_DENOM, OPT_TABNEU, OPT_CLAIMS
};

static const struct cli_opt opts[] = {
	{"depth", OPT_DEPTH, "N", "model depth L (default 8, or the config file's)"},
	{"arm", OPT_ARM, "NAME", "a named arm (see --list-arms), applied over the baseline"},
	{"set", OPT_SET, "KEY=VALUE", "override one config key (repeatable, after the file and arm)"},
	{"table", OPT_TABLE, NULL, "every named arm at depths 6 and 8"},
	{"runs", OPT_RUNS, "DIR", "add measured figures from DIR/result.json, or from each DIR/*/result.json (repeatable)"},
	{"check", OPT_CHECK, "FILE", "compare a published audit JSON or claims file (- for stdin) with the recomputed figures; exit 1 on a disagreement"},
	{"claims", OPT_CLAIMS, "FILE", "also write the table's figures as printed to FILE, a claims file (atomically)"},
	{"json", OPT_JSON, NULL, "print one deterministic JSON object"},
	{"print-config", OPT_PRINT_CONFIG, NULL, "print the canonical config (its SHA-256 identifies the run)"},
	{"list-arms", OPT_LIST_ARMS, NULL, "list the named arms and their overrides"},
	{"neumann-count", OPT_NEUMANN, "C", "Neumann-Gram FLOPs a table: full (papers 000/001, default) or lemma2 (004)"},
	{"denominator", OPT_DENOM, "C", "share of the step: formula (default) or paper (59.37e12 at depth 6)"},
	{"tabneu-rows", OPT_TABNEU, "N", "visited OE rows a step for Table-Neumann (default: every row)"},
	{NULL, 0, NULL, NULL},
};

static const char usage[] =
	"usage: supkit audit compute [options] [CONFIG...]\n"
	"       supkit audit compute --depth N --arm NAME [--set KEY=VALUE]... [--json]\n"
	"       supkit audit compute --table [--runs DIR]... [--json] [--claims FILE]\n"
	"       supkit audit compute --check PUBLISHED.json [--neumann-count C] [--denominator C] [--json]\n"
	"Parameter, FLOP and memory accounting of a config or arm.\n"
	"A CONFIG of - is read from standard input.";

struct args {
	int depth;            /* 0 = not given */
	const char *arm;
	char **sets;
	int nsets;
	int table, json, print_config, list_arms;
	char **runs;
	int nruns;
	const char *check, *claims;
	struct compute_opts o;
};

static int on_opt(int key, const char *arg, void *ctx, struct err *e)
{
	struct args *a = ctx;
	int64_t v;
	switch (key) {
	case OPT_DEPTH:
		if (cli_parse_i64(arg, 1, 64, &v, "--depth", e))
			return -1;
		a->depth = (int)v;
		return 0;
	case OPT_ARM:
		a->arm = arg;
		return 0;
	case OPT_SET:
		a->sets = xrealloc(a->sets, (size_t)(a->nsets + 1) * sizeof *a->sets);
		a->sets[a->nsets++] = (char *)arg;
		return 0;
	case OPT_TABLE:
		a->table = 1;
		return 0;
	case OPT_RUNS:
		cli_no_stdin(arg, "--runs (a run folder)");
		a->runs = xrealloc(a->runs, (size_t)(a->nruns + 1) * sizeof *a->runs);
		a->runs[a->nruns++] = (char *)arg;
		return 0;
	case OPT_CHECK:
		a->check = arg;
		return 0;
	case OPT_CLAIMS:
		cli_no_stdout(arg, "--claims (a file)");
		a->claims = arg;
		return 0;
	case OPT_JSON:
		a->json = 1;
		return 0;
	case OPT_PRINT_CONFIG:
		a->print_config = 1;
		return 0;
	case OPT_LIST_ARMS:
		a->list_arms = 1;
		return 0;
	case OPT_NEUMANN:
		if (!strcmp(arg, "full"))
			a->o.neumann = ACCT_NEUMANN_FULL;
		else if (!strcmp(arg, "lemma2"))
			a->o.neumann = ACCT_NEUMANN_LEMMA2;
		else
			return err_set(e, EXIT_USAGE, "--neumann-count: '%s' is not full or lemma2", arg);
		return 0;
	case OPT_DENOM:
		if (!strcmp(arg, "formula"))
			a->o.denom = COMPUTE_DENOM_FORMULA;
		else if (!strcmp(arg, "paper"))
			a->o.denom = COMPUTE_DENOM_PAPER;
		else
			return err_set(e, EXIT_USAGE, "--denominator: '%s' is not formula or paper", arg);
		return 0;
	case OPT_TABNEU:
		if (cli_parse_i64(arg, 1, INT64_C(1) << 40, &v, "--tabneu-rows", e))
			return -1;
		a->o.tabneu_rows = v;
		return 0;
	}
	return err_set(e, EXIT_USAGE, "unhandled option");
}

static void fail(const struct err *e)
{
	exit(err_report(e));
}

/* Baseline (or file), then depth, arm, --set; validated. */
static void config_build(struct config *c, const char *file, int depth, const char *arm, const struct args *a)
{
	struct err e = {0};
	config_defaults(c);
	if (file && config_load_file(c, file, &e) != 0)
		fail(&e);
	if (depth)
		c->depth = depth;
	if (arm && config_arm_apply(c, arm, &e) != 0)
		fail(&e);
	for (int i = 0; i < a->nsets; i++)
		if (config_set(c, a->sets[i], &e) != 0)
			fail(&e);
	if (config_validate(c, &e) != 0)
		fail(&e);
}

static int list_arms(int json)
{
	if (!json) {
		for (int i = 0; i < config_arm_count(); i++)
			printf("%-30s %s\n", config_arm_name(i), config_arm_summary(i));
		return EXIT_OK;
	}
	cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "arms");
	for (int i = 0; i < config_arm_count(); i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", config_arm_name(i));
		cJSON_AddStringToObject(o, "summary", config_arm_summary(i));
		cJSON_AddStringToObject(o, "overrides", config_arm_overrides(i));
		cJSON_AddItemToArray(arr, o);
	}
	json_print_stdout(root);
	cJSON_Delete(root);
	return EXIT_OK;
}

static int run_check(const struct args *a)
{
	struct err e = {0};
	cJSON *pub = json_read_input(a->check, 64u << 20, &e);
	if (!pub)
		fail(&e);
	/* a claims file: its compute claims, one arm each */
	if (claims_is(pub)) {
		cJSON *arms;
		int other;
		if (claims_validate(pub, a->check, &e) != 0 ||
		    compute_claims_arms(pub, a->check, &arms, &other, &e) != 0) {
			cJSON_Delete(pub);
			fail(&e);
		}
		if (other)
			fprintf(stderr, "%s: '%s': %d claim%s of other commands left out\n", err_prog, a->check,
				other, other == 1 ? "" : "s");
		cJSON_Delete(pub);
		pub = arms;
	}
	char *lines;
	int ncmp;
	cJSON *items = cJSON_CreateArray();
	int nd = compute_check(pub, a->check, &a->o, &lines, &ncmp, items, &e);
	cJSON_Delete(pub);
	if (nd < 0) {
		cJSON_Delete(items);
		fail(&e);
	}
	char conv[160];
	snprintf(conv, sizeof conv, "Neumann-Gram count %s, step-FLOPs denominator %s, Table-Neumann rows %s",
		 acct_neumann_name(a->o.neumann), compute_denom_name(a->o.denom),
		 a->o.tabneu_rows ? "as given" : "all");
	if (a->json) {
		cJSON *root = cJSON_CreateObject();
		cJSON_AddStringToObject(root, "file", a->check);
		cJSON_AddNumberToObject(root, "compared", ncmp);
		cJSON_AddNumberToObject(root, "disagreements", nd);
		cJSON_AddStringToObject(root, "conventions", conv);
		cJSON *arr = cJSON_AddArrayToObject(root, "lines");
		for (char *s = lines, *nl; *s; s = nl + 1) {
			nl = strchr(s, '\n');
			*nl = 0;
			cJSON_AddItemToArray(arr, cJSON_CreateString(s));
		}
		cJSON_AddItemToObject(root, "figures", items);
		items = NULL;
		json_print_stdout(root);
		cJSON_Delete(root);
	} else {
		fputs(lines, stdout);
		printf("%d figures compared, %d disagree (%s)\n", ncmp, nd, conv);
	}
	cJSON_Delete(items);
	free(lines);
	return nd ? EXIT_CHECK : EXIT_OK;
}

/* The command this run was, as supkit verify re-runs it: --json, the options
 * in a fixed order (the conventions always), then the CONFIG files. */
static void derivation_args(struct deriv *d, const struct args *a, char **files, int nfiles)
{
	char num[32];
	deriv_arg(d, "--json");
	if (a->depth) {
		snprintf(num, sizeof num, "%d", a->depth);
		deriv_arg(d, "--depth");
		deriv_arg(d, num);
	}
	if (a->arm) {
		deriv_arg(d, "--arm");
		deriv_arg(d, a->arm);
	}
	for (int i = 0; i < a->nsets; i++) {
		deriv_arg(d, "--set");
		deriv_arg(d, a->sets[i]);
	}
	if (a->table)
		deriv_arg(d, "--table");
	for (int i = 0; i < a->nruns; i++) {
		deriv_arg(d, "--runs");
		deriv_path_arg(d, a->runs[i]);
	}
	deriv_arg(d, "--neumann-count");
	deriv_arg(d, acct_neumann_name(a->o.neumann));
	deriv_arg(d, "--denominator");
	deriv_arg(d, compute_denom_name(a->o.denom));
	if (a->o.tabneu_rows) {
		snprintf(num, sizeof num, "%lld", (long long)a->o.tabneu_rows);
		deriv_arg(d, "--tabneu-rows");
		deriv_arg(d, num);
	}
	for (int i = 0; i < nfiles; i++)
		deriv_path_arg(d, files[i]);
}

int audit_compute_main(int argc, char **argv)
{
	struct args a = {0};
	struct err e = {0};
	const char *file = NULL;
	char **files = xcalloc((size_t)argc + 1, sizeof *files);
	int nfiles = 0;
	/* options may follow the CONFIG operands */
	int base = 0;
	for (;;) {
		int ind;
		if (cli_parse(argc - base, argv + base, opts, usage, on_opt, &a, &ind, &e) != 0)
			cli_usage_error("%s", e.msg);
		base += ind;
		if (base >= argc)
			break;
		files[nfiles++] = argv[base];
		if (base + 1 >= argc)
			break;
	}
	file = nfiles == 1 ? files[0] : NULL;
	if (nfiles > 1 && (a.print_config || a.arm || a.depth || a.table))
		cli_usage_error("several CONFIG files make a table: no --print-config, --arm, --depth or --table");
	if (a.list_arms) {
		free(a.sets);
		free(a.runs);
		free(files);
		return list_arms(a.json);
	}
	if (a.check) {
		if (nfiles || a.arm || a.table || a.nsets || a.print_config || a.nruns || a.claims)
			cli_usage_error("--check takes only the convention options and --json");
		free(a.sets);
		free(a.runs);
		free(files);
		return run_check(&a);
	}
	if (a.table && (file || a.arm || a.depth))
		cli_usage_error("--table covers every arm at depths 6 and 8: no CONFIG, --arm or --depth");
	if (a.print_config && (a.table || a.json || a.claims))
		cli_usage_error("--print-config prints one config: no --table, --json or --claims");
	if (a.json || a.claims)
		deriv_log_start();   /* the files read, for the derivation record */

	struct compute_measured *meas = NULL;
	int nmeas = 0;
	if (a.nruns && compute_runs_load(a.runs, a.nruns, &meas, &nmeas, &e) != 0)
		fail(&e);

	/* the configs to account for */
	struct config *cfgs = NULL;
	int n = 0;
	if (a.table) {
		cfgs = xcalloc(2 * (size_t)config_arm_count(), sizeof *cfgs);
		static const int depths[2] = {6, 8};
		for (int di = 0; di < 2; di++)
			for (int i = 0; i < config_arm_count(); i++)
				config_build(&cfgs[n++], NULL, depths[di], config_arm_name(i), &a);
	} else if (nfiles > 1) {
		cfgs = xcalloc((size_t)nfiles, sizeof *cfgs);
		for (int i = 0; i < nfiles; i++)
			config_build(&cfgs[n++], files[i], 0, NULL, &a);
	} else if (!file && !a.arm && !a.depth && nmeas > 0) {
		cfgs = xcalloc((size_t)nmeas, sizeof *cfgs);
		for (int i = 0; i < nmeas; i++) {
			/* the run's own config.cfg when it has one, else the named arm */
			if (meas[i].config[0]) {
				config_build(&cfgs[n], meas[i].config, 0, NULL, &a);
				if (cfgs[n].depth != meas[i].depth || strcmp(cfgs[n].arm, meas[i].arm)) {
					err_set(&e, EXIT_USAGE, "'%s': arm %s at depth %d, but its result.json says %s at depth %d",
						meas[i].config, cfgs[n].arm, cfgs[n].depth, meas[i].arm, meas[i].depth);
					fail(&e);
				}
				n++;
				continue;
			}
			if (config_arm_find(meas[i].arm) < 0) {
				err_set(&e, EXIT_USAGE,
					"run records: arm '%s' is not a named arm and its run has no config.cfg (give CONFIG or --arm)",
					meas[i].arm);
				fail(&e);
			}
			config_build(&cfgs[n++], NULL, meas[i].depth, meas[i].arm, &a);
		}
	} else {
		cfgs = xcalloc(1, sizeof *cfgs);
		config_build(&cfgs[n++], file, a.depth, a.arm, &a);
	}

	if (a.print_config) {
		char *t = config_print(&cfgs[0]);
		fputs(t, stdout);
		free(t);
		free(cfgs);
		free(meas);
		free(a.sets);
		free(a.runs);
		free(files);
		return EXIT_OK;
	}

	struct compute_report *reps = xcalloc((size_t)n, sizeof *reps);
	for (int i = 0; i < n; i++)
		if (compute_config(&cfgs[i], &a.o, &reps[i], &e) != 0)
			fail(&e);

	cJSON *deriv_json = NULL;
	if (a.json || a.claims) {
		struct deriv d;
		deriv_init(&d, "supkit-audit", "compute");
		derivation_args(&d, &a, files, nfiles);
		if (deriv_finish(&d, &e) != 0)
			fail(&e);
		deriv_json = deriv_to_json(&d);
		deriv_release(&d);
	}
	if (a.claims) {
		cJSON *cl = claims_new();
		for (int i = 0; i < n; i++) {
			cJSON *set = compute_config_set(&cfgs[i]);
			compute_claims_add(cl, &reps[i], set, deriv_json);
			cJSON_Delete(set);
		}
		if (json_write_file(a.claims, cl, &e) != 0)
			fail(&e);
		cJSON_Delete(cl);
	}
	if (a.json) {
		cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "arms");
		for (int i = 0; i < n; i++) {
			cJSON *o = compute_report_json(&reps[i]);
			cJSON *set = compute_config_set(&cfgs[i]);
			if (set)
				cJSON_AddItemToObject(o, "set", set);
			for (int j = 0; j < nmeas; j++)
				if (meas[j].depth == reps[i].depth && !strcmp(meas[j].arm, reps[i].arm))
					cJSON_AddItemToObject(o, "measured", compute_measured_json(&meas[j]));
			cJSON_AddItemToArray(arr, o);
		}
		cJSON_AddItemToObject(root, DERIV_KEY, deriv_json);
		deriv_json = NULL;
		json_print_stdout(root);
		cJSON_Delete(root);
	} else if (n == 1 && !a.table && nfiles <= 1) {
		const struct compute_measured *m = NULL;
		for (int j = 0; j < nmeas; j++)
			if (meas[j].depth == reps[0].depth && !strcmp(meas[j].arm, reps[0].arm))
				m = &meas[j];
		compute_print_detail(stdout, &reps[0], m);
	} else {
		compute_print_table(stdout, reps, n, meas, nmeas);
	}
	cJSON_Delete(deriv_json);
	free(reps);
	free(cfgs);
	free(meas);
	free(a.sets);
	free(a.runs);
	free(files);
	return EXIT_OK;
}

/* sub_stats.c: supkit audit stats: per-cell seed tables and paired contrasts
 * from run records, or (--check) a rounding-aware check of a published table.
 * Thin: parse, validate, call audit/stats.h, report. Reference:
 * man supkit-audit (stats) and supkit-formats(5) (records). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit_cmds.h"
#include "audit/stats.h"
#include "lib/claims.h"
#include "lib/cli.h"
#include "lib/derivation.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/stream.h"

enum { OPT_JSON = 256, OPT_NAMES, OPT_CONTRASTS, OPT_CHECK, OPT_INPUT_DECIMALS, OPT_VERBOSE, OPT_CLAIMS };

static const struct cli_opt opts[] = {
	{"names", OPT_NAMES, "RULES", "naming rules: run name -> arm, depth, seed (PCRE2)"},
	{"contrasts", OPT_CONTRASTS, "FILE", "contrast spec (default: the built-in 2x3 factorial)"},
	{"check", OPT_CHECK, "PUBLISHED.json", "check a published table, this command's --json or a claims file against the records"},
	{"input-decimals", OPT_INPUT_DECIMALS, "N", "--check: decimals the records were printed with (6; claims: exact unless they say)"},
	{"claims", OPT_CLAIMS, "FILE", "also write the tables' figures as printed to FILE, a claims file (atomically)"},
	{"json", OPT_JSON, NULL, "print one JSON object instead of Markdown tables"},
	{"output", 'o', "FILE", "write the report to FILE (atomically) instead of stdout (-)"},
	{"verbose", OPT_VERBOSE, NULL, "--check: list the figures that are OK too"},
	{NULL, 0, NULL, NULL},
};

static const char usage[] =
	"usage: supkit audit stats [options] RECORDS...\n"
	"\n"
	"RECORDS are folders (every result.json under them) or results JSON files.\n"
	"Any one file (RECORDS, RULES, FILE, PUBLISHED.json) may be - (standard input).\n"
	"Prints per-cell tables and paired contrasts (mean +- SD, 95% t interval,\n"
	"k/n seeds improved, ratios); with --check, each published figure as ok,\n"
	"rounding or inconsistent (exit 1 on inconsistent or missing).\n";

struct args {
	const char *names, *contrasts, *check, *output, *claims;
	int json, verbose, decimals_given;
	int64_t input_decimals;
};

static int on_opt(int key, const char *arg, void *ctx, struct err *e)
{
	struct args *a = ctx;
	switch (key) {
	case OPT_NAMES: a->names = arg; break;
	case OPT_CONTRASTS: a->contrasts = arg; break;
	case OPT_CHECK: a->check = arg; break;
	case OPT_JSON: a->json = 1; break;
	case OPT_VERBOSE: a->verbose = 1; break;
	case 'o': a->output = arg; break;
	case OPT_CLAIMS:
		cli_no_stdout(arg, "--claims (a file)");
		a->claims = arg;
		break;
	case OPT_INPUT_DECIMALS:
		a->decimals_given = 1;
		return cli_parse_i64(arg, 0, 15, &a->input_decimals, "--input-decimals", e);
	}
	return 0;
}

/* Write the report (text already in memory) to stdout (path NULL or "-") or
 * atomically to a file. */
static int emit(const char *path, const char *text, size_t len, struct err *e)
{
	return stream_write_all(path, text, len, e);
}

/* The report as sorted, indented JSON text (caller frees). */
static char *report_json_text(cJSON *report, size_t *len)
{
	json_sort(report);
	char *text = json_print(report, 1);
	*len = strlen(text);
	return text;
}

/* A stream whose text lands in *text (caller frees after fclose). */
static FILE *report_stream(char **text, size_t *len)
{
	FILE *m = open_memstream(text, len);
	if (!m)
		die(EXIT_SYS, "out of memory");
	return m;
}

int audit_stats_main(int argc, char **argv)
{
	struct args a = {.input_decimals = 6};
	struct err e = {0};
	int first;
	if (cli_parse(argc, argv, opts, usage, on_opt, &a, &first, &e) < 0)
		cli_usage_error("%s", e.msg);
	if (first >= argc)
		cli_usage_error("no RECORDS given");
	if (a.check && a.claims)
		cli_usage_error("--claims writes the tables' figures: not with --check");
	if (!a.check && (a.json || a.claims))
		deriv_log_start();   /* the files read, for the derivation record */

	struct stats_rules *rules = NULL;
	struct stats_records rec;
	struct stats_cells cells = {0};
	struct stats_spec spec = {0};
	struct stats_results res = {0};
	cJSON *pub = NULL, *report = NULL;
	char *text = NULL;
	size_t len = 0;
	int rc = EXIT_OK;
	stats_records_init(&rec);

	if (a.names && stats_rules_load(&rules, a.names, &e) < 0)
		goto fail;
	for (int i = first; i < argc; i++)
		if (stats_records_add_path(&rec, argv[i], rules, &e) < 0)
			goto fail;
	if (!rec.n) {
		err_set(&e, EXIT_USAGE, "no run records found in the RECORDS given%s",
			rec.n_ignored ? " (every run name matched no naming rule; see --names)" : "");
		goto fail;
	}
	stats_cells_build(&rec, &cells);

	if (a.check) {
		struct stats_check_counts counts = {0};
		pub = json_read_input(a.check, 64u << 20, &e);
		if (!pub)
			goto fail;
		cJSON *items = cJSON_CreateArray();
		int crc, other = 0;
		if (claims_is(pub))
			crc = claims_validate(pub, a.check, &e) < 0
				      ? -1
				      : stats_check_claims(pub, a.check, &cells, a.decimals_given ? (int)a.input_decimals : -1,
							   items, &counts, &other, &e);
		else if (stats_is_own(pub))
			crc = stats_check_own(pub, a.check, &cells, items, &counts, &e);
		else
			crc = stats_check_published(pub, a.check, &cells, (int)a.input_decimals, items, &counts, &e);
		if (crc < 0) {
			cJSON_Delete(items);
			goto fail;
		}
		if (other)
			fprintf(stderr, "%s: '%s': %d claim%s of other commands left out\n", err_prog, a.check, other,
				other == 1 ? "" : "s");
		if (a.json) {
			report = cJSON_CreateObject();
			cJSON_AddItemToObject(report, "figures", items);
			cJSON_AddNumberToObject(report, "ok", (double)counts.ok);
			cJSON_AddNumberToObject(report, "rounding", (double)counts.rounding);
			cJSON_AddNumberToObject(report, "inconsistent", (double)counts.inconsistent);
			cJSON_AddNumberToObject(report, "missing", (double)counts.missing);
			cJSON_AddStringToObject(report, "published", a.check);
			text = report_json_text(report, &len);
		} else {
			FILE *m = report_stream(&text, &len);
			stats_print_check(m, items, &counts, a.verbose);
			fclose(m);
			cJSON_Delete(items);
		}
		if (counts.inconsistent || counts.missing)
			rc = EXIT_CHECK;
	} else {
		if ((a.contrasts ? stats_spec_load(&spec, a.contrasts, &e)
				 : stats_spec_builtin(&spec, &e)) < 0)
			goto fail;
		if (stats_evaluate(&spec, &cells, &res, &e) < 0)
			goto fail;
		cJSON *deriv_json = NULL;
		if (a.json || a.claims) {
			/* the command as supkit verify re-runs it */
			struct deriv d;
			deriv_init(&d, "supkit-audit", "stats");
			deriv_arg(&d, "--json");
			if (a.names) {
				deriv_arg(&d, "--names");
				deriv_path_arg(&d, a.names);
			}
			if (a.contrasts) {
				deriv_arg(&d, "--contrasts");
				deriv_path_arg(&d, a.contrasts);
			}
			for (int i = first; i < argc; i++)
				deriv_path_arg(&d, argv[i]);
			int drc = deriv_finish(&d, &e);
			if (drc == 0)
				deriv_json = deriv_to_json(&d);
			deriv_release(&d);
			if (drc < 0)
				goto fail;
		}
		if (a.claims) {
			cJSON *cl = claims_new();
			stats_claims_add(cl, &cells, &res, deriv_json);
			int wrc = json_write_file(a.claims, cl, &e);
			cJSON_Delete(cl);
			if (wrc < 0) {
				cJSON_Delete(deriv_json);
				goto fail;
			}
		}
		if (a.json) {
			report = stats_to_json(&cells, &res, &rec);
			cJSON_AddStringToObject(report, "spec", spec.name);
			cJSON_AddItemToObject(report, DERIV_KEY, deriv_json);
			deriv_json = NULL;
			text = report_json_text(report, &len);
		} else {
			FILE *m = report_stream(&text, &len);
			stats_print_markdown(m, &cells, &res);
			fclose(m);
		}
		cJSON_Delete(deriv_json);
	}
	if (rec.n_ignored)
		fprintf(stderr, "%s: %zu run%s matched no naming rule and %s ignored (first: '%s')\n",
			err_prog, rec.n_ignored, rec.n_ignored == 1 ? "" : "s",
			rec.n_ignored == 1 ? "was" : "were", rec.ignored[0]);
	if (emit(a.output, text, len, &e) < 0)
		goto fail;
	goto out;
fail:
	rc = err_report(&e);
out:
	free(text);
	cJSON_Delete(report);
	cJSON_Delete(pub);
	stats_results_free(&res);
	if (spec.name)
		stats_spec_free(&spec);
	stats_cells_free(&cells);
	stats_records_free(&rec);
	stats_rules_free(rules);
	return rc;
}

/* fuzz_stats.c: libFuzzer harness for the readers of supkit audit stats
 * (audit/stats_input.c, audit/stats.c): run records (a result.json or a
 * results JSON mapping run names to records), naming rules, contrast specs
 * and published files checked against cells.
 *
 * The input goes to every reader that takes its kind: text that is JSON
 * (parsed by lib/json.c) is read as records (then cells, the built-in spec,
 * the JSON and Markdown reports) and as a published file checked against
 * fixed cells; any text is read as a contrast spec (evaluated over the fixed
 * cells, reported) and as naming rules (applied to fixed run names). The
 * fixed cells: arms 00, 01, 02, 10, 11, 12 at depths 6 and 8, seeds 41, 42, 47.
 *
 * Invariants: a refusal carries a one-line message; cells hold every
 * accepted run once; nothing crashes or leaks.
 * Leaves out: stats_records_add_path (folder walk: file_read_all and
 * json_read_file with STATS_MAX_FILE, then the same reader).
 * Seeds: tests/fixtures/stats (tests/fuzz/seeds.txt), tests/fuzz/corpus/stats.
 * Reference: audit/stats.h, supkit-audit(1). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/stats.h"
#include "lib/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_one_line(const struct err *e)
{
	if (!e->msg[0] || strchr(e->msg, '\n'))
		abort();
}

static const char *const fuzz_arms[6] = {"00_dense_native", "01_dense_opt", "02_dense_joint",
					  "10_oe_native", "11_oe_opt", "12_oe_joint"};

/* Records named "d<depth>_<arm>_s<seed>", as a results JSON. */
static cJSON *fuzz_fixed_json(void)
{
	cJSON *root = cJSON_CreateObject();
	for (int d = 6; d <= 8; d += 2)
		for (int a = 0; a < 6; a++)
			for (int s = 0; s < 3; s++) {
				static const int seeds[3] = {41, 42, 47};
				char name[64];
				snprintf(name, sizeof name, "d%d_%s_s%d", d, fuzz_arms[a], seeds[s]);
				cJSON *r = cJSON_AddObjectToObject(root, name);
				cJSON_AddStringToObject(r, "arm", fuzz_arms[a]);
				cJSON_AddNumberToObject(r, "depth", d);
				cJSON_AddNumberToObject(r, "seed", seeds[s]);
				double v = 1.0 - 0.002 * a - 0.05 * (d - 6) + 0.0007 * ((s * 7 + a) % 5);
				cJSON_AddNumberToObject(r, "val_bpb", v);
				cJSON_AddNumberToObject(r, "heldout_bpb", v - 0.0009 + 0.0001 * s);
			}
	return root;
}

static struct stats_cells fuzz_cells;
static cJSON *fuzz_fixed;

static void fuzz_init(void)
{
	if (fuzz_fixed)
		return;
	fuzz_fixed = fuzz_fixed_json();
	struct stats_records rec;
	struct err e = {0};
	stats_records_init(&rec);
	if (stats_records_add_json(&rec, fuzz_fixed, "fixed", NULL, &e) != 0 || rec.n != 36)
		abort();
	stats_cells_build(&rec, &fuzz_cells);
	stats_records_free(&rec);
}

static void fuzz_report(const struct stats_cells *cells, const struct stats_results *res,
			const struct stats_records *rec)
{
	cJSON *j = stats_to_json(cells, res, rec);
	char *s = json_print(j, 1);
	free(s);
	cJSON_Delete(j);
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (!m)
		abort();
	stats_print_markdown(m, cells, res);
	fclose(m);
	free(text);
}

static void fuzz_records(const cJSON *root)
{
	struct stats_records rec;
	struct err e = {0};
	stats_records_init(&rec);
	if (stats_records_add_json(&rec, root, "fuzz.json", NULL, &e) != 0) {
		fuzz_one_line(&e);
		stats_records_free(&rec);
		return;
	}
	struct stats_cells cells = {0};
	stats_cells_build(&rec, &cells);
	size_t runs = 0;
	for (size_t i = 0; i < cells.n; i++)
		runs += cells.c[i].n;
	if (runs != rec.n)
		abort();
	struct stats_spec spec = {0};
	struct stats_results res = {0};
	if (stats_spec_builtin(&spec, &e) != 0)
		abort();
	if (stats_evaluate(&spec, &cells, &res, &e) == 0)
		fuzz_report(&cells, &res, &rec);
	else
		fuzz_one_line(&e);
	stats_results_free(&res);
	stats_spec_free(&spec);
	stats_cells_free(&cells);
	stats_records_free(&rec);
}

static void fuzz_published(const cJSON *root)
{
	struct err e = {0};
	struct stats_check_counts counts = {0};
	cJSON *items = cJSON_CreateArray();
	if (stats_check_published(root, "fuzz.json", &fuzz_cells, 6, items, &counts, &e) == 0) {
		if ((size_t)cJSON_GetArraySize(items) !=
		    counts.ok + counts.rounding + counts.inconsistent + counts.missing)
			abort();
		char *text = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);
		if (!m)
			abort();
		stats_print_check(m, items, &counts, 1);
		fclose(m);
		free(text);
	} else {
		fuzz_one_line(&e);
	}
	cJSON_Delete(items);
}

static void fuzz_spec(const char *text)
{
	struct stats_spec spec = {0};
	struct err e = {0};
	if (stats_spec_parse(&spec, text, "fuzz.spec", &e) != 0) {
		fuzz_one_line(&e);
		stats_spec_free(&spec);
		return;
	}
	struct stats_results res = {0};
	if (stats_evaluate(&spec, &fuzz_cells, &res, &e) == 0) {
		struct stats_records none;
		stats_records_init(&none);
		fuzz_report(&fuzz_cells, &res, &none);
	} else {
		fuzz_one_line(&e);
	}
	stats_results_free(&res);
	stats_spec_free(&spec);
}

static void fuzz_rules(const char *text)
{
	struct stats_rules *rules = NULL;
	struct err e = {0};
	if (stats_rules_parse(&rules, text, "fuzz.rules", &e) != 0) {
		fuzz_one_line(&e);
		stats_rules_free(rules);
		return;
	}
	/* Records without arm/depth/seed keys: the names decide. */
	cJSON *named = cJSON_CreateObject();
	for (cJSON *r = fuzz_fixed->child; r; r = r->next) {
		cJSON *o = cJSON_AddObjectToObject(named, r->string);
		cJSON_AddNumberToObject(o, "val_bpb", cJSON_GetObjectItem(r, "val_bpb")->valuedouble);
		cJSON_AddNumberToObject(o, "heldout_bpb", cJSON_GetObjectItem(r, "heldout_bpb")->valuedouble);
	}
	struct stats_records rec;
	stats_records_init(&rec);
	if (stats_records_add_json(&rec, named, "named.json", rules, &e) == 0) {
		if (rec.n + rec.n_ignored != 36)
			abort();
	} else {
		fuzz_one_line(&e);
	}
	stats_records_free(&rec);
	cJSON_Delete(named);
	stats_rules_free(rules);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_init();
	char *text = malloc(size + 1);
	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = 0;
	size_t i = 0;
	while (i < size && strchr(" \t\r\n", text[i]) && text[i])
		i++;
	if (i < size && (text[i] == '{' || text[i] == '[')) {
		struct err e = {0};
		cJSON *root = json_parse((const char *)data, size, "fuzz.json", &e);
		if (root) {
			fuzz_records(root);
			fuzz_published(root);
			cJSON_Delete(root);
		} else {
			fuzz_one_line(&e);
		}
	}
	if (!memchr(data, 0, size)) {
		fuzz_spec(text);
		fuzz_rules(text);
	}
	double v;
	int dec;
	if (size < 64) {
		if (stats_printed_parse(text, &v, &dec) == 0 && dec < 0)
			abort();
		enum stats_verdict j = stats_judge(0.25, 0.2, 0.3, text);
		if (j != STATS_OK && j != STATS_ROUNDING && j != STATS_INCONSISTENT)
			abort();
	}
	free(text);
	return 0;
}

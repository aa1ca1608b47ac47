/* cmd_replay.c: supkit-replay, rebuild trainer files from a baseline plus diffs.
 *
 *   supkit replay apply BASELINE PATCH [-o OUT] [--json]
 *   supkit replay run --baseline FILE DIFFS.json [-o DIR] [--json]
 *   supkit replay diff BASELINE FILE... [-n RUN]... [--relative-to DIR] [-o DIFFS.json] [--json]
 *
 * Thin: parse options, read files, call replay/udiff.h, replay/mkdiff.h and
 * replay/replay.h, print, write atomically. An input operand may be "-"
 * (standard input, once); an output "-" is standard output. Leaves out every diff rule (in
 * the library). Reference: supkit-replay(1); supkit-formats(5), DIFFS FILES.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cli.h"
#include "lib/err.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/sha256.h"
#include "lib/stream.h"
#include "replay/replay.h"
#include "replay/udiff.h"

/* Parse options anywhere among the operands (cli_parse stops at the first
 * operand); operands are collected in *ops (caller frees the array). */
static int parse_all(int argc, char **argv, const struct cli_opt *opts, const char *usage, cli_fn fn,
		     void *ctx, char ***ops, int *n_ops, struct err *e)
{
	*ops = xcalloc((size_t)argc + 1, sizeof **ops);
	*n_ops = 0;
	int base = 0;
	for (;;) {
		int k;
		if (cli_parse(argc - base, argv + base, opts, usage, fn, ctx, &k, e) < 0)
			return -1;
		int at = base + k;
		if (at >= argc)
			return 0;
		if (!strcmp(argv[at - 1], "--") && at - 1 > base) {
			for (int i = at; i < argc; i++)
				(*ops)[(*n_ops)++] = argv[i];
			return 0;
		}
		(*ops)[(*n_ops)++] = argv[at];
		base = at;
	}
}

static void fail(const struct err *e)
{
	exit(err_report(e));
}

/* ---- apply ---- */

enum { OPT_JSON = 256 };

static const char apply_usage[] =
	"usage: supkit replay apply BASELINE PATCH [-o OUT] [--json]\n"
	"Apply one unified diff (any context, one file) to BASELINE exactly; the result goes to\n"
	"OUT (written atomically) or stdout. BASELINE or PATCH may be - (standard input).";
static const struct cli_opt apply_opts[] = {
	{"output", 'o', "OUT", "write the patched file here (atomically) instead of stdout (-)"},
	{"json", OPT_JSON, NULL, "print the result as one JSON object (needs -o OUT)"},
	{NULL, 0, NULL, NULL},
};

struct apply_args {
	const char *out;
	int json;
};

static int apply_opt(int key, const char *arg, void *ctx, struct err *e)
{
	(void)e;
	struct apply_args *a = ctx;
	if (key == 'o')
		a->out = arg;
	else if (key == OPT_JSON)
		a->json = 1;
	return 0;
}

/* The --json object of apply and diff -u: what was read, what was written,
 * the diff's hunks and lines; sha256 (of the written file) when not NULL. */
static cJSON *diff_summary(const char *k1, const char *v1, const char *k2, const char *v2,
			   const char *out, const struct udiff *d, size_t bytes, const char *sha256)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, k1, v1);
	cJSON_AddStringToObject(j, k2, v2);
	cJSON_AddStringToObject(j, "output", out);
	cJSON_AddNumberToObject(j, "hunks", (double)d->n_hunks);
	cJSON_AddNumberToObject(j, "added", (double)d->added);
	cJSON_AddNumberToObject(j, "removed", (double)d->removed);
	cJSON_AddNumberToObject(j, "bytes", (double)bytes);
	if (sha256)
		cJSON_AddStringToObject(j, "sha256", sha256);
	return j;
}

/* --json needs the output in a file: standard output carries the JSON. */
static void json_needs_file(int json, const char *out, const char *what)
{
	if (json && (!out || stream_is_std(out)))
		cli_usage_error("--json needs -o %s (standard output carries the JSON)", what);
}

static int cmd_apply(int argc, char **argv)
{
	struct apply_args a = {0};
	struct err e = {0};
	char **ops;
	int n;
	if (parse_all(argc, argv, apply_opts, apply_usage, apply_opt, &a, &ops, &n, &e) < 0)
		fail(&e);
	if (n != 2)
		cli_usage_error("apply needs BASELINE and PATCH (%d operand%s given)", n, n == 1 ? "" : "s");
	json_needs_file(a.json, a.out, "OUT");
	char *base, *patch, *out;
	size_t blen, plen, olen;
	if (stream_read_all(ops[0], REPLAY_MAX_BASELINE_BYTES, &base, &blen, &e) < 0)
		fail(&e);
	if (stream_read_all(ops[1], REPLAY_MAX_DIFF_BYTES, &patch, &plen, &e) < 0)
		fail(&e);
	char *name = xasprintf("'%s'", ops[1]);
	struct udiff_limits lim = {REPLAY_MAX_DIFF_BYTES, REPLAY_MAX_HUNKS};
	struct udiff d;
	if (udiff_parse(patch, plen, name, &lim, &d, &e) < 0 ||
	    udiff_apply(&d, base, blen, name, &out, &olen, &e) < 0)
		fail(&e);
	if (stream_write_all(a.out, out, olen, &e) < 0)
		fail(&e);
	if (a.json) {
		char hex[65];
		sha256_buf_hex(out, olen, hex);
		cJSON *j = diff_summary("baseline", ops[0], "patch", ops[1], a.out, &d, olen, hex);
		json_print_stdout(j);
		cJSON_Delete(j);
	}
	udiff_release(&d);
	free(name);
	free(out);
	free(base);
	free(patch);
	free(ops);
	return EXIT_OK;
}

/* ---- run ---- */

static const char run_usage[] =
	"usage: supkit replay run --baseline FILE DIFFS.json [-o DIR] [--json] [--strict]\n"
	"Rebuild every run of DIFFS.json ({run: {\"diff\", \"sha256\"}}) from FILE, compare SHA-256,\n"
	"write DIR/<run>/<file> for each run that matches; exit 1 when any run fails or mismatches.\n"
	"Other keys of a run are ignored and named once. FILE or DIFFS.json may be - (standard input).";
enum { OPT_STRICT = 257 };
static const struct cli_opt run_opts[] = {
	{"baseline", 'b', "FILE", "the baseline file every diff applies to (required)"},
	{"output", 'o', "DIR", "write the rebuilt files of matching runs under DIR/<run>/"},
	{"json", OPT_JSON, NULL, "print the report as JSON instead of a table"},
	{"strict", OPT_STRICT, NULL, "refuse a run with keys other than \"diff\" and \"sha256\""},
	{NULL, 0, NULL, NULL},
};

struct run_args {
	const char *baseline, *out;
	int json, strict;
};

static int run_opt(int key, const char *arg, void *ctx, struct err *e)
{
	(void)e;
	struct run_args *a = ctx;
	if (key == 'b')
		a->baseline = arg;
	else if (key == 'o')
		a->out = arg;
	else if (key == OPT_JSON)
		a->json = 1;
	else if (key == OPT_STRICT)
		a->strict = 1;
	return 0;
}

static void run_print_table(const struct replay_report *rep)
{
	size_t w = 3;
	for (size_t i = 0; i < rep->n_runs; i++)
		if (strlen(rep->runs[i].name) > w)
			w = strlen(rep->runs[i].name);
	if (w > 40)
		w = 40;
	printf("%-*s %6s %8s %8s  %s\n", (int)w, "run", "hunks", "+lines", "-lines", "sha256");
	for (size_t i = 0; i < rep->n_runs; i++) {
		const struct replay_run *r = &rep->runs[i];
		const char *v = r->status == REPLAY_OK ? "ok" : r->status == REPLAY_MISMATCH ? "MISMATCH" : "FAILED";
		if (r->status == REPLAY_FAILED && !r->hunks)
			printf("%-*s %6s %8s %8s  %s\n", (int)w, r->name, "-", "-", "-", v);
		else {
			char add[32], rem[32];
			snprintf(add, sizeof add, "+%zu", r->added);
			snprintf(rem, sizeof rem, "-%zu", r->removed);
			printf("%-*s %6zu %8s %8s  %s\n", (int)w, r->name, r->hunks, add, rem, v);
		}
	}
	printf("%zu run%s: %zu ok, %zu mismatch, %zu failed\n", rep->n_runs, rep->n_runs == 1 ? "" : "s",
	       rep->n_ok, rep->n_mismatch, rep->n_failed);
}

static int cmd_run(int argc, char **argv)
{
	struct run_args a = {0};
	struct err e = {0};
	char **ops;
	int n;
	if (parse_all(argc, argv, run_opts, run_usage, run_opt, &a, &ops, &n, &e) < 0)
		fail(&e);
	if (!a.baseline)
		cli_usage_error("run needs --baseline FILE");
	if (n != 1)
		cli_usage_error("run needs one DIFFS.json (%d operands given)", n);
	cli_no_stdout(a.out, "-o DIR (run writes a folder)");
	char *base, *js;
	size_t blen, jlen;
	if (stream_read_all(a.baseline, REPLAY_MAX_BASELINE_BYTES, &base, &blen, &e) < 0)
		fail(&e);
	if (stream_read_all(ops[0], REPLAY_MAX_DIFFS_BYTES, &js, &jlen, &e) < 0)
		fail(&e);
	struct replay_report rep;
	if (replay_diffs_strict(base, blen, js, jlen, ops[0], a.strict, &rep, &e) < 0)
		fail(&e);
	if (rep.n_extra_keys) {
		fprintf(stderr, "%s: note: '%s': keys of runs other than \"diff\" and \"sha256\" ignored:", err_prog,
			ops[0]);
		for (size_t i = 0; i < rep.n_extra_keys; i++) {
			char *q = replay_name_quote(rep.extra_keys[i]);
			fprintf(stderr, "%s %s", i ? "," : "", q);
			free(q);
		}
		fprintf(stderr, " (--strict refuses them)\n");
	}
	for (size_t i = 0; i < rep.n_runs; i++)
		if (rep.runs[i].error)
			fprintf(stderr, "%s: %s\n", err_prog, rep.runs[i].error);
	/* the baseline read from standard input has no name of its own */
	const char *fallback = stream_is_std(a.baseline) ? "baseline" : path_basename(a.baseline);
	if (a.out && rep.n_ok && replay_report_write(&rep, a.out, fallback, &e) < 0)
		fail(&e);
	if (a.json) {
		cJSON *j = replay_report_json(&rep, ops[0]);
		json_print_stdout(j);
		cJSON_Delete(j);
	} else {
		run_print_table(&rep);
	}
	int rc = rep.n_ok == rep.n_runs ? EXIT_OK : EXIT_CHECK;
	replay_report_release(&rep);
	free(base);
	free(js);
	free(ops);
	return rc;
}

/* ---- diff ---- */

static const char diff_usage[] =
	"usage: supkit replay diff BASELINE FILE... [-n RUN]... [--relative-to DIR] [-o DIFFS.json] [--json]\n"
	"       supkit replay diff -u BASELINE FILE [--relative-to DIR] [-o OUT] [--json]\n"
	"Write a diffs file: for each FILE a `diff -U 0` of BASELINE against it (labelled with the\n"
	"paths as given, or relative to DIR) and its SHA-256. A run is named after FILE's parent\n"
	"folder, or by the -n options in order. With -u, the plain diff of one FILE (exit 0 even\n"
	"when they differ). One of BASELINE and FILE may be - (standard input; such a FILE needs -n).";
enum { OPT_RELATIVE_TO = 300 };
static const struct cli_opt diff_opts[] = {
	{"relative-to", OPT_RELATIVE_TO, "DIR", "label the files with their paths relative to DIR (inside it)"},
	{"name", 'n', "RUN", "name the next FILE's run (repeat once per FILE)"},
	{"output", 'o', "DIFFS.json", "write the diffs file here (atomically) instead of stdout (-)"},
	{"unified", 'u', NULL, "print the plain -U 0 diff of one FILE instead of a diffs file"},
	{"json", OPT_JSON, NULL, "print the result as one JSON object (needs -o)"},
	{NULL, 0, NULL, NULL},
};

struct diff_args {
	const char *out, *relative_to;
	int unified, json;
	const char **names;
	int n_names;
};

static int diff_opt(int key, const char *arg, void *ctx, struct err *e)
{
	(void)e;
	struct diff_args *a = ctx;
	if (key == 'o')
		a->out = arg;
	else if (key == 'n')
		a->names[a->n_names++] = arg;
	else if (key == 'u')
		a->unified = 1;
	else if (key == OPT_RELATIVE_TO)
		a->relative_to = arg;
	else if (key == OPT_JSON)
		a->json = 1;
	return 0;
}

/* The label of path: as given, or relative to --relative-to's folder (a
 * diffs file made anywhere then names the same files). Caller frees. */
static char *diff_label(const struct diff_args *a, const char *path)
{
	if (!a->relative_to || stream_is_std(path))
		return xstrdup(path);
	struct err e = {0};
	char *rel;
	if (path_relative_to(a->relative_to, path, &rel, &e) < 0) {
		err_prefix(&e, "--relative-to");
		fail(&e);
	}
	return rel;
}

/* The name of the folder holding path (after resolving it). */
static char *parent_name(const char *path, struct err *e)
{
	char buf[PATH_MAX];
	if (!realpath(path, buf)) {
		err_errno(e, EXIT_USAGE, "cannot resolve '%s'", path);
		return NULL;
	}
	char *dir = path_dirname(buf);
	char *name = xstrdup(path_basename(dir));
	free(dir);
	return name;
}

/* diff -u: one plain diff, through the same checks as a diffs file. */
static int diff_unified(const struct diff_args *a, char *base, size_t blen, char **ops, int nf)
{
	struct err e = {0};
	if (nf != 1 || a->n_names)
		cli_usage_error("-u takes BASELINE and one FILE, and no --name");
	char *data, *text;
	size_t len, tlen;
	if (stream_read_all(ops[1], REPLAY_MAX_BASELINE_BYTES, &data, &len, &e) < 0)
		fail(&e);
	char *base_label = diff_label(a, ops[0]), *label = diff_label(a, ops[1]);
	if (replay_make_diff(base, blen, base_label, data, len, label, &text, &tlen, &e) < 0)
		fail(&e);
	free(base_label);
	free(label);
	if (stream_write_all(a->out, text, tlen, &e) < 0)
		fail(&e);
	if (a->json) {
		struct udiff d;
		if (udiff_parse(text, tlen, a->out, NULL, &d, &e) < 0)
			fail(&e);
		cJSON *j = diff_summary("baseline", ops[0], "file", ops[1], a->out, &d, tlen, NULL);
		cJSON_AddBoolToObject(j, "identical", tlen == 0);
		json_print_stdout(j);
		cJSON_Delete(j);
		udiff_release(&d);
	}
	free(text);
	free(data);
	free(base);
	free((void *)a->names);
	free(ops);
	return EXIT_OK;
}

static int cmd_diff(int argc, char **argv)
{
	struct diff_args a = {0};
	a.names = xcalloc((size_t)argc + 1, sizeof *a.names);
	struct err e = {0};
	char **ops;
	int n;
	if (parse_all(argc, argv, diff_opts, diff_usage, diff_opt, &a, &ops, &n, &e) < 0)
		fail(&e);
	if (n < 2)
		cli_usage_error("diff needs BASELINE and at least one FILE");
	int nf = n - 1;
	if (a.n_names && a.n_names != nf)
		cli_usage_error("%d --name given for %d file%s (give one per FILE, or none)", a.n_names, nf,
				nf == 1 ? "" : "s");
	json_needs_file(a.json, a.out, a.unified ? "OUT" : "DIFFS.json");
	for (int i = 1; !a.unified && !a.n_names && i < n; i++)
		if (stream_is_std(ops[i]))
			cli_usage_error("FILE - (standard input) needs -n RUN: it has no folder to name its run");
	char *base;
	size_t blen;
	if (stream_read_all(ops[0], REPLAY_MAX_BASELINE_BYTES, &base, &blen, &e) < 0)
		fail(&e);
	if (a.unified)
		return diff_unified(&a, base, blen, ops, nf);
	struct replay_input *in = xcalloc((size_t)nf, sizeof *in);
	char **owned = xcalloc((size_t)nf * 3, sizeof *owned);
	char *base_label = diff_label(&a, ops[0]);
	for (int i = 0; i < nf; i++) {
		size_t len;
		if (stream_read_all(ops[i + 1], REPLAY_MAX_BASELINE_BYTES, &owned[3 * i], &len, &e) < 0)
			fail(&e);
		in[i].data = owned[3 * i];
		in[i].len = len;
		in[i].label = owned[3 * i + 2] = diff_label(&a, ops[i + 1]);
		if (a.n_names) {
			in[i].run = a.names[i];
			/* from standard input: labelled <run>/<the baseline's name>, as a run's copy */
			if (stream_is_std(ops[i + 1])) {
				free(owned[3 * i + 2]);
				in[i].label = owned[3 * i + 2] =
					xasprintf("%s/%s", a.names[i], path_basename(ops[0]));
			}
		} else {
			if (!(owned[3 * i + 1] = parent_name(ops[i + 1], &e)))
				fail(&e);
			in[i].run = owned[3 * i + 1];
		}
	}
	cJSON *j = replay_make_diffs(base, blen, base_label, in, (size_t)nf, &e);
	if (!j)
		fail(&e);
	char *text = json_print(j, 1);
	cJSON_Delete(j);
	if (stream_write_all(a.out, text, strlen(text), &e) < 0)
		fail(&e);
	if (a.json) {
		/* the diffs file written, replayed: the report of replay run --json */
		struct replay_report rep;
		if (replay_diffs(base, blen, text, strlen(text), a.out, &rep, &e) < 0)
			fail(&e);
		cJSON *r = replay_report_json(&rep, a.out);
		json_print_stdout(r);
		cJSON_Delete(r);
		replay_report_release(&rep);
	}
	free(text);
	for (int i = 0; i < 3 * nf; i++)
		free(owned[i]);
	free(owned);
	free(base_label);
	free(in);
	free(base);
	free(ops);
	free(a.names);
	return EXIT_OK;
}

/* ---- dispatch ---- */

static const struct cli_sub subs[] = {
	{"apply", cmd_apply, "apply one unified diff to a baseline, byte for byte"},
	{"run", cmd_run, "rebuild every run of a diffs file and check each SHA-256"},
	{"diff", cmd_diff, "write a diffs file: -U 0 diffs of runs' files against a baseline"},
	{NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
	return cli_dispatch(argc, argv, "replay", "a replay", subs);
}

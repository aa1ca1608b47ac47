/* cmd_verify.c: supkit-verify ARCHIVE.zip | DIR: parse, call verify_path (or
 * scan_path for --no-manifest), report. The work is in supplements/verify.c
 * and scan.c; man/supkit-verify.1. */
#include <stdio.h>
#include <stdlib.h>

#include "lib/cli.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/stream.h"
#include "supplements/args.h"
#include "supplements/derive.h"
#include "supplements/scan.h"
#include "supplements/verify.h"

static const char usage[] =
	"usage: supkit verify [options] ARCHIVE.zip | DIR | -\n"
	"Check a supplement against its manifest, replay its diffs file and re-derive\n"
	"every derived number from the supplement's own inputs; exit 0 only when every\n"
	"entry and run checked out and no number disagrees. - reads the zip from standard input.";

enum { OPT_JSON = 256, OPT_DIFFS, OPT_BASELINE, OPT_NO_REPLAY, OPT_NO_MANIFEST, OPT_NO_REDERIVE, OPT_DATA,
       OPT_STRICT };
static const struct cli_opt opts[] = {
	{"diffs", OPT_DIFFS, "PATH", "entry path of the diffs file (default diffs.json, else the one *diffs.json)"},
	{"baseline", OPT_BASELINE, "PATH", "entry path of the baseline (default baseline.cfg, baseline/train.py, then baseline_train.py, beside the diffs file)"},
	{"no-replay", OPT_NO_REPLAY, NULL, "do not replay the diffs file"},
	{"no-rederive", OPT_NO_REDERIVE, NULL, "do not re-derive the derived entries"},
	{"data", OPT_DATA, "DIR", "validation/held-out shards and tokenizer: re-score each packed checkpoint (supkit eval)"},
	{"strict", OPT_STRICT, NULL, "refuse a diffs file whose runs carry keys other than diff and sha256"},
	{"no-manifest", OPT_NO_MANIFEST, NULL, "list and hash the supplement; print the manifest pack would write"},
	{"output", 'o', "FILE", "with --no-manifest: write the manifest to FILE (- for stdout, the default)"},
	{"json", OPT_JSON, NULL, "print the findings as one JSON object"},
	{"quiet", 'q', NULL, "no progress on stderr"},
	{NULL, 0, NULL, NULL},
};

struct ctx {
	struct verify_opts vo;
	int json, no_manifest;
	const char *out;
};

static int on_opt(int key, const char *arg, void *p, struct err *e)
{
	struct ctx *c = p;
	(void)e;
	switch (key) {
	case OPT_DIFFS: c->vo.diffs = arg; break;
	case OPT_BASELINE: c->vo.baseline = arg; break;
	case OPT_NO_REPLAY: c->vo.no_replay = 1; break;
	case OPT_NO_REDERIVE: c->vo.no_rederive = 1; break;
	case OPT_STRICT: c->vo.strict = 1; break;
	case OPT_DATA:
		cli_no_stdin(arg, "--data (a folder)");
		c->vo.data_dir = arg;
		break;
	case OPT_NO_MANIFEST: c->no_manifest = 1; break;
	case OPT_JSON: c->json = 1; break;
	case 'o': c->out = arg; break;
	case 'q': c->vo.quiet = 1; break;
	}
	return 0;
}

/* --no-manifest: what pack would write, from what the supplement holds.
 * path is what the scan opens, name what messages call it. */
static int list_only(const char *path, const char *name, const struct ctx *c)
{
	struct scan s;
	struct err e = {0};
	struct scan_opts so = {.safetensors_digest = 1, .quiet = c->vo.quiet, .capture_if = derive_capture,
			       .capture_if_max = DERIVE_CAPTURE_MAX};
	if (scan_path(path, &so, &s, &e) < 0) {
		stream_err_rename(&e, path, name);
		err_print(err_prog, &e);
		scan_release(&s);
		return e.code;
	}
	char **notes = NULL;
	size_t nn = 0;
	derive_lift(&s, &s.actual, &notes, &nn);
	for (size_t i = 0; i < nn; i++)
		free(notes[i]);
	free(notes);
	size_t len;
	char *text = manifest_print(&s.actual, &len);
	int rc = EXIT_OK;
	if (stream_write_all(c->out, text, len, &e) < 0) {
		err_print(err_prog, &e);
		rc = e.code;
	}
	for (size_t i = 0; i < s.n_issues; i++)
		fprintf(stderr, "%s: '%s': entry '%s' left out: %s\n", err_prog, name, s.issues[i].path,
			s.issues[i].reason);
	if (rc == EXIT_OK && s.n_issues)
		rc = EXIT_CHECK;
	free(text);
	scan_release(&s);
	return rc;
}

int main(int argc, char **argv)
{
	struct ctx c = {0};
	const char *op = args_one_operand(argc, argv, "supkit-verify", opts, usage, on_opt, &c,
					  "one supplement (a zip file or a folder)");
	struct err e = {0};
	if (c.out && !c.no_manifest)
		cli_usage_error("--output goes with --no-manifest");
	if (c.vo.data_dir && c.vo.no_rederive)
		cli_usage_error("--data re-scores checkpoints while re-deriving: not with --no-rederive");
	/* a zip on standard input: spooled, for the central directory */
	struct stream_spool sp = {.fd = -1};
	const char *path = op;
	if (stream_is_std(op)) {
		if (stream_spool_stdin(&sp, "a zip", &e) < 0)
			return err_report(&e);
		path = sp.path;
	}
	if (c.no_manifest) {
		int rc = list_only(path, op, &c);
		stream_spool_close(&sp);
		return rc;
	}
	struct verify_report r;
	if (verify_path(path, &c.vo, &r, &e) < 0) {
		verify_report_release(&r);
		stream_spool_close(&sp);
		stream_err_rename(&e, path, op);
		return err_report(&e);
	}
	stream_spool_close(&sp);
	if (c.json) {
		cJSON *j = verify_report_json(&r, op);
		json_print_stdout(j);
		cJSON_Delete(j);
	} else {
		verify_report_print(stdout, &r, op);
	}
	int rc = r.verified ? EXIT_OK : EXIT_CHECK;
	verify_report_release(&r);
	return rc;
}

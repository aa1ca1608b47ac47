/* cmd_pack.c: supkit-pack DIR -o OUT.zip: parse, call pack_dir, report.
 * With -o - the zip is made whole in a private temporary folder, then copied
 * to standard output (never a terminal) and the folder removed; the summary
 * goes to standard error then. The work is in supplements/pack.c;
 * man/supkit-pack.1. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/cli.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/stream.h"
#include "supplements/args.h"
#include "supplements/human.h"
#include "supplements/pack.h"

static const char usage[] = "usage: supkit pack DIR -o OUT.zip [--json] [--quiet]\n"
			    "Pack DIR into a reproducible supplement zip with a SHA-256 manifest\n"
			    "(-o - writes the zip to standard output).";

enum { OPT_JSON = 256 };
static const struct cli_opt opts[] = {
	{"output", 'o', "OUT.zip", "the zip to write (must not lie inside DIR; - for standard output)"},
	{"json", OPT_JSON, NULL, "print the result as one JSON object"},
	{"quiet", 'q', NULL, "no progress or notes on stderr"},
	{NULL, 0, NULL, NULL},
};

struct ctx {
	const char *out;
	int json, quiet;
};

static int on_opt(int key, const char *arg, void *p, struct err *e)
{
	struct ctx *c = p;
	(void)e;
	if (key == 'o')
		c->out = arg;
	else if (key == OPT_JSON)
		c->json = 1;
	else if (key == 'q')
		c->quiet = 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct ctx c = {0};
	const char *op = args_one_operand(argc, argv, "supkit-pack", opts, usage, on_opt, &c,
					  "one folder to pack");
	struct err e = {0};
	if (!c.out)
		cli_usage_error("missing -o OUT.zip");
	cli_no_stdin(op, "DIR (pack reads a folder)");
	int to_stdout = stream_is_std(c.out);
	if (to_stdout && c.json)
		cli_usage_error("--json cannot go with -o - (standard output carries the zip)");
	if (to_stdout && stream_stdout_binary("a zip", " or give -o FILE", &e) < 0)
		return err_report(&e);
	struct pack_opts po = {.quiet = c.quiet};
	if (pack_source_date(&po.mtime, &e) < 0) {
		err_print(err_prog, &e);
		return e.code;
	}
	char *tmp_dir = NULL, *tmp_zip = NULL;
	if (to_stdout) {
		if (!(tmp_dir = stream_temp_dir(&e)))
			return err_report(&e);
		tmp_zip = path_join(tmp_dir, "stdout.zip");
		signal(SIGPIPE, SIG_IGN);   /* a closed pipe is an error to report, and the folder removed */
	}
	struct pack_result r;
	int rc = 0;
	if (to_stdout && pack_path_inside(op, tmp_zip, &e) == 1)
		rc = err_set(&e, EXIT_USAGE, "the temporary folder for -o - ('%s') lies inside '%s': set TMPDIR "
			     "to a folder outside it", tmp_dir, op);
	if (rc == 0)
		rc = pack_dir(op, to_stdout ? tmp_zip : c.out, &po, &r, &e);
	if (rc == 0 && to_stdout)
		rc = stream_copy_to_stdout(tmp_zip, &e);
	if (tmp_dir) {
		if (rc < 0)
			stream_err_rename(&e, tmp_zip, "-");
		dir_remove_tree(tmp_dir);
		free(tmp_dir);
		free(tmp_zip);
	}
	if (rc < 0) {
		pack_result_release(&r);
		return err_report(&e);
	}
	if (r.replaced_manifest && !c.quiet)
		fprintf(stderr, "supkit-pack: note: '%s/manifest.json' was replaced by a fresh manifest\n", op);
	for (size_t i = 0; i < r.n_notes && !c.quiet; i++)
		fprintf(stderr, "supkit-pack: note: %s\n", r.notes[i]);
	if (c.json) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "archive", c.out);
		cJSON_AddNumberToObject(j, "entries", (double)r.entries);
		cJSON_AddNumberToObject(j, "uncompressed_bytes", (double)r.uncompressed);
		cJSON_AddNumberToObject(j, "compressed_bytes", (double)r.compressed);
		cJSON_AddStringToObject(j, "sha256", r.sha256);
		cJSON_AddNumberToObject(j, "mtime", (double)po.mtime);
		cJSON_AddNumberToObject(j, "derived", (double)r.derived);
		cJSON *na = cJSON_AddArrayToObject(j, "notes");
		for (size_t i = 0; i < r.n_notes; i++)
			cJSON_AddItemToArray(na, cJSON_CreateString(r.notes[i]));
		json_print_stdout(j);
		cJSON_Delete(j);
	} else if (!to_stdout || !c.quiet) {
		/* with the zip on standard output, the summary goes to standard error */
		FILE *f = to_stdout ? stderr : stdout;
		char u[32], z[32];
		fprintf(f, "%zu entries, %s uncompressed, %s compressed\n", r.entries,
			human_bytes(r.uncompressed, u, sizeof u), human_bytes(r.compressed, z, sizeof z));
		if (r.derived)
			fprintf(f, "%zu derived entries recorded\n", r.derived);
		fprintf(f, "%s  %s\n", r.sha256, c.out);
	}
	pack_result_release(&r);
	return EXIT_OK;
}

/* cmd_unpack.c: supkit-unpack ARCHIVE.zip -C DIR: parse, call unpack_zip,
 * report. The work is in supplements/unpack.c; man/supkit-unpack.1. */
#include <stdio.h>

#include "lib/cli.h"
#include "lib/json.h"
#include "lib/stream.h"
#include "supplements/args.h"
#include "supplements/human.h"
#include "supplements/unpack.h"

static const char usage[] =
	"usage: supkit unpack ARCHIVE.zip -C DIR [options]\n"
	"Extract a supplement zip into DIR, refusing any entry that could write outside it.\n"
	"ARCHIVE.zip - reads the zip from standard input.";

enum { OPT_JSON = 256, OPT_MAX_SIZE, OPT_MAX_TOTAL, OPT_MAX_RATIO, OPT_MAX_ENTRIES };
static const struct cli_opt opts[] = {
	{"directory", 'C', "DIR", "the folder to create (must not exist, or be empty)"},
	{"max-size", OPT_MAX_SIZE, "BYTES", "refuse an entry larger than this (default 4294967296)"},
	{"max-total", OPT_MAX_TOTAL, "BYTES", "refuse archives holding more than this in all (default 17179869184)"},
	{"max-ratio", OPT_MAX_RATIO, "R", "refuse entries over 1 MiB compressed more than R:1 (default 200)"},
	{"max-entries", OPT_MAX_ENTRIES, "N", "refuse archives with more entries (default 100000)"},
	{"json", OPT_JSON, NULL, "print the result as one JSON object"},
	{"quiet", 'q', NULL, "no progress on stderr"},
	{NULL, 0, NULL, NULL},
};

struct ctx {
	const char *dir;
	int json;
	struct unpack_limits l;
};

static int on_opt(int key, const char *arg, void *p, struct err *e)
{
	struct ctx *c = p;
	int64_t v;
	switch (key) {
	case 'C': c->dir = arg; return 0;
	case OPT_JSON: c->json = 1; return 0;
	case 'q': c->l.quiet = 1; return 0;
	case OPT_MAX_SIZE:
		if (cli_parse_i64(arg, 0, INT64_MAX, &v, "--max-size", e) < 0)
			return -1;
		c->l.max_entry = (uint64_t)v;
		return 0;
	case OPT_MAX_TOTAL:
		if (cli_parse_i64(arg, 0, INT64_MAX, &v, "--max-total", e) < 0)
			return -1;
		c->l.max_total = (uint64_t)v;
		return 0;
	case OPT_MAX_ENTRIES:
		if (cli_parse_i64(arg, 1, 100000000, &v, "--max-entries", e) < 0)
			return -1;
		c->l.max_entries = (size_t)v;
		return 0;
	case OPT_MAX_RATIO:
		if (cli_parse_double(arg, &c->l.max_ratio, "--max-ratio", e) < 0)
			return -1;
		if (c->l.max_ratio < 1)
			return err_set(e, EXIT_USAGE, "--max-ratio: %g is below 1", c->l.max_ratio);
		return 0;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ctx c = {0};
	unpack_limits_default(&c.l);
	const char *op = args_one_operand(argc, argv, "supkit-unpack", opts, usage, on_opt, &c,
					  "one zip archive");
	struct err e = {0};
	if (!c.dir)
		cli_usage_error("missing -C DIR");
	cli_no_stdout(c.dir, "-C DIR (unpack writes a folder)");
	/* a zip on standard input: spooled, for the central directory */
	struct stream_spool sp = {.fd = -1};
	const char *path = op;
	if (stream_is_std(op)) {
		if (stream_spool_stdin(&sp, "a zip", &e) < 0)
			return err_report(&e);
		path = sp.path;
	}
	struct unpack_result r;
	int rc = unpack_zip(path, c.dir, &c.l, &r, &e);
	stream_spool_close(&sp);
	if (rc < 0) {
		stream_err_rename(&e, path, op);
		return err_report(&e);
	}
	if (c.json) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "archive", op);
		cJSON_AddStringToObject(j, "directory", c.dir);
		cJSON_AddNumberToObject(j, "files", (double)r.files);
		cJSON_AddNumberToObject(j, "folders", (double)r.dirs);
		cJSON_AddNumberToObject(j, "bytes", (double)r.bytes);
		json_print_stdout(j);
		cJSON_Delete(j);
	} else {
		char b[32];
		printf("%zu files, %zu folders, %s into %s\n", r.files, r.dirs, human_bytes(r.bytes, b, sizeof b), c.dir);
	}
	return EXIT_OK;
}

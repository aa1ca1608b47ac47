/* cmd_pack.c: supkit-pack DIR -o OUT.zip: parse, call pack_dir, report.
 * The work is in supplements/pack.c; man/supkit-pack.1. */
#include <stdio.h>
#include <stdlib.h>

#include "lib/cli.h"
#include "lib/json.h"
#include "supplements/args.h"
#include "supplements/human.h"
#include "supplements/pack.h"

static const char usage[] = "usage: supkit pack DIR -o OUT.zip [--json] [--quiet]\n"
			    "Pack DIR into a reproducible supplement zip with a SHA-256 manifest.";

enum { OPT_JSON = 256 };
static const struct cli_opt opts[] = {
	{"output", 'o', "OUT.zip", "the zip to write (must not lie inside DIR)"},
	{"json", OPT_JSON, NULL, "print the result as one JSON object"},
	{"quiet", 'q', NULL, "no progress on stderr"},
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
	struct pack_opts po = {.quiet = c.quiet};
	if (pack_source_date(&po.mtime, &e) < 0) {
		err_print(err_prog, &e);
		return e.code;
	}
	struct pack_result r;
	if (pack_dir(op, c.out, &po, &r, &e) < 0) {
		return err_report(&e);
	}
	if (r.replaced_manifest && !c.quiet)
		fprintf(stderr, "supkit-pack: note: '%s/manifest.json' was replaced by a fresh manifest\n", op);
	if (c.json) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "archive", c.out);
		cJSON_AddNumberToObject(j, "entries", (double)r.entries);
		cJSON_AddNumberToObject(j, "uncompressed_bytes", (double)r.uncompressed);
		cJSON_AddNumberToObject(j, "compressed_bytes", (double)r.compressed);
		cJSON_AddStringToObject(j, "sha256", r.sha256);
		cJSON_AddNumberToObject(j, "mtime", (double)po.mtime);
		json_print_stdout(j);
		cJSON_Delete(j);
	} else {
		char u[32], z[32];
		printf("%zu entries, %s uncompressed, %s compressed\n", r.entries, human_bytes(r.uncompressed, u, sizeof u),
		       human_bytes(r.compressed, z, sizeof z));
		printf("%s  %s\n", r.sha256, c.out);
	}
	return EXIT_OK;
}

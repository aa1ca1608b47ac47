/* sub_digest.c: `supkit audit digest`: the content SHA-256 of safetensors
 * checkpoints (st_digest in lib/safetensors.h: tensors in sorted-name order,
 * name, dtype, shape, bytes; independent of header order and padding). One
 * line per file, "<hex>  <path>", like sha256sum; --json one object. Every
 * file is tried; the exit status is the worst. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit_cmds.h"
#include "lib/cli.h"
#include "lib/derivation.h"
#include "lib/json.h"
#include "lib/safetensors.h"

enum { OPT_JSON = 256 };

static const struct cli_opt opts[] = {
	{"json", OPT_JSON, NULL, "print {\"checkpoints\": {path: {\"digest\", \"tensors\"}}, \"derivation\"} as one JSON object"},
	{"output", 'o', "FILE", "also write the JSON object to FILE (atomically)"},
	{NULL, 0, NULL, NULL},
};

struct ctx {
	int json;
	const char *output;
};

static const char usage[] =
	"usage: supkit audit digest [options] CHECKPOINT.safetensors...\n"
	"\n"
	"SHA-256 over the tensors' names, dtypes, shapes and bytes in sorted-name\n"
	"order: two files holding the same weights get the same digest.";

static int on_opt(int key, const char *arg, void *vc, struct err *e)
{
	struct ctx *c = vc;
	(void)e;
	if (key == OPT_JSON)
		c->json = 1;
	if (key == 'o') {
		cli_no_stdout(arg, "--output (use --json for the JSON on standard output)");
		c->output = arg;
	}
	return 0;
}

int audit_digest_main(int argc, char **argv)
{
	struct ctx c = {0};
	struct err e;
	err_clear(&e);
	int nf;
	char **files = cli_parse_operands(argc, argv, opts, usage, on_opt, &c, &nf);
	int json = c.json || c.output;
	if (!nf) {
		free(files);
		cli_usage_error("no checkpoint given");
	}
	for (int i = 0; i < nf; i++)
		cli_no_stdin(files[i], "CHECKPOINT (checkpoints are mapped from files)");
	int rc = EXIT_OK;
	if (json)
		deriv_log_start();   /* the files read, for the derivation record */
	char (*hex)[65] = xcalloc((size_t)nf, sizeof *hex);
	size_t *tensors = xcalloc((size_t)nf, sizeof *tensors);
	for (int i = 0; i < nf; i++) {
		struct st_file f;
		if (st_open(&f, files[i], &e) < 0) {
			err_print(err_prog, &e);
			if (e.code > rc)
				rc = e.code;
			continue;
		}
		st_digest(&f, hex[i]);
		tensors[i] = f.n;
		if (!c.json)
			printf("%s  %s\n", hex[i], files[i]);
		st_close(&f);
	}
	if (json && rc == EXIT_OK) {
		/* the command as supkit verify re-runs it; the checkpoints named
		 * as it records them (no folder of this machine) */
		struct deriv d;
		deriv_init(&d, "supkit-audit", "digest");
		deriv_arg(&d, "--json");
		for (int i = 0; i < nf; i++)
			deriv_path_arg(&d, files[i]);
		cJSON *root = cJSON_CreateObject();
		if (deriv_finish(&d, &e) < 0) {
			rc = err_report(&e);
		} else {
			cJSON *out = cJSON_AddObjectToObject(root, "checkpoints");
			for (int i = 0; i < nf; i++) {
				const char *name = d.args[1 + i];
				cJSON *o = cJSON_CreateObject();
				cJSON_AddStringToObject(o, "digest", hex[i]);
				cJSON_AddNumberToObject(o, "tensors", (double)tensors[i]);
				cJSON_DeleteItemFromObjectCaseSensitive(out, name);
				cJSON_AddItemToObject(out, name, o);
			}
			cJSON_AddItemToObject(root, DERIV_KEY, deriv_to_json(&d));
			if (c.output && json_write_file(c.output, root, &e) < 0)
				rc = err_report(&e);
			else if (c.json)
				json_print_stdout(root);
		}
		cJSON_Delete(root);
		deriv_release(&d);
	}
	free(hex);
	free(tensors);
	free(files);
	return rc;
}

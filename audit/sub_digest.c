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
#include "lib/json.h"
#include "lib/safetensors.h"

enum { OPT_JSON = 256 };

static const struct cli_opt opts[] = {
	{"json", OPT_JSON, NULL, "print {path: {\"digest\", \"tensors\"}} as one JSON object"},
	{NULL, 0, NULL, NULL},
};

static const char usage[] =
	"usage: supkit audit digest [options] CHECKPOINT.safetensors...\n"
	"\n"
	"SHA-256 over the tensors' names, dtypes, shapes and bytes in sorted-name\n"
	"order: two files holding the same weights get the same digest.";

static int on_opt(int key, const char *arg, void *vc, struct err *e)
{
	(void)arg;
	(void)e;
	if (key == OPT_JSON)
		*(int *)vc = 1;
	return 0;
}

int audit_digest_main(int argc, char **argv)
{
	int json = 0;
	struct err e;
	err_clear(&e);
	int nf;
	char **files = cli_parse_operands(argc, argv, opts, usage, on_opt, &json, &nf);
	if (!nf) {
		free(files);
		cli_usage_error("no checkpoint given");
	}
	for (int i = 0; i < nf; i++)
		cli_no_stdin(files[i], "CHECKPOINT (checkpoints are mapped from files)");
	int rc = EXIT_OK;
	cJSON *out = json ? cJSON_CreateObject() : NULL;
	for (int i = 0; i < nf; i++) {
		struct st_file f;
		if (st_open(&f, files[i], &e) < 0) {
			err_print(err_prog, &e);
			if (e.code > rc)
				rc = e.code;
			continue;
		}
		char hex[65];
		st_digest(&f, hex);
		if (out) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "digest", hex);
			cJSON_AddNumberToObject(o, "tensors", (double)f.n);
			cJSON_DeleteItemFromObjectCaseSensitive(out, files[i]);
			cJSON_AddItemToObject(out, files[i], o);
		} else {
			printf("%s  %s\n", hex, files[i]);
		}
		st_close(&f);
	}
	if (out) {
		if (rc == EXIT_OK)
			json_print_stdout(out);
		cJSON_Delete(out);
	}
	free(files);
	return rc;
}

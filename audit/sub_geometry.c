/* sub_geometry.c: `supkit audit geometry`: stable rank, mean-row energy,
 * the q_tau profile and the residual scalars of checkpoints (thin: options,
 * then audit/geometry.c). Reference: supkit-audit(1); papers' Tables 4, 5a, 8b. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit_cmds.h"
#include "audit/geometry.h"
#include "lib/cli.h"
#include "lib/derivation.h"
#include "lib/json.h"

enum { OPT_JSON = 256, OPT_METHOD, OPT_ALLOW_MISSING, OPT_SPECTRUM };

static const struct cli_opt opts[] = {
	{"json", OPT_JSON, NULL, "print the report as one JSON object"},
	{"output", 'o', "FILE", "also write the JSON report to FILE (atomically)"},
	{"method", OPT_METHOD, "M", "||W||_2 by gram (Lanczos, default), gram-evr (dsyevr) or svd"},
	{"allow-missing", OPT_ALLOW_MISSING, NULL, "leave out tables whose tensors are missing"},
	{"spectrum", OPT_SPECTRUM, NULL, "also every singular value of each matrix (JSON; dgesdd)"},
	{"quiet", 'q', NULL, "no progress on stderr"},
	{NULL, 0, NULL, NULL},
};

static const char usage[] =
	"usage: supkit audit geometry [options] CHECKPOINT.safetensors...\n"
	"\n"
	"Stable rank ||W||_F^2/||W||_2^2 and mean-row energy share of every model\n"
	"matrix (Table 4), the exp(q_tau) profile (Table 5a) and the residual\n"
	"scalars (Table 8b), per checkpoint and averaged per arm.";

struct ctx {
	struct geom_opts g;
	int json;
	const char *output;
};

static int on_opt(int key, const char *arg, void *vc, struct err *e)
{
	struct ctx *c = vc;
	switch (key) {
	case OPT_JSON: c->json = 1; return 0;
	case 'o':
		cli_no_stdout(arg, "--output (use --json for the JSON on standard output)");
		c->output = arg;
		return 0;
	case OPT_ALLOW_MISSING: c->g.allow_missing = 1; return 0;
	case 'q': c->g.quiet = 1; return 0;
	case OPT_SPECTRUM: c->g.spectrum = 1; return 0;
	case OPT_METHOD:
		if (!strcmp(arg, "gram"))
			c->g.method = GEOM_GRAM;
		else if (!strcmp(arg, "gram-evr"))
			c->g.method = GEOM_GRAM_EVR;
		else if (!strcmp(arg, "svd"))
			c->g.method = GEOM_SVD;
		else
			return err_set(e, EXIT_USAGE, "--method: '%s' is not gram, gram-evr or svd", arg);
		return 0;
	}
	return 0;
}

/* Every string value under node equal to from becomes to (the derivation
 * block aside). */
static void rename_strings(cJSON *node, const char *from, const char *to)
{
	for (cJSON *c = node ? node->child : NULL; c; c = c->next) {
		if (c->string && !strcmp(c->string, DERIV_KEY))
			continue;
		if (cJSON_IsString(c) && !strcmp(c->valuestring, from))
			cJSON_SetValuestring(c, to);
		else
			rename_strings(c, from, to);
	}
}

int audit_geometry_main(int argc, char **argv)
{
	struct ctx c = {0};
	c.g.method = GEOM_GRAM;
	struct err e;
	err_clear(&e);
	/* Options may come before or after the checkpoints. */
	int nf;
	char **files = cli_parse_operands(argc, argv, opts, usage, on_opt, &c, &nf);
	if (!nf) {
		free(files);
		cli_usage_error("no checkpoint given");
	}
	for (int i = 0; i < nf; i++)
		cli_no_stdin(files[i], "CHECKPOINT (checkpoints are mapped from files)");
	int record = c.json || c.output;
	if (record)
		deriv_log_start();   /* the files read, for the derivation record */
	cJSON *rep = geom_audit(files, nf, &c.g, &e);
	if (rep && record) {
		/* the command as supkit verify re-runs it */
		static const char *const methods[] = {"gram", "gram-evr", "svd"};
		struct deriv d;
		deriv_init(&d, "supkit-audit", "geometry");
		deriv_arg(&d, "--json");
		deriv_arg(&d, "--method");
		deriv_arg(&d, methods[c.g.method == GEOM_GRAM_EVR ? 1 : c.g.method == GEOM_SVD ? 2 : 0]);
		if (c.g.allow_missing)
			deriv_arg(&d, "--allow-missing");
		if (c.g.spectrum)
			deriv_arg(&d, "--spectrum");
		size_t first = d.n_args;
		for (int i = 0; i < nf; i++)
			deriv_path_arg(&d, files[i]);
		if (deriv_attach(&d, rep, &e) < 0) {
			cJSON_Delete(rep);
			rep = NULL;
		} else {
			/* the report names the checkpoints as the record does */
			for (int i = 0; i < nf; i++)
				rename_strings(rep, files[i], d.args[first + (size_t)i]);
		}
		deriv_release(&d);
	}
	free(files);
	if (!rep) {
		return err_report(&e);
	}
	int rc = EXIT_OK;
	if (c.output && json_write_file(c.output, rep, &e) < 0) {
		err_print(err_prog, &e);
		rc = e.code;
	}
	if (rc == EXIT_OK) {
		if (c.json)
			json_print_stdout(rep);
		else
			geom_print(stdout, rep);
	}
	cJSON_Delete(rep);
	return rc;
}

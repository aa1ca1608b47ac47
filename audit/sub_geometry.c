/* sub_geometry.c: `supkit audit geometry`: stable rank, mean-row energy,
 * the q_tau profile and the residual scalars of checkpoints (thin: options,
 * then audit/geometry.c). Reference: SPEC section 7, papers' Tables 4, 5a, 8b. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit_cmds.h"
#include "audit/geometry.h"
#include "lib/cli.h"
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
	cJSON *rep = geom_audit(files, nf, &c.g, &e);
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

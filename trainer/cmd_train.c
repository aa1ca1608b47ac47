/* cmd_train.c: supkit-train, thin: parse, load the config, join the MPI
 * ranks when a launcher started several (trainer/dist.h), call train_run
 * (trainer/train.c), report (rank 0 alone reports). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cli.h"
#include "lib/err.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "trainer/arm_file.h"
#include "trainer/config.h"
#include "trainer/dist.h"
#include "trainer/train.h"

enum { O_SET = 256, O_RESUME, O_FORCE, O_TOKEN_BYTES, O_STOP_AFTER, O_PRINT_CONFIG, O_BACKEND, O_THREADS, O_JSON, O_ARM, O_DEVICE };

static const struct cli_opt opts[] = {
	{"arm", O_ARM, "NAME", "a named arm's file from the configs folder: the config, or its switches over CONFIG"},
	{"set", O_SET, "KEY=VALUE", "override a config key (repeatable; applied after CONFIG)"},
	{"output", 'o', "RUNDIR", "write the run folder RUNDIR"},
	{"resume", O_RESUME, "RUNDIR", "continue the run in RUNDIR from its checkpoint"},
	{"force", O_FORCE, NULL, "replace a run already in RUNDIR"},
	{"token-bytes", O_TOKEN_BYTES, "FILE", "token_bytes file for BPB (default: DATA_DIR/token_bytes.bin)"},
	{"stop-after", O_STOP_AFTER, "N", "stop after N steps, leaving a checkpoint to --resume from"},
	{"backend", O_BACKEND, "NAME", "cpu or cuda (same as --set backend=NAME)"},
	{"threads", O_THREADS, "N", "BLAS threads (same as --set threads=N)"},
	{"device", O_DEVICE, "N", "the GPU to run on: N-th of those visible (CUDA_VISIBLE_DEVICES), default 0"},
	{"print-config", O_PRINT_CONFIG, NULL, "print the resolved config and exit"},
	{"json", O_JSON, NULL, "print the run summary as JSON"},
	{"quiet", 'q', NULL, "no progress lines"},
	{NULL, 0, NULL, NULL},
};

static const char usage[] =
	"usage: supkit train [options] CONFIG -o RUNDIR\n"
	"       supkit train [options] --arm NAME [CONFIG] -o RUNDIR\n"
	"       supkit train --resume RUNDIR [options]\n"
	"Train the benchmark GPT with MuonAdamW (every arm a config key; man supkit-train).\n"
	"A CONFIG of - is read from standard input.";

struct args {
	char **sets;               /* owned copies, "key=value" */
	int n_sets;
	const char *out, *resume, *token_bytes, *arm;
	int force, print_config, json, quiet;
	int64_t stop_after;
	int64_t device;            /* --device N */
};

static void add_set(struct args *a, char *kv)
{
	a->sets = xrealloc(a->sets, (size_t)(a->n_sets + 1) * sizeof *a->sets);
	a->sets[a->n_sets++] = kv;
}

static int on_opt(int key, const char *arg, void *ctx, struct err *e)
{
	struct args *a = ctx;
	switch (key) {
	case O_SET:
		add_set(a, xstrdup(arg));
		return 0;
	case 'o':
		cli_no_stdout(arg, "-o RUNDIR (a run folder)");
		a->out = arg;
		return 0;
	case O_ARM: a->arm = arg; return 0;
	case O_RESUME:
		cli_no_stdin(arg, "--resume RUNDIR (a run folder)");
		a->resume = arg;
		return 0;
	case O_FORCE: a->force = 1; return 0;
	case O_TOKEN_BYTES:
		cli_no_stdin(arg, "--token-bytes (a token_bytes file)");
		a->token_bytes = arg;
		return 0;
	case O_STOP_AFTER: return cli_parse_i64(arg, 0, 1000000000, &a->stop_after, "--stop-after", e);
	case O_BACKEND:
		add_set(a, xasprintf("backend=%s", arg));
		return 0;
	case O_THREADS:
		add_set(a, xasprintf("threads=%s", arg));
		return 0;
	case O_DEVICE: return cli_parse_i64(arg, 0, 1023, &a->device, "--device", e);
	case O_PRINT_CONFIG: a->print_config = 1; return 0;
	case O_JSON: a->json = 1; return 0;
	case 'q': a->quiet = 1; return 0;
	}
	return err_set(e, EXIT_USAGE, "unhandled option");
}

int main(int argc, char **argv)
{
	cli_set_prog("supkit-train");
	struct args a;
	memset(&a, 0, sizeof a);
	a.stop_after = -1;   /* not given */
	struct err e;
	err_clear(&e);
	struct dist d;
	dist_single(&d);
	int first;
	int status = EXIT_OK;
	if (cli_parse(argc, argv, opts, usage, on_opt, &a, &first, &e) < 0) {
		err_print(NULL, &e);
		status = EXIT_USAGE;
		goto done;
	}
	const char *cfg_path = NULL;
	if (a.resume) {
		if (first < argc)
			cli_usage_error("--resume RUNDIR takes no CONFIG (the run's config.cfg is used)");
		if (a.out)
			cli_usage_error("--resume RUNDIR and -o cannot be combined");
		if (a.arm)
			cli_usage_error("--resume RUNDIR and --arm cannot be combined (the run's config.cfg is used)");
	} else {
		if (a.arm ? first + 1 < argc : first + 1 != argc)
			cli_usage_error(a.arm ? "need at most one CONFIG with --arm" : "need exactly one CONFIG");
		cfg_path = first < argc ? argv[first] : NULL;
		if (!a.out && !a.print_config)
			cli_usage_error("need -o RUNDIR");
	}
	/* the MPI ranks (one process without a launcher); from here on rank 0
	 * alone reports (every rank reads the same arguments and files) */
	if (dist_init(&d, &argc, &argv, &e) < 0) {
		err_print(NULL, &e);
		status = e.code ? e.code : EXIT_SYS;
		goto done;
	}
	/* --arm: the arm's file is the config, or its switches go over CONFIG */
	char *arm_cfg = NULL, *base_cfg = NULL;
	if (a.arm) {
		char *exe = arm_self_exe();
		char *dir = arm_configs_dir(getenv("SUPKIT_CONFIGS"), exe, &e);
		free(exe);
		if (dir) {
			arm_cfg = arm_file_path(dir, a.arm, &e);
			base_cfg = path_join(dir, "baseline.cfg");
			free(dir);
		}
		if (!arm_cfg) {
			if (d.rank == 0)
				err_print(NULL, &e);
			status = e.code ? e.code : EXIT_SYS;
			free(base_cfg);
			goto done;
		}
	}
	struct config cfg;
	config_defaults(&cfg);
	char *resume_cfg = a.resume ? path_join(a.resume, "config.cfg") : NULL;
	int rc = config_load_file(&cfg, cfg_path ? cfg_path : arm_cfg ? arm_cfg : resume_cfg, &e);
	free(resume_cfg);
	if (rc == 0 && arm_cfg && cfg_path)
		rc = config_apply_switches(&cfg, base_cfg, arm_cfg, &e);
	free(arm_cfg);
	free(base_cfg);
	for (int i = 0; rc == 0 && i < a.n_sets; i++)
		rc = config_set(&cfg, a.sets[i], &e);
	if (rc == 0)
		rc = config_validate(&cfg, &e);
	if (rc < 0) {
		if (d.rank == 0)
			err_print(NULL, &e);
		status = e.code ? e.code : EXIT_USAGE;
		goto done;
	}
	cfg.device = (int)a.device;   /* not a config key: the machine's, not the run's */
	if (a.print_config) {
		char *t = config_print(&cfg);
		if (d.rank == 0)
			fputs(t, stdout);
		free(t);
		goto done;
	}
	struct train_opts o = {
		.run_dir = a.resume ? a.resume : a.out,
		.resume = a.resume != NULL,
		.force = a.force,
		.token_bytes = a.token_bytes,
		/* --stop-after 0: a checkpoint of the initial weights */
		.stop_after = a.stop_after == 0 ? TRAIN_STOP_NOW : a.stop_after < 0 ? 0 : (int)a.stop_after,
		.quiet = a.quiet,
		.dist = &d,
	};
	struct train_summary s;
	int tr = train_run(&cfg, &o, &s, &e);
	if (tr < 0) {
		if (d.rank == 0)   /* every rank has the same status */
			err_print(NULL, &e);
		status = e.code ? e.code : EXIT_SYS;
		goto done;
	}
	if (d.rank != 0) {
	} else if (a.json) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "run_dir", o.run_dir);
		cJSON_AddBoolToObject(j, "finished", s.finished);
		cJSON_AddNumberToObject(j, "steps", s.steps_done);
		cJSON_AddNumberToObject(j, "final_loss", s.final_loss);
		if (s.finished) {
			cJSON_AddNumberToObject(j, "val_bpb", s.val_bpb);
			cJSON_AddNumberToObject(j, "heldout_bpb", s.heldout_bpb);
		}
		json_print_stdout(j);
		cJSON_Delete(j);
	} else if (s.finished) {
		/* as result.json: a BPB not measured (eval_tokens or
		 * heldout_tokens = 0, null there) is left out */
		printf("%s: %d steps, final loss %.4f", o.run_dir, s.steps_done, s.final_loss);
		if (!isnan(s.val_bpb))
			printf(", val_bpb %.6f", s.val_bpb);
		if (!isnan(s.heldout_bpb))
			printf(", heldout_bpb %.6f", s.heldout_bpb);
		printf("\n");
	} else {
		printf("%s: stopped after %d steps (checkpoint written; continue with --resume %s)\n", o.run_dir,
		       s.steps_done, o.run_dir);
	}
done:
	dist_finalize(&d);
	for (int i = 0; i < a.n_sets; i++)
		free(a.sets[i]);
	free(a.sets);
	return status;
}

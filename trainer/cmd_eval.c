/* cmd_eval.c: supkit-eval, thin: parse, find the checkpoint and its config
 * (eval_resolve, eval_infer_config), call eval_checkpoint
 * (trainer/eval.c), report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cli.h"
#include "lib/err.h"
#include "lib/json.h"
#include "trainer/config.h"
#include "trainer/eval.h"

enum { O_DATA = 256, O_CONFIG, O_SET, O_TOKEN_BYTES, O_BACKEND, O_THREADS, O_PRINT_CONFIG, O_JSON };

static const struct cli_opt opts[] = {
	{"data", O_DATA, "DIR", "the folder of val_*.bin shards and token_bytes.bin (default: the config's data_dir)"},
	{"config", O_CONFIG, "FILE", "the checkpoint's config (default: the run folder's config.cfg)"},
	{"set", O_SET, "KEY=VALUE", "override a config key (repeatable; applied after the config)"},
	{"token-bytes", O_TOKEN_BYTES, "FILE", "token_bytes file for BPB (default: DIR/token_bytes.bin)"},
	{"backend", O_BACKEND, "NAME", "cpu or cuda (same as --set backend=NAME)"},
	{"threads", O_THREADS, "N", "BLAS threads (same as --set threads=N)"},
	{"print-config", O_PRINT_CONFIG, NULL, "print the resolved config and exit"},
	{"json", O_JSON, NULL, "print the result as one JSON object"},
	{"quiet", 'q', NULL, "no progress lines"},
	{NULL, 0, NULL, NULL},
};

static const char usage[] =
	"usage: supkit eval [options] CHECKPOINT [--data DIR]\n"
	"Bits per byte and loss of a checkpoint on the validation and held-out segments of the\n"
	"validation shards, as supkit train evaluates at the end of a run (man supkit-eval).\n"
	"CHECKPOINT: a run folder, or a safetensors file (a run's model.safetensors, or a PyTorch\n"
	"state_dict; without a config, the model's shape is read from its tensors).";

struct args {
	char **sets;
	int n_sets;
	const char *data, *config, *token_bytes;
	int print_config, json, quiet;
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
	case O_DATA:
		cli_no_stdin(arg, "--data DIR (a folder)");
		a->data = arg;
		return 0;
	case O_CONFIG: a->config = arg; return 0;
	case O_SET: add_set(a, xstrdup(arg)); return 0;
	case O_TOKEN_BYTES:
		cli_no_stdin(arg, "--token-bytes (a token_bytes file)");
		a->token_bytes = arg;
		return 0;
	case O_BACKEND: add_set(a, xasprintf("backend=%s", arg)); return 0;
	case O_THREADS: add_set(a, xasprintf("threads=%s", arg)); return 0;
	case O_PRINT_CONFIG: a->print_config = 1; return 0;
	case O_JSON: a->json = 1; return 0;
	case 'q': a->quiet = 1; return 0;
	}
	return err_set(e, EXIT_USAGE, "unhandled option");
}

static cJSON *segment_json(const struct eval_result *r)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "bpb", r->bpb);
	cJSON_AddNumberToObject(j, "loss", r->loss);
	cJSON_AddNumberToObject(j, "targets", (double)r->targets);
	cJSON_AddNumberToObject(j, "text_targets", (double)r->text_targets);
	cJSON_AddNumberToObject(j, "bytes", r->bytes);
	cJSON_AddNumberToObject(j, "nats", r->nats);
	return j;
}

static const char *const from_word[] = {"given", "run", "inferred"};

int main(int argc, char **argv)
{
	cli_set_prog("supkit-eval");
	struct args a;
	memset(&a, 0, sizeof a);
	struct err e;
	err_clear(&e);
	int first, status = EXIT_OK;
	char *ckpt = NULL, *cfg_path = NULL;
	if (cli_parse(argc, argv, opts, usage, on_opt, &a, &first, &e) < 0) {
		err_print(NULL, &e);
		status = EXIT_USAGE;
		goto done;
	}
	if (first + 1 != argc)
		cli_usage_error("need exactly one CHECKPOINT (a run folder or a safetensors file)");
	cli_no_stdin(argv[first], "CHECKPOINT (checkpoints are mapped from files)");
	enum eval_config_from from;
	struct config cfg;
	config_defaults(&cfg);
	int rc = eval_resolve(argv[first], a.config, &ckpt, &cfg_path, &from, &e);
	if (rc == 0 && cfg_path)
		rc = config_load_file(&cfg, cfg_path, &e);
	for (int i = 0; rc == 0 && i < a.n_sets; i++)
		rc = config_set(&cfg, a.sets[i], &e);
	if (rc == 0 && from == EVAL_CONFIG_NONE)
		rc = eval_infer_config(ckpt, &cfg, &e);
	if (rc == 0 && a.print_config) {
		rc = config_validate(&cfg, &e);
		if (rc == 0) {
			char *t = config_print(&cfg);
			fputs(t, stdout);
			free(t);
			goto done;
		}
	}
	struct eval_opts o = {.checkpoint = ckpt, .data_dir = a.data, .token_bytes = a.token_bytes, .quiet = a.quiet};
	struct eval_report r;
	if (rc == 0)
		rc = eval_checkpoint(&cfg, &o, &r, &e);
	if (rc < 0) {
		err_print(NULL, &e);
		status = e.code ? e.code : EXIT_SYS;
		goto done;
	}
	if (r.passes > 1)
		fprintf(stderr, "%s: warning: the validation shards are shorter than eval_tokens + heldout_tokens: "
			"the evaluation stream wrapped around (%llu passes), so its segments repeat documents\n",
			err_prog, (unsigned long long)r.passes);
	if (a.json) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "checkpoint", ckpt);
		if (cfg_path)
			cJSON_AddStringToObject(j, "config", cfg_path);
		else
			cJSON_AddNullToObject(j, "config");
		cJSON_AddStringToObject(j, "config_from", from_word[from]);
		cJSON_AddStringToObject(j, "data_dir", r.data_dir);
		cJSON_AddNumberToObject(j, "shards", r.shards);
		cJSON_AddStringToObject(j, "backend", r.backend);
		cJSON_AddNumberToObject(j, "threads", cfg.threads);
		cJSON_AddNumberToObject(j, "depth", cfg.depth);
		cJSON_AddNumberToObject(j, "vocab_size", cfg.vocab_size);
		cJSON_AddNumberToObject(j, "batch_rows", cfg.batch_rows);
		cJSON_AddNumberToObject(j, "seq_len", cfg.seq_len);
		cJSON_AddNumberToObject(j, "eval_tokens", (double)cfg.eval_tokens);
		cJSON_AddNumberToObject(j, "heldout_tokens", (double)cfg.heldout_tokens);
		cJSON_AddNumberToObject(j, "val_passes", (double)r.passes);
		if (r.have_val) {
			cJSON_AddNumberToObject(j, "val_bpb", r.val.bpb);
			cJSON_AddItemToObject(j, "val", segment_json(&r.val));
		} else {
			cJSON_AddNullToObject(j, "val_bpb");
			cJSON_AddNullToObject(j, "val");
		}
		if (r.have_heldout) {
			cJSON_AddNumberToObject(j, "heldout_bpb", r.heldout.bpb);
			cJSON_AddItemToObject(j, "heldout", segment_json(&r.heldout));
		} else {
			cJSON_AddNullToObject(j, "heldout_bpb");
			cJSON_AddNullToObject(j, "heldout");
		}
		json_print_stdout(j);
		cJSON_Delete(j);
	} else {
		printf("checkpoint %s\nconfig     %s\ndata       %s (%d shard%s, %llu pass%s)\nbackend    %s\n", ckpt,
		       cfg_path ? cfg_path : "inferred from the tensors' shapes", r.data_dir, r.shards,
		       r.shards == 1 ? "" : "s", (unsigned long long)r.passes, r.passes == 1 ? "" : "es", r.backend);
		printf("%-8s %12s %12s %10s %9s\n", "segment", "targets", "bytes", "loss", "bpb");
		const struct eval_result *seg[2] = {r.have_val ? &r.val : NULL, r.have_heldout ? &r.heldout : NULL};
		const char *name[2] = {"val", "heldout"};
		for (int s = 0; s < 2; s++)
			if (seg[s])
				printf("%-8s %12lld %12.0f %10.6f %9.6f\n", name[s], (long long)seg[s]->targets,
				       seg[s]->bytes, seg[s]->loss, seg[s]->bpb);
	}
done:
	free(ckpt);
	free(cfg_path);
	for (int i = 0; i < a.n_sets; i++)
		free(a.sets[i]);
	free(a.sets);
	return status;
}

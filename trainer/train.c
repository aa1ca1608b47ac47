/* train.c: the training loop and the run folder (see train.h); the
 * evaluation is trainer/eval.c's.
 *
 * The loop is the benchmark's (docs/model.md, A step): K micro-steps a
 * step, each micro-step's loss scaled by 1/K before backward, one optimizer
 * step with the schedules of the 0-based step t, fast-fail on a NaN loss or one above
 * max_loss. Timing follows the benchmark: training_seconds sums the steps
 * after the warmup_steps (11) untimed ones; training_loop_seconds is the
 * whole loop.
 *
 * The backend (CPU reference or CUDA) is chosen by model_create through
 * trainer/backend_select.h. Data parallelism (trainer/dist.h): with several
 * MPI ranks each runs its rows of the step (dist_share), the gradients and
 * micro-step losses are summed in rank order, and rank 0 alone writes the
 * run folder and evaluates; the CUDA backend runs one process.
 */
#define _GNU_SOURCE
#include "trainer/train.h"

#include <errno.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cblas.h>

#include "lib/cli.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/progress.h"
#include "lib/safetensors.h"
#include "trainer/accounting.h"
#include "trainer/backend_select.h"
#include "trainer/checkpoint.h"
#include "trainer/dist.h"
#include "trainer/eval.h"
#include "data/loader.h"
#include "trainer/model.h"
#include "trainer/optim.h"
#include "trainer/paramspec.h"
#include "trainer/rundir.h"
#include "data/tokenizer.h"

/* ---- small helpers ---- */

static int path_exists(const char *p)
{
	struct stat st;
	return lstat(p, &st) == 0;
}

/* Sorted list of files matching dir/pattern; *n may be 0. Caller frees with globfree. */
static int list_shards(const char *dir, const char *pattern, glob_t *g)
{
	char *pat = path_join(dir, pattern);
	int r = glob(pat, 0, NULL, g);
	free(pat);
	if (r == GLOB_NOMATCH) {
		g->gl_pathc = 0;
		return 0;
	}
	return r == 0 ? 0 : -1;
}

static double peak_rss_mib(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (double)ru.ru_maxrss / 1024.0; /* ru_maxrss is in KiB on Linux */
}

/* ---- exact parameter state for resume ---- */

/* Every parameter's exact values (F32 or BF16 as stored, and F64 in fp64
 * runs), the step in __metadata__. */
static int params_save_exact(struct param_table *t, int fp64, int step, const char *path, struct err *e)
{
	struct st_writer w;
	st_writer_init(&w);
	char step_s[32];
	snprintf(step_s, sizeof step_s, "%d", step);
	st_writer_meta(&w, "step", step_s);
	char **names = xcalloc(t->n, sizeof *names);
	for (size_t i = 0; i < t->n; i++) {
		struct param *p = &t->p[i];
		int64_t shape[3] = {p->shape[0], p->shape[1], p->shape[2]};
		if (p->wb)   /* bf16-stored (OE tables of fp32 runs): exact as bf16 */
			st_writer_add(&w, p->name, ST_BF16, p->ndim, shape, p->wb);
		else
			st_writer_add(&w, p->name, ST_F32, p->ndim, shape, p->w);
		if (fp64 && p->w64) {
			names[i] = xasprintf("%s.f64", p->name);
			st_writer_add(&w, names[i], ST_F64, p->ndim, shape, p->w64);
		}
	}
	int r = st_write(&w, path, e);
	st_writer_release(&w);
	for (size_t i = 0; i < t->n; i++)
		free(names[i]);
	free(names);
	return r;
}

/* Load what params_save_exact wrote, refusing a file of another step. */
static int params_load_exact(struct param_table *t, int fp64, int64_t step, const char *path, struct err *e)
{
	struct st_file f;
	if (st_open(&f, path, e) < 0)
		return -1;
	int r = 0;
	const char *ms = NULL;
	for (size_t i = 0; i < f.n_meta; i++)
		if (!strcmp(f.meta_keys[i], "step"))
			ms = f.meta_vals[i];
	char want[32];
	snprintf(want, sizeof want, "%lld", (long long)step);
	if (!ms || strcmp(ms, want) != 0)
		r = err_set(e, EXIT_USAGE, "'%s': __metadata__ step %s%s%s, but the checkpoint's state says step %s", path,
			    ms ? "'" : "", ms ? ms : "missing", ms ? "'" : "", want);
	for (size_t i = 0; i < t->n && r == 0; i++) {
		struct param *p = &t->p[i];
		const struct st_tensor *s = st_find(&f, p->name);
		if (!s || s->dtype != (p->wb ? ST_BF16 : ST_F32) || st_numel(s) != p->numel) {
			r = err_set(e, EXIT_USAGE, "'%s': tensor '%s' missing or of the wrong dtype or size", path, p->name);
			break;
		}
		if (p->wb)
			memcpy(p->wb, s->data, p->numel * sizeof(bf16));
		else
			memcpy(p->w, s->data, p->numel * sizeof(float));
		if (fp64 && p->w64) {
			char *n64 = xasprintf("%s.f64", p->name);
			s = st_find(&f, n64);
			if (!s || s->dtype != ST_F64 || st_numel(s) != p->numel)
				r = err_set(e, EXIT_USAGE, "'%s': tensor '%s' missing or of the wrong dtype or size", path, n64);
			else
				memcpy(p->w64, s->data, p->numel * sizeof(double));
			free(n64);
		}
	}
	st_close(&f);
	return r;
}

/* ---- the run ---- */

struct run {
	struct config *cfg;
	const struct train_opts *o;
	struct model *m;
	struct optim *opt;
	struct loader ld;
	int ld_open;
	glob_t train_g, val_g;
	uint32_t *token_bytes;
	uint32_t n_token_bytes;
	cJSON *curve;              /* array of per-step objects */
	double train_seconds, loop_seconds;
	double peak_flops;         /* the MFU's denominator (backend_peak_flops; 0: none) */
	int step;                  /* steps completed */
	char sha[65];
	int fp64;
	uint64_t val_epochs;       /* passes over the validation shards in evaluation */
	int lock_fd;               /* the run folder's lock (rundir.h), -1 before */
	const struct dist *dist;   /* the MPI ranks (a world of one without MPI) */
};

static int write_curve(struct run *R, struct err *e)
{
	char *path = path_join(R->o->run_dir, "curve.jsonl");
	struct atomic_file af;
	int r = atomic_open(&af, path, e);
	if (r == 0) {
		for (cJSON *c = R->curve->child; c; c = c->next) {
			char *s = json_print(c, 0);
			fprintf(af.fp, "%s\n", s);
			free(s);
		}
		r = atomic_commit(&af, e);
	}
	free(path);
	return r;
}

/* Write the whole resume state into a fresh folder, then swap it in:
 * checkpoint -> checkpoint.old, new -> checkpoint, remove checkpoint.old.
 * A crash between the renames leaves checkpoint.old, which resume uses.
 * state.json, written last into the folder, records each file's SHA-256
 * (trainer/checkpoint.h), read back from the disk. */
static int save_checkpoint(struct run *R, struct err *e)
{
	char *ck = path_join(R->o->run_dir, "checkpoint");
	char *old = path_join(R->o->run_dir, "checkpoint.old");
	char *tmp = dir_temp_beside(ck, e);
	int r = -1;
	if (!tmp)
		goto out;
	char *p[CKPT_NFILES];
	for (int i = 0; i < CKPT_NFILES; i++)
		p[i] = path_join(tmp, ckpt_files[i]);   /* params.safetensors, optim.bin, loader.bin */
	char *ps = path_join(tmp, "state.json");
	size_t ls_len = 0;
	uint8_t *ls = loader_state(&R->ld, &ls_len);
	struct ckpt_state st;
	memset(&st, 0, sizeof st);
	st.step = R->step;
	st.training_seconds = R->train_seconds;
	st.training_loop_seconds = R->loop_seconds;
	memcpy(st.config_sha256, R->sha, sizeof st.config_sha256);
	st.blas_threads = openblas_get_num_threads();
	st.world_size = R->dist->size;
	st.curve = R->curve;
	r = params_save_exact(model_params(R->m), R->fp64, R->step, p[0], e);
	if (r == 0)
		r = optim_save(R->opt, p[1], e);
	if (r == 0)
		r = file_write_atomic(p[2], ls, ls_len, e);
	if (r == 0)
		r = ckpt_state_hash(tmp, &st, e);
	if (r == 0)
		r = ckpt_state_write(ps, &st, e);
	free(ls);
	for (int i = 0; i < CKPT_NFILES; i++)
		free(p[i]);
	free(ps);
	if (r == 0) {
		dir_sync(tmp);
		/* a checkpoint.old left by a kill during the last swap's cleanup;
		 * checkpoint itself is whole, so the old one can go */
		if (path_exists(ck))
			dir_remove_tree(old);
		if (path_exists(ck) && rename(ck, old) != 0)
			r = err_errno(e, EXIT_SYS, "cannot rename '%s'", ck);
		if (r == 0 && rename(tmp, ck) != 0)
			r = err_errno(e, EXIT_SYS, "cannot rename into '%s'", ck);
		if (r == 0) {
			dir_remove_tree(old);
			dir_sync(R->o->run_dir);
		}
	}
	if (r < 0)
		dir_remove_tree(tmp);
	free(tmp);
	if (r == 0)
		r = write_curve(R, e);
out:
	free(ck);
	free(old);
	return r;
}

/* Read RUNDIR/checkpoint (or checkpoint.old) into the run, trusting
 * nothing: state.json's fields are range-checked (ckpt_state_read), every
 * file must have the SHA-256 it records, and the files must agree with its
 * step (the parameters' __metadata__, the loader's batch count, the AdamW
 * counters). Nothing in the run folder is written. */
static int load_checkpoint(struct run *R, struct err *e)
{
	const struct config *c = R->cfg;
	char *ck = path_join(R->o->run_dir, "checkpoint");
	if (!path_exists(ck)) {
		free(ck);
		ck = path_join(R->o->run_dir, "checkpoint.old");
		if (!path_exists(ck)) {
			err_set(e, EXIT_USAGE, "'%s' has no checkpoint to resume from", R->o->run_dir);
			free(ck);
			return -1;
		}
	}
	char *p[CKPT_NFILES];
	for (int i = 0; i < CKPT_NFILES; i++)
		p[i] = path_join(ck, ckpt_files[i]);
	char *ps = path_join(ck, "state.json");
	char *lsb = NULL;
	size_t lsn;
	int r = -1;
	struct ckpt_state st;
	if (ckpt_state_read(ps, c->steps, &st, e) < 0)
		goto out0;
	if (strcmp(st.config_sha256, R->sha) != 0) {
		err_set(e, EXIT_USAGE, "'%s': checkpoint was made with config %.12s..., but config.cfg is %.12s...",
			ps, st.config_sha256, R->sha);
		goto out;
	}
	/* the sums over the ranks, so the weights, depend on their number */
	if (st.world_size != R->dist->size) {
		err_set(e, EXIT_USAGE, "'%s': world_size: the checkpoint was made by %d MPI rank%s, and this run has %d: "
			"resume with %d (the gradients' sums, so the weights, depend on it)", ps, st.world_size,
			st.world_size == 1 ? "" : "s", R->dist->size, st.world_size);
		goto out;
	}
	if (ckpt_state_verify(ck, &st, e) < 0)
		goto out;
	if (params_load_exact(model_params(R->m), R->fp64, st.step, p[0], e) < 0)
		goto out;
	if (optim_load(R->opt, p[1], e) < 0)
		goto out;
	const struct param_table *t = model_params(R->m);
	for (size_t i = 0; i < t->n; i++)
		if (optim_adamw_count(R->opt, i) > st.step) {
			err_set(e, EXIT_USAGE, "'%s': '%s': AdamW step %lld is beyond the checkpoint's step %lld", p[1],
				t->p[i].name, (long long)optim_adamw_count(R->opt, i), (long long)st.step);
			goto out;
		}
	if (file_read_all(p[2], 64u << 20, &lsb, &lsn, e) < 0)
		goto out;
	if (loader_restore(&R->ld, (const uint8_t *)lsb, lsn, e) < 0) {
		err_prefix(e, "'%s'", p[2]);
		goto out;
	}
	if (R->ld.batches != (uint64_t)st.step * (uint64_t)c->grad_accum) {
		err_set(e, EXIT_USAGE, "'%s': the loader gave %llu batches, but step %lld of %d micro-steps takes %lld",
			p[2], (unsigned long long)R->ld.batches, (long long)st.step, c->grad_accum,
			(long long)st.step * c->grad_accum);
		goto out;
	}
	/* fp32 GEMM results depend on the BLAS thread count: resume with the
	 * checkpoint's, or not at all */
	int now = openblas_get_num_threads();
	if (st.blas_threads != now) {
		openblas_set_num_threads(st.blas_threads);
		if (openblas_get_num_threads() != st.blas_threads) {
			err_set(e, EXIT_USAGE, "'%s': blas_threads: the checkpoint was made with %d BLAS threads, and this "
				"OpenBLAS runs at most %d: the resumed run would not be bit-identical", ps, st.blas_threads,
				openblas_get_num_threads());
			openblas_set_num_threads(now);
			goto out;
		}
		if (!R->o->quiet && R->dist->rank == 0)
			fprintf(stderr, "%s: resuming with %d BLAS threads, as the checkpoint was made (not %d), "
				"so that the result is bit-identical\n", err_prog, st.blas_threads, now);
	}
	R->step = (int)st.step;
	R->train_seconds = st.training_seconds;
	R->loop_seconds = st.training_loop_seconds;
	cJSON_Delete(R->curve);
	R->curve = st.curve;
	st.curve = NULL;
	r = 0;
out:
	ckpt_state_release(&st);
out0:
	free(lsb);
	for (int i = 0; i < CKPT_NFILES; i++)
		free(p[i]);
	free(ps);
	free(ck);
	return r;
}

/* result.json's word for an activation dtype */
static const char *dtype_word(enum tdtype t)
{
	return t == TD_BF16 ? "bf16" : t == TD_F64 ? "fp64" : "fp32";
}

static int write_result(struct run *R, double val_bpb, double held_bpb, double final_loss, double total_s,
			struct err *e)
{
	const struct config *c = R->cfg;
	size_t nspec;
	const struct param_spec *spec = model_spec(R->m, &nspec);
	struct param_counts pc;
	param_counts_of(spec, nspec, &pc);
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "arm", c->arm);
	cJSON_AddNumberToObject(j, "depth", c->depth);
	cJSON_AddNumberToObject(j, "seed", (double)c->seed);
	cJSON_AddNumberToObject(j, "val_bpb", val_bpb);
	if (c->heldout_tokens > 0)
		cJSON_AddNumberToObject(j, "heldout_bpb", held_bpb);
	else
		cJSON_AddNullToObject(j, "heldout_bpb");
	cJSON_AddNumberToObject(j, "num_params", (double)pc.backbone);
	cJSON_AddItemToObject(j, "parameter_accounting", param_counts_json(&pc));
	cJSON_AddNumberToObject(j, "training_seconds", R->train_seconds);
	cJSON_AddNumberToObject(j, "training_loop_seconds", R->loop_seconds);
	cJSON_AddNumberToObject(j, "total_seconds", total_s);
	cJSON_AddNumberToObject(j, "peak_memory_mib", peak_rss_mib());
	cJSON_AddNumberToObject(j, "model_peak_memory_mib", (double)model_peak_bytes(R->m) / 1048576.0);
	size_t dev_peak = 0;
	model_backend(R->m)->device_bytes(&dev_peak);
	if (dev_peak > 0) /* the CUDA allocator's own accounting */
		cJSON_AddNumberToObject(j, "device_peak_memory_mib", (double)dev_peak / 1048576.0);
	cJSON_AddNumberToObject(j, "pass_rows", model_pass_rows(R->m, c->batch_rows, c->seq_len));
	double tps = (double)c->batch_rows * c->seq_len * c->grad_accum;
	cJSON_AddNumberToObject(j, "tokens_per_step", tps);
	cJSON_AddNumberToObject(j, "tokens", tps * R->step);
	/* the timed steps' rate: training_seconds counts the steps from
	 * warmup_steps on (on a resume too, the step index being global;
	 * config refuses warmup_steps >= steps, so a finished run has some) */
	int timed = R->step > c->warmup_steps ? R->step - c->warmup_steps : 0;
	double tok_s = timed > 0 && R->train_seconds > 0 ? tps * timed / R->train_seconds : 0;
	double fpt = flops_per_token(c, &pc);
	if (tok_s > 0)
		cJSON_AddNumberToObject(j, "tokens_per_second", tok_s);
	else
		cJSON_AddNullToObject(j, "tokens_per_second");
	cJSON_AddNumberToObject(j, "flops_per_token", fpt);
	/* MFU against the device's dense bf16 peak (or SUPKIT_PEAK_TFLOPS) */
	if (tok_s > 0 && R->peak_flops > 0) {
		cJSON_AddNumberToObject(j, "peak_flops", R->peak_flops);
		cJSON_AddNumberToObject(j, "mfu_percent", 100.0 * fpt * tok_s / R->peak_flops);
	} else {
		cJSON_AddNullToObject(j, "peak_flops");
		cJSON_AddNullToObject(j, "mfu_percent");
	}
	cJSON_AddNumberToObject(j, "steps", R->step);
	cJSON_AddNumberToObject(j, "world_size", R->dist->size);
	cJSON_AddNumberToObject(j, "final_loss", final_loss);
	cJSON_AddNumberToObject(j, "eval_tokens", (double)c->eval_tokens);
	cJSON_AddNumberToObject(j, "heldout_tokens", (double)c->heldout_tokens);
	cJSON_AddNumberToObject(j, "val_passes", (double)R->val_epochs);
	cJSON_AddStringToObject(j, "config_sha256", R->sha);
	cJSON_AddStringToObject(j, "supkit_version", SUPKIT_VERSION);
	cJSON_AddStringToObject(j, "backend", model_backend(R->m)->name);
	char dev[256];
	if (model_backend(R->m)->device_name(dev, sizeof dev) == 0) {
		cJSON_AddStringToObject(j, "device", dev);
		cJSON_AddNumberToObject(j, "device_index", c->device);   /* --device N */
	} else {
		cJSON_AddNullToObject(j, "device");
		cJSON_AddNullToObject(j, "device_index");
	}
	const char *bmodes = model_backend(R->m)->modes();
	if (*bmodes)
		cJSON_AddStringToObject(j, "backend_modes", bmodes);
	cJSON_AddStringToObject(j, "dtype", R->fp64 ? "fp64" : "fp32");
	cJSON_AddStringToObject(j, "precision", R->fp64 ? "fp64" : model_backend(R->m)->precision());
	cJSON_AddStringToObject(j, "mlp_activations", dtype_word(model_mlp_dtype(R->m)));
	cJSON_AddStringToObject(j, "attn_activations", dtype_word(model_attn_dtype(R->m)));
	cJSON_AddStringToObject(j, "norm_activations", dtype_word(model_norm_dtype(R->m)));
	cJSON_AddStringToObject(j, "logits", dtype_word(model_logits_dtype(R->m)));
	int pm = polar_mode_of(c);
	cJSON_AddStringToObject(j, "polar_arithmetic", R->fp64 ? "fp64" : pm == POLAR_MODE_FP32 ? "fp32"
				: pm == POLAR_MODE_BF16_EAGER ? "bf16_eager" : "bf16_compiled");
	char *p = path_join(R->o->run_dir, "result.json");
	int r = json_write_file(p, j, e);
	free(p);
	cJSON_Delete(j);
	return r;
}

static void run_release(struct run *R)
{
	if (R->ld_open)
		loader_close(&R->ld);
	if (R->opt)
		optim_free(R->opt);
	if (R->m)
		model_free(R->m);
	globfree(&R->train_g);
	globfree(&R->val_g);
	free(R->token_bytes);
	cJSON_Delete(R->curve);
	rundir_unlock(R->lock_fd);   /* last: the folder is whole */
}

/* The files of a run (the lock and what the user put there aside). */
static const char *const run_outputs[] = {
	"result.json", "curve.jsonl", "model.safetensors", "optim.bin", "checkpoint", "checkpoint.old", NULL,
};

static int holds_run(const char *dir)
{
	char *res = path_join(dir, "result.json"), *ck = path_join(dir, "checkpoint");
	char *old = path_join(dir, "checkpoint.old");
	int r = path_exists(res) || path_exists(ck) || path_exists(old);
	free(res);
	free(ck);
	free(old);
	return r;
}

static int is_finished(const char *dir)
{
	char *res = path_join(dir, "result.json");
	int r = path_exists(res);
	free(res);
	return r;
}

/* Refusals that need no lock, checked before anything is written (and
 * again under the lock by claim_run_dir). */
static int run_dir_precheck(const struct train_opts *o, struct err *e)
{
	if (o->resume && is_finished(o->run_dir))
		return err_set(e, EXIT_USAGE, "'%s' is a finished run (result.json exists): nothing to resume", o->run_dir);
	if (!o->resume && !o->force && holds_run(o->run_dir))
		return err_set(e, EXIT_USAGE, "'%s' already holds a run: use --resume to continue it or --force to replace it",
			       o->run_dir);
	return 0;
}

/* Take the run folder, everything about the run having been checked: lock
 * it (rundir.h), then on --resume load the checkpoint, on a new run remove
 * a replaced run's files (--force) and write config.cfg; in both, remove
 * the temporaries a killed trainer left. A refusal leaves the folder as it
 * was (but for its lock file). Ranks other than 0 only read: the
 * checkpoint on --resume. */
static int claim_run_dir(struct run *R, struct err *e)
{
	const struct train_opts *o = R->o;
	if (R->dist->rank != 0)
		return o->resume ? load_checkpoint(R, e) : 0;
	if (!o->resume && dir_make_all(o->run_dir, e) < 0)
		return -1;
	if (rundir_lock(o->run_dir, &R->lock_fd, e) < 0)
		return -1;
	if (run_dir_precheck(o, e) < 0)   /* again: the folder may have changed before the lock */
		return -1;
	if (o->resume) {
		if (load_checkpoint(R, e) < 0)
			return -1;
		return rundir_remove_stale(o->run_dir, e) < 0 ? -1 : 0;
	}
	if (o->force) {
		/* result.json first: the folder stops claiming a finished run */
		for (int i = 0; run_outputs[i]; i++) {
			char *p = path_join(o->run_dir, run_outputs[i]);
			int rr = dir_remove_tree(p);
			if (rr != 0)
				err_errno(e, EXIT_SYS, "cannot remove '%s'", p);
			free(p);
			if (rr != 0)
				return -1;
		}
	}
	if (rundir_remove_stale(o->run_dir, e) < 0)
		return -1;
	char *cfgp = path_join(o->run_dir, "config.cfg");
	char *text = config_print(R->cfg);
	int r = file_write_atomic(cfgp, text, strlen(text), e);
	free(text);
	free(cfgp);
	return r;
}

/* The token_bytes file: one entry a token of the config's vocabulary, 0
 * for the shards' BOS (a special token). */
static int load_token_bytes(struct run *R, struct err *e)
{
	const struct config *cfg = R->cfg;
	char *tbp = R->o->token_bytes ? xstrdup(R->o->token_bytes) : path_join(cfg->data_dir, "token_bytes.bin");
	int r = tokenizer_token_bytes(tbp, &R->token_bytes, &R->n_token_bytes, e);
	if (r == 0 && R->n_token_bytes != (uint32_t)cfg->vocab_size)
		r = err_set(e, EXIT_USAGE, "'%s': %u entries, but vocab_size is %d", tbp, R->n_token_bytes,
			    cfg->vocab_size);
	if (r == 0 && R->ld_open && R->ld.bos_id < R->n_token_bytes && R->token_bytes[R->ld.bos_id] != 0)
		r = err_set(e, EXIT_USAGE, "'%s': entry %u (the shards' BOS, a special token) is %u bytes, not 0", tbp,
			    R->ld.bos_id, R->token_bytes[R->ld.bos_id]);
	free(tbp);
	return r;
}

/* init_from names an input file: one that cannot be read is bad input. */
static int check_init_from(const struct config *cfg, struct err *e)
{
	if (!cfg->init_from[0])
		return 0;
	FILE *f = fopen(cfg->init_from, "rb");
	if (!f)
		return err_errno(e, EXIT_USAGE, "init_from: cannot open '%s'", cfg->init_from);
	fclose(f);
	return 0;
}

/* The memory floor (accounting.h) against the machine's, before anything
 * is allocated; with the model made, its own figure for the activations. */
static int check_memory(const struct config *cfg, const struct model *m, struct err *e)
{
	struct param_spec *spec;
	size_t n;
	if (paramspec_build(cfg, &spec, &n, e) < 0)
		return -1;
	struct memory_floor f;
	memory_floor_of(cfg, spec, n, &f);
	free(spec);
	struct err se;
	const struct backend_ops *bk = m ? model_backend(m) : backend_select(cfg, &se);
	int host_model = bk == NULL || bk->host_memory;   /* cuda: the model is device memory */
	double model = f.params + f.activations;
	if (m)
		model = (double)model_bytes_for(m, cfg->batch_rows, cfg->seq_len);
	char a[32], b[32], c[32], detail[160];
	rundir_format_bytes(model, a, sizeof a);
	rundir_format_bytes(f.optim, b, sizeof b);
	rundir_format_bytes(f.tokens, c, sizeof c);
	if (!host_model) {
		snprintf(detail, sizeof detail, "token buffers %s", c);
		return rundir_memory_check(f.tokens, detail, e);
	}
	snprintf(detail, sizeof detail, "model %s, optimizer %s, token buffers %s", a, b, c);
	return rundir_memory_check(model + f.optim + f.tokens, detail, e);
}

int train_run(struct config *cfg, const struct train_opts *o, struct train_summary *s, struct err *e)
{
	memset(s, 0, sizeof *s);
	if (config_validate(cfg, e) < 0)
		return -1;
	struct dist one;
	dist_single(&one);
	const struct dist *D = o->dist ? o->dist : &one;
	if (D->size > 1 && cfg->backend == BACKEND_CUDA)
		return err_set(e, EXIT_USAGE, "backend = cuda runs one process, and this supkit-train is one of %d MPI "
			       "ranks: data parallelism over MPI is the CPU backend's (backend = cpu)", D->size);
	if (cfg->backend == BACKEND_CUDA && !backend_cuda_built())
		return err_set(e, EXIT_SYS, "backend = cuda, but this supkit-train was built without the CUDA backend "
				"(build with make GPU=1 on a machine with nvcc)");
	if (!cfg->data_dir[0])
		return err_set(e, EXIT_USAGE, "the config sets no data_dir (a folder of train_*.bin and val_*.bin shards)");
	if (D->size > 1 && (int64_t)cfg->batch_rows * cfg->grad_accum < D->size)
		return err_set(e, EXIT_USAGE, "batch_rows x grad_accum = %lld rows a step cannot give each of %d MPI ranks "
			       "a row", (long long)cfg->batch_rows * cfg->grad_accum, D->size);
	if (cfg->threads > 0)
		openblas_set_num_threads(cfg->threads);

	struct run R;
	memset(&R, 0, sizeof R);
	R.cfg = cfg;
	R.o = o;
	R.fp64 = cfg->dtype == DTYPE_F64;
	R.lock_fd = -1;
	R.dist = D;
	R.curve = cJSON_CreateArray();
	config_sha256(cfg, R.sha);
	double t_start = now_seconds();
	int r = -1;

	/* Every input is checked, and the model, optimizer and loader made,
	 * before the run folder is touched (claim_run_dir). */
	if (run_dir_precheck(o, e) < 0 || check_memory(cfg, NULL, e) < 0)
		goto setup_done;
	if (list_shards(cfg->data_dir, "train_*.bin", &R.train_g) < 0 ||
	    list_shards(cfg->data_dir, "val_*.bin", &R.val_g) < 0) {
		err_set(e, EXIT_SYS, "cannot list the shards in '%s'", cfg->data_dir);
		goto setup_done;
	}
	if (R.train_g.gl_pathc == 0) {
		err_set(e, EXIT_USAGE, "'%s' holds no train_*.bin shards", cfg->data_dir);
		goto setup_done;
	}
	if (R.val_g.gl_pathc == 0 && cfg->eval_tokens + cfg->heldout_tokens > 0) {
		err_set(e, EXIT_USAGE, "'%s' holds no val_*.bin shards (or set eval_tokens = 0 and heldout_tokens = 0)",
			cfg->data_dir);
		goto setup_done;
	}
	if (loader_open((const char *const *)R.train_g.gl_pathv, (int)R.train_g.gl_pathc, cfg->seq_len,
			cfg->batch_rows, cfg->seed, &R.ld, e) < 0)
		goto setup_done;
	R.ld_open = 1;
	if (R.ld.vocab_size != (uint32_t)cfg->vocab_size) {
		err_set(e, EXIT_USAGE, "the shards in '%s' are for vocab size %u, the config says %d", cfg->data_dir,
			R.ld.vocab_size, cfg->vocab_size);
		goto setup_done;
	}
	if (load_token_bytes(&R, e) < 0 || check_init_from(cfg, e) < 0)
		goto setup_done;
	if (model_create(cfg, &R.m, e) < 0)
		goto setup_done;
	if (D->size > 1 && model_backend(R.m) != backend_cpu()) {
		err_set(e, EXIT_USAGE, "backend = auto chose %s, which runs one process, and this supkit-train is one of %d "
			"MPI ranks: set backend = cpu", model_backend(R.m)->name, D->size);
		goto setup_done;
	}
	if (check_memory(cfg, R.m, e) < 0)
		goto setup_done;
	if (backend_peak_flops(model_backend(R.m), &R.peak_flops, e) < 0)   /* before, not after, the run */
		goto setup_done;
	if (optim_create(cfg, model_params(R.m), R.fp64, &R.opt, e) < 0)
		goto setup_done;
	backend_optim_attach(R.opt, model_backend(R.m));   /* on the GPU with cuda */
	if (claim_run_dir(&R, e) == 0)
		r = 0;
setup_done:
	/* every rank set up, or every rank stops (rank 0 reporting the first failure) */
	if (dist_agree(D, r, e) < 0) {
		r = -1;
		goto out;
	}
	dist_signal_note(D, o->run_dir);

	const int B = cfg->batch_rows, T = cfg->seq_len, K = cfg->grad_accum;
	size_t N = (size_t)B * (size_t)T;
	int32_t *in = xmalloc(N * sizeof *in), *tg = xmalloc(N * sizeof *tg);
	/* this rank's rows of the step's K x B (all of them in a world of one),
	 * and each micro-step's loss share, summed over the ranks */
	int64_t lo, hi;
	dist_share(D, (int64_t)K * B, &lo, &hi);
	double *lk = xcalloc((size_t)K, sizeof *lk);
	struct progress pr;
	progress_init(&pr, o->quiet || D->rank != 0);
	progress_start(&pr, cfg->steps, R.step, "steps");   /* rate and ETA from here (a resume too) */
	double last_loss = NAN;
	int start = R.step, stopped = 0;
	r = 0;
	while (R.step < cfg->steps) {
		if (o->stop_after == TRAIN_STOP_NOW || (o->stop_after > 0 && R.step - start >= o->stop_after)) {
			stopped = 1;
			break;
		}
		int t = R.step;
		double t0 = now_seconds();
		model_zero_grad(R.m);
		double lsum = 0;
		for (int k = 0; k < K && r == 0 && D->size == 1; k++) {
			double loss;
			loader_next(&R.ld, in, tg);
			if (model_forward_backward(R.m, in, tg, B, T, 1.0 / K, &loss, e) < 0) {
				r = -1;
				break;
			}
			if (!isfinite(loss) || loss > cfg->max_loss)
				r = err_set(e, EXIT_CHECK, "step %d: loss %g is %s (fast-fail)", t, loss,
					    isfinite(loss) ? "above max_loss" : "not a number");
			lsum += loss;
		}
		if (D->size > 1) {
			/* every rank reads the whole micro-batch (the loader's state
			 * stays the one-process run's) and runs its rows of it, the
			 * loss scaled by its share of the micro-batch's targets: the
			 * ranks' gradients then sum to the one-process gradient */
			for (int k = 0; k < K && r == 0; k++) {
				loader_next(&R.ld, in, tg);
				int64_t a = lo > (int64_t)k * B ? lo - (int64_t)k * B : 0;
				int64_t b = hi < (int64_t)(k + 1) * B ? hi - (int64_t)k * B : B;
				lk[k] = 0;
				if (a >= b)
					continue;
				int64_t all = 0, mine = 0;
				for (size_t i = 0; i < N; i++)
					all += tg[i] >= 0;
				for (size_t i = (size_t)a * T; i < (size_t)b * T; i++)
					mine += tg[i] >= 0;
				double loss, share = all > 0 ? (double)mine / (double)all : 0;
				if (model_forward_backward(R.m, in + (size_t)a * T, tg + (size_t)a * T, (int)(b - a), T,
							   share / K, &loss, e) < 0)
					r = -1;
				else
					lk[k] = loss * share;
			}
			if (dist_agree(D, r, e) < 0 || dist_sum(D, lk, (size_t)K, 1, e) < 0 ||
			    dist_sum_grads(D, R.m, R.fp64, e) < 0)
				r = -1;
			for (int k = 0; k < K && r == 0; k++) {
				if (!isfinite(lk[k]) || lk[k] > cfg->max_loss)
					r = err_set(e, EXIT_CHECK, "step %d: loss %g is %s (fast-fail)", t, lk[k],
						    isfinite(lk[k]) ? "above max_loss" : "not a number");
				lsum += lk[k];
			}
		}
		if (r == 0 && optim_step(R.opt, t, e) < 0)
			r = -1;
		if (r < 0)
			break;
		double dt = now_seconds() - t0;
		R.loop_seconds += dt;
		if (t >= cfg->warmup_steps)
			R.train_seconds += dt;
		last_loss = lsum / K;
		struct optim_sched sc;
		optim_schedule(cfg, t, &sc);
		cJSON *c = cJSON_CreateObject();
		cJSON_AddNumberToObject(c, "step", t);
		cJSON_AddNumberToObject(c, "loss", last_loss);
		cJSON_AddNumberToObject(c, "lrm", sc.lrm);
		cJSON_AddNumberToObject(c, "momentum", sc.momentum);
		cJSON_AddNumberToObject(c, "muon_wd", sc.muon_wd);
		cJSON_AddNumberToObject(c, "dt", dt);
		cJSON_AddNumberToObject(c, "tok_s", (double)N * K / dt);
		R.step++;
		/* evaluation and checkpoints: rank 0's (the weights are every rank's) */
		if (cfg->eval_every > 0 && R.step % cfg->eval_every == 0 && R.step < cfg->steps && cfg->eval_tokens > 0 &&
		    D->rank == 0) {
			struct eval_result ev;
			if (eval_bpb(R.m, (const char *const *)R.val_g.gl_pathv, (int)R.val_g.gl_pathc, B, T,
				     R.token_bytes, R.n_token_bytes, 0, cfg->eval_tokens, &ev, NULL, e) < 0)
				r = -1;
			else
				cJSON_AddNumberToObject(c, "val_bpb", ev.bpb);
		}
		cJSON_AddItemToArray(R.curve, c);
		if (r == 0)
			progress_at(&pr, R.step == cfg->steps, R.step,
				    "step %d/%d  loss %.4f  lrm %.3f  dt %.0f ms  %.0f tok/s", R.step, cfg->steps, last_loss,
				    sc.lrm, dt * 1e3, (double)N * K / dt);
		if (r == 0 && cfg->checkpoint_every > 0 && R.step % cfg->checkpoint_every == 0 && R.step < cfg->steps &&
		    D->rank == 0 && save_checkpoint(&R, e) < 0)
			r = -1;
		if (D->size > 1 && dist_agree(D, r, e) < 0)
			r = -1;
		if (r < 0)
			break;
	}
	progress_done(&pr);
	free(in);
	free(tg);
	free(lk);
	if (r < 0)
		goto out;
	s->steps_done = R.step;
	s->final_loss = last_loss;
	if (stopped) {
		if (D->rank == 0)
			r = save_checkpoint(&R, e);
		r = dist_agree(D, r, e);
		goto out;
	}
	if (D->rank != 0) {
		/* rank 0 evaluates and writes the run's files */
		r = dist_agree(D, 0, e);
		if (r == 0)
			s->finished = 1;
		goto out;
	}

	double val_bpb = NAN, held_bpb = NAN;
	uint64_t val_epochs = 0;
	struct eval_result ev;
	if (cfg->eval_tokens > 0) {
		if (eval_bpb(R.m, (const char *const *)R.val_g.gl_pathv, (int)R.val_g.gl_pathc, B, T, R.token_bytes,
			     R.n_token_bytes, 0, cfg->eval_tokens, &ev, NULL, e) < 0) {
			r = -1;
			goto final_done;
		}
		val_bpb = ev.bpb;
		val_epochs = ev.epochs;
	}
	if (cfg->heldout_tokens > 0) {
		if (eval_bpb(R.m, (const char *const *)R.val_g.gl_pathv, (int)R.val_g.gl_pathc, B, T, R.token_bytes,
			     R.n_token_bytes, cfg->eval_tokens, cfg->heldout_tokens, &ev, NULL, e) < 0) {
			r = -1;
			goto final_done;
		}
		held_bpb = ev.bpb;
		if (ev.epochs > val_epochs)
			val_epochs = ev.epochs;
	}
	if (val_epochs > 1)
		fprintf(stderr, "%s: warning: the validation shards are shorter than eval_tokens + heldout_tokens: "
			"the evaluation stream wrapped around (%llu passes), so its segments repeat documents\n",
			err_prog, (unsigned long long)val_epochs);
	R.val_epochs = val_epochs;
	char step_s[32];
	snprintf(step_s, sizeof step_s, "%d", R.step);
	const char *meta[] = {"arm", cfg->arm, "step", step_s, "config_sha256", R.sha, NULL};
	char *mp = path_join(o->run_dir, "model.safetensors"), *op = path_join(o->run_dir, "optim.bin");
	r = model_save(R.m, mp, meta, e);
	if (r == 0)
		r = optim_save(R.opt, op, e);
	free(mp);
	free(op);
	if (r == 0)
		r = write_curve(&R, e);
	if (r == 0)
		r = write_result(&R, val_bpb, held_bpb, last_loss, now_seconds() - t_start, e);
	if (r == 0) {
		char *ck = path_join(o->run_dir, "checkpoint"), *old = path_join(o->run_dir, "checkpoint.old");
		dir_remove_tree(ck);
		dir_remove_tree(old);
		free(ck);
		free(old);
		struct err se;   /* the run is whole: a temporary that stays is only clutter */
		rundir_remove_stale(o->run_dir, &se);
		s->finished = 1;
		s->val_bpb = val_bpb;
		s->heldout_bpb = held_bpb;
	}
final_done:
	/* the other ranks wait for rank 0's files */
	if (D->size > 1)
		r = dist_agree(D, r, e);
out:
	run_release(&R);
	return r;
}

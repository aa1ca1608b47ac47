/* eval.c: bits per byte on the validation shards, for the trainer and for
 * supkit eval (contract in eval.h), and what supkit eval needs around it:
 * the checkpoint and its config, the shards and token_bytes checked as the
 * trainer checks them.
 *
 * Leaves out: the memory check the trainer makes before a run (a forward
 * needs less than a step), loading several checkpoints into one model.
 * Reference: karpathy/autoresearch prepare.py, evaluate_bpb.
 */
#define _GNU_SOURCE
#include "trainer/eval.h"

#include <errno.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cblas.h>

#include "lib/fileio.h"
#include "lib/safetensors.h"
#include "lib/sha256.h"
#include "data/loader.h"
#include "data/shard.h"
#include "data/tokenizer.h"
#include "trainer/backend_select.h"
#include "trainer/model.h"

/* ---- BPB ---- */

int eval_bpb(struct model *m, const char *const *shards, int n_shards, int B, int T,
	     const uint32_t *token_bytes, uint32_t n_token_bytes, int64_t skip, int64_t count,
	     struct eval_result *r, struct progress *pr, struct err *e)
{
	memset(r, 0, sizeof *r);
	struct loader ld;
	if (n_shards <= 0)
		return err_set(e, EXIT_USAGE, "no validation shards to evaluate on");
	if (loader_open(shards, n_shards, T, B, 0, &ld, e) < 0)
		return -1;
	size_t N = (size_t)B * (size_t)T;
	int32_t *in = xmalloc(N * sizeof *in), *tg = xmalloc(N * sizeof *tg);
	float *losses = xmalloc(N * sizeof *losses);
	double nats = 0, bytes = 0, all = 0;
	int64_t pos = 0;
	int rc = 0;
	while (pos < skip + count) {
		uint64_t epoch = loader_next(&ld, in, tg);
		if (epoch > r->epochs)
			r->epochs = epoch;
		int any = 0;
		for (size_t i = 0; i < N; i++) {
			int64_t g = pos + (int64_t)i;
			if (g < skip || g >= skip + count)
				tg[i] = -1;
			else
				any = 1;
		}
		pos += (int64_t)N;
		if (!any)
			continue;
		double mean;
		if (model_forward_loss(m, in, tg, B, T, losses, &mean, e) < 0) {
			rc = -1;
			break;
		}
		for (size_t i = 0; i < N; i++) {
			if (tg[i] < 0)
				continue;
			all += losses[i];
			r->targets++;
			uint32_t t = (uint32_t)tg[i];
			uint32_t nb = t < n_token_bytes ? token_bytes[t] : 0;
			if (nb == 0)
				continue;
			nats += losses[i];
			bytes += nb;
			r->text_targets++;
		}
		if (pr) {   /* done: the targets of the stream up to here */
			int64_t done = pos < skip + count ? pos : skip + count;
			progress_at(pr, 0, (double)done, "eval: %lld targets  loss %.4f", (long long)done,
				    all / (double)r->targets);
		}
	}
	free(in);
	free(tg);
	free(losses);
	loader_close(&ld);
	if (rc < 0)
		return -1;
	if (bytes <= 0)
		return err_set(e, EXIT_USAGE, "the evaluated targets hold no text bytes (token_bytes all 0)");
	if (r->epochs == 0)
		r->epochs = 1;
	r->nats = nats;
	r->bytes = bytes;
	r->loss = all / (double)r->targets;
	r->bpb = nats / (log(2.0) * bytes);
	return 0;
}

/* ---- the checkpoint and its config ---- */

static int is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The __metadata__ value of key in the safetensors file at path (fresh
 * string), or NULL when it has none; -1 when the file is refused. */
static int meta_value(const char *path, const char *key, char **out, struct err *e)
{
	struct st_file f;
	*out = NULL;
	if (st_open(&f, path, e) < 0)
		return -1;
	for (size_t i = 0; i < f.n_meta; i++)
		if (!strcmp(f.meta_keys[i], key))
			*out = xstrdup(f.meta_vals[i]);
	st_close(&f);
	return 0;
}

int eval_resolve(const char *target, const char *config, char **ckpt, char **cfg_path,
		 enum eval_config_from *from, struct err *e)
{
	*ckpt = *cfg_path = NULL;
	struct stat st;
	if (stat(target, &st) != 0)
		return err_errno(e, EXIT_USAGE, "cannot open '%s'", target);
	char *run_cfg;
	if (S_ISDIR(st.st_mode)) {
		*ckpt = path_join(target, "model.safetensors");
		run_cfg = path_join(target, "config.cfg");
		if (!is_file(*ckpt)) {
			err_set(e, EXIT_USAGE, "'%s' holds no model.safetensors (not a finished run folder)", target);
			goto fail;
		}
		if (!config && !is_file(run_cfg)) {
			err_set(e, EXIT_USAGE, "'%s' holds no config.cfg (give --config FILE)", target);
			goto fail;
		}
	} else {
		*ckpt = xstrdup(target);
		char *dir = path_dirname(target);
		run_cfg = path_join(dir, "config.cfg");
		free(dir);
	}
	if (config) {
		*cfg_path = xstrdup(config);
		*from = EVAL_CONFIG_GIVEN;
	} else if (is_file(run_cfg)) {
		*cfg_path = xstrdup(run_cfg);
		*from = EVAL_CONFIG_RUN;
	} else {
		*from = EVAL_CONFIG_NONE;
	}
	free(run_cfg);
	run_cfg = NULL;
	/* a run folder's config must be the one the checkpoint was trained with */
	char *want = NULL;
	if (meta_value(*ckpt, "config_sha256", &want, e) < 0)
		goto fail;
	if (want && *from == EVAL_CONFIG_RUN) {
		char have[SHA256_HEX_LEN + 1];
		int r = sha256_file_hex(*cfg_path, have, NULL, e);
		if (r == 0 && strcmp(have, want) != 0)
			r = err_set(e, EXIT_USAGE, "'%s': __metadata__ config_sha256 %.12s... is not the SHA-256 of '%s' "
				    "(%.12s...): not the config the checkpoint was trained with (give --config FILE)",
				    *ckpt, want, *cfg_path, have);
		if (r < 0) {
			free(want);
			goto fail;
		}
	}
	free(want);
	return 0;
fail:
	free(run_cfg);
	free(*ckpt);
	free(*cfg_path);
	*ckpt = *cfg_path = NULL;
	return -1;
}

/* 1 when cfg's key `name` was set by a config file or --set. */
static int key_given(const struct config *cfg, const char *name)
{
	for (int i = 0; i < config_key_count(); i++)
		if (!strcmp(config_key_name(i), name))
			return i < CONFIG_KEYS_MAX && cfg->origin.key_src[i] != 0;
	return 0;
}

/* The tensor of kind k (index: its layer or table) without the prefix of
 * `skip` bytes (names: trainer/paramspec.h), or NULL. */
static const struct st_tensor *tensor(const struct st_file *f, size_t skip, enum param_kind k, int index)
{
	char name[PARAM_NAME_MAX];
	paramspec_name(k, index, name, sizeof name);
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->t[i].name + skip, name))
			return &f->t[i];
	return NULL;
}

int eval_infer_config(const char *path, struct config *cfg, struct err *e)
{
	struct st_file f;
	if (st_open(&f, path, e) < 0)
		return -1;
	int rc = -1;
	int pre = st_compile_prefix(&f, path, e);
	if (pre < 0)
		goto out;
	const size_t skip = pre ? sizeof ST_COMPILE_PREFIX - 1 : 0;
	const char *hint = "give --config FILE, the run's config";
	const struct st_tensor *wte = tensor(&f, skip, PK_WTE, -1);
	const struct st_tensor *rl = tensor(&f, skip, PK_RESID_LAMBDAS, -1);
	if (!wte || wte->ndim != 2 || wte->shape[0] < 1 || wte->shape[1] < 1) {
		err_set(e, EXIT_USAGE, "'%s': no tensor 'transformer.wte.weight' of V x d: the vocabulary and width "
			"cannot be inferred (%s)", path, hint);
		goto out;
	}
	if (!rl || rl->ndim != 1 || rl->shape[0] < 1) {
		err_set(e, EXIT_USAGE, "'%s': no tensor 'resid_lambdas' of L entries: the depth cannot be inferred (%s)",
			path, hint);
		goto out;
	}
	const int64_t V = wte->shape[0], d = wte->shape[1], L = rl->shape[0];
	if (V > INT32_MAX || d > INT32_MAX || L > 4096) {
		err_set(e, EXIT_USAGE, "'%s': tensor shapes V %lld, d %lld, L %lld out of range", path, (long long)V,
			(long long)d, (long long)L);
		goto out;
	}
	/* the heads and the ve gate's channels: a ve layer's gate, H x channels */
	const struct st_tensor *gate = NULL;
	for (int64_t i = 0; i < L && !gate; i++)
		gate = tensor(&f, skip, PK_VE_GATE, (int)i);
	if (!gate || gate->ndim != 2 || gate->shape[0] < 1 || d % gate->shape[0] || (d / gate->shape[0]) % 2) {
		err_set(e, EXIT_USAGE, "'%s': no ve_gate tensor of H x channels with H dividing d = %lld into even "
			"heads: head_dim cannot be inferred (%s)", path, (long long)d, hint);
		goto out;
	}
	const int64_t H = gate->shape[0], hd = d / H;
	if (!key_given(cfg, "vocab_size"))
		cfg->vocab_size = (int)V;
	if (!key_given(cfg, "model_dim"))
		cfg->model_dim = (int)d;
	if (!key_given(cfg, "depth"))
		cfg->depth = (int)L;
	if (!key_given(cfg, "head_dim"))
		cfg->head_dim = (int)hd;
	if (!key_given(cfg, "ve_gate_channels"))
		cfg->ve_gate_channels = (int)gate->shape[1];
	const struct st_tensor *q = tensor(&f, skip, PK_Q_TAU, -1);
	if (q && !key_given(cfg, "qk_scale")) {
		if (q->ndim == 2)
			cfg->qk_scale = QK_SCALE_HEAD;
		else if (q->ndim == 3 && q->shape[2] == hd / 2)
			cfg->qk_scale = QK_SCALE_PAIR;
		else if (q->ndim == 3 && q->shape[2] == hd)
			cfg->qk_scale = QK_SCALE_UNTIED;
		else {
			err_set(e, EXIT_USAGE, "'%s': tensor 'q_tau' has a shape of no qk_scale form (%s)", path, hint);
			goto out;
		}
	}
	const struct st_tensor *oe = tensor(&f, skip, PK_OE_TABLE, 0);
	if (oe) {
		if (!key_given(cfg, "oe_n") || !key_given(cfg, "oe_k")) {
			err_set(e, EXIT_USAGE, "'%s': OE tables, but their shapes do not say oe_n and oe_k (3 and 2, "
				"2 and 4, or 5 and 1): %s or --set oe_n=N --set oe_k=K", path, hint);
			goto out;
		}
		if (!key_given(cfg, "oe"))
			cfg->oe = 1;
		if (!key_given(cfg, "oe_m") && oe->ndim == 2)
			cfg->oe_m = oe->shape[0];
	}
	if (tensor(&f, skip, PK_WTE_LAMBDAS, -1)) {
		if (!key_given(cfg, "anchor")) {
			err_set(e, EXIT_USAGE, "'%s': tensor 'wte_lambdas', but no shape says its anchor: %s or --set "
				"anchor=separate|shared", path, hint);
			goto out;
		}
		if (!key_given(cfg, "wte_lambdas"))
			cfg->wte_lambdas = 1;
	}
	if (tensor(&f, skip, PK_OUT_LAMBDAS, -1) && !key_given(cfg, "out_lambdas"))
		cfg->out_lambdas = 1;
	if (tensor(&f, skip, PK_SUB_GAINS, -1) && !key_given(cfg, "sub_gains"))
		cfg->sub_gains = 1;
	const struct st_tensor *rt = tensor(&f, skip, PK_ROPE_TAU, -1);
	if (rt && !key_given(cfg, "rope_tau")) {
		if (rt->ndim == 1 && rt->shape[0] == hd / 2)
			cfg->rope_tau = ROPE_TAU_SHARED;
		else if (rt->ndim == 3 && rt->shape[2] == hd / 2)
			cfg->rope_tau = ROPE_TAU_HEAD;
		else {
			err_set(e, EXIT_USAGE, "'%s': tensor 'rope_tau' has a shape of no rope_tau form (%s)",
				path, hint);
			goto out;
		}
	}
	rc = 0;
out:
	st_close(&f);
	return rc;
}

/* ---- evaluating a checkpoint ---- */

/* The sorted val_*.bin of dir (g->gl_pathc may be 0); globfree it. */
static int list_val(const char *dir, glob_t *g, struct err *e)
{
	char *pat = path_join(dir, "val_*.bin");
	int r = glob(pat, 0, NULL, g);
	free(pat);
	if (r == GLOB_NOMATCH) {
		g->gl_pathc = 0;
		return 0;
	}
	return r == 0 ? 0 : err_set(e, EXIT_SYS, "cannot list the shards in '%s'", dir);
}

int eval_checkpoint(struct config *cfg, const struct eval_opts *o, struct eval_report *r, struct err *e)
{
	memset(r, 0, sizeof *r);
	/* the checkpoint is the model's initial weights; init = dense (a test
	 * run's) would conflict with init_from and draws nothing here */
	cfg->init = INIT_BENCHMARK;
	if (strlen(o->checkpoint) >= sizeof cfg->init_from)
		return err_set(e, EXIT_USAGE, "'%s': path too long", o->checkpoint);
	snprintf(cfg->init_from, sizeof cfg->init_from, "%s", o->checkpoint);
	if (config_validate(cfg, e) < 0)
		return -1;
	if (cfg->backend == BACKEND_CUDA && !backend_cuda_built())
		return err_set(e, EXIT_SYS, "backend = cuda, but this supkit-eval was built without the CUDA backend "
				"(build with make GPU=1 on a machine with nvcc)");
	const char *dir = o->data_dir ? o->data_dir : cfg->data_dir;
	if (!dir[0])
		return err_set(e, EXIT_USAGE, "no data folder: give --data DIR (a folder of val_*.bin shards and "
				"token_bytes.bin) or set data_dir");
	if (strlen(dir) >= sizeof r->data_dir)
		return err_set(e, EXIT_USAGE, "'%s': path too long", dir);
	snprintf(r->data_dir, sizeof r->data_dir, "%s", dir);
	if (cfg->eval_tokens + cfg->heldout_tokens <= 0)
		return err_set(e, EXIT_USAGE, "eval_tokens and heldout_tokens are 0: nothing to evaluate");
	if (cfg->threads > 0)
		openblas_set_num_threads(cfg->threads);

	glob_t g;
	memset(&g, 0, sizeof g);
	uint32_t *tb = NULL, ntb = 0;
	struct model *m = NULL;
	char *tbp = o->token_bytes ? xstrdup(o->token_bytes) : path_join(dir, "token_bytes.bin");
	int rc = -1;
	if (list_val(dir, &g, e) < 0)
		goto out;
	if (g.gl_pathc == 0) {
		err_set(e, EXIT_USAGE, "'%s' holds no val_*.bin shards", dir);
		goto out;
	}
	r->shards = (int)g.gl_pathc;
	/* the shards' vocabulary and BOS, as the trainer checks its own */
	uint32_t bos = 0;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		uint32_t v, b;
		uint64_t nt, nd;
		if (shard_read_header(g.gl_pathv[i], &v, &b, &nt, &nd, e) < 0)
			goto out;
		if (v != (uint32_t)cfg->vocab_size) {
			err_set(e, EXIT_USAGE, "'%s': a shard for vocab size %u, the config says %d", g.gl_pathv[i], v,
				cfg->vocab_size);
			goto out;
		}
		bos = b;
	}
	if (tokenizer_token_bytes(tbp, &tb, &ntb, e) < 0)
		goto out;
	if (ntb != (uint32_t)cfg->vocab_size) {
		err_set(e, EXIT_USAGE, "'%s': %u entries, but vocab_size is %d", tbp, ntb, cfg->vocab_size);
		goto out;
	}
	if (tb[bos] != 0) {
		err_set(e, EXIT_USAGE, "'%s': entry %u (the shards' BOS, a special token) is %u bytes, not 0", tbp, bos,
			tb[bos]);
		goto out;
	}
	if (model_create(cfg, &m, e) < 0)
		goto out;
	snprintf(r->backend, sizeof r->backend, "%s", model_backend(m)->name);
	const int B = cfg->batch_rows, T = cfg->seq_len;
	struct progress pr;
	progress_init(&pr, o->quiet);
	progress_start(&pr, (double)(cfg->eval_tokens + cfg->heldout_tokens), 0, "tokens");
	const char *const *sh = (const char *const *)g.gl_pathv;
	r->have_val = cfg->eval_tokens > 0;
	r->have_heldout = cfg->heldout_tokens > 0;
	if (r->have_val && eval_bpb(m, sh, (int)g.gl_pathc, B, T, tb, ntb, 0, cfg->eval_tokens, &r->val, &pr, e) < 0)
		goto done;
	if (r->have_heldout && eval_bpb(m, sh, (int)g.gl_pathc, B, T, tb, ntb, cfg->eval_tokens,
					cfg->heldout_tokens, &r->heldout, &pr, e) < 0)
		goto done;
	r->passes = r->val.epochs > r->heldout.epochs ? r->val.epochs : r->heldout.epochs;
	rc = 0;
done:
	progress_done(&pr);
out:
	model_free(m);
	free(tb);
	free(tbp);
	globfree(&g);
	return rc;
}

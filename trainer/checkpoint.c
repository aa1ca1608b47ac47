/* checkpoint.c: parameter table <-> safetensors, and the resume state of a
 * run folder's checkpoint (contract in checkpoint.h).
 *
 * Left out: optimizer state (trainer/optim.c writes its own file), sharded
 * checkpoints, F16 output; what the resume state's files hold (train.c
 * writes and checks them against the state). Reference: supkit-formats(5);
 * safetensors format (lib/safetensors.h).
 */
#include "trainer/checkpoint.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bf16.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/safetensors.h"

int checkpoint_save(const struct param_table *t, const char *path, const char *const *meta,
		    struct err *e)
{
	struct st_writer w;
	st_writer_init(&w);
	st_writer_meta(&w, "format", "pt");
	for (size_t i = 0; meta && meta[i] && meta[i + 1]; i += 2)
		st_writer_meta(&w, meta[i], meta[i + 1]);
	bf16 **tmp = xcalloc(t->n ? t->n : 1, sizeof *tmp);
	for (size_t i = 0; i < t->n; i++) {
		const struct param *p = &t->p[i];
		if (p->store == PARAM_BF16 && !p->w64) {
			tmp[i] = xmalloc((p->numel ? p->numel : 1) * sizeof(bf16));
			for (size_t j = 0; j < p->numel; j++)
				tmp[i][j] = bf16_from_f32(param_w_at(p, j));
			st_writer_add(&w, p->name, ST_BF16, p->ndim, p->shape, tmp[i]);
		} else if (p->w64) {   /* fp64 runs: the exact values */
			st_writer_add(&w, p->name, ST_F64, p->ndim, p->shape, p->w64);
		} else {
			st_writer_add(&w, p->name, ST_F32, p->ndim, p->shape, p->w);
		}
	}
	int rc = st_write(&w, path, e);
	st_writer_release(&w);
	for (size_t i = 0; i < t->n; i++)
		free(tmp[i]);
	free(tmp);
	return rc;
}

static void shape_str(char *buf, size_t n, int ndim, const int64_t *shape)
{
	size_t o = (size_t)snprintf(buf, n, "[");
	for (int k = 0; k < ndim && o < n; k++)
		o += (size_t)snprintf(buf + o, n - o, "%s%lld", k ? ", " : "", (long long)shape[k]);
	if (o < n)
		snprintf(buf + o, n - o, "]");
}

/* Fill t from the open file f (closed here). */
static int load_table(struct param_table *t, struct st_file *f, const char *path, struct err *e)
{
	int rc = -1;
	char *want = NULL;
	/* torch.compile's wrapper names every tensor "_orig_mod.<name>" */
	int pre = st_compile_prefix(f, path, e);
	if (pre < 0)
		goto out;
	const size_t skip = pre ? sizeof ST_COMPILE_PREFIX - 1 : 0;
	for (size_t i = 0; i < f->n; i++)
		if (!param_find(t, f->t[i].name + skip)) {
			err_set(e, EXIT_USAGE, "'%s': tensor '%s' is not a parameter of this model", path,
				f->t[i].name);
			goto out;
		}
	for (size_t i = 0; i < t->n; i++) {
		struct param *p = &t->p[i];
		free(want);
		want = pre ? xasprintf(ST_COMPILE_PREFIX "%s", p->name) : xstrdup(p->name);
		const struct st_tensor *s = st_find(f, want);
		if (!s) {
			err_set(e, EXIT_USAGE, "'%s': tensor '%s' is missing", path, want);
			goto out;
		}
		int same = s->ndim == p->ndim;
		for (int k = 0; same && k < p->ndim; k++)
			same = s->shape[k] == p->shape[k];
		if (!same) {
			char got[160], exp[160];
			shape_str(got, sizeof got, s->ndim, s->shape);
			shape_str(exp, sizeof exp, p->ndim, p->shape);
			err_set(e, EXIT_USAGE, "'%s': tensor '%s' has shape %s, expected %s", path, s->name,
				got, exp);
			goto out;
		}
		if (p->w64 && s->dtype == ST_F64) {   /* fp64 runs: F64 kept exactly */
			int bad = st_to_f64(s, p->w64, e) != 0;
			if (bad)
				err_prefix(e, "'%s': tensor '%s'", path, p->name);
			for (size_t j = 0; !bad && p->mask && j < p->numel; j++)
				if (p->mask[j] && p->w64[j] != 0) {
					err_set(e, EXIT_USAGE, "'%s': tensor '%s': masked entry %zu is not 0",
						path, p->name, j);
					bad = 1;
				}
			for (size_t j = 0; !bad && j < p->numel; j++)
				p->w[j] = (float)p->w64[j];
			if (bad)
				goto out;
			continue;
		}
		/* bf16-stored values (p->wb) arrive through an fp32 row buffer */
		float *v = p->w ? p->w : xmalloc((p->numel ? p->numel : 1) * sizeof *v);
		int bad = st_to_f32(s, v, e) != 0;
		if (bad)
			err_prefix(e, "'%s': tensor '%s'", path, s->name);
		for (size_t j = 0; !bad && p->store == PARAM_BF16 && j < p->numel; j++)
			v[j] = bf16_round(v[j]);
		for (size_t j = 0; !bad && p->mask && j < p->numel; j++)
			if (p->mask[j] && v[j] != 0) {
				err_set(e, EXIT_USAGE, "'%s': tensor '%s': masked entry %zu is not 0",
					path, s->name, j);
				bad = 1;
			}
		if (v != p->w) {
			for (size_t j = 0; !bad && j < p->numel; j++)
				param_w_set(p, j, v[j]);
			free(v);
		}
		for (size_t j = 0; !bad && p->w64 && j < p->numel; j++)
			p->w64[j] = p->w[j];     /* fp64 runs: the fp32 values widened */
		if (bad)
			goto out;
	}
	rc = 0;
out:
	free(want);
	st_close(f);
	return rc;
}

int checkpoint_load(struct param_table *t, const char *path, struct err *e)
{
	struct st_file f;
	if (st_open(&f, path, e) != 0)
		return -1;
	return load_table(t, &f, path, e);
}

int checkpoint_load_mem(struct param_table *t, const void *data, size_t len, const char *name,
			struct err *e)
{
	struct st_file f;
	if (st_open_mem(&f, data, len, name, e) != 0)
		return -1;
	return load_table(t, &f, name, e);
}

/* ---- the resume state ---- */

const char *const ckpt_files[CKPT_NFILES] = {"params.safetensors", "optim.bin", "loader.bin"};

int ckpt_state_hash(const char *dir, struct ckpt_state *st, struct err *e)
{
	for (int i = 0; i < CKPT_NFILES; i++) {
		char *p = path_join(dir, ckpt_files[i]);
		int r = sha256_file_hex(p, st->sha256[i], NULL, e);
		free(p);
		if (r < 0)
			return -1;
	}
	return 0;
}

char *ckpt_state_text(const struct ckpt_state *st)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "step", (double)st->step);
	cJSON_AddNumberToObject(j, "training_seconds", st->training_seconds);
	cJSON_AddNumberToObject(j, "training_loop_seconds", st->training_loop_seconds);
	cJSON_AddStringToObject(j, "config_sha256", st->config_sha256);
	/* fp32 GEMM results depend on the BLAS thread count: resume uses the same */
	cJSON_AddNumberToObject(j, "blas_threads", st->blas_threads);
	/* the gradients' sums depend on the number of MPI ranks: resume uses the same */
	if (st->world_size > 1)
		cJSON_AddNumberToObject(j, "world_size", st->world_size);
	cJSON *f = cJSON_AddObjectToObject(j, "files");
	for (int i = 0; i < CKPT_NFILES; i++)
		cJSON_AddStringToObject(f, ckpt_files[i], st->sha256[i]);
	if (st->curve)
		cJSON_AddItemReferenceToObject(j, "curve", st->curve);
	else
		cJSON_AddArrayToObject(j, "curve");
	char *text = json_print(j, 1);
	cJSON_Delete(j);
	return text;
}

int ckpt_state_write(const char *path, const struct ckpt_state *st, struct err *e)
{
	char *text = ckpt_state_text(st);
	int r = file_write_atomic(path, text, strlen(text), e);
	free(text);
	return r;
}

static int is_hex64(const char *s)
{
	if (strlen(s) != SHA256_HEX_LEN)
		return 0;
	for (int i = 0; i < SHA256_HEX_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* The number at key of o, an integer in [lo, hi]. */
static int get_int(const cJSON *o, const char *key, double lo, double hi, double *out, const char *path,
		   struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v)
		return err_set(e, EXIT_USAGE, "'%s': %s: missing", path, key);
	if (!cJSON_IsNumber(v))
		return err_set(e, EXIT_USAGE, "'%s': %s: not a number", path, key);
	double x = v->valuedouble;
	if (!isfinite(x) || x != floor(x))
		return err_set(e, EXIT_USAGE, "'%s': %s: %g is not an integer", path, key, x);
	if (x < lo || x > hi)
		return err_set(e, EXIT_USAGE, "'%s': %s: %.17g is out of range [%.17g, %.17g]", path, key, x, lo, hi);
	*out = x;
	return 0;
}

static int get_seconds(const cJSON *o, const char *key, double *out, const char *path, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v)
		return err_set(e, EXIT_USAGE, "'%s': %s: missing", path, key);
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0)
		return err_set(e, EXIT_USAGE, "'%s': %s: not a finite number of seconds >= 0", path, key);
	*out = v->valuedouble;
	return 0;
}

static int get_hex(const cJSON *o, const char *key, char *out, const char *path, const char *field, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v)
		return err_set(e, EXIT_USAGE, "'%s': %s: missing", path, field);
	if (!cJSON_IsString(v) || !is_hex64(v->valuestring))
		return err_set(e, EXIT_USAGE, "'%s': %s: not a SHA-256 (64 lower-case hex digits)", path, field);
	memcpy(out, v->valuestring, SHA256_HEX_LEN + 1);
	return 0;
}

#define CKPT_STATE_MAX_BYTES (64u << 20)

int ckpt_state_read(const char *path, int64_t steps, struct ckpt_state *st, struct err *e)
{
	char *text;
	size_t len;
	memset(st, 0, sizeof *st);
	if (file_read_all(path, CKPT_STATE_MAX_BYTES, &text, &len, e) < 0)
		return -1;
	int r = ckpt_state_read_mem(text, len, path, steps, st, e);
	free(text);
	return r;
}

int ckpt_state_read_mem(const char *text, size_t len, const char *path, int64_t steps, struct ckpt_state *st,
			struct err *e)
{
	static const char *const known[] = {"step", "training_seconds", "training_loop_seconds", "config_sha256",
					    "blas_threads", "world_size", "files", "curve", NULL};
	memset(st, 0, sizeof *st);
	cJSON *j = json_parse(text, len, path, e);
	if (!j)
		return -1;
	int r = -1;
	double x;
	if (!cJSON_IsObject(j)) {
		err_set(e, EXIT_USAGE, "'%s': not a JSON object", path);
		goto out;
	}
	for (const cJSON *c = j->child; c; c = c->next) {
		int k = 0;
		while (known[k] && strcmp(known[k], c->string))
			k++;
		if (!known[k]) {
			err_set(e, EXIT_USAGE, "'%s': unknown key '%s'", path, c->string);
			goto out;
		}
	}
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(j, "files");
	if (!files) {
		err_set(e, EXIT_USAGE, "'%s': files: missing: the checkpoint records no SHA-256 of its files (a "
			"checkpoint of an older supkit train) and cannot be verified; finish the run with the supkit "
			"that made it, or start it again with --force", path);
		goto out;
	}
	if (!cJSON_IsObject(files) || cJSON_GetArraySize(files) != CKPT_NFILES) {
		err_set(e, EXIT_USAGE, "'%s': files: not an object of %d SHA-256s", path, CKPT_NFILES);
		goto out;
	}
	for (int i = 0; i < CKPT_NFILES; i++) {
		char field[64];
		snprintf(field, sizeof field, "files.%s", ckpt_files[i]);
		if (get_hex(files, ckpt_files[i], st->sha256[i], path, field, e) < 0)
			goto out;
	}
	if (steps < 1) {
		err_set(e, EXIT_USAGE, "'%s': step: a run of %lld steps has no checkpoint", path, (long long)steps);
		goto out;
	}
	/* checkpoints are written while step < steps: a finished run has none */
	if (get_int(j, "step", 0, (double)steps - 1, &x, path, e) < 0)
		goto out;
	st->step = (int64_t)x;
	if (get_seconds(j, "training_seconds", &st->training_seconds, path, e) < 0 ||
	    get_seconds(j, "training_loop_seconds", &st->training_loop_seconds, path, e) < 0)
		goto out;
	/* the loop's seconds sum every step, the training seconds some of them */
	if (st->training_loop_seconds < st->training_seconds) {
		err_set(e, EXIT_USAGE, "'%s': training_loop_seconds: %g is less than training_seconds %g", path,
			st->training_loop_seconds, st->training_seconds);
		goto out;
	}
	if (get_hex(j, "config_sha256", st->config_sha256, path, "config_sha256", e) < 0)
		goto out;
	if (get_int(j, "blas_threads", 1, CKPT_BLAS_THREADS_MAX, &x, path, e) < 0)
		goto out;
	st->blas_threads = (int)x;
	st->world_size = 1;
	if (cJSON_GetObjectItemCaseSensitive(j, "world_size")) {
		if (get_int(j, "world_size", 1, CKPT_WORLD_SIZE_MAX, &x, path, e) < 0)
			goto out;
		st->world_size = (int)x;
	}
	const cJSON *curve = cJSON_GetObjectItemCaseSensitive(j, "curve");
	if (!cJSON_IsArray(curve)) {
		err_set(e, EXIT_USAGE, "'%s': curve: %s", path, curve ? "not an array" : "missing");
		goto out;
	}
	int64_t n = cJSON_GetArraySize(curve);
	if (n != st->step) {
		err_set(e, EXIT_USAGE, "'%s': curve: %lld entries, but step is %lld (one a step)", path, (long long)n,
			(long long)st->step);
		goto out;
	}
	int64_t i = 0;
	for (const cJSON *c = curve->child; c; c = c->next, i++) {
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(c, "step");
		const cJSON *l = cJSON_GetObjectItemCaseSensitive(c, "loss");
		if (!cJSON_IsObject(c) || !cJSON_IsNumber(s) || s->valuedouble != (double)i) {
			err_set(e, EXIT_USAGE, "'%s': curve[%lld]: not the object of step %lld", path, (long long)i,
				(long long)i);
			goto out;
		}
		if (!cJSON_IsNumber(l) || !isfinite(l->valuedouble)) {
			err_set(e, EXIT_USAGE, "'%s': curve[%lld]: loss is not a finite number", path, (long long)i);
			goto out;
		}
	}
	st->curve = cJSON_DetachItemFromObjectCaseSensitive(j, "curve");
	r = 0;
out:
	cJSON_Delete(j);
	return r;
}

int ckpt_state_verify(const char *dir, const struct ckpt_state *st, struct err *e)
{
	for (int i = 0; i < CKPT_NFILES; i++) {
		char *p = path_join(dir, ckpt_files[i]);
		char hex[SHA256_HEX_LEN + 1];
		int r = 0;
		if (sha256_file_hex(p, hex, NULL, e) < 0)
			r = -1;
		else if (strcmp(hex, st->sha256[i]) != 0)
			r = err_set(e, EXIT_USAGE, "'%s': SHA-256 %.12s... is not the %.12s... that state.json records "
				    "(the file changed after the checkpoint was written)", p, hex, st->sha256[i]);
		free(p);
		if (r < 0)
			return -1;
	}
	return 0;
}

void ckpt_state_release(struct ckpt_state *st)
{
	cJSON_Delete(st->curve);
	st->curve = NULL;
}

/* checkpoint.c: parameter table <-> safetensors (contract in checkpoint.h).
 *
 * Left out: optimizer state (trainer/optim.c writes its own file), sharded
 * checkpoints, F16 output. Reference: SPEC section 9; safetensors format
 * (lib/safetensors.h).
 */
#include "trainer/checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bf16.h"
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

int checkpoint_load(struct param_table *t, const char *path, struct err *e)
{
	struct st_file f;
	if (st_open(&f, path, e) != 0)
		return -1;
	int rc = -1;
	for (size_t i = 0; i < f.n; i++)
		if (!param_find(t, f.t[i].name)) {
			err_set(e, EXIT_USAGE, "'%s': tensor '%s' is not a parameter of this model", path,
				f.t[i].name);
			goto out;
		}
	for (size_t i = 0; i < t->n; i++) {
		struct param *p = &t->p[i];
		const struct st_tensor *s = st_find(&f, p->name);
		if (!s) {
			err_set(e, EXIT_USAGE, "'%s': tensor '%s' is missing", path, p->name);
			goto out;
		}
		int same = s->ndim == p->ndim;
		for (int k = 0; same && k < p->ndim; k++)
			same = s->shape[k] == p->shape[k];
		if (!same) {
			char got[160], want[160];
			shape_str(got, sizeof got, s->ndim, s->shape);
			shape_str(want, sizeof want, p->ndim, p->shape);
			err_set(e, EXIT_USAGE, "'%s': tensor '%s' has shape %s, expected %s", path, p->name,
				got, want);
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
			err_prefix(e, "'%s': tensor '%s'", path, p->name);
		for (size_t j = 0; !bad && p->store == PARAM_BF16 && j < p->numel; j++)
			v[j] = bf16_round(v[j]);
		for (size_t j = 0; !bad && p->mask && j < p->numel; j++)
			if (p->mask[j] && v[j] != 0) {
				err_set(e, EXIT_USAGE, "'%s': tensor '%s': masked entry %zu is not 0",
					path, p->name, j);
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
	st_close(&f);
	return rc;
}

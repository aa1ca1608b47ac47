/* tiktoken_pkl.c: a pickled tiktoken Encoding as data (see tiktoken_pkl.h).
 * Reference: openai/tiktoken tiktoken/core.py (Encoding.__init__,
 * __getstate__, __setstate__); CPython Lib/copyreg.py (__reduce_ex__). */
#include "data/tiktoken_pkl.h"

#include <stdlib.h>
#include <string.h>

static const struct pk_allow tt_allow[] = {{"tiktoken.core", "Encoding", PK_USE_NEW}};
const struct pk_policy tt_policy = {tt_allow, 1, 0};

void tt_free(struct tt_encoding *t)
{
	if (t->tok)
		for (uint32_t r = 0; r < t->n_ranks; r++)
			free(t->tok[r]);
	free(t->tok);
	free(t->tok_len);
	for (uint32_t i = 0; t->special && i < t->n_special; i++)
		free(t->special[i]);
	free(t->special);
	free(t->special_id);
	free(t->name);
	free(t->pat_str);
	memset(t, 0, sizeof *t);
}

static int bad(const char *name, const struct pk_value *v, struct err *e, const char *what)
{
	return err_set(e, EXIT_USAGE, "'%s': byte %llu: %s", name, (unsigned long long)v->offset, what);
}

/* an int id in [0, TT_MAX_ID) */
static int id_of(const char *name, const struct pk_value *v, const char *field, uint32_t *out,
		 struct err *e)
{
	if (v->kind != PK_INT)
		return err_set(e, EXIT_USAGE, "'%s': byte %llu: %s: a %s, not an int", name,
			       (unsigned long long)v->offset, field, pk_kind_name(v->kind));
	if (v->u.i < 0 || v->u.i >= (int64_t)TT_MAX_ID)
		return err_set(e, EXIT_USAGE, "'%s': byte %llu: %s %lld is outside [0, %u)", name,
			       (unsigned long long)v->offset, field, (long long)v->u.i, TT_MAX_ID);
	*out = (uint32_t)v->u.i;
	return 0;
}

static int read_ranks(const char *name, const struct pk_value *m, struct tt_encoding *t, struct err *e)
{
	if (m->kind != PK_DICT)
		return err_set(e, EXIT_USAGE, "'%s': byte %llu: mergeable_ranks is a %s, not a dict", name,
			       (unsigned long long)m->offset, pk_kind_name(m->kind));
	uint32_t top = 0;
	for (uint32_t k = 0; k < m->n; k++) {
		const struct pk_value *key = m->u.items[2 * k], *val = m->u.items[2 * k + 1];
		uint32_t r;
		if (key->kind != PK_BYTES)
			return err_set(e, EXIT_USAGE, "'%s': byte %llu: a mergeable_ranks key is a %s, not bytes",
				       name, (unsigned long long)key->offset, pk_kind_name(key->kind));
		if (key->n == 0)
			return bad(name, key, e, "a mergeable_ranks key is empty");
		if (id_of(name, val, "rank", &r, e) < 0)
			return -1;
		if (r + 1 > top)
			top = r + 1;
	}
	t->n_ranks = top;
	t->n_mergeable = m->n;
	t->tok = xcalloc(top ? top : 1, sizeof *t->tok);
	t->tok_len = xcalloc(top ? top : 1, sizeof *t->tok_len);
	for (uint32_t k = 0; k < m->n; k++) {
		const struct pk_value *key = m->u.items[2 * k], *val = m->u.items[2 * k + 1];
		uint32_t r = (uint32_t)val->u.i;
		if (t->tok[r])
			return err_set(e, EXIT_USAGE, "'%s': byte %llu: rank %u is given to two tokens", name,
				       (unsigned long long)val->offset, r);
		t->tok[r] = xmalloc(key->n);
		memcpy(t->tok[r], key->u.s, key->n);
		t->tok_len[r] = key->n;
	}
	return 0;
}

static int read_specials(const char *name, const struct pk_value *s, struct tt_encoding *t,
			 struct err *e)
{
	if (s->kind != PK_DICT)
		return err_set(e, EXIT_USAGE, "'%s': byte %llu: special_tokens is a %s, not a dict", name,
			       (unsigned long long)s->offset, pk_kind_name(s->kind));
	t->n_special = s->n;
	t->special = xcalloc(s->n ? s->n : 1, sizeof *t->special);
	t->special_id = xcalloc(s->n ? s->n : 1, sizeof *t->special_id);
	for (uint32_t k = 0; k < s->n; k++) {
		const struct pk_value *key = s->u.items[2 * k], *val = s->u.items[2 * k + 1];
		if (key->kind != PK_STR)
			return err_set(e, EXIT_USAGE, "'%s': byte %llu: a special_tokens key is a %s, not a str",
				       name, (unsigned long long)key->offset, pk_kind_name(key->kind));
		if (strlen(key->u.s) != key->n)
			return bad(name, key, e, "a special_tokens key holds a NUL character");
		if (id_of(name, val, "special token id", &t->special_id[k], e) < 0)
			return -1;
		t->special[k] = xstrdup(key->u.s);
	}
	return 0;
}

int tt_from_doc(const struct pk_doc *d, const char *name, struct tt_encoding *t, struct err *e)
{
	memset(t, 0, sizeof *t);
	t->protocol = pk_protocol(d);
	const struct pk_value *o = pk_root(d);
	if (o->kind != PK_OBJECT || !pk_is_global(o->u.items[0], "tiktoken.core", "Encoding"))
		return err_set(e, EXIT_USAGE, "'%s': byte %llu: the pickle holds a %s, not a tiktoken Encoding",
			       name, (unsigned long long)o->offset, pk_kind_name(o->kind));
	const struct pk_value *st = o->u.items[1];
	if (!st)
		return bad(name, o, e, "the Encoding has no state (no BUILD)");
	if (st->kind == PK_STR)
		return err_set(e, EXIT_USAGE,
			       "'%s': byte %llu: the Encoding is pickled by name ('%s', a registered encoding): "
			       "the file holds no ranks", name, (unsigned long long)st->offset, st->u.s);
	if (st->kind != PK_DICT)
		return err_set(e, EXIT_USAGE, "'%s': byte %llu: the Encoding's state is a %s, not a dict",
			       name, (unsigned long long)st->offset, pk_kind_name(st->kind));
	static const char *const keys[] = {"name", "pat_str", "mergeable_ranks", "special_tokens",
					   "explicit_n_vocab"};
	const struct pk_value *val[5] = {0};
	for (uint32_t k = 0; k < st->n; k++) {
		const struct pk_value *key = st->u.items[2 * k];
		int hit = -1;
		for (int j = 0; j < 5 && key->kind == PK_STR; j++)
			if (!strcmp(key->u.s, keys[j]))
				hit = j;
		if (hit < 0)
			return err_set(e, EXIT_USAGE,
				       "'%s': byte %llu: the Encoding's state has an unknown key%s%s%s "
				       "(tiktoken's Encoding would refuse it)", name,
				       (unsigned long long)key->offset, key->kind == PK_STR ? " '" : "",
				       key->kind == PK_STR ? key->u.s : "", key->kind == PK_STR ? "'" : "");
		if (val[hit])
			return err_set(e, EXIT_USAGE, "'%s': byte %llu: the Encoding's state has '%s' twice",
				       name, (unsigned long long)key->offset, keys[hit]);
		val[hit] = st->u.items[2 * k + 1];
	}
	for (int j = 0; j < 4; j++)
		if (!val[j])
			return err_set(e, EXIT_USAGE, "'%s': byte %llu: the Encoding's state has no '%s'", name,
				       (unsigned long long)st->offset, keys[j]);
	for (int j = 0; j < 2; j++)
		if (val[j]->kind != PK_STR)
			return err_set(e, EXIT_USAGE, "'%s': byte %llu: %s is a %s, not a str", name,
				       (unsigned long long)val[j]->offset, keys[j], pk_kind_name(val[j]->kind));
	for (int j = 0; j < 2; j++)
		if (strlen(val[j]->u.s) != val[j]->n)
			return err_set(e, EXIT_USAGE, "'%s': byte %llu: %s holds a NUL character", name,
				       (unsigned long long)val[j]->offset, keys[j]);
	t->name = xstrdup(val[0]->u.s);
	t->pat_str = xstrdup(val[1]->u.s);
	if (read_ranks(name, val[2], t, e) < 0 || read_specials(name, val[3], t, e) < 0)
		goto fail;
	if (val[4] && val[4]->kind != PK_NONE) {
		if (val[4]->kind != PK_INT || val[4]->u.i < 0) {
			bad(name, val[4], e, "explicit_n_vocab is not None or a count");
			goto fail;
		}
		t->explicit_n_vocab = val[4]->u.i;
	}
	if (t->explicit_n_vocab) {
		uint32_t top = t->n_ranks;   /* highest id + 1 */
		for (uint32_t k = 0; k < t->n_special; k++)
			if (t->special_id[k] + 1 > top)
				top = t->special_id[k] + 1;
		if ((int64_t)t->n_mergeable + t->n_special != t->explicit_n_vocab ||
		    (int64_t)top != t->explicit_n_vocab) {
			err_set(e, EXIT_USAGE,
				"'%s': byte %llu: explicit_n_vocab %lld disagrees with %u ranks + %u specials "
				"and the highest id %u", name, (unsigned long long)val[4]->offset,
				(long long)t->explicit_n_vocab, t->n_mergeable, t->n_special, top ? top - 1 : 0);
			goto fail;
		}
	}
	return 0;
fail:
	tt_free(t);
	return -1;
}

int tt_read_mem(const void *data, size_t len, const char *name, struct tt_encoding *t, struct err *e)
{
	struct pk_doc *d;
	memset(t, 0, sizeof *t);
	if (pk_parse(data, len, name, &tt_policy, &d, e) < 0)
		return -1;
	int rc = tt_from_doc(d, name, t, e);
	pk_free(d);
	return rc;
}

int tt_read_file(const char *path, struct tt_encoding *t, struct err *e)
{
	struct pk_doc *d;
	memset(t, 0, sizeof *t);
	if (pk_read_file(path, &tt_policy, &d, e) < 0)
		return -1;
	int rc = tt_from_doc(d, path, t, e);
	pk_free(d);
	return rc;
}

/* derive.c: the derived entries of a supplement and what they were derived
 * from (see derive.h).
 *
 * Leaves out: re-deriving (rederive.c), writing the manifest (manifest.c).
 * Reference: supkit-pack(1); supkit-formats(5), SUPPLEMENT MANIFEST.
 */
#include "supplements/derive.h"

#include <stdlib.h>
#include <string.h>

#include "lib/claims.h"
#include "lib/derivation.h"
#include "lib/fileio.h"
#include "lib/json.h"

static int ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), k = strlen(suf);
	return n >= k && !strcmp(s + n - k, suf);
}

int derive_capture(const char *path)
{
	if (ends_with(path, ".json"))
		return 1;
	if (strchr(path, '/'))
		return 0;
	return !strcmp(path, "SHA256SUMS") || ends_with(path, ".sha256");
}

/* Components a and b share at their ends. */
static int common_tail(const char *a, const char *b)
{
	size_t i = strlen(a), j = strlen(b);
	int n = 0;
	while (i > 0 && j > 0) {
		size_t ai = i, bj = j;
		while (ai > 0 && a[ai - 1] != '/')
			ai--;
		while (bj > 0 && b[bj - 1] != '/')
			bj--;
		if (i - ai != j - bj || memcmp(a + ai, b + bj, i - ai) != 0)
			break;
		n++;
		i = ai ? ai - 1 : 0;
		j = bj ? bj - 1 : 0;
		if (!ai || !bj)
			break;
	}
	return n;
}

const struct manifest_entry *derive_find(const struct manifest *m, const char *sha256, uint64_t size,
					 const char *want)
{
	const struct manifest_entry *best = NULL;
	int best_n = -1;
	for (size_t i = 0; i < m->n; i++) {
		const struct manifest_entry *x = &m->e[i];
		if (x->size != size || strcmp(x->sha256, sha256))
			continue;
		int n = common_tail(x->path, want);
		if (n > best_n) {
			best = x;
			best_n = n;
		}
	}
	return best;
}

const struct manifest_entry *derive_find_path(const struct manifest *m, const char *want)
{
	const struct manifest_entry *best = NULL;
	int best_n = 0, ties = 0;
	for (size_t i = 0; i < m->n; i++) {
		int n = common_tail(m->e[i].path, want);
		if (n > best_n) {
			best = &m->e[i];
			best_n = n;
			ties = 0;
		} else if (n == best_n && n > 0) {
			ties++;
		}
	}
	return ties ? NULL : best;
}

static void note(char ***notes, size_t *n, char *line)
{
	*notes = xrealloc(*notes, (*n + 1) * sizeof **notes);
	(*notes)[(*n)++] = line;
}

/* A derivation block with each input's entry filled in (NULL when the block
 * is not one; *why then says why). */
static cJSON *resolve(const cJSON *block, const char *entry, const struct manifest *m, char ***notes,
		      size_t *n_notes, struct err *e)
{
	struct deriv d;
	char ctx[600];
	snprintf(ctx, sizeof ctx, "'%s': derivation", entry);
	if (deriv_parse(block, ctx, &d, e) < 0) {
		deriv_release(&d);
		return NULL;
	}
	for (size_t i = 0; i < d.n_in; i++) {
		struct deriv_input *x = &d.in[i];
		free(x->entry);
		x->entry = NULL;
		const struct manifest_entry *f = x->sha256[0] ? derive_find(m, x->sha256, x->size, x->path) : NULL;
		if (!f && x->sha256[0] && (f = derive_find_path(m, x->path)) && notes)
			note(notes, n_notes,
			     xasprintf("'%s' was made from '%s', whose bytes differ from entry '%s', taken in its place",
				       entry, x->path, f->path));
		if (f)
			x->entry = xstrdup(f->path);
		else if (notes)
			note(notes, n_notes,
			     xasprintf("'%s' was made from '%s', which is not in the supplement%s", entry, x->path,
				       x->sha256[0] ? "" : " (standard input)"));
	}
	cJSON *o = deriv_to_json(&d);
	deriv_release(&d);
	return o;
}

/* The run record beside config.cfg: its inputs by role. */
static cJSON *run_record(const char *path, const cJSON *rec, const struct manifest *m)
{
	if (!cJSON_IsObject(rec) || !cJSON_GetObjectItemCaseSensitive(rec, "val_bpb") ||
	    !cJSON_GetObjectItemCaseSensitive(rec, "arm"))
		return NULL;
	char *dir = path_dirname(path);
	const char *pre = strcmp(dir, ".") ? dir : "";
	const char *slash = *pre ? "/" : "";
	char *cfg = xasprintf("%s%sconfig.cfg", pre, slash);
	if (!manifest_find(m, cfg)) {
		free(cfg);
		free(dir);
		return NULL;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "kind", "run");
	cJSON *in = cJSON_AddArrayToObject(o, "inputs");
	struct {
		const char *role;
		char *entry;
	} r[3] = {{"config", cfg}, {"curve", xasprintf("%s%scurve.jsonl", pre, slash)},
		  {"checkpoint", xasprintf("%s%smodel.safetensors", pre, slash)}};
	if (!manifest_find(m, r[1].entry)) {
		free(r[1].entry);
		r[1].entry = NULL;
	}
	if (!manifest_find(m, r[2].entry)) {
		free(r[2].entry);
		r[2].entry = NULL;
		/* checkpoints/<run>.safetensors: the one entry of that name */
		if (*pre) {
			char *want = xasprintf("%s.safetensors", path_basename(dir));
			const char *found = NULL;
			int count = 0;
			for (size_t i = 0; i < m->n; i++)
				if (!strcmp(path_basename(m->e[i].path), want)) {
					found = m->e[i].path;
					count++;
				}
			if (count == 1)
				r[2].entry = xstrdup(found);
			free(want);
		}
	}
	for (int i = 0; i < 3; i++) {
		if (!r[i].entry)
			continue;
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "role", r[i].role);
		cJSON_AddStringToObject(x, "entry", r[i].entry);
		cJSON_AddItemToArray(in, x);
		free(r[i].entry);
	}
	free(dir);
	json_sort(o);
	return o;
}

/* A published compute audit in the "arms" layout (every arm an object with
 * "arm" and "depth"), not supkit's own --json output: an older supkit's
 * record (with "config_sha256", without a derivation) names no config, so
 * it is left alone rather than checked against the named arms. */
static int compute_layout(const cJSON *j)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "arms");
	if (!cJSON_IsObject(j) || !cJSON_IsArray(a) || !a->child)
		return 0;
	for (const cJSON *x = a->child; x; x = x->next)
		if (!cJSON_IsObject(x) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(x, "arm")) ||
		    !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(x, "depth")) ||
		    cJSON_GetObjectItemCaseSensitive(x, "config_sha256"))
			return 0;
	return 1;
}

void derive_lift(const struct scan *s, struct manifest *m, char ***notes, size_t *n_notes)
{
	for (size_t i = 0; i < s->n_extra; i++) {
		const struct scan_capture *c = &s->extra[i];
		if (!c->data || !ends_with(c->path, ".json"))
			continue;
		struct err e = {0};
		cJSON *j = json_parse(c->data, c->len, c->path, &e);
		if (!j)
			continue; /* not JSON: not a record */
		cJSON *d = NULL;
		const cJSON *block = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, DERIV_KEY) : NULL;
		if (block) {
			cJSON *r = resolve(block, c->path, m, notes, n_notes, &e);
			if (r) {
				d = r;
				cJSON_AddStringToObject(d, "kind", "command");
				json_sort(d);
			} else {
				note(notes, n_notes, xasprintf("%s: not recorded", e.msg));
			}
		} else if (claims_is(j)) {
			if (claims_validate(j, c->path, &e) < 0) {
				note(notes, n_notes, xasprintf("%s: not recorded", e.msg));
			} else {
				d = cJSON_CreateObject();
				cJSON_AddStringToObject(d, "kind", "claims");
				cJSON *arr = cJSON_AddArrayToObject(d, "derivations");
				char **keys = NULL;
				size_t nk = 0;
				int k = 0;
				for (const cJSON *cl = claims_list(j)->child; cl && d; cl = cl->next, k++) {
					struct deriv dv;
					char ctx[600];
					snprintf(ctx, sizeof ctx, "'%s': claims[%d]: derivation", c->path, k);
					const cJSON *blk = claims_derivation(j, cl);
					if (deriv_parse(blk, ctx, &dv, &e) < 0) {
						deriv_release(&dv);
						note(notes, n_notes, xasprintf("%s: not recorded", e.msg));
						cJSON_Delete(d);
						d = NULL;
						break;
					}
					char *key = deriv_key(&dv);
					deriv_release(&dv);
					size_t q = 0;
					while (q < nk && strcmp(keys[q], key))
						q++;
					if (q < nk) {
						free(key);
						continue;
					}
					keys = xrealloc(keys, (nk + 1) * sizeof *keys);
					keys[nk++] = key;
					cJSON *r = resolve(blk, c->path, m, notes, n_notes, &e);
					if (r)
						cJSON_AddItemToArray(arr, r);
				}
				for (size_t q = 0; q < nk; q++)
					free(keys[q]);
				free(keys);
			}
		} else if (!strcmp(path_basename(c->path), "result.json")) {
			d = run_record(c->path, j, m);
		} else if (compute_layout(j)) {
			d = cJSON_CreateObject();
			cJSON_AddStringToObject(d, "kind", "check");
			cJSON_AddStringToObject(d, "tool", "supkit-audit");
			cJSON_AddStringToObject(d, "command", "compute");
		}
		if (d) {
			json_sort(d);
			manifest_set_derivation(m, c->path, d);
		}
		cJSON_Delete(j);
	}
}

/* manifest.c: the supplement manifest: entries, path rules, JSON form,
 * parsing and comparison (see manifest.h).
 *
 * Leaves out: reading archives or folders (scan.c) and writing zips (pack.c).
 * Reference: supkit-formats(5), SUPPLEMENT MANIFEST; RFC 3629 (UTF-8).
 */
#include "supplements/manifest.h"

#include <stdlib.h>
#include <string.h>

#include "lib/cli.h"
#include "lib/json.h"
#include "lib/sha256.h"

void manifest_init(struct manifest *m)
{
	memset(m, 0, sizeof *m);
	m->format_version = MANIFEST_FORMAT_VERSION;
	m->tool_version = xstrdup(SUPKIT_VERSION);
}

void manifest_release(struct manifest *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->e[i].path);
		cJSON_Delete(m->e[i].derivation);
	}
	free(m->e);
	free(m->tool_version);
	memset(m, 0, sizeof *m);
}

void manifest_add(struct manifest *m, const char *path, uint64_t size, const char *sha256_hex,
		  const char *st_digest_hex)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 16;
		m->e = xrealloc(m->e, m->cap * sizeof *m->e);
	}
	struct manifest_entry *x = &m->e[m->n++];
	memset(x, 0, sizeof *x);
	x->path = xstrdup(path);
	x->size = size;
	snprintf(x->sha256, sizeof x->sha256, "%s", sha256_hex);
	if (st_digest_hex)
		snprintf(x->st_digest, sizeof x->st_digest, "%s", st_digest_hex);
}

size_t manifest_n_derived(const struct manifest *m)
{
	size_t n = 0;
	for (size_t i = 0; i < m->n; i++)
		n += m->e[i].derivation != NULL;
	return n;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct manifest_entry *)a)->path, ((const struct manifest_entry *)b)->path);
}

void manifest_sort(struct manifest *m)
{
	if (m->n > 1)
		qsort(m->e, m->n, sizeof *m->e, cmp_entry);
}

const struct manifest_entry *manifest_find(const struct manifest *m, const char *path)
{
	struct manifest_entry key = {.path = (char *)path};
	return m->n ? bsearch(&key, m->e, m->n, sizeof *m->e, cmp_entry) : NULL;
}

int manifest_set_derivation(struct manifest *m, const char *path, cJSON *d)
{
	struct manifest_entry *x = (struct manifest_entry *)manifest_find(m, path);
	if (!x) {
		cJSON_Delete(d);
		return -1;
	}
	cJSON_Delete(x->derivation);
	x->derivation = d;
	return 0;
}

uint64_t manifest_total_size(const struct manifest *m)
{
	uint64_t t = 0;
	for (size_t i = 0; i < m->n; i++)
		t += m->e[i].size;
	return t;
}

int manifest_path_check(const char *path, struct err *e)
{
	size_t len = strlen(path);
	if (len == 0)
		return err_set(e, EXIT_USAGE, "empty path");
	if (len > MANIFEST_PATH_MAX)
		return err_set(e, EXIT_USAGE, "path longer than %d bytes", MANIFEST_PATH_MAX);
	if (!utf8_valid(path, len))
		return err_set(e, EXIT_USAGE, "path is not valid UTF-8");
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)path[i];
		if (c < 0x20 || c == 0x7F)
			return err_set(e, EXIT_USAGE, "path holds a control character");
		if (c == '\\')
			return err_set(e, EXIT_USAGE, "path holds a backslash");
	}
	if (path[0] == '/')
		return err_set(e, EXIT_USAGE, "absolute path");
	const char *p = path;
	for (;;) {
		const char *s = strchr(p, '/');
		size_t n = s ? (size_t)(s - p) : strlen(p);
		if (n == 0)
			return err_set(e, EXIT_USAGE, "empty path component");
		if (n == 1 && p[0] == '.')
			return err_set(e, EXIT_USAGE, "'.' path component");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return err_set(e, EXIT_USAGE, "'..' path component");
		if (!s)
			break;
		p = s + 1;
	}
	return 0;
}

cJSON *manifest_to_json(const struct manifest *m)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "format", MANIFEST_FORMAT);
	cJSON_AddNumberToObject(root, "format_version",
				manifest_n_derived(m) ? MANIFEST_FORMAT_VERSION : MANIFEST_FORMAT_VERSION_PLAIN);
	cJSON_AddStringToObject(root, "tool", "supkit-pack");
	cJSON_AddStringToObject(root, "tool_version", m->tool_version ? m->tool_version : SUPKIT_VERSION);
	cJSON_AddNumberToObject(root, "total_size", (double)manifest_total_size(m));
	cJSON *arr = cJSON_AddArrayToObject(root, "entries");
	for (size_t i = 0; i < m->n; i++) {
		const struct manifest_entry *x = &m->e[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", x->path);
		cJSON_AddNumberToObject(o, "size", (double)x->size);
		cJSON_AddStringToObject(o, "sha256", x->sha256);
		if (x->st_digest[0])
			cJSON_AddStringToObject(o, "safetensors_digest", x->st_digest);
		if (x->derivation)
			cJSON_AddItemToObject(o, "derivation", cJSON_Duplicate(x->derivation, 1));
		cJSON_AddItemToArray(arr, o);
	}
	json_sort(root);
	return root;
}

char *manifest_print(const struct manifest *m, size_t *len)
{
	cJSON *j = manifest_to_json(m);
	char *s = json_print(j, 1);
	cJSON_Delete(j);
	if (len)
		*len = strlen(s);
	return s;
}

/* 2^53: sizes above cannot be represented exactly in a JSON number here. */
#define SIZE_EXACT_MAX 9007199254740992.0

static int hex_lower_valid(const char *s)
{
	if (!sha256_hex_valid(s))
		return 0;
	for (const char *p = s; *p; p++)
		if (*p >= 'A' && *p <= 'F')
			return 0;
	return 1;
}

int manifest_parse(const char *text, size_t len, const char *name, struct manifest *m, struct err *e)
{
	manifest_init(m);
	if (len > MANIFEST_MAX_BYTES)
		return err_set(e, EXIT_USAGE, "'%s' is larger than %u bytes", name, MANIFEST_MAX_BYTES);
	cJSON *root = json_parse(text, len, name, e);
	if (!root)
		return -1;
	const char *s;
	double v;
	if (!cJSON_IsObject(root)) {
		err_set(e, EXIT_USAGE, "'%s': not a JSON object", name);
		goto fail;
	}
	if (json_get_string(root, "format", &s, name, e) < 0)
		goto fail;
	if (strcmp(s, MANIFEST_FORMAT) != 0) {
		err_set(e, EXIT_USAGE, "'%s': format is '%s', expected '%s'", name, s, MANIFEST_FORMAT);
		goto fail;
	}
	if (json_get_number(root, "format_version", &v, name, e) < 0)
		goto fail;
	if (v != MANIFEST_FORMAT_VERSION && v != MANIFEST_FORMAT_VERSION_PLAIN) {
		err_set(e, EXIT_USAGE, "'%s': format_version %g is not supported (this supkit reads %d and %d)",
			name, v, MANIFEST_FORMAT_VERSION_PLAIN, MANIFEST_FORMAT_VERSION);
		goto fail;
	}
	m->format_version = (int)v;
	if (json_get_string(root, "tool_version", &s, name, e) < 0)
		goto fail;
	free(m->tool_version);
	m->tool_version = xstrdup(s);
	cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "entries");
	if (!cJSON_IsArray(arr)) {
		err_set(e, EXIT_USAGE, "'%s': 'entries' is missing or not an array", name);
		goto fail;
	}
	size_t idx = 0;
	for (cJSON *o = arr->child; o; o = o->next, idx++) {
		char ctx[64];
		snprintf(ctx, sizeof ctx, "entry %zu", idx);
		const char *path, *sha, *dig = NULL;
		double size;
		if (!cJSON_IsObject(o)) {
			err_set(e, EXIT_USAGE, "'%s': entry %zu is not an object", name, idx);
			goto fail;
		}
		if (json_get_string(o, "path", &path, ctx, e) < 0 || json_get_number(o, "size", &size, ctx, e) < 0 ||
		    json_get_string(o, "sha256", &sha, ctx, e) < 0) {
			err_prefix(e, "'%s'", name);
			goto fail;
		}
		struct err pe;
		if (manifest_path_check(path, &pe) < 0) {
			err_set(e, EXIT_USAGE, "'%s': entry %zu '%s': %s", name, idx, path, pe.msg);
			goto fail;
		}
		if (!strcmp(path, MANIFEST_NAME)) {
			err_set(e, EXIT_USAGE, "'%s': entry %zu lists '%s' itself", name, idx, MANIFEST_NAME);
			goto fail;
		}
		if (!(size >= 0 && size <= SIZE_EXACT_MAX && size == (double)(uint64_t)size)) {
			err_set(e, EXIT_USAGE, "'%s': entry %zu '%s': size is not a non-negative integer", name, idx, path);
			goto fail;
		}
		if (!hex_lower_valid(sha)) {
			err_set(e, EXIT_USAGE, "'%s': entry %zu '%s': sha256 is not 64 lower-case hex digits", name, idx, path);
			goto fail;
		}
		cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "safetensors_digest");
		if (d) {
			if (!cJSON_IsString(d) || !hex_lower_valid(d->valuestring)) {
				err_set(e, EXIT_USAGE, "'%s': entry %zu '%s': safetensors_digest is not 64 lower-case hex digits",
					name, idx, path);
				goto fail;
			}
			dig = d->valuestring;
		}
		/* compared in NFC, the form of every name in a supplement */
		char *nfc = utf8_nfc(path, strlen(path), NULL);
		if (manifest_path_check(nfc, &pe) < 0) {
			err_set(e, EXIT_USAGE, "'%s': entry %zu '%s': in Unicode NFC: %s", name, idx, path, pe.msg);
			free(nfc);
			goto fail;
		}
		const cJSON *dv = cJSON_GetObjectItemCaseSensitive(o, "derivation");
		if (dv) {
			const cJSON *k = cJSON_GetObjectItemCaseSensitive(dv, "kind");
			if (!cJSON_IsObject(dv) || !cJSON_IsString(k)) {
				err_set(e, EXIT_USAGE, "'%s': entry %zu '%s': derivation is not an object with a \"kind\"",
					name, idx, path);
				free(nfc);
				goto fail;
			}
		}
		manifest_add(m, nfc, (uint64_t)size, sha, dig);
		if (dv)
			m->e[m->n - 1].derivation = cJSON_Duplicate(dv, 1);
		free(nfc);
	}
	manifest_sort(m);
	for (size_t i = 1; i < m->n; i++) {
		if (!strcmp(m->e[i - 1].path, m->e[i].path)) {
			err_set(e, EXIT_USAGE, "'%s': entry '%s' is listed twice (in Unicode NFC)", name, m->e[i].path);
			goto fail;
		}
	}
	cJSON_Delete(root);
	return 0;
fail:
	cJSON_Delete(root);
	manifest_release(m);
	manifest_init(m);
	return -1;
}

static void cmp_push(struct manifest_cmp *c, size_t *cap, enum manifest_status st,
		     const struct manifest_entry *want, const struct manifest_entry *got)
{
	if (c->n == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		c->items = xrealloc(c->items, *cap * sizeof *c->items);
	}
	c->items[c->n++] = (struct manifest_cmp_item){st, want, got};
	switch (st) {
	case MS_OK: c->n_ok++; break;
	case MS_MISSING: c->n_missing++; break;
	case MS_EXTRA: c->n_extra++; break;
	case MS_CHANGED: c->n_changed++; break;
	}
}

void manifest_compare(const struct manifest *expected, const struct manifest *actual,
		      struct manifest_cmp *c)
{
	memset(c, 0, sizeof *c);
	size_t cap = 0, i = 0, j = 0;
	while (i < expected->n || j < actual->n) {
		int d = i == expected->n ? 1 : j == actual->n ? -1 : strcmp(expected->e[i].path, actual->e[j].path);
		if (d < 0) {
			cmp_push(c, &cap, MS_MISSING, &expected->e[i++], NULL);
		} else if (d > 0) {
			cmp_push(c, &cap, MS_EXTRA, NULL, &actual->e[j++]);
		} else {
			const struct manifest_entry *w = &expected->e[i++], *g = &actual->e[j++];
			int same = w->size == g->size && !strcmp(w->sha256, g->sha256);
			cmp_push(c, &cap, same ? MS_OK : MS_CHANGED, w, g);
		}
	}
}

void manifest_cmp_release(struct manifest_cmp *c)
{
	free(c->items);
	memset(c, 0, sizeof *c);
}

const char *manifest_status_name(enum manifest_status s)
{
	switch (s) {
	case MS_OK: return "ok";
	case MS_MISSING: return "missing";
	case MS_EXTRA: return "extra";
	case MS_CHANGED: return "changed";
	}
	return "?";
}

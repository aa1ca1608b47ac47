/* torch_pt.c: an int32 vector out of a torch.save zip (see torch_pt.h).
 * The zip is read with libarchive from memory; the pickle with
 * data/pickle.c, which calls nothing. */
#include "data/torch_pt.h"

#include <archive.h>
#include <archive_entry.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fileio.h"

static const struct pk_allow pt_allow[] = {
	{"torch._utils", "_rebuild_tensor_v2", PK_USE_CALL},
	{"collections", "OrderedDict", PK_USE_CALL},
	{"torch", "IntStorage", PK_USE_REF},
};
const struct pk_policy pt_policy = {pt_allow, 3, 1};

struct entry {
	char *name;            /* below the top folder */
	unsigned char *data;
	size_t n;
};

struct zip {
	struct entry *v;
	size_t n;
	char *top;             /* the top folder, "P" */
};

static void zip_free(struct zip *z)
{
	for (size_t i = 0; i < z->n; i++) {
		free(z->v[i].name);
		free(z->v[i].data);
	}
	free(z->v);
	free(z->top);
}

static const struct entry *zip_get(const struct zip *z, const char *name)
{
	for (size_t i = 0; i < z->n; i++)
		if (!strcmp(z->v[i].name, name))
			return &z->v[i];
	return NULL;
}

static int read_zip(const void *data, size_t len, const char *name, struct zip *z, struct err *e)
{
	memset(z, 0, sizeof *z);
	struct archive *a = archive_read_new();
	archive_read_support_format_zip(a);
	int rc = 0;
	size_t total = 0;
	if (archive_read_open_memory(a, data, len) != ARCHIVE_OK) {
		rc = err_set(e, EXIT_USAGE, "'%s': not a zip (torch.save's format): %s", name,
			     archive_error_string(a) ? archive_error_string(a) : "unreadable");
		goto out;
	}
	for (;;) {
		struct archive_entry *ent;
		int r = archive_read_next_header(a, &ent);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			rc = err_set(e, EXIT_USAGE, "'%s': not a zip (torch.save's format): %s", name,
				     archive_error_string(a) ? archive_error_string(a) : "unreadable");
			goto out;
		}
		const char *p = archive_entry_pathname(ent);
		if (!p || !*p) {
			rc = err_set(e, EXIT_USAGE, "'%s': entry %zu has no name", name, z->n + 1);
			goto out;
		}
		if (z->n == PT_MAX_ENTRIES) {
			rc = err_set(e, EXIT_USAGE, "'%s': more than %d entries", name, PT_MAX_ENTRIES);
			goto out;
		}
		const char *slash = strchr(p, '/');
		if (!z->top) {
			if (!slash || slash == p) {
				rc = err_set(e, EXIT_USAGE, "'%s': entry '%s' is not in a top folder", name, p);
				goto out;
			}
			z->top = xstrndup(p, (size_t)(slash - p));
		}
		size_t tl = strlen(z->top);
		if (strncmp(p, z->top, tl) != 0 || p[tl] != '/' || !p[tl + 1]) {
			rc = err_set(e, EXIT_USAGE, "'%s': entry '%s' is outside the archive's folder '%s/'",
				     name, p, z->top);
			goto out;
		}
		if (archive_entry_filetype(ent) != AE_IFREG) {
			rc = err_set(e, EXIT_USAGE, "'%s': entry '%s' is not a plain file", name, p);
			goto out;
		}
		if (zip_get(z, p + tl + 1)) {
			rc = err_set(e, EXIT_USAGE, "'%s': entry '%s' appears twice", name, p);
			goto out;
		}
		struct entry en = {xstrdup(p + tl + 1), NULL, 0};
		size_t cap = 0;
		for (;;) {
			unsigned char buf[65536];
			la_ssize_t k = archive_read_data(a, buf, sizeof buf);
			if (k < 0) {
				rc = err_set(e, EXIT_USAGE, "'%s': entry '%s': %s", name, p,
					     archive_error_string(a) ? archive_error_string(a) : "unreadable");
				free(en.name);
				free(en.data);
				goto out;
			}
			if (k == 0)
				break;
			if ((size_t)k > PT_MAX_BYTES - total) {
				rc = err_set(e, EXIT_USAGE, "'%s': entry '%s': the entries hold more than %u bytes",
					     name, p, PT_MAX_BYTES);
				free(en.name);
				free(en.data);
				goto out;
			}
			total += (size_t)k;
			if (en.n + (size_t)k > cap) {
				cap = cap ? cap : 65536;
				while (cap < en.n + (size_t)k)
					cap *= 2;
				en.data = xrealloc(en.data, cap);
			}
			memcpy(en.data + en.n, buf, (size_t)k);
			en.n += (size_t)k;
		}
		z->v = xrealloc(z->v, (z->n + 1) * sizeof *z->v);
		z->v[z->n++] = en;
	}
	if (!z->top)
		rc = err_set(e, EXIT_USAGE, "'%s': the zip is empty", name);
out:
	archive_read_free(a);
	if (rc < 0)
		zip_free(z);
	return rc;
}

static int bad(const char *name, const struct pk_value *v, struct err *e, const char *what)
{
	return err_set(e, EXIT_USAGE, "'%s': byte %llu: %s", name, (unsigned long long)v->offset, what);
}

static int is_int(const struct pk_value *v) { return v->kind == PK_INT; }

/* The tensor's layout from the pickle: storage key, numel, offset, n. */
struct layout {
	const char *key;
	int64_t numel, offset, n;
};

static int check_tensor(const struct pk_value *root, const char *nm, struct layout *L, struct err *e)
{
	if (root->kind != PK_CALL || !pk_is_global(root->u.items[0], "torch._utils", "_rebuild_tensor_v2"))
		return bad(nm, root, e, "the pickle is not one tensor (torch._utils._rebuild_tensor_v2)");
	const struct pk_value *args = root->u.items[1];
	if (args->n != 6)
		return bad(nm, args, e, "_rebuild_tensor_v2 has other than 6 arguments (tensor metadata?)");
	struct pk_value *const *a = args->u.items;
	const struct pk_value *pid = a[0]->kind == PK_PERSID ? a[0]->u.items[0] : NULL;
	if (!pid || pid->kind != PK_TUPLE || pid->n != 5)
		return bad(nm, a[0], e, "the storage is not a persistent id of 5 values");
	struct pk_value *const *s = pid->u.items;
	if (s[0]->kind != PK_STR || strcmp(s[0]->u.s, "storage") != 0)
		return bad(nm, s[0], e, "the persistent id is not a 'storage'");
	if (!pk_is_global(s[1], "torch", "IntStorage"))
		return bad(nm, s[1], e, "the storage is not a torch.IntStorage (int32)");
	if (s[2]->kind != PK_STR || s[3]->kind != PK_STR || !is_int(s[4]) || s[4]->u.i < 0)
		return bad(nm, pid, e, "the storage's key, location or size is malformed");
	if (!is_int(a[1]) || a[1]->u.i < 0)
		return bad(nm, a[1], e, "the storage offset is not a count");
	if (a[2]->kind != PK_TUPLE || a[2]->n != 1 || !is_int(a[2]->u.items[0]) ||
	    a[2]->u.items[0]->u.i < 0)
		return bad(nm, a[2], e, "the tensor is not 1-D");
	if (a[3]->kind != PK_TUPLE || a[3]->n != 1 || !is_int(a[3]->u.items[0]) ||
	    a[3]->u.items[0]->u.i != 1)
		return bad(nm, a[3], e, "the tensor's stride is not (1,)");
	if (a[4]->kind != PK_BOOL)
		return bad(nm, a[4], e, "requires_grad is not a bool");
	if (a[5]->kind != PK_CALL || !pk_is_global(a[5]->u.items[0], "collections", "OrderedDict") ||
	    a[5]->u.items[1]->n != 0)
		return bad(nm, a[5], e, "the backward hooks are not an empty OrderedDict");
	L->key = s[2]->u.s;
	L->numel = s[4]->u.i;
	L->offset = a[1]->u.i;
	L->n = a[2]->u.items[0]->u.i;
	if (L->offset > L->numel || L->n > L->numel - L->offset)
		return bad(nm, a[2], e, "the tensor runs past its storage");
	return 0;
}

int pt_read_int32_mem(const void *data, size_t len, const char *name, int32_t **out, size_t *n,
		      struct err *e)
{
	*out = NULL;
	*n = 0;
	struct zip z;
	if (read_zip(data, len, name, &z, e) < 0)
		return -1;
	int rc = 0;
	struct pk_doc *d = NULL;
	char *nm = NULL;
	const struct entry *pkl = zip_get(&z, "data.pkl"), *bo = zip_get(&z, "byteorder");
	int big = 0;
	if (!pkl) {
		rc = err_set(e, EXIT_USAGE, "'%s': no entry '%s/data.pkl' (not a torch.save file)", name, z.top);
		goto out;
	}
	if (bo) {
		if (bo->n == 3 && !memcmp(bo->data, "big", 3))
			big = 1;
		else if (!(bo->n == 6 && !memcmp(bo->data, "little", 6))) {
			rc = err_set(e, EXIT_USAGE, "'%s': entry '%s/byteorder' is neither 'little' nor 'big'",
				     name, z.top);
			goto out;
		}
	}
	/* messages: "'file' entry 'P/data.pkl': byte N: ..." */
	nm = xasprintf("%s' entry '%s/data.pkl", name, z.top);
	if ((rc = pk_parse(pkl->data, pkl->n, nm, &pt_policy, &d, e)) < 0)
		goto out;
	struct layout L = {0};
	if ((rc = check_tensor(pk_root(d), nm, &L, e)) < 0)
		goto out;
	char *dn = xasprintf("data/%s", L.key);
	const struct entry *st = zip_get(&z, dn);
	free(dn);
	if (!st) {
		rc = err_set(e, EXIT_USAGE, "'%s': no entry '%s/data/%s' for the tensor's storage", name,
			     z.top, L.key);
		goto out;
	}
	if ((uint64_t)st->n != (uint64_t)L.numel * 4) {
		rc = err_set(e, EXIT_USAGE, "'%s': entry '%s/data/%s' holds %zu bytes, not %lld x 4", name,
			     z.top, L.key, st->n, (long long)L.numel);
		goto out;
	}
	*n = (size_t)L.n;
	*out = xmalloc((*n ? *n : 1) * sizeof **out);
	for (size_t i = 0; i < *n; i++) {
		const unsigned char *p = st->data + 4 * ((size_t)L.offset + i);
		uint32_t u = big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
				 : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
		(*out)[i] = (int32_t)u;
	}
out:
	pk_free(d);
	free(nm);
	zip_free(&z);
	return rc;
}

int pt_read_int32(const char *path, int32_t **out, size_t *n, struct err *e)
{
	char *buf;
	size_t len;
	*out = NULL;
	*n = 0;
	if (file_read_all(path, PT_MAX_FILE, &buf, &len, e) < 0)
		return -1;
	int rc = pt_read_int32_mem(buf, len, path, out, n, e);
	free(buf);
	return rc;
}

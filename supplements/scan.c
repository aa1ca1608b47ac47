/* scan.c: read a supplement zip or folder into its actual manifest (see scan.h).
 *
 * Leaves out: writing anything (pack.c, unpack.c). Reference: issue 3;
 * libarchive archive_read(3), archive_entry(3); PKWARE APPNOTE.TXT.
 */
#include "supplements/scan.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "lib/progress.h"
#include "lib/safetensors.h"
#include "lib/sha256.h"
#include "supplements/zipdir.h"

#define CHUNK (1u << 20)
#define WALK_MAX_DEPTH 256

char *scan_quote(const char *s, size_t len)
{
	char *out = xmalloc(4 * len + 1), *o = out;
	size_t i = 0;
	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x80) {
			/* copy a well-formed UTF-8 sequence whole */
			size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
			if (n > 1 && i + n <= len && utf8_valid(s + i, n)) {
				memcpy(o, s + i, n);
				o += n, i += n;
				continue;
			}
		}
		if (c < 0x20 || c == 0x7F || c == '\\' || c >= 0x80)
			o += sprintf(o, "\\x%02x", c);
		else
			*o++ = (char)c;
		i++;
	}
	*o = '\0';
	return out;
}

int scan_is_safetensors(const char *path)
{
	size_t n = strlen(path), k = strlen(".safetensors");
	return n > k && !strcmp(path + n - k, ".safetensors");
}

void scan_release(struct scan *s)
{
	manifest_release(&s->actual);
	free(s->manifest_data);
	for (size_t i = 0; i < s->n_cap; i++)
		free(s->cap[i].data);
	free(s->cap);
	for (size_t i = 0; i < s->n_issues; i++) {
		free(s->issues[i].path);
		free(s->issues[i].reason);
	}
	free(s->issues);
	memset(s, 0, sizeof *s);
}

/* Record an issue about an entry; in strict mode it becomes the error. */
static int issue(struct scan *s, const struct scan_opts *o, const char *where, const char *path,
		 size_t plen, struct err *e, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static int issue(struct scan *s, const struct scan_opts *o, const char *where, const char *path,
		 size_t plen, struct err *e, const char *fmt, ...)
{
	char reason[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof reason, fmt, ap);
	va_end(ap);
	char *q = scan_quote(path, plen);
	if (o->strict) {
		err_set(e, EXIT_USAGE, "'%s': entry '%s': %s", where, q, reason);
		free(q);
		return -1;
	}
	s->issues = xrealloc(s->issues, (s->n_issues + 1) * sizeof *s->issues);
	s->issues[s->n_issues].path = q;
	s->issues[s->n_issues].reason = xstrdup(reason);
	s->n_issues++;
	return 0;
}

static struct scan_capture *capture_slot(struct scan *s, const char *path)
{
	for (size_t i = 0; i < s->n_cap; i++)
		if (!strcmp(s->cap[i].path, path))
			return &s->cap[i];
	return NULL;
}

/* ---- folders ---- */

struct walk_item {
	char *rel;
	uint64_t size;
};
struct walk {
	struct walk_item *v;
	size_t n, cap;
};

static int walk_dir(const char *root, const char *rel, int depth, struct walk *w, struct scan *s,
		    const struct scan_opts *o, struct err *e)
{
	char *full = rel[0] ? path_join(root, rel) : xstrdup(root);
	if (depth > WALK_MAX_DEPTH) {
		int r = issue(s, o, root, rel, strlen(rel), e, "folders nested deeper than %d", WALK_MAX_DEPTH);
		free(full);
		return r;
	}
	DIR *d = opendir(full);
	if (!d) {
		err_errno(e, EXIT_SYS, "cannot open folder '%s'", full);
		free(full);
		return -1;
	}
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *r = rel[0] ? xasprintf("%s/%s", rel, de->d_name) : xstrdup(de->d_name);
		char *p = path_join(root, r);
		struct stat st;
		struct err pe;
		if (lstat(p, &st) != 0) {
			rc = err_errno(e, EXIT_SYS, "cannot stat '%s'", p);
		} else if (manifest_path_check(r, &pe) < 0) {
			rc = issue(s, o, root, r, strlen(r), e, "%s", pe.msg);
		} else if (S_ISLNK(st.st_mode)) {
			rc = issue(s, o, root, r, strlen(r), e, "is a symbolic link");
		} else if (S_ISDIR(st.st_mode)) {
			rc = walk_dir(root, r, depth + 1, w, s, o, e);
		} else if (!S_ISREG(st.st_mode)) {
			rc = issue(s, o, root, r, strlen(r), e, "is a special file (not a regular file or folder)");
		} else {
			if (w->n == w->cap) {
				w->cap = w->cap ? 2 * w->cap : 64;
				w->v = xrealloc(w->v, w->cap * sizeof *w->v);
			}
			w->v[w->n].rel = r;
			w->v[w->n].size = (uint64_t)st.st_size;
			w->n++;
			r = NULL;
		}
		free(r);
		free(p);
	}
	if (rc == 0 && errno)
		rc = err_errno(e, EXIT_SYS, "cannot read folder '%s'", full);
	closedir(d);
	free(full);
	return rc;
}

static int cmp_walk(const void *a, const void *b)
{
	return strcmp(((const struct walk_item *)a)->rel, ((const struct walk_item *)b)->rel);
}

/* Hash one file (and keep its bytes when keep != NULL, up to keep_max). */
static int hash_file(const char *p, char *hex, uint64_t *size, char **keep, size_t *keep_len, size_t keep_max,
		     int *too_big, struct progress *pg, uint64_t *done, struct err *e)
{
	int fd = open(p, O_RDONLY | O_NOFOLLOW);
	if (fd < 0)
		return err_errno(e, EXIT_SYS, "cannot open '%s'", p);
	struct sha256 h;
	sha256_init(&h);
	char *buf = xmalloc(CHUNK);
	uint64_t n = 0;
	size_t cap = 0;
	int rc = 0;
	*too_big = 0;
	if (keep)
		*keep = NULL;
	for (;;) {
		ssize_t r = read(fd, buf, CHUNK);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = err_errno(e, EXIT_SYS, "cannot read '%s'", p);
			break;
		}
		if (r == 0)
			break;
		sha256_update(&h, buf, (size_t)r);
		if (keep && !*too_big) {
			if (n + (uint64_t)r > keep_max) {
				*too_big = 1;
				free(*keep);
				*keep = NULL;
			} else {
				if (n + (size_t)r > cap) {
					cap = (n + (size_t)r) * 2;
					*keep = xrealloc(*keep, cap + 1);
				}
				memcpy(*keep + n, buf, (size_t)r);
			}
		}
		n += (uint64_t)r;
		*done += (uint64_t)r;
		progress_update(pg, 0, "scanning: %.1f MB", (double)*done / 1e6);
	}
	uint8_t d[SHA256_LEN];
	sha256_final(&h, d);
	sha256_to_hex(d, hex);
	free(buf);
	close(fd);
	if (rc == 0 && keep && !*too_big) {
		if (!*keep)
			*keep = xmalloc(1);
		(*keep)[n] = '\0';
		*keep_len = (size_t)n;
	}
	*size = n;
	return rc;
}

static int scan_dir(const char *root, const struct scan_opts *o, struct scan *s, struct err *e)
{
	struct walk w = {0};
	int rc = walk_dir(root, "", 0, &w, s, o, e);
	if (rc == 0 && w.n)
		qsort(w.v, w.n, sizeof *w.v, cmp_walk);
	struct progress pg;
	progress_init(&pg, o->quiet);
	pg.last = now_seconds() - pg.interval + 1.0; /* first line after a second */
	uint64_t done = 0;
	for (size_t i = 0; rc == 0 && i < w.n; i++) {
		const char *rel = w.v[i].rel;
		char *p = path_join(root, rel);
		char hex[65];
		uint64_t size = 0;
		int is_manifest = !strcmp(rel, MANIFEST_NAME);
		struct scan_capture *c = capture_slot(s, rel);
		char *keep = NULL;
		size_t keep_len = 0;
		int too_big = 0;
		size_t keep_max = is_manifest ? MANIFEST_MAX_BYTES : SCAN_CAPTURE_MAX_BYTES;
		rc = hash_file(p, hex, &size, (is_manifest || c) ? &keep : NULL, &keep_len, keep_max, &too_big, &pg,
			       &done, e);
		if (rc == 0 && too_big)
			rc = issue(s, o, root, rel, strlen(rel), e, "larger than the %zu bytes read into memory", keep_max);
		if (rc == 0 && is_manifest) {
			s->has_manifest = 1;
			s->manifest_data = keep;
			s->manifest_len = keep_len;
			keep = NULL;
		} else if (rc == 0) {
			char dig[65] = "";
			if (o->safetensors_digest && scan_is_safetensors(rel)) {
				struct st_file f;
				struct err se;
				if (st_open(&f, p, &se) == 0) {
					st_digest(&f, dig);
					st_close(&f);
				} else {
					rc = issue(s, o, root, rel, strlen(rel), e, "not a valid safetensors file: %s", se.msg);
				}
			}
			manifest_add(&s->actual, rel, size, hex, dig[0] ? dig : NULL);
			if (c && keep) {
				c->data = keep;
				c->len = keep_len;
				keep = NULL;
			}
		}
		free(keep);
		free(p);
	}
	progress_done(&pg);
	for (size_t i = 0; i < w.n; i++)
		free(w.v[i].rel);
	free(w.v);
	return rc;
}

/* ---- zip archives ---- */

struct zname {
	const char *name;
	size_t idx;
};

/* libarchive reports '\\' in zip names as '/'; compare names that way. */
static char *backslash_to_slash(const char *s)
{
	char *c = xstrdup(s);
	for (char *p = c; *p; p++)
		if (*p == '\\')
			*p = '/';
	return c;
}
static int cmp_zname(const void *a, const void *b)
{
	return strcmp(((const struct zname *)a)->name, ((const struct zname *)b)->name);
}

static int scan_zip(const char *path, const struct scan_opts *o, struct scan *s, struct err *e)
{
	struct zipdir zd;
	if (zipdir_read(path, 0, &zd, e) < 0)
		return -1;
	s->archive_bytes = zd.file_size;
	size_t n = zd.n;
	unsigned char *bad = xcalloc(n ? n : 1, 1);   /* entry not to be hashed */
	unsigned char *seen = xcalloc(n ? n : 1, 1);
	struct zname *byname = xmalloc((n ? n : 1) * sizeof *byname);
	char **clean = xcalloc(n ? n : 1, sizeof *clean); /* name without a trailing '/' */
	char **slashed = xcalloc(n ? n : 1, sizeof *slashed); /* name with '\\' as '/' (libarchive's view) */
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		struct zipdir_entry *x = &zd.e[i];
		slashed[i] = backslash_to_slash(x->name);
		byname[i] = (struct zname){slashed[i], i};
		size_t len = x->name_len;
		if (strlen(x->name) != len) {
			rc = issue(s, o, path, x->name, len, e, "name holds a NUL byte");
			bad[i] = 1;
		}
		while (len > 1 && x->name[len - 1] == '/' && x->kind == ZK_DIR)
			len--;
		clean[i] = xstrndup(x->name, len);
		struct err pe;
		if (rc == 0 && !bad[i] && manifest_path_check(clean[i], &pe) < 0) {
			rc = issue(s, o, path, x->name, x->name_len, e, "%s", pe.msg);
			bad[i] = 1;
		}
		if (rc == 0 && !bad[i] && (x->kind == ZK_SYMLINK || x->kind == ZK_OTHER)) {
			rc = issue(s, o, path, x->name, x->name_len, e, "is a %s", zip_kind_name(x->kind));
			bad[i] = 1;
		}
		if (rc == 0 && !bad[i] && x->encrypted) {
			rc = issue(s, o, path, x->name, x->name_len, e, "is encrypted");
			bad[i] = 1;
		}
		if (rc)
			break;
	}
	/* duplicate names (a folder entry "a/" and a file "a" count as the same) */
	if (rc == 0 && n > 1) {
		struct zname *cl = xmalloc(n * sizeof *cl);
		for (size_t i = 0; i < n; i++)
			cl[i] = (struct zname){clean[i], i};
		qsort(cl, n, sizeof *cl, cmp_zname);
		for (size_t i = 1; rc == 0 && i < n; i++) {
			if (strcmp(cl[i - 1].name, cl[i].name) != 0)
				continue;
			if (zd.e[cl[i].idx].kind == ZK_DIR && zd.e[cl[i - 1].idx].kind == ZK_DIR)
				continue; /* the same folder twice is harmless */
			rc = issue(s, o, path, cl[i].name, strlen(cl[i].name), e, "duplicate name");
			bad[cl[i].idx] = bad[cl[i - 1].idx] = 1;
		}
		free(cl);
	}
	qsort(byname, n, sizeof *byname, cmp_zname);

	struct archive *a = NULL;
	char *buf = NULL;
	struct progress pg;
	progress_init(&pg, o->quiet);
	pg.last = now_seconds() - pg.interval + 1.0; /* first line after a second */
	uint64_t done = 0;
	if (rc)
		goto out;
	a = archive_read_new();
	archive_read_support_format_zip_seekable(a);
	if (archive_read_open_filename(a, path, 1 << 20) != ARCHIVE_OK) {
		rc = err_set(e, EXIT_USAGE, "'%s': %s", path, archive_error_string(a));
		goto out;
	}
	buf = xmalloc(CHUNK);
	for (;;) {
		struct archive_entry *ent;
		int r = archive_read_next_header(a, &ent);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			rc = err_set(e, EXIT_USAGE, "'%s': %s", path, archive_error_string(a));
			goto out;
		}
		const char *name = archive_entry_pathname(ent);
		if (!name) {
			rc = err_set(e, EXIT_USAGE, "'%s': an entry without a name", path);
			goto out;
		}
		/* the central-directory entry of that name not seen yet */
		char *lname = backslash_to_slash(name);
		struct zname key = {lname, 0}, *hit = n ? bsearch(&key, byname, n, sizeof *byname, cmp_zname) : NULL;
		while (hit && hit > byname && !strcmp((hit - 1)->name, lname))
			hit--;
		while (hit && hit < byname + n && !strcmp(hit->name, lname) && seen[hit->idx])
			hit++;
		int found = hit && hit < byname + n && !strcmp(hit->name, lname);
		free(lname);
		if (!found) {
			char *q = scan_quote(name, strlen(name));
			rc = err_set(e, EXIT_USAGE, "'%s': entry '%s' is not in the central directory", path, q);
			free(q);
			goto out;
		}
		size_t i = hit->idx;
		struct zipdir_entry *x = &zd.e[i];
		seen[i] = 1;
		if (bad[i] || x->kind == ZK_DIR) {
			archive_read_data_skip(a);
			continue;
		}
		int is_manifest = !strcmp(clean[i], MANIFEST_NAME);
		struct scan_capture *c = capture_slot(s, clean[i]);
		int want_st = o->safetensors_digest && scan_is_safetensors(clean[i]);
		uint64_t keep_max = is_manifest ? MANIFEST_MAX_BYTES : want_st ? SCAN_SAFETENSORS_MAX_BYTES
					 : SCAN_CAPTURE_MAX_BYTES;
		int keeping = is_manifest || c || want_st;
		if (keeping && x->usize > keep_max) {
			rc = issue(s, o, path, x->name, x->name_len, e, "larger than the %llu bytes read into memory",
				   (unsigned long long)keep_max);
			if (rc)
				goto out;
			archive_read_data_skip(a);
			continue;
		}
		/* grown as data arrives: a declared size is not trusted for allocation */
		size_t keep_cap = keeping ? 1 << 16 : 0;
		char *keep = keeping ? xmalloc(keep_cap + 1) : NULL;
		struct sha256 h;
		sha256_init(&h);
		uint64_t got = 0;
		int failed = 0;
		for (;;) {
			la_ssize_t k = archive_read_data(a, buf, CHUNK);
			if (k == 0)
				break;
			if (k < 0) {
				failed = 1;
				rc = issue(s, o, path, x->name, x->name_len, e, "cannot read: %s", archive_error_string(a));
				break;
			}
			if (got + (uint64_t)k > x->usize) {
				failed = 1;
				rc = issue(s, o, path, x->name, x->name_len, e,
					   "holds more than the %llu bytes its header declares", (unsigned long long)x->usize);
				break;
			}
			sha256_update(&h, buf, (size_t)k);
			if (keep) {
				if (got + (size_t)k > keep_cap) {
					while (got + (size_t)k > keep_cap)
						keep_cap *= 2;
					keep = xrealloc(keep, keep_cap + 1);
				}
				memcpy(keep + got, buf, (size_t)k);
			}
			got += (uint64_t)k;
			done += (uint64_t)k;
			progress_update(&pg, 0, "scanning: %.1f MB", (double)done / 1e6);
		}
		uint8_t d[SHA256_LEN];
		sha256_final(&h, d);
		if (!failed && got != x->usize) {
			failed = 1;
			rc = issue(s, o, path, x->name, x->name_len, e, "holds %llu bytes, its header declares %llu",
				   (unsigned long long)got, (unsigned long long)x->usize);
		}
		if (failed) {
			free(keep);
			if (rc)
				goto out;
			continue;
		}
		if (keep)
			keep[got] = '\0';
		if (is_manifest) {
			s->has_manifest = 1;
			s->manifest_data = keep;
			s->manifest_len = (size_t)got;
			continue;
		}
		char hex[65], dig[65] = "";
		sha256_to_hex(d, hex);
		if (want_st) {
			struct st_file f;
			struct err se;
			if (st_open_mem(&f, keep, (size_t)got, clean[i], &se) == 0) {
				st_digest(&f, dig);
				st_close(&f);
			} else if ((rc = issue(s, o, path, x->name, x->name_len, e, "not a valid safetensors file: %s",
					       se.msg))) {
				free(keep);
				goto out;
			}
		}
		manifest_add(&s->actual, clean[i], got, hex, dig[0] ? dig : NULL);
		if (c) {
			c->data = keep;
			c->len = (size_t)got;
		} else {
			free(keep);
		}
	}
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (!seen[i] && !bad[i])
			rc = issue(s, o, path, zd.e[i].name, zd.e[i].name_len, e, "not readable by libarchive");
out:
	progress_done(&pg);
	if (a) {
		archive_read_close(a);
		archive_read_free(a);
	}
	free(buf);
	for (size_t i = 0; i < n; i++) {
		free(clean[i]);
		free(slashed[i]);
	}
	free(clean);
	free(slashed);
	free(byname);
	free(bad);
	free(seen);
	zipdir_release(&zd);
	return rc;
}

int scan_path(const char *path, const struct scan_opts *o, struct scan *s, struct err *e)
{
	memset(s, 0, sizeof *s);
	manifest_init(&s->actual);
	s->n_cap = o->n_capture;
	s->cap = xcalloc(o->n_capture ? o->n_capture : 1, sizeof *s->cap);
	for (size_t i = 0; i < o->n_capture; i++)
		s->cap[i].path = o->capture[i];
	struct stat st;
	if (stat(path, &st) != 0)
		return err_errno(e, errno == ENOENT ? EXIT_USAGE : EXIT_SYS, "cannot open '%s'", path);
	int rc;
	if (S_ISDIR(st.st_mode)) {
		rc = scan_dir(path, o, s, e);
	} else if (S_ISREG(st.st_mode)) {
		s->is_zip = 1;
		rc = scan_zip(path, o, s, e);
	} else {
		rc = err_set(e, EXIT_USAGE, "'%s' is neither a zip file nor a folder", path);
	}
	manifest_sort(&s->actual);
	return rc;
}

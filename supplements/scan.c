/* scan.c: read a supplement zip or folder into its actual manifest (see scan.h).
 *
 * Leaves out: writing anything (pack.c, unpack.c). Reference: supkit-verify(1);
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
#include "lib/utf8.h"
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

struct scan_tree;
static void tree_free(struct scan_tree *t);

void scan_release(struct scan *s)
{
	manifest_release(&s->actual);
	tree_free(s->tree);
	free(s->manifest_data);
	for (size_t i = 0; i < s->n_cap; i++)
		free(s->cap[i].data);
	free(s->cap);
	for (size_t i = 0; i < s->n_extra; i++) {
		free((char *)s->extra[i].path);
		free(s->extra[i].data);
	}
	free(s->extra);
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

/* 1 when capture_if wants path (and it is not a named capture). */
static int extra_wanted(const struct scan *s, const struct scan_opts *o, const char *path)
{
	return o->capture_if && o->capture_if(path) && !capture_slot((struct scan *)s, path) &&
	       strcmp(path, MANIFEST_NAME) != 0;
}

/* Keep data (taken) as an extra capture of path. */
static void extra_keep(struct scan *s, const char *path, char *data, size_t len)
{
	s->extra = xrealloc(s->extra, (s->n_extra + 1) * sizeof *s->extra);
	s->extra[s->n_extra].path = xstrdup(path);
	s->extra[s->n_extra].data = data;
	s->extra[s->n_extra].len = len;
	s->n_extra++;
}

/* ---- folders ---- */

void (*scan_test_hook)(const char *rel);

static void test_hook(const char *rel)
{
	if (scan_test_hook)
		scan_test_hook(rel);
}

/* A folder scan's view of the tree (struct scan_tree in scan.h): every
 * regular file and folder listed, by its name on disk and in NFC, with the
 * device and inode the walk saw. */
struct tree_node {
	char *raw;   /* relative path on disk ("" for the root) */
	char *nfc;   /* the same in NFC (NULL when its name was refused) */
	uint64_t size;
	dev_t dev;
	ino_t ino;
	int is_dir;
	int bad;     /* refused (an issue was listed) */
	size_t dir;  /* the folder holding it: an index into scan_tree.d */
};
struct dir_id {
	dev_t dev;
	ino_t ino;
	size_t parent;  /* index into scan_tree.d; SIZE_MAX for the root */
};
struct scan_tree {
	struct tree_node *v;   /* sorted by nfc once walked (the root first) */
	size_t n, cap;
	struct dir_id *d;      /* every folder walked, d[0] the root (never sorted) */
	size_t nd, dcap;
};

static size_t dir_push(struct scan_tree *t, dev_t dev, ino_t ino, size_t parent)
{
	if (t->nd == t->dcap) {
		t->dcap = t->dcap ? 2 * t->dcap : 16;
		t->d = xrealloc(t->d, t->dcap * sizeof *t->d);
	}
	t->d[t->nd] = (struct dir_id){dev, ino, parent};
	return t->nd++;
}

static struct tree_node *tree_push(struct scan_tree *t)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->v = xrealloc(t->v, t->cap * sizeof *t->v);
	}
	struct tree_node *x = &t->v[t->n++];
	memset(x, 0, sizeof *x);
	return x;
}

static void tree_free(struct scan_tree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].raw);
		free(t->v[i].nfc);
	}
	free(t->v);
	free(t->d);
	free(t);
}

static int changed(const char *root, const char *raw, struct err *e)
{
	char *p = raw[0] ? path_join(root, raw) : xstrdup(root);
	err_set(e, EXIT_SYS, "'%s' changed while it was being read (it is no longer the %s listed)", p,
		raw[0] ? "file or folder" : "folder");
	free(p);
	return -1;
}

/* manifest_path_check on the NFC form of the valid path r */
static int nfc_check(const char *r, struct err *e)
{
	char *n = utf8_nfc(r, strlen(r), NULL);
	int rc = manifest_path_check(n, e);
	free(n);
	return rc;
}

/* Walk the folder open as dfd (raw: its path under the root), by file
 * descriptors only: each sub-folder is opened relative to its parent with
 * O_NOFOLLOW | O_DIRECTORY and must be the folder the listing saw (device
 * and inode), so a folder swapped for a link during the walk is an error,
 * never followed. */
static int walk_dir(int dfd, size_t me, const char *root, const char *raw, int depth, struct scan_tree *t,
		    struct scan *s, const struct scan_opts *o, struct err *e)
{
	if (depth > WALK_MAX_DEPTH)
		return issue(s, o, root, raw, strlen(raw), e, "folders nested deeper than %d", WALK_MAX_DEPTH);
	int d2 = dup(dfd);
	DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
	if (!d) {
		if (d2 >= 0)
			close(d2);
		char *p = raw[0] ? path_join(root, raw) : xstrdup(root);
		err_errno(e, EXIT_SYS, "cannot open folder '%s'", p);
		free(p);
		return -1;
	}
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *r = raw[0] ? xasprintf("%s/%s", raw, de->d_name) : xstrdup(de->d_name);
		struct stat st;
		struct err pe;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			char *p = path_join(root, r);
			rc = err_errno(e, EXIT_SYS, "cannot stat '%s'", p);
			free(p);
		} else if (manifest_path_check(r, &pe) < 0) {
			rc = issue(s, o, root, r, strlen(r), e, "%s", pe.msg);
		} else if (nfc_check(r, &pe) < 0) {
			rc = issue(s, o, root, r, strlen(r), e, "in Unicode NFC: %s", pe.msg);
		} else if (S_ISLNK(st.st_mode)) {
			rc = issue(s, o, root, r, strlen(r), e, "is a symbolic link");
		} else if (S_ISDIR(st.st_mode)) {
			struct tree_node *x = tree_push(t);
			x->raw = xstrdup(r);
			x->nfc = utf8_nfc(r, strlen(r), NULL);
			x->dev = st.st_dev;
			x->ino = st.st_ino;
			x->is_dir = 1;
			x->dir = me;
			test_hook(r);
			int cfd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			struct stat cs;
			if (cfd < 0 && (errno == ELOOP || errno == ENOTDIR || errno == ENOENT))
				rc = changed(root, r, e);
			else if (cfd < 0)
				rc = err_errno(e, EXIT_SYS, "cannot open folder '%s/%s'", root, r);
			else if (fstat(cfd, &cs) != 0 || cs.st_dev != st.st_dev || cs.st_ino != st.st_ino)
				rc = changed(root, r, e);
			else
				rc = walk_dir(cfd, dir_push(t, st.st_dev, st.st_ino, me), root, r, depth + 1, t, s, o,
					      e);
			if (cfd >= 0)
				close(cfd);
		} else if (!S_ISREG(st.st_mode)) {
			rc = issue(s, o, root, r, strlen(r), e, "is a special file (not a regular file or folder)");
		} else {
			struct tree_node *x = tree_push(t);
			x->raw = xstrdup(r);
			x->nfc = utf8_nfc(r, strlen(r), NULL);
			x->size = (uint64_t)st.st_size;
			x->dev = st.st_dev;
			x->ino = st.st_ino;
			x->dir = me;
		}
		free(r);
	}
	if (rc == 0 && errno) {
		char *p = raw[0] ? path_join(root, raw) : xstrdup(root);
		rc = err_errno(e, EXIT_SYS, "cannot read folder '%s'", p);
		free(p);
	}
	closedir(d);
	return rc;
}

static int cmp_node_nfc(const void *a, const void *b)
{
	const struct tree_node *x = a, *y = b;
	if (!x->raw[0] || !y->raw[0]) /* the root first */
		return !y->raw[0] - !x->raw[0];
	int c = strcmp(x->nfc, y->nfc);
	return c ? c : strcmp(x->raw, y->raw);
}

static const struct tree_node *tree_find_nfc(const struct scan_tree *t, const char *nfc)
{
	size_t lo = 1, hi = t->n; /* v[0] is the root */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(t->v[mid].nfc, nfc);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->n && !strcmp(t->v[lo].nfc, nfc) ? &t->v[lo] : NULL;
}

/* Open the file x of the tree walked from root, by file descriptors: every
 * folder on the way opened relative to its parent with O_NOFOLLOW |
 * O_DIRECTORY and the file with O_NOFOLLOW, each the same device and inode
 * as the walk saw. */
static int tree_open(const struct scan_tree *t, const char *root, const struct tree_node *x, int *out,
		     struct err *e)
{
	test_hook(x->raw);
	/* the folders from the root down to x's: chain[0] the root */
	size_t chain[WALK_MAX_DEPTH + 2], depth = 0;
	for (size_t k = x->dir; k != SIZE_MAX && depth < WALK_MAX_DEPTH + 2; k = t->d[k].parent)
		chain[depth++] = k;
	for (size_t a = 0, b = depth - 1; a < b; a++, b--) {
		size_t c = chain[a];
		chain[a] = chain[b];
		chain[b] = c;
	}
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return err_errno(e, EXIT_SYS, "cannot open folder '%s'", root);
	if (fstat(fd, &st) != 0 || st.st_dev != t->d[0].dev || st.st_ino != t->d[0].ino) {
		close(fd);
		return changed(root, "", e);
	}
	char *walked = xstrdup(x->raw);
	size_t k = 1;
	for (char *p = walked, *sl; (sl = strchr(p, '/')); p = sl + 1, k++) {
		*sl = '\0';
		int nfd = k < depth ? openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
		close(fd);
		fd = nfd;
		if (fd < 0 || fstat(fd, &st) != 0 || st.st_dev != t->d[chain[k]].dev || st.st_ino != t->d[chain[k]].ino) {
			if (fd >= 0)
				close(fd);
			changed(root, walked, e);
			free(walked);
			return -1;
		}
		*sl = '/';
	}
	free(walked);
	const char *base = strrchr(x->raw, '/');
	base = base ? base + 1 : x->raw;
	int ffd = openat(fd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(fd);
	if (ffd < 0 && errno != ELOOP && errno != ENOENT) {
		char *p = path_join(root, x->raw);
		err_errno(e, EXIT_SYS, "cannot open '%s'", p);
		free(p);
		return -1;
	}
	if (ffd < 0 || fstat(ffd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != x->dev || st.st_ino != x->ino) {
		if (ffd >= 0)
			close(ffd);
		return changed(root, x->raw, e);
	}
	*out = ffd;
	return 0;
}

int scan_open(const struct scan *s, const char *root, const char *path, int *fd, struct err *e)
{
	const struct tree_node *x = s->tree ? tree_find_nfc(s->tree, path) : NULL;
	if (!x || x->is_dir || x->bad)
		return err_set(e, EXIT_SYS, "'%s': '%s' was not scanned as a file", root, path);
	return tree_open(s->tree, root, x, fd, e);
}

/* Hash the open file fd from where it is, p its name (and keep its bytes
 * when keep != NULL, up to keep_max). */
static int hash_fd(int fd, const char *p, char *hex, uint64_t *size, char **keep, size_t *keep_len,
		   size_t keep_max, int *too_big, struct progress *pg, uint64_t *done, struct err *e)
{
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
	struct scan_tree *t = xcalloc(1, sizeof *t);
	s->tree = t;
	int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (rfd < 0 || fstat(rfd, &st) != 0) {
		if (rfd >= 0)
			close(rfd);
		return err_errno(e, EXIT_SYS, "cannot open folder '%s'", root);
	}
	struct tree_node *top = tree_push(t);
	top->raw = xstrdup("");
	top->nfc = xstrdup("");
	top->dev = st.st_dev;
	top->ino = st.st_ino;
	top->is_dir = 1;
	dir_push(t, st.st_dev, st.st_ino, SIZE_MAX);
	int rc = walk_dir(rfd, 0, root, "", 0, t, s, o, e);
	close(rfd);
	if (rc < 0)
		return -1;
	qsort(t->v, t->n, sizeof *t->v, cmp_node_nfc);
	/* two names the same in NFC (a file and a folder, or two folders, too) */
	for (size_t i = 2; rc == 0 && i < t->n; i++) {
		struct tree_node *a = &t->v[i - 1], *b = &t->v[i];
		if (strcmp(a->nfc, b->nfc) != 0)
			continue;
		a->bad = b->bad = 1;
		rc = issue(s, o, root, b->raw, strlen(b->raw), e, "duplicate name: '%s' is the same name in Unicode NFC",
			   a->raw);
	}
	struct progress pg;
	progress_init(&pg, o->quiet);
	pg.last = now_seconds() - pg.interval + 1.0; /* first line after a second */
	uint64_t done = 0;
	for (size_t i = 1; rc == 0 && i < t->n; i++) {
		struct tree_node *x = &t->v[i];
		if (x->is_dir || x->bad)
			continue;
		const char *rel = x->nfc;
		char hex[65];
		uint64_t size = 0;
		int is_manifest = !strcmp(rel, MANIFEST_NAME);
		struct scan_capture *c = capture_slot(s, rel);
		int xw = !c && !is_manifest && extra_wanted(s, o, rel);
		char *keep = NULL;
		size_t keep_len = 0;
		int too_big = 0, fd = -1;
		size_t keep_max = is_manifest ? MANIFEST_MAX_BYTES : xw ? o->capture_if_max : SCAN_CAPTURE_MAX_BYTES;
		char *p = path_join(root, x->raw);
		rc = tree_open(t, root, x, &fd, e);
		if (rc == 0)
			rc = hash_fd(fd, p, hex, &size, (is_manifest || c || xw) ? &keep : NULL, &keep_len, keep_max,
				     &too_big, &pg, &done, e);
		if (rc == 0 && too_big && !xw)
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
				if (st_open_fd(&f, fd, p, &se) == 0) {
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
			} else if (xw && keep && rc == 0) {
				extra_keep(s, rel, keep, keep_len);
				keep = NULL;
			}
		}
		if (fd >= 0)
			close(fd);
		free(keep);
		free(p);
	}
	progress_done(&pg);
	return rc;
}

/* ---- zip archives ---- */

static int scan_zip(const char *path, const struct scan_opts *o, struct scan *s, struct err *e)
{
	struct zipdir zd;
	if (zipdir_read(path, 0, &zd, e) < 0)
		return -1;
	s->archive_bytes = zd.file_size;
	size_t n = zd.n, k = 0;
	struct zipdir_name *nm;
	zipdir_names(&zd, &nm);
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (nm[i].why)
			rc = issue(s, o, path, zd.e[i].name, zd.e[i].name_len, e, "%s", nm[i].why);

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
	/* libarchive's seekable reader returns the entries in local-header
	 * order: its k-th entry must be zd.by_offset[k], under the same name */
	for (;; k++) {
		struct archive_entry *ent;
		int r = archive_read_next_header(a, &ent);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			rc = err_set(e, EXIT_USAGE, "'%s': %s", path, archive_error_string(a));
			goto out;
		}
		if (k >= n) {
			rc = err_set(e, EXIT_USAGE, "'%s': libarchive reads more entries than the central directory's %zu",
				     path, n);
			goto out;
		}
		size_t i = zd.by_offset[k];
		struct zipdir_entry *x = &zd.e[i];
		const char *clean = nm[i].name;
		if (!clean) {
			archive_read_data_skip(a);
			continue;
		}
		if (!zipdir_same_name(archive_entry_pathname(ent), clean)) {
			const char *ln = archive_entry_pathname(ent);
			char *q = scan_quote(x->name, x->name_len), *lq = ln ? scan_quote(ln, strlen(ln)) : NULL;
			rc = err_set(e, EXIT_USAGE, "'%s': entry '%s': libarchive reads its name as %s%s%s", path, q,
				     lq ? "'" : "", lq ? lq : "unreadable", lq ? "'" : "");
			free(q);
			free(lq);
			goto out;
		}
		if (x->kind == ZK_DIR) {
			archive_read_data_skip(a);
			continue;
		}
		int is_manifest = !strcmp(clean, MANIFEST_NAME);
		struct scan_capture *c = capture_slot(s, clean);
		int want_st = o->safetensors_digest && scan_is_safetensors(clean);
		int xw = !c && !is_manifest && extra_wanted(s, o, clean) && x->usize <= o->capture_if_max;
		uint64_t keep_max = is_manifest ? MANIFEST_MAX_BYTES : want_st ? SCAN_SAFETENSORS_MAX_BYTES
					 : SCAN_CAPTURE_MAX_BYTES;
		int keeping = is_manifest || c || want_st || xw;
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
			la_ssize_t kr = archive_read_data(a, buf, CHUNK);
			if (kr == 0)
				break;
			if (kr < 0) {
				failed = 1;
				rc = issue(s, o, path, x->name, x->name_len, e, "cannot read: %s", archive_error_string(a));
				break;
			}
			if (got + (uint64_t)kr > x->usize) {
				failed = 1;
				rc = issue(s, o, path, x->name, x->name_len, e,
					   "holds more than the %llu bytes its header declares", (unsigned long long)x->usize);
				break;
			}
			sha256_update(&h, buf, (size_t)kr);
			if (keep) {
				if (got + (size_t)kr > keep_cap) {
					while (got + (size_t)kr > keep_cap)
						keep_cap *= 2;
					keep = xrealloc(keep, keep_cap + 1);
				}
				memcpy(keep + got, buf, (size_t)kr);
			}
			got += (uint64_t)kr;
			done += (uint64_t)kr;
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
			if (st_open_mem(&f, keep, (size_t)got, clean, &se) == 0) {
				st_digest(&f, dig);
				st_close(&f);
			} else if ((rc = issue(s, o, path, x->name, x->name_len, e, "not a valid safetensors file: %s",
					       se.msg))) {
				free(keep);
				goto out;
			}
		}
		manifest_add(&s->actual, clean, got, hex, dig[0] ? dig : NULL);
		if (c) {
			c->data = keep;
			c->len = (size_t)got;
		} else if (xw) {
			extra_keep(s, clean, keep, (size_t)got);
		} else {
			free(keep);
		}
	}
	for (; rc == 0 && k < n; k++) {
		size_t i = zd.by_offset[k];
		if (nm[i].name)
			rc = issue(s, o, path, zd.e[i].name, zd.e[i].name_len, e, "not readable by libarchive");
	}
out:
	progress_done(&pg);
	if (a) {
		archive_read_close(a);
		archive_read_free(a);
	}
	free(buf);
	zipdir_names_free(nm, n);
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

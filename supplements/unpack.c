/* unpack.c: safe extraction of a supplement zip (see unpack.h).
 *
 * Two layers: the central directory (zipdir.c) is checked as a whole first,
 * then libarchive streams the data and each entry is checked again from
 * libarchive's own view (type, links, encryption, size) as it is written.
 * Reference: issue 3; libarchive archive_read(3), archive_entry(3).
 */
#include "supplements/unpack.h"

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
#include "supplements/manifest.h"
#include "supplements/scan.h"
#include "supplements/zipdir.h"

#define CHUNK (1u << 20)

void unpack_limits_default(struct unpack_limits *l)
{
	memset(l, 0, sizeof *l);
	l->max_entry = UNPACK_MAX_ENTRY_DEFAULT;
	l->max_total = UNPACK_MAX_TOTAL_DEFAULT;
	l->max_ratio = UNPACK_MAX_RATIO_DEFAULT;
	l->max_entries = UNPACK_MAX_ENTRIES_DEFAULT;
}

struct zname {
	const char *name;
	size_t idx;
};
static int cmp_zname(const void *a, const void *b)
{
	return strcmp(((const struct zname *)a)->name, ((const struct zname *)b)->name);
}

static int refuse(struct err *e, const char *archive, const char *name, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int refuse(struct err *e, const char *archive, const char *name, size_t len, const char *fmt, ...)
{
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	char *q = scan_quote(name, len);
	err_set(e, EXIT_USAGE, "'%s': entry '%s': %s", archive, q, why);
	free(q);
	return -1;
}

/* Check the whole central directory; clean[i] receives entry i's name
 * without a trailing '/'. */
static int check_all(const char *archive, const struct zipdir *zd, const struct unpack_limits *l, char **clean,
		     struct err *e)
{
	uint64_t total = 0;
	for (size_t i = 0; i < zd->n; i++) {
		const struct zipdir_entry *x = &zd->e[i];
		size_t len = x->name_len;
		if (strlen(x->name) != len)
			return refuse(e, archive, x->name, len, "name holds a NUL byte");
		if (len > 1 && x->name[len - 1] == '/' && x->kind != ZK_DIR)
			return refuse(e, archive, x->name, len, "a name ending in '/' that is not a folder");
		while (len > 1 && x->name[len - 1] == '/')
			len--;
		clean[i] = xstrndup(x->name, len);
		struct err pe;
		if (manifest_path_check(clean[i], &pe) < 0)
			return refuse(e, archive, x->name, x->name_len, "%s", pe.msg);
		if (x->kind == ZK_SYMLINK || x->kind == ZK_OTHER)
			return refuse(e, archive, x->name, x->name_len, "is a %s", zip_kind_name(x->kind));
		if (x->encrypted)
			return refuse(e, archive, x->name, x->name_len, "is encrypted");
		if (x->kind == ZK_DIR)
			continue;
		if (x->usize > l->max_entry)
			return refuse(e, archive, x->name, x->name_len, "%llu bytes, more than the limit of %llu (--max-size)",
				      (unsigned long long)x->usize, (unsigned long long)l->max_entry);
		if (x->usize > UNPACK_RATIO_FLOOR && (double)x->usize > l->max_ratio * (double)x->csize)
			return refuse(e, archive, x->name, x->name_len,
				      "compression ratio %.0f:1 passes the limit of %g:1 (--max-ratio)",
				      (double)x->usize / (double)(x->csize ? x->csize : 1), l->max_ratio);
		total += x->usize;
		if (total > l->max_total)
			return refuse(e, archive, x->name, x->name_len,
				      "the entries up to this one hold more than the limit of %llu bytes (--max-total)",
				      (unsigned long long)l->max_total);
	}
	if (zd->n < 2)
		return 0;
	/* duplicates, and names that are a file here and a folder elsewhere */
	struct zname *v = xmalloc(zd->n * sizeof *v);
	for (size_t i = 0; i < zd->n; i++)
		v[i] = (struct zname){clean[i], i};
	qsort(v, zd->n, sizeof *v, cmp_zname);
	int rc = 0;
	for (size_t i = 1; rc == 0 && i < zd->n; i++) {
		if (strcmp(v[i - 1].name, v[i].name) != 0)
			continue;
		const struct zipdir_entry *a = &zd->e[v[i - 1].idx], *b = &zd->e[v[i].idx];
		if (a->kind == ZK_DIR && b->kind == ZK_DIR)
			continue;
		rc = refuse(e, archive, b->name, b->name_len, "duplicate name");
	}
	for (size_t i = 0; rc == 0 && i < zd->n; i++) {
		char *p = xstrdup(clean[i]);
		for (char *s = strchr(p, '/'); s && rc == 0; s = strchr(s + 1, '/')) {
			*s = '\0';
			struct zname key = {p, 0}, *hit = bsearch(&key, v, zd->n, sizeof *v, cmp_zname);
			while (hit && hit > v && !strcmp((hit - 1)->name, p))
				hit--;
			for (; hit && hit < v + zd->n && !strcmp(hit->name, p) && rc == 0; hit++)
				if (zd->e[hit->idx].kind != ZK_DIR)
					rc = refuse(e, archive, zd->e[i].name, zd->e[i].name_len,
						    "'%s' is a file in this archive, not a folder", p);
			*s = '/';
		}
		free(p);
	}
	free(v);
	return rc;
}

/* mkdir each component of rel (a folder path) under root; an existing
 * component must be a real folder (never a link). */
static int make_dirs(const char *root, const char *rel, struct err *e)
{
	char *p = path_join(root, rel);
	size_t skip = strlen(root) + 1;
	for (char *s = p + skip;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		struct stat st;
		if (mkdir(p, 0777) != 0) {
			if (errno != EEXIST || lstat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
				err_errno(e, errno == EEXIST ? EXIT_USAGE : EXIT_SYS, "cannot create folder '%s'", p);
				free(p);
				return -1;
			}
		}
		*s = c;
		if (!c)
			break;
	}
	free(p);
	return 0;
}

static int write_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t w = write(fd, buf, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

static int dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return 0;
	struct dirent *de;
	int empty = 1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = 0;
	closedir(d);
	return empty;
}

static int unpack_zip_at(const char *archive, const char *dir, const struct unpack_limits *l,
			 struct unpack_result *r, struct err *e);

int unpack_zip(const char *archive, const char *dir, const struct unpack_limits *l, struct unpack_result *r,
	       struct err *e)
{
	/* "out/" and "out" are the same target */
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	char *d = xstrndup(dir, n);
	int rc = unpack_zip_at(archive, d, l, r, e);
	free(d);
	return rc;
}

static int unpack_zip_at(const char *archive, const char *dir, const struct unpack_limits *l,
			 struct unpack_result *r, struct err *e)
{
	memset(r, 0, sizeof *r);
	struct stat st;
	if (lstat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return err_set(e, EXIT_USAGE, "'%s' exists and is not a folder", dir);
		if (!dir_is_empty(dir))
			return err_set(e, EXIT_USAGE, "'%s' exists and is not empty", dir);
	} else if (errno != ENOENT) {
		return err_errno(e, EXIT_SYS, "cannot stat '%s'", dir);
	}
	char *parent = path_dirname(dir);
	int parent_ok = stat(parent, &st) == 0 && S_ISDIR(st.st_mode);
	free(parent);
	if (!parent_ok)
		return err_set(e, EXIT_USAGE, "the folder that would hold '%s' does not exist", dir);
	struct zipdir zd;
	if (zipdir_read(archive, l->max_entries, &zd, e) < 0)
		return -1;
	size_t n = zd.n;
	char **clean = xcalloc(n ? n : 1, sizeof *clean);
	struct zname *byname = xmalloc((n ? n : 1) * sizeof *byname);
	unsigned char *seen = xcalloc(n ? n : 1, 1);
	char *tmp = NULL, *buf = NULL;
	struct archive *a = NULL;
	struct progress pg;
	progress_init(&pg, l->quiet);
	pg.last = now_seconds() - pg.interval + 1.0;
	int rc = check_all(archive, &zd, l, clean, e);
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		byname[i] = (struct zname){zd.e[i].name, i};
	qsort(byname, n, sizeof *byname, cmp_zname);
	if (!(tmp = dir_temp_beside(dir, e))) {
		rc = -1;
		goto out;
	}
	a = archive_read_new();
	archive_read_support_format_zip_seekable(a);
	if (archive_read_open_filename(a, archive, 1 << 20) != ARCHIVE_OK) {
		rc = err_set(e, EXIT_USAGE, "'%s': %s", archive, archive_error_string(a));
		goto out;
	}
	buf = xmalloc(CHUNK);
	for (;;) {
		struct archive_entry *ent;
		int h = archive_read_next_header(a, &ent);
		if (h == ARCHIVE_EOF)
			break;
		if (h < ARCHIVE_WARN) {
			rc = err_set(e, EXIT_USAGE, "'%s': %s", archive, archive_error_string(a));
			goto out;
		}
		const char *name = archive_entry_pathname(ent);
		struct zname key = {name ? name : "", 0};
		struct zname *hit = n ? bsearch(&key, byname, n, sizeof *byname, cmp_zname) : NULL;
		if (!name || !hit || seen[hit->idx]) {
			rc = err_set(e, EXIT_USAGE, "'%s': an entry that libarchive reads is not in the central directory once",
				     archive);
			goto out;
		}
		size_t i = hit->idx;
		const struct zipdir_entry *x = &zd.e[i];
		seen[i] = 1;
		mode_t ft = archive_entry_filetype(ent);
		if (archive_entry_hardlink(ent) || archive_entry_symlink(ent)) {
			rc = refuse(e, archive, x->name, x->name_len, "is a link");
			goto out;
		}
		if (archive_entry_is_encrypted(ent)) {
			rc = refuse(e, archive, x->name, x->name_len, "is encrypted");
			goto out;
		}
		if (x->kind == ZK_DIR) {
			if (ft != AE_IFDIR) {
				rc = refuse(e, archive, x->name, x->name_len, "libarchive reads this folder as another type");
				goto out;
			}
			if ((rc = make_dirs(tmp, clean[i], e)) < 0)
				goto out;
			r->dirs++;
			continue;
		}
		if (ft != AE_IFREG) {
			rc = refuse(e, archive, x->name, x->name_len, "is not a regular file");
			goto out;
		}
		char *slash = strrchr(clean[i], '/');
		if (slash) {
			*slash = '\0';
			rc = make_dirs(tmp, clean[i], e);
			*slash = '/';
			if (rc < 0)
				goto out;
		}
		char *p = path_join(tmp, clean[i]);
		int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0666);
		if (fd < 0) {
			rc = err_errno(e, errno == EEXIST ? EXIT_USAGE : EXIT_SYS, "cannot create '%s'", p);
			free(p);
			goto out;
		}
		uint64_t got = 0;
		for (;;) {
			la_ssize_t k = archive_read_data(a, buf, CHUNK);
			if (k == 0)
				break;
			if (k < 0) {
				rc = refuse(e, archive, x->name, x->name_len, "cannot read: %s", archive_error_string(a));
				break;
			}
			if (got + (uint64_t)k > x->usize) {
				rc = refuse(e, archive, x->name, x->name_len,
					    "inflates past the %llu bytes its header declares",
					    (unsigned long long)x->usize);
				break;
			}
			if (write_all(fd, buf, (size_t)k) < 0) {
				rc = err_errno(e, EXIT_SYS, "cannot write '%s'", p);
				break;
			}
			got += (uint64_t)k;
			r->bytes += (uint64_t)k;
			progress_update(&pg, 0, "unpacking: %.1f MB", (double)r->bytes / 1e6);
		}
		if (rc == 0 && got != x->usize)
			rc = refuse(e, archive, x->name, x->name_len, "holds %llu bytes, its header declares %llu",
				    (unsigned long long)got, (unsigned long long)x->usize);
		if (rc == 0 && fsync(fd) != 0)
			rc = err_errno(e, EXIT_SYS, "cannot write '%s'", p);
		if (close(fd) != 0 && rc == 0)
			rc = err_errno(e, EXIT_SYS, "cannot write '%s'", p);
		free(p);
		if (rc < 0)
			goto out;
		r->files++;
	}
	for (size_t i = 0; i < n; i++) {
		if (!seen[i]) {
			rc = refuse(e, archive, zd.e[i].name, zd.e[i].name_len, "not readable by libarchive");
			goto out;
		}
	}
	if (rename(tmp, dir) != 0) {
		rc = err_errno(e, EXIT_SYS, "cannot rename '%s' to '%s'", tmp, dir);
		goto out;
	}
	parent = path_dirname(dir);
	dir_sync(parent);
	free(parent);
	free(tmp);
	tmp = NULL;
out:
	progress_done(&pg);
	if (a) {
		archive_read_close(a);
		archive_read_free(a);
	}
	if (tmp) {
		dir_remove_tree(tmp);
		free(tmp);
	}
	free(buf);
	for (size_t i = 0; i < n; i++)
		free(clean[i]);
	free(clean);
	free(byname);
	free(seen);
	zipdir_release(&zd);
	return rc;
}

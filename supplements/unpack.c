/* unpack.c: safe extraction of a supplement zip (see unpack.h).
 *
 * Two layers: the central directory (zipdir.c) is checked as a whole first,
 * then libarchive streams the data and each entry is checked again from
 * libarchive's own view (its place in the file and its name, type, links,
 * encryption, size) as it is written.
 * Reference: supkit-unpack(1); libarchive archive_read(3), archive_entry(3).
 */
#include "supplements/unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

/* Check the whole central directory before anything is written: every
 * name (zipdir_names), what the file system can hold (name_max bytes in a
 * component, path_room bytes in a name), the limits, and names that are a
 * file here and a folder above another entry. */
static int check_all(const char *archive, const struct zipdir *zd, const struct zipdir_name *nm,
		     const struct unpack_limits *l, long name_max, size_t path_room, struct err *e)
{
	uint64_t total = 0;
	for (size_t i = 0; i < zd->n; i++) {
		const struct zipdir_entry *x = &zd->e[i];
		if (!nm[i].name)
			return refuse(e, archive, x->name, x->name_len, "%s", nm[i].why);
		const char *c = nm[i].name;
		for (const char *p = c; *p;) {
			size_t k = strcspn(p, "/");
			if ((long)k > name_max)
				return refuse(e, archive, x->name, x->name_len,
					      "a name component of %zu bytes, more than the %ld the file system holds", k,
					      name_max);
			p += k + (p[k] == '/');
		}
		if (strlen(c) > path_room)
			return refuse(e, archive, x->name, x->name_len,
				      "its path under the target would be longer than the system's limit of %d bytes",
				      PATH_MAX - 1);
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
	if (total > UNPACK_RATIO_FLOOR && (double)total > l->max_ratio * (double)zd->file_size)
		return err_set(e, EXIT_USAGE,
			       "'%s': its entries hold %llu bytes, %.0f times the archive's %llu bytes, past the limit "
			       "of %g:1 (--max-ratio)", archive, (unsigned long long)total,
			       (double)total / (double)(zd->file_size ? zd->file_size : 1),
			       (unsigned long long)zd->file_size, l->max_ratio);
	if (zd->n < 2)
		return 0;
	/* names that are a file here and a folder above another entry */
	struct zname *v = xmalloc(zd->n * sizeof *v);
	for (size_t i = 0; i < zd->n; i++)
		v[i] = (struct zname){nm[i].name, i};
	qsort(v, zd->n, sizeof *v, cmp_zname);
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < zd->n; i++) {
		char *p = xstrdup(nm[i].name);
		for (char *s = strchr(p, '/'); s && rc == 0; s = strchr(s + 1, '/')) {
			*s = '\0';
			struct zname key = {p, 0}, *hit = bsearch(&key, v, zd->n, sizeof *v, cmp_zname);
			if (hit && zd->e[hit->idx].kind != ZK_DIR)
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

/* 1 empty, 0 not, -1 cannot be read (errno set) */
static int dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return -1;
	struct dirent *de;
	int empty = 1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = 0;
	closedir(d);
	return empty;
}

static mode_t current_umask(void)
{
	mode_t m = umask(0);
	umask(m);
	return m;
}

/* Move every entry of tmp into dir (an empty folder). On failure the
 * entries moved so far are removed again. */
static int move_into(const char *tmp, const char *dir, struct err *e)
{
	DIR *d = opendir(tmp);
	if (!d)
		return err_errno(e, EXIT_SYS, "cannot open folder '%s'", tmp);
	char **moved = NULL;
	size_t n = 0;
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *from = path_join(tmp, de->d_name), *to = path_join(dir, de->d_name);
		struct stat st;
		if (lstat(to, &st) == 0 || errno != ENOENT)
			rc = err_set(e, EXIT_SYS, "cannot move '%s' into '%s': '%s' appeared meanwhile", from, dir, to);
		else if (rename(from, to) != 0)
			rc = err_errno(e, EXIT_SYS, "cannot rename '%s' to '%s'", from, to);
		free(from);
		if (rc == 0) {
			moved = xrealloc(moved, (n + 1) * sizeof *moved);
			moved[n++] = to;
		} else {
			free(to);
		}
	}
	if (rc == 0 && errno)
		rc = err_errno(e, EXIT_SYS, "cannot read folder '%s'", tmp);
	closedir(d);
	for (size_t i = 0; i < n; i++) {
		if (rc < 0)
			dir_remove_tree(moved[i]);
		free(moved[i]);
	}
	free(moved);
	return rc;
}

static int unpack_zip_at(const char *archive, const char *dir, const struct unpack_limits *l,
			 struct unpack_result *r, struct err *e);

int unpack_zip(const char *archive, const char *dir, const struct unpack_limits *l, struct unpack_result *r,
	       struct err *e)
{
	memset(r, 0, sizeof *r);
	if (!dir[0])
		return err_set(e, EXIT_USAGE, "the folder to extract into is named by an empty string");
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
	struct stat st;
	int exists = 0;
	if (lstat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return err_set(e, EXIT_USAGE, "'%s' exists and is not a folder", dir);
		int empty = dir_is_empty(dir);
		if (empty < 0)
			return err_errno(e, EXIT_SYS, "cannot read folder '%s'", dir);
		if (!empty)
			return err_set(e, EXIT_USAGE, "'%s' exists and is not empty", dir);
		exists = 1;
	} else if (errno != ENOENT) {
		return err_errno(e, EXIT_SYS, "cannot stat '%s'", dir);
	}
	char *parent = path_dirname(dir);
	int parent_ok = stat(parent, &st) == 0 && S_ISDIR(st.st_mode);
	errno = 0;
	long name_max = pathconf(exists ? dir : parent, _PC_NAME_MAX);
	if (name_max <= 0)
		name_max = NAME_MAX;
	free(parent);
	if (!parent_ok)
		return err_set(e, EXIT_USAGE, "the folder that would hold '%s' does not exist", dir);
	/* the temporary folder: "DIR.tmp-XXXXXX" beside DIR, or
	 * "DIR/.supkit-unpack-XXXXXX" inside an existing DIR */
	size_t tmp_len = strlen(dir) + (exists ? strlen("/.supkit-unpack-XXXXXX") : strlen(".tmp-XXXXXX"));
	size_t path_room = tmp_len + 2 < PATH_MAX ? (size_t)PATH_MAX - tmp_len - 2 : 0;
	struct zipdir zd;
	if (zipdir_read(archive, l->max_entries, &zd, e) < 0)
		return -1;
	size_t n = zd.n, k = 0;
	struct zipdir_name *nm;
	zipdir_names(&zd, &nm);
	char *tmp = NULL, *buf = NULL;
	struct archive *a = NULL;
	struct progress pg;
	progress_init(&pg, l->quiet);
	pg.last = now_seconds() - pg.interval + 1.0;
	int rc = check_all(archive, &zd, nm, l, name_max, path_room, e);
	if (rc < 0)
		goto out;
	if (exists) {
		tmp = xasprintf("%s/.supkit-unpack-XXXXXX", dir);
		if (!mkdtemp(tmp)) {
			rc = err_errno(e, EXIT_SYS, "cannot create a temporary folder in '%s'", dir);
			free(tmp);
			tmp = NULL;
			goto out;
		}
	} else {
		if (!(tmp = dir_temp_beside(dir, e))) {
			rc = -1;
			goto out;
		}
		/* mkdtemp made it 0700; it becomes DIR: 0777 less the umask */
		if (chmod(tmp, 0777 & ~current_umask()) != 0) {
			rc = err_errno(e, EXIT_SYS, "cannot set the mode of '%s'", tmp);
			goto out;
		}
	}
	a = archive_read_new();
	archive_read_support_format_zip_seekable(a);
	if (archive_read_open_filename(a, archive, 1 << 20) != ARCHIVE_OK) {
		rc = err_set(e, EXIT_USAGE, "'%s': %s", archive, archive_error_string(a));
		goto out;
	}
	buf = xmalloc(CHUNK);
	/* libarchive's seekable reader returns the entries in local-header
	 * order: its k-th entry must be zd.by_offset[k], under the same name */
	for (;; k++) {
		struct archive_entry *ent;
		int h = archive_read_next_header(a, &ent);
		if (h == ARCHIVE_EOF)
			break;
		if (h < ARCHIVE_WARN) {
			rc = err_set(e, EXIT_USAGE, "'%s': %s", archive, archive_error_string(a));
			goto out;
		}
		if (k >= n) {
			rc = err_set(e, EXIT_USAGE, "'%s': libarchive reads more entries than the central directory's %zu",
				     archive, n);
			goto out;
		}
		size_t i = zd.by_offset[k];
		const struct zipdir_entry *x = &zd.e[i];
		const char *clean = nm[i].name, *ln = archive_entry_pathname(ent);
		if (!zipdir_same_name(ln, clean)) {
			char *lq = ln ? scan_quote(ln, strlen(ln)) : NULL;
			rc = refuse(e, archive, x->name, x->name_len, "libarchive reads its name as %s%s%s",
				    lq ? "'" : "", lq ? lq : "unreadable", lq ? "'" : "");
			free(lq);
			goto out;
		}
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
			if ((rc = make_dirs(tmp, clean, e)) < 0)
				goto out;
			r->dirs++;
			continue;
		}
		if (ft != AE_IFREG) {
			rc = refuse(e, archive, x->name, x->name_len, "is not a regular file");
			goto out;
		}
		char *slash = strrchr(clean, '/');
		if (slash) {
			char *up = xstrndup(clean, (size_t)(slash - clean));
			rc = make_dirs(tmp, up, e);
			free(up);
			if (rc < 0)
				goto out;
		}
		char *p = path_join(tmp, clean);
		int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0666);
		if (fd < 0) {
			rc = err_errno(e, errno == EEXIST ? EXIT_USAGE : EXIT_SYS, "cannot create '%s'", p);
			free(p);
			goto out;
		}
		uint64_t got = 0;
		for (;;) {
			la_ssize_t kr = archive_read_data(a, buf, CHUNK);
			if (kr == 0)
				break;
			if (kr < 0) {
				rc = refuse(e, archive, x->name, x->name_len, "cannot read: %s", archive_error_string(a));
				break;
			}
			if (got + (uint64_t)kr > x->usize) {
				rc = refuse(e, archive, x->name, x->name_len,
					    "inflates past the %llu bytes its header declares",
					    (unsigned long long)x->usize);
				break;
			}
			/* the limits on the whole, on what is written */
			uint64_t all = r->bytes + (uint64_t)kr;
			if (all > l->max_total ||
			    (all > UNPACK_RATIO_FLOOR && (double)all > l->max_ratio * (double)zd.file_size)) {
				rc = refuse(e, archive, x->name, x->name_len,
					    "the entries up to this one inflate past the limit of %s",
					    all > l->max_total ? "--max-total" : "--max-ratio on the archive's size");
				break;
			}
			if (write_all(fd, buf, (size_t)kr) < 0) {
				rc = err_errno(e, EXIT_SYS, "cannot write '%s'", p);
				break;
			}
			got += (uint64_t)kr;
			r->bytes += (uint64_t)kr;
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
	if (k < n) {
		size_t i = zd.by_offset[k];
		rc = refuse(e, archive, zd.e[i].name, zd.e[i].name_len, "not readable by libarchive");
		goto out;
	}
	if (exists) {
		if ((rc = move_into(tmp, dir, e)) < 0)
			goto out;
		if (rmdir(tmp) != 0) {
			rc = err_errno(e, EXIT_SYS, "cannot remove '%s'", tmp);
			goto out;
		}
		dir_sync(dir);
	} else {
		if (rename(tmp, dir) != 0) {
			rc = err_errno(e, EXIT_SYS, "cannot rename '%s' to '%s'", tmp, dir);
			goto out;
		}
		char *up = path_dirname(dir);
		dir_sync(up);
		free(up);
	}
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
	zipdir_names_free(nm, n);
	zipdir_release(&zd);
	return rc;
}

/* fileio.c: bounded whole-file reads and atomic writes (see fileio.h). */
#define _GNU_SOURCE
#include "fileio.h"
#include "derivation.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int file_read_fp(FILE *f, const char *name, size_t max_bytes, char **out, size_t *len, struct err *e)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = xmalloc(cap + 1);
	for (;;) {
		if (n == cap) {
			cap *= 2;
			buf = xrealloc(buf, cap + 1);
		}
		size_t want = cap - n;
		if (max_bytes && n + want > max_bytes + 1)
			want = max_bytes + 1 - n;
		size_t got = fread(buf + n, 1, want, f);
		n += got;
		if (max_bytes && n > max_bytes) {
			free(buf);
			return err_set(e, EXIT_USAGE, "'%s' is larger than the limit of %zu bytes", name, max_bytes);
		}
		if (got < want)
			break;
	}
	if (ferror(f)) {
		free(buf);
		return err_set(e, EXIT_SYS, "cannot read '%s'", name);
	}
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

int file_read_all(const char *path, size_t max_bytes, char **out, size_t *len, struct err *e)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return err_errno(e, EXIT_USAGE, "cannot open '%s'", path);
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		return err_set(e, EXIT_USAGE, "'%s' is a directory", path);
	}
	int rc = file_read_fp(f, path, max_bytes, out, len, e);
	fclose(f);
	if (rc == 0)
		deriv_log_file(path);
	return rc;
}

char *path_dirname(const char *path)
{
	const char *s = strrchr(path, '/');
	if (!s)
		return xstrdup(".");
	if (s == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(s - path));
}

const char *path_basename(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

char *path_join(const char *a, const char *b)
{
	size_t la = strlen(a);
	if (la == 0)
		return xstrdup(b);
	return xasprintf("%s%s%s", a, a[la - 1] == '/' ? "" : "/", b);
}

int path_relative_to(const char *dir, const char *path, char **out, struct err *e)
{
	char rdir[PATH_MAX], rparent[PATH_MAX];
	if (!realpath(dir, rdir))
		return err_errno(e, EXIT_USAGE, "cannot resolve '%s'", dir);
	const char *base = path_basename(path);
	char *parent = path_dirname(path);
	int ok = realpath(parent, rparent) != NULL;
	free(parent);
	if (!ok)
		return err_errno(e, EXIT_USAGE, "cannot resolve the folder of '%s'", path);
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return err_set(e, EXIT_USAGE, "'%s' does not name a file", path);
	char *full = path_join(rparent, base);
	size_t n = strlen(rdir);
	if (n == 1) /* "/" */
		n = 0;
	if (strncmp(full, rdir, n) != 0 || full[n] != '/') {
		err_set(e, EXIT_USAGE, "'%s' is not inside '%s'", path, dir);
		free(full);
		return -1;
	}
	*out = xstrdup(full + n + 1);
	free(full);
	return 0;
}

int dir_sync(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return -1;
	int r = fsync(fd);
	close(fd);
	return r;
}

int atomic_open(struct atomic_file *af, const char *path, struct err *e)
{
	memset(af, 0, sizeof *af);
	af->path = xstrdup(path);
	af->tmp_path = xasprintf("%s.tmp-XXXXXX", path);
	int fd = mkstemp(af->tmp_path);
	if (fd < 0) {
		err_errno(e, EXIT_SYS, "cannot create a temporary file beside '%s'", path);
		free(af->path);
		free(af->tmp_path);
		memset(af, 0, sizeof *af);
		return -1;
	}
	/* mkstemp makes 0600; outputs are ordinary files (0666 & ~umask). */
	mode_t um = umask(0);
	umask(um);
	fchmod(fd, 0666 & ~um);
	af->fp = fdopen(fd, "wb");
	if (!af->fp) {
		close(fd);
		unlink(af->tmp_path);
		free(af->path);
		free(af->tmp_path);
		memset(af, 0, sizeof *af);
		return err_errno(e, EXIT_SYS, "cannot open '%s'", path);
	}
	return 0;
}

void atomic_abort(struct atomic_file *af)
{
	if (af->fp)
		fclose(af->fp);
	if (af->tmp_path)
		unlink(af->tmp_path);
	free(af->path);
	free(af->tmp_path);
	memset(af, 0, sizeof *af);
}

int atomic_commit(struct atomic_file *af, struct err *e)
{
	int bad = fflush(af->fp) != 0 || ferror(af->fp);
	if (!bad)
		bad = fsync(fileno(af->fp)) != 0;
	if (fclose(af->fp) != 0)
		bad = 1;
	af->fp = NULL;
	if (bad) {
		err_errno(e, EXIT_SYS, "cannot write '%s'", af->path);
		atomic_abort(af);
		return -1;
	}
	if (rename(af->tmp_path, af->path) != 0) {
		err_errno(e, EXIT_SYS, "cannot rename into '%s'", af->path);
		atomic_abort(af);
		return -1;
	}
	char *dir = path_dirname(af->path);
	dir_sync(dir);
	free(dir);
	free(af->path);
	free(af->tmp_path);
	memset(af, 0, sizeof *af);
	return 0;
}

int file_write_atomic(const char *path, const void *data, size_t len, struct err *e)
{
	struct atomic_file af;
	if (atomic_open(&af, path, e) < 0)
		return -1;
	if (len && fwrite(data, 1, len, af.fp) != len) {
		err_errno(e, EXIT_SYS, "cannot write '%s'", path);
		atomic_abort(&af);
		return -1;
	}
	return atomic_commit(&af, e);
}

char *dir_temp_beside(const char *path, struct err *e)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	char *base = xstrndup(path, n);
	char *t = xasprintf("%s.tmp-XXXXXX", base);
	free(base);
	if (!mkdtemp(t)) {
		err_errno(e, EXIT_SYS, "cannot create a temporary folder beside '%s'", path);
		free(t);
		return NULL;
	}
	return t;
}

int dir_remove_tree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	struct dirent *de;
	int r = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *p = path_join(path, de->d_name);
		if (dir_remove_tree(p) != 0)
			r = -1;
		free(p);
	}
	closedir(d);
	if (rmdir(path) != 0)
		r = -1;
	return r;
}

int dir_make_all(const char *path, struct err *e)
{
	char *p = xstrdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0777) != 0 && errno != EEXIST) {
			err_errno(e, EXIT_SYS, "cannot create folder '%s'", p);
			free(p);
			return -1;
		}
		*s = '/';
	}
	if (mkdir(p, 0777) != 0 && errno != EEXIST) {
		err_errno(e, EXIT_SYS, "cannot create folder '%s'", p);
		free(p);
		return -1;
	}
	free(p);
	return 0;
}

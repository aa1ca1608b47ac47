/* stream.c: "-" for standard input and output (see stream.h). */
#define _GNU_SOURCE
#include "stream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "derivation.h"
#include "fileio.h"

/* standard input has been read (it cannot be read twice) */
static int stdin_taken;

int stream_is_std(const char *path)
{
	return path && !strcmp(path, "-");
}

static int take_stdin(struct err *e)
{
	if (stdin_taken)
		return err_set(e, EXIT_USAGE, "'-' (standard input) given twice: it can be read once");
	stdin_taken = 1;
	return 0;
}

int stream_read_all(const char *path, size_t max_bytes, char **out, size_t *len, struct err *e)
{
	if (!stream_is_std(path))
		return file_read_all(path, max_bytes, out, len, e);
	if (take_stdin(e) < 0)
		return -1;
	deriv_log_file("-");
	return file_read_fp(stdin, "-", max_bytes, out, len, e);
}

int stream_write_all(const char *path, const void *data, size_t len, struct err *e)
{
	if (path && !stream_is_std(path))
		return file_write_atomic(path, data, len, e);
	if ((len && fwrite(data, 1, len, stdout) != len) || fflush(stdout) != 0)
		return err_errno(e, EXIT_SYS, "cannot write to standard output");
	return 0;
}

int stream_stdout_binary(const char *what, const char *hint, struct err *e)
{
	if (!isatty(STDOUT_FILENO))
		return 0;
	return err_set(e, EXIT_USAGE, "refusing to write %s to a terminal (redirect standard output%s)", what,
		       hint ? hint : "");
}

static const char *tmp_root(void)
{
	const char *t = getenv("TMPDIR");
	return t && *t ? t : "/tmp";
}

int stream_spool_stdin(struct stream_spool *s, const char *what, struct err *e)
{
	memset(s, 0, sizeof *s);
	s->fd = -1;
	if (isatty(STDIN_FILENO))
		return err_set(e, EXIT_USAGE, "refusing to read %s from a terminal (redirect standard input)",
			       what);
	if (take_stdin(e) < 0)
		return -1;
	char *name = xasprintf("%s/supkit-stdin-XXXXXX", tmp_root());
	int fd = mkstemp(name);
	if (fd < 0) {
		err_errno(e, EXIT_SYS, "cannot create a temporary file in '%s' for standard input", tmp_root());
		free(name);
		return -1;
	}
	unlink(name);
	free(name);
	char buf[1 << 16];
	for (;;) {
		ssize_t r = read(STDIN_FILENO, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err_errno(e, EXIT_SYS, "cannot read '-' (standard input)");
			close(fd);
			return -1;
		}
		if (r == 0)
			break;
		for (ssize_t off = 0; off < r;) {
			ssize_t w = write(fd, buf + off, (size_t)(r - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				err_errno(e, EXIT_SYS, "cannot spool standard input into '%s'", tmp_root());
				close(fd);
				return -1;
			}
			off += w;
		}
		s->bytes += (unsigned long long)r;
	}
	if (lseek(fd, 0, SEEK_SET) != 0) {
		err_errno(e, EXIT_SYS, "cannot rewind the spooled standard input");
		close(fd);
		return -1;
	}
	s->fd = fd;
	snprintf(s->path, sizeof s->path, "/proc/self/fd/%d", fd);
	return 0;
}

void stream_spool_close(struct stream_spool *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

char *stream_temp_dir(struct err *e)
{
	char *d = xasprintf("%s/supkit-XXXXXX", tmp_root());
	if (!mkdtemp(d)) {
		err_errno(e, EXIT_SYS, "cannot create a temporary folder in '%s'", tmp_root());
		free(d);
		return NULL;
	}
	return d;
}

int stream_copy_to_stdout(const char *path, struct err *e)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return err_errno(e, EXIT_SYS, "cannot open '%s'", path);
	char buf[1 << 16];
	size_t n;
	int rc = 0;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		if (fwrite(buf, 1, n, stdout) != n) {
			rc = err_errno(e, EXIT_SYS, "cannot write to standard output");
			break;
		}
	if (rc == 0 && ferror(f))
		rc = err_set(e, EXIT_SYS, "cannot read '%s'", path);
	if (rc == 0 && fflush(stdout) != 0)
		rc = err_errno(e, EXIT_SYS, "cannot write to standard output");
	fclose(f);
	return rc;
}

void stream_err_rename(struct err *e, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to);
	if (!fl)
		return;
	char out[ERR_MSG_MAX];
	size_t o = 0;
	for (const char *p = e->msg; *p && o + 1 < sizeof out;) {
		if (!strncmp(p, from, fl) && o + tl + 1 < sizeof out) {
			memcpy(out + o, to, tl);
			o += tl;
			p += fl;
		} else {
			out[o++] = *p++;
		}
	}
	out[o] = 0;
	memcpy(e->msg, out, o + 1);
}

/* test_stream.c: lib/stream.c, "-" for standard input and output: a read of
 * "-" takes standard input once (a second is refused), a spool of standard
 * input is a nameless temporary file whose /proc path reads the same bytes
 * and leaves nothing in TMPDIR, writes to NULL or "-" go to standard output,
 * and messages about a spool are renamed to what the user gave. Each case
 * that touches standard input or output runs in a child (fork) with those
 * descriptors on files, since standard input can be taken once a process.
 * The terminal refusals are covered by tests/cli/stdio.sh (script(1)). */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "lib/stream.h"
#include "t.h"

/* A temporary file holding text; its path in buf (>= 64 bytes). */
static void temp_with(char *buf, const char *text)
{
	strcpy(buf, "/tmp/supkit_test_stream_XXXXXX");
	int fd = mkstemp(buf);
	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			perror("write");
		close(fd);
	}
}

/* Run fn in a child with stdin from in_path (or none); its exit status. */
static int in_child(const char *in_path, int (*fn)(void))
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (in_path) {
			int fd = open(in_path, O_RDONLY);
			dup2(fd, 0);
			close(fd);
		}
		_exit(fn());
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

static int read_twice(void)
{
	struct err e = {0};
	char *d;
	size_t n;
	if (stream_read_all("-", 0, &d, &n, &e) < 0 || n != 11 || memcmp(d, "hello\nworld", 11))
		return 1;
	free(d);
	if (stream_read_all("-", 0, &d, &n, &e) == 0)
		return 2;                       /* a second "-" must be refused */
	if (e.code != EXIT_USAGE || !strstr(e.msg, "given twice"))
		return 3;
	return 0;
}

static int read_limit(void)
{
	struct err e = {0};
	char *d;
	size_t n;
	if (stream_read_all("-", 5, &d, &n, &e) == 0)
		return 1;
	return strstr(e.msg, "'-' is larger than the limit of 5 bytes") ? 0 : 2;
}

TEST(stream_read_stdin_once)
{
	char p[64];
	temp_with(p, "hello\nworld");
	CHECK(in_child(p, read_twice) == 0);
	CHECK(in_child(p, read_limit) == 0);
	unlink(p);
	/* a path other than "-" is a file, as file_read_all reads it */
	struct err e = {0};
	char *d;
	size_t n;
	CHECK(stream_read_all("/nonexistent/x", 0, &d, &n, &e) < 0);
	CHECK(strstr(e.msg, "cannot open '/nonexistent/x'") != NULL);
	CHECK(stream_is_std("-") && !stream_is_std("--") && !stream_is_std("./-") && !stream_is_std(NULL));
}

static char spool_dir[64];

/* the number of entries in spool_dir, . and .. left out */
static int dir_entries(void)
{
	DIR *d = opendir(spool_dir);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

static int spool_one(void)
{
	struct err e = {0};
	struct stream_spool s;
	setenv("TMPDIR", spool_dir, 1);
	if (stream_spool_stdin(&s, "a zip", &e) < 0)
		return 1;
	if (dir_entries() != 0)
		return 2;                       /* unlinked at once: no name in TMPDIR */
	char *d;
	size_t n;
	for (int k = 0; k < 2; k++) {           /* opened twice: each from the start */
		if (file_read_all(s.path, 0, &d, &n, &e) < 0 || n != 6 || memcmp(d, "PK\x05\x06zz", 6))
			return 3;
		free(d);
	}
	if (s.bytes != 6 || strncmp(s.path, "/proc/self/fd/", 14))
		return 4;
	stream_spool_close(&s);
	if (stream_spool_stdin(&s, "a zip", &e) == 0 || !strstr(e.msg, "given twice"))
		return 5;
	return 0;
}

TEST(stream_spool_is_nameless)
{
	char p[64];
	temp_with(p, "PK\x05\x06zz");
	strcpy(spool_dir, "/tmp/supkit_test_spool_XXXXXX");
	CHECK(mkdtemp(spool_dir) != NULL);
	CHECK(in_child(p, spool_one) == 0);
	CHECK(dir_entries() == 0);
	rmdir(spool_dir);
	unlink(p);
}

static char out_path[64];

static int write_std(void)
{
	int fd = open(out_path, O_WRONLY | O_TRUNC);
	dup2(fd, 1);
	close(fd);
	struct err e = {0};
	if (stream_write_all(NULL, "ab", 2, &e) < 0 || stream_write_all("-", "cd", 2, &e) < 0 ||
	    stream_write_all("-", "", 0, &e) < 0)
		return 1;
	return 0;
}

TEST(stream_write_stdout)
{
	temp_with(out_path, "");
	CHECK(in_child(NULL, write_std) == 0);
	char *d;
	size_t n;
	struct err e = {0};
	CHECK(file_read_all(out_path, 0, &d, &n, &e) == 0 && n == 4 && !memcmp(d, "abcd", 4));
	free(d);
	/* a named path is written atomically, as file_write_atomic does */
	CHECK(stream_write_all(out_path, "xyz", 3, &e) == 0);
	CHECK(file_read_all(out_path, 0, &d, &n, &e) == 0 && n == 3 && !memcmp(d, "xyz", 3));
	free(d);
	unlink(out_path);
}

TEST(stream_err_rename_names_what_was_given)
{
	struct err e;
	err_set(&e, EXIT_USAGE, "'%s': not a zip (no end record in '%s')", "/proc/self/fd/3", "/proc/self/fd/3");
	stream_err_rename(&e, "/proc/self/fd/3", "-");
	CHECK_STREQ(e.msg, "'-': not a zip (no end record in '-')");
	err_set(&e, EXIT_USAGE, "'a.zip': fine");
	stream_err_rename(&e, "/proc/self/fd/3", "-");
	CHECK_STREQ(e.msg, "'a.zip': fine");
	err_set(&e, EXIT_USAGE, "/tmp/x/stdout.zip");
	stream_err_rename(&e, "/tmp/x/stdout.zip", "-");
	CHECK_STREQ(e.msg, "-");
	/* a long replacement stops at the message's size, still NUL-terminated */
	char big[ERR_MSG_MAX];
	memset(big, 'y', sizeof big - 1);
	big[sizeof big - 1] = 0;
	err_set(&e, EXIT_USAGE, "xxxxxxxxxx");
	stream_err_rename(&e, "x", big);
	CHECK(strlen(e.msg) < ERR_MSG_MAX);
}

int main(void)
{
	RUN(stream_read_stdin_once);
	RUN(stream_spool_is_nameless);
	RUN(stream_write_stdout);
	RUN(stream_err_rename_names_what_was_given);
	return t_done();
}

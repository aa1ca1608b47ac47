/* stream.h: "-" for standard input or output, where a tool takes a stream.
 *
 * A path operand of "-" means standard input (an input) or standard output
 * (an output), as POSIX utilities take it. Tools that need random access to
 * an input (a zip's central directory) spool standard input into a private
 * temporary file first; tools that write a folder, or read one or a
 * memory-mapped file, refuse "-" with one line (cli_no_stdin in cli.h).
 * Standard input can be read once: a second "-" in one command is refused.
 * Binary output is never written to a terminal.
 *
 * Leaves out: named pipes and /dev/stdin (they are ordinary paths here).
 * Reference: POSIX.1-2017 XBD 12.2 Utility Syntax Guidelines, guideline 13.
 */
#ifndef SUPKIT_STREAM_H
#define SUPKIT_STREAM_H

#include <stddef.h>
#include "err.h"

/* 1 when path is "-". */
int stream_is_std(const char *path);

/* file_read_all (fileio.h), or all of standard input when path is "-"
 * (messages name it '-'). */
int stream_read_all(const char *path, size_t max_bytes, char **out, size_t *len, struct err *e);

/* Write len bytes to path atomically (file_write_atomic), or to standard
 * output when path is NULL or "-". */
int stream_write_all(const char *path, const void *data, size_t len, struct err *e);

/* 0 when standard output is not a terminal; otherwise -1 (EXIT_USAGE) with
 * "refusing to write <what> to a terminal (redirect standard output<hint>)". */
int stream_stdout_binary(const char *what, const char *hint, struct err *e);

/* Standard input copied into a fresh temporary file under $TMPDIR (else
 * /tmp), created 0600 and unlinked at once, so that nothing is left behind
 * even when the process is killed. On success s->fd holds it open and s->path
 * ("/proc/self/fd/N") opens it again; release with stream_spool_close.
 * A terminal on standard input is refused (EXIT_USAGE, "refusing to read
 * <what> from a terminal"). */
struct stream_spool {
	int fd;
	char path[40];
	unsigned long long bytes;
};
int stream_spool_stdin(struct stream_spool *s, const char *what, struct err *e);
void stream_spool_close(struct stream_spool *s);

/* A fresh private folder under $TMPDIR (else /tmp), mode 0700, for output
 * that is made whole before it goes to standard output; caller removes it
 * (dir_remove_tree) and frees the name. */
char *stream_temp_dir(struct err *e);

/* Copy the file at path to standard output, then flush it. */
int stream_copy_to_stdout(const char *path, struct err *e);

/* Replace every occurrence of from in e's message by to (so that a message
 * about a spooled or temporary file names what the user gave, "-"). */
void stream_err_rename(struct err *e, const char *from, const char *to);

#endif

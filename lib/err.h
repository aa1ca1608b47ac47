/* err.h: error values and exit statuses shared by every supkit tool.
 *
 * Library functions return 0 on success or -1 on failure and fill a struct err
 * (status code + one-line message). Only a command (cmd_*.c) turns the code
 * into an exit status. Messages follow git's style: lower case, no full stop,
 * the subject quoted: "cannot open 'x.diff': No such file or directory".
 *
 * Out of memory is decided once, here: the x* allocators abort with the size,
 * so callers do not check allocations.
 */
#ifndef SUPKIT_ERR_H
#define SUPKIT_ERR_H

#include <stddef.h>
#include <stdarg.h>

/* Exit statuses (documented in supkit(1), EXIT STATUS). */
enum exit_code {
	EXIT_OK = 0,     /* success, every check passed */
	EXIT_CHECK = 1,  /* a check failed (mismatch, inconsistent figure) */
	EXIT_USAGE = 2,  /* bad usage or bad input data (refused input) */
	EXIT_SYS = 4     /* system or environment error (I/O, missing library) */
};

#define ERR_MSG_MAX 1024

struct err {
	int code;                 /* an enum exit_code; 0 when no error */
	char msg[ERR_MSG_MAX];    /* one line, no trailing newline */
};

/* Set e (may be NULL) to code and a printf-style message; returns -1.
 * Control bytes in the result (from quoted untrusted names) are written as
 * \xNN, so a message is always one line. */
int err_set(struct err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int err_setv(struct err *e, int code, const char *fmt, va_list ap);
/* Like err_set, appending ": strerror(errno)" using the current errno. */
int err_errno(struct err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Prefix the existing message with "prefix: " (for context such as a file name). */
void err_prefix(struct err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void err_clear(struct err *e);

/* Print "<prog>: <msg>" on stderr. */
void err_print(const char *prog, const struct err *e);
/* err_print(err_prog, e), then the exit status it calls for: e->code, or
 * EXIT_SYS when e has none. */
int err_report(const struct err *e);
/* Print "<prog>: <fmt...>" on stderr and exit with code. */
void die(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
/* Program name used by die() and warn(); set once by main via cli_set_prog. */
extern const char *err_prog;
void warnx_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Allocation that never returns NULL: aborts with the size on failure. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a fresh heap string. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

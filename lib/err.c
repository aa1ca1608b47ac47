/* err.c: error values, die(), and the never-NULL allocators (see err.h). */
#include "err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *err_prog = "supkit";

/* Messages stay one line whatever they quote (file names, run names and
 * keys come from untrusted input): control bytes become \xNN. */
static void escape_controls(char *msg, size_t cap)
{
	char out[ERR_MSG_MAX];
	size_t o = 0;
	for (const unsigned char *c = (const unsigned char *)msg; *c && o + 5 < sizeof out; c++) {
		if (*c < 0x20 || *c == 0x7f)
			o += (size_t)snprintf(out + o, sizeof out - o, "\\x%02x", *c);
		else
			out[o++] = (char)*c;
	}
	out[o] = '\0';
	snprintf(msg, cap, "%s", out);
}

int err_setv(struct err *e, int code, const char *fmt, va_list ap)
{
	if (!e)
		return -1;
	e->code = code;
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	escape_controls(e->msg, sizeof e->msg);
	return -1;
}

int err_set(struct err *e, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_setv(e, code, fmt, ap);
	va_end(ap);
	return -1;
}

int err_errno(struct err *e, int code, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	if (!e)
		return -1;
	va_start(ap, fmt);
	err_setv(e, code, fmt, ap);
	va_end(ap);
	size_t n = strlen(e->msg);
	snprintf(e->msg + n, sizeof e->msg - n, ": %s", strerror(saved));
	escape_controls(e->msg, sizeof e->msg);
	return -1;
}

void err_prefix(struct err *e, const char *fmt, ...)
{
	char pre[ERR_MSG_MAX], old[ERR_MSG_MAX];
	va_list ap;
	if (!e)
		return;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof pre, fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof old);
	size_t lp = strnlen(pre, sizeof pre), lo = strnlen(old, sizeof old);
	char joined[2 * ERR_MSG_MAX + 2];
	memcpy(joined, pre, lp);
	memcpy(joined + lp, ": ", 2);
	memcpy(joined + lp + 2, old, lo);
	joined[lp + 2 + lo] = '\0';
	snprintf(e->msg, sizeof e->msg, "%.*s", ERR_MSG_MAX - 1, joined);
	escape_controls(e->msg, sizeof e->msg);
}

void err_clear(struct err *e)
{
	if (e) {
		e->code = 0;
		e->msg[0] = '\0';
	}
}

void err_print(const char *prog, const struct err *e)
{
	fprintf(stderr, "%s: %s\n", prog ? prog : err_prog, e->msg[0] ? e->msg : "unknown error");
}

int err_report(const struct err *e)
{
	err_print(err_prog, e);
	return e->code ? e->code : EXIT_SYS;
}

/* "<prog>: <message>\n" on stderr: die() and warnx_(). */
static void warn_v(const char *fmt, va_list ap)
{
	struct err e;
	err_setv(&e, 0, fmt, ap); /* control bytes escaped: one line */
	fprintf(stderr, "%s: %s\n", err_prog, e.msg);
}

void die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	warn_v(fmt, ap);
	va_end(ap);
	exit(code);
}

void warnx_(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	warn_v(fmt, ap);
	va_end(ap);
}

static void oom(size_t n)
{
	fprintf(stderr, "%s: out of memory allocating %zu bytes\n", err_prog, n);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom(n * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom(n);
	return q;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap, ap2;
	va_start(ap, fmt);
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	char *p = xmalloc((size_t)n + 1);
	vsnprintf(p, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	return p;
}

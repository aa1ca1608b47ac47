/* progress.c: one updating line on a terminal, periodic lines otherwise. */
#define _POSIX_C_SOURCE 200809L
#include "progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void progress_init(struct progress *p, int quiet)
{
	p->tty = isatty(STDERR_FILENO);
	p->quiet = quiet;
	p->interval = p->tty ? 0.1 : 10.0;
	p->last = -1e30;
	p->dirty = 0;
}

void progress_update(struct progress *p, int force, const char *fmt, ...)
{
	if (p->quiet)
		return;
	double t = now_seconds();
	if (!force && t - p->last < p->interval)
		return;
	p->last = t;
	va_list ap;
	va_start(ap, fmt);
	if (p->tty) {
		fputs("\r\033[K", stderr);
		vfprintf(stderr, fmt, ap);
		p->dirty = 1;
	} else {
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
	fflush(stderr);
}

void progress_done(struct progress *p)
{
	if (p->tty && p->dirty && !p->quiet)
		fputc('\n', stderr);
	p->dirty = 0;
}

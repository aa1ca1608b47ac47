/* progress.c: one updating line on a terminal, periodic lines otherwise, with
 * the rate, share done and time left of sized work (see progress.h). */
#define _POSIX_C_SOURCE 200809L
#include "progress.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
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
	memset(p, 0, sizeof *p);
	p->tty = isatty(STDERR_FILENO);
	p->quiet = quiet;
	p->interval = p->tty ? 0.1 : 10.0;
	const char *s = getenv("SUPKIT_PROGRESS_INTERVAL");
	if (s && *s) {
		char *end;
		double v = strtod(s, &end);
		if (!*end && isfinite(v) && v >= 0) {
			p->interval = v;
			p->fixed = 1;
		}
	}
	p->last = -1e30;
	p->clock = now_seconds;
	p->out = stderr;
	p->start = p->clock();
}

void progress_start(struct progress *p, double total, double done, const char *unit)
{
	p->start = p->clock();
	p->base = done;
	p->total = total > 0 ? total : 0;
	p->unit = unit;
}

void progress_estimate(const struct progress *p, double done, double now, double *rate, double *eta)
{
	double dt = now - p->start, dw = done - p->base;
	*rate = dt > 0 && dw > 0 ? dw / dt : 0;
	*eta = -1;
	if (*rate > 0 && p->total > 0)
		*eta = done >= p->total ? 0 : (p->total - done) / *rate;
}

void progress_format_eta(double s, char *buf, size_t n)
{
	if (!(s >= 0)) {
		snprintf(buf, n, "--:--");
		return;
	}
	if (s > 1e9)
		s = 1e9;
	long long t = (long long)ceil(s);
	long long h = t / 3600, m = t / 60 % 60, sec = t % 60;
	if (h)
		snprintf(buf, n, "%lld:%02lld:%02lld", h, m, sec);
	else
		snprintf(buf, n, "%lld:%02lld", m, sec);
}

/* v (a rate, units a second) with three significant digits, whole above 100. */
static void fmt_rate(double v, char *buf, size_t n)
{
	if (v >= 100)
		snprintf(buf, n, "%.0f", v);
	else
		snprintf(buf, n, "%.3g", v);
}

/* The decimal unit for byte counts up to v: its divisor and name. */
static double byte_scale(double v, const char **name)
{
	if (v >= 1e9) {
		*name = "GB";
		return 1e9;
	}
	if (v >= 1e6) {
		*name = "MB";
		return 1e6;
	}
	if (v >= 1e3) {
		*name = "KB";
		return 1e3;
	}
	*name = "B";
	return 1;
}

void progress_fields(const struct progress *p, double done, double now, char *buf, size_t n)
{
	double rate, eta;
	progress_estimate(p, done, now, &rate, &eta);
	char r[32], t[32], amount[96] = "", share[16] = "";
	progress_format_eta(eta, t, sizeof t);
	if (p->total > 0) {
		double f = done / p->total;
		int pct = (int)floor(100 * (f < 0 ? 0 : f > 1 ? 1 : f));
		snprintf(share, sizeof share, "%d%%  ", pct);
	}
	if (!p->unit) {
		const char *u, *ru;
		double s = byte_scale(p->total > 0 ? p->total : done, &u);
		const char *fmt = s > 1 ? "%.1f" : "%.0f";
		char d[32], tot[32];
		snprintf(d, sizeof d, fmt, done / s);
		snprintf(tot, sizeof tot, fmt, p->total / s);
		if (p->total > 0)
			snprintf(amount, sizeof amount, "%s/%s %s  ", d, tot, u);
		else
			snprintf(amount, sizeof amount, "%s %s  ", d, u);
		double rs = byte_scale(rate, &ru);
		fmt_rate(rate / rs, r, sizeof r);
		snprintf(buf, n, "%s%s%s %s/s%s%s", amount, share, r, ru, p->total > 0 ? "  ETA " : "",
			 p->total > 0 ? t : "");
	} else {
		fmt_rate(rate, r, sizeof r);
		snprintf(buf, n, "%s%s %s/s%s%s", share, r, p->unit, p->total > 0 ? "  ETA " : "",
			 p->total > 0 ? t : "");
	}
}

/* Whether a line is due at time t; marks it printed when so. */
static int due(struct progress *p, int force, double t)
{
	if (p->quiet)
		return 0;
	if (!force && (t - p->last < p->interval || (!p->fixed && t - p->start < p->delay)))
		return 0;
	p->last = t;
	return 1;
}

static void emit(struct progress *p, const char *fmt, va_list ap, const char *tail)
{
	if (p->tty)
		fputs("\r\033[K", p->out);
	vfprintf(p->out, fmt, ap);
	if (tail)
		fprintf(p->out, "  %s", tail);
	if (p->tty)
		p->dirty = 1;
	else
		fputc('\n', p->out);
	fflush(p->out);
}

void progress_update(struct progress *p, int force, const char *fmt, ...)
{
	if (!due(p, force, p->clock()))
		return;
	va_list ap;
	va_start(ap, fmt);
	emit(p, fmt, ap, NULL);
	va_end(ap);
}

void progress_at(struct progress *p, int force, double done, const char *fmt, ...)
{
	double t = p->clock();
	if (!due(p, force, t))
		return;
	char tail[160];
	progress_fields(p, done, t, tail, sizeof tail);
	va_list ap;
	va_start(ap, fmt);
	emit(p, fmt, ap, tail);
	va_end(ap);
}

void progress_done(struct progress *p)
{
	if (p->tty && p->dirty && !p->quiet)
		fputc('\n', p->out);
	p->dirty = 0;
}

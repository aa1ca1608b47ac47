/* progress.h: progress for long work, on stderr. On a terminal one line that
 * updates in place (carriage return); otherwise a plain line at most every
 * `interval` seconds. Results never go through here (stdout stays clean).
 *
 * Work with a size (bytes, steps) started with progress_start gets its rate
 * and, when the total is known, its share done and an estimate of the time
 * left, appended to the caller's text by progress_at:
 *
 *   packing: 12.3/45.6 MB  27%  5.1 MB/s  ETA 0:06
 *   step 50/200  loss 4.1234 ...  25%  3.2 steps/s  ETA 0:47
 *
 * The rate is the work done since progress_start over the time since then
 * (an average, not the last interval's); the estimate is the work left over
 * that rate. The same fields go to a terminal and to plain lines.
 *
 * SUPKIT_PROGRESS_INTERVAL (seconds, a non-negative number) sets the interval
 * for both (0: a line at every update) and drops a tool's initial delay;
 * other values are ignored.
 */
#ifndef SUPKIT_PROGRESS_H
#define SUPKIT_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

struct progress {
	int tty;
	int quiet;
	double interval;  /* seconds between lines */
	double last;      /* time of the last line */
	int dirty;        /* a tty line is showing */
	double delay;     /* no unforced line before start + delay (0: none) */
	int fixed;        /* interval from SUPKIT_PROGRESS_INTERVAL: delay ignored */
	double start;     /* time of progress_init / progress_start */
	double base;      /* work done at progress_start */
	double total;     /* work in all; 0: not known */
	const char *unit; /* name of a unit of work ("steps"); NULL: bytes */
	double (*clock)(void);  /* seconds; now_seconds unless a test injects one */
	FILE *out;        /* stderr unless a test swaps it */
};

void progress_init(struct progress *p, int quiet);
/* Start measuring work: total units in all (0: not known), done of them done
 * already (a resumed run), unit the units' plural name, NULL for bytes. */
void progress_start(struct progress *p, double total, double done, const char *unit);
/* Print a status line (printf-style) if due (force = 1 prints regardless). */
void progress_update(struct progress *p, int force, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same, the line followed by two spaces and progress_fields(done). */
void progress_at(struct progress *p, int force, double done, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* End the updating line (newline on a tty). */
void progress_done(struct progress *p);

/* The rate (units a second) and the seconds left at time now with done
 * units done: *rate 0 and *eta -1 while not known (no time or work since the
 * start); *eta -1 too when the total is not known. */
void progress_estimate(const struct progress *p, double done, double now, double *rate, double *eta);
/* The fields progress_at appends, into buf (n bytes): for bytes
 * "D/T MB  P%  R MB/s  ETA m:ss" (units scaled to the total: KB, MB, GB),
 * for named units "P%  R <unit>/s  ETA m:ss"; without a total the share and
 * the estimate are left out; "ETA --:--" while the rate is not known. */
void progress_fields(const struct progress *p, double done, double now, char *buf, size_t n);
/* Seconds as "m:ss" or "h:mm:ss" (rounded up); "--:--" when s < 0. */
void progress_format_eta(double s, char *buf, size_t n);
/* Monotonic seconds. */
double now_seconds(void);

#endif

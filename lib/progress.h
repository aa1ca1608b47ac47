/* progress.h: progress for long work, on stderr. On a terminal one line that
 * updates in place (carriage return); otherwise a plain line at most every
 * `interval` seconds. Results never go through here (stdout stays clean). */
#ifndef SUPKIT_PROGRESS_H
#define SUPKIT_PROGRESS_H

struct progress {
	int tty;
	int quiet;
	double interval;  /* seconds between plain lines when not a tty */
	double last;      /* time of the last line */
	int dirty;        /* a tty line is showing */
};

void progress_init(struct progress *p, int quiet);
/* Print a status line (printf-style) if due (force = 1 prints regardless). */
void progress_update(struct progress *p, int force, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* End the updating line (newline on a tty). */
void progress_done(struct progress *p);
/* Monotonic seconds. */
double now_seconds(void);

#endif

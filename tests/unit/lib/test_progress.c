/* test_progress.c: lib/progress.c with an injected clock: the rate and the
 * time left (progress_estimate), the fields a line carries for bytes and for
 * named units, the time format, and when lines are printed (interval, the
 * initial delay, SUPKIT_PROGRESS_INTERVAL, quiet) in plain and terminal mode.
 * The figures below are worked by hand from the definitions in progress.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/progress.h"
#include "t.h"

static double fake_now;
static double fake_clock(void)
{
	return fake_now;
}

/* A progress on the fake clock, started at t0, lines into a memory stream. */
static void setup(struct progress *p, int quiet, double t0, FILE *out)
{
	unsetenv("SUPKIT_PROGRESS_INTERVAL");
	progress_init(p, quiet);
	p->tty = 0;
	p->interval = 10;
	p->clock = fake_clock;
	p->out = out;
	fake_now = t0;
	p->start = t0;
}

TEST(progress_rate_and_eta)
{
	struct progress p;
	setup(&p, 0, 0, stderr);
	fake_now = 100;
	progress_start(&p, 250, 50, "steps");   /* a run resumed at step 50 of 250 */
	double rate, eta;
	progress_estimate(&p, 50, 100, &rate, &eta);
	CHECK(rate == 0 && eta == -1);          /* nothing done yet: not known */
	progress_estimate(&p, 70, 110, &rate, &eta);
	CHECK_NEAR(rate, 2.0, 1e-12);           /* 20 steps in 10 s */
	CHECK_NEAR(eta, 90.0, 1e-12);           /* 180 steps left at 2 a second */
	progress_estimate(&p, 250, 200, &rate, &eta);
	CHECK_NEAR(rate, 2.0, 1e-12);
	CHECK(eta == 0);
	progress_estimate(&p, 300, 200, &rate, &eta);  /* past the total */
	CHECK(eta == 0);
	p.total = 0;                            /* total not known: no estimate */
	progress_estimate(&p, 70, 110, &rate, &eta);
	CHECK_NEAR(rate, 2.0, 1e-12);
	CHECK(eta == -1);
}

TEST(progress_eta_format)
{
	char b[32];
	progress_format_eta(0, b, sizeof b);
	CHECK_STREQ(b, "0:00");
	progress_format_eta(5.01, b, sizeof b);   /* rounded up */
	CHECK_STREQ(b, "0:06");
	progress_format_eta(59.5, b, sizeof b);
	CHECK_STREQ(b, "1:00");
	progress_format_eta(3599, b, sizeof b);
	CHECK_STREQ(b, "59:59");
	progress_format_eta(3725, b, sizeof b);
	CHECK_STREQ(b, "1:02:05");
	progress_format_eta(-1, b, sizeof b);
	CHECK_STREQ(b, "--:--");
}

TEST(progress_fields_bytes)
{
	struct progress p;
	setup(&p, 0, 0, stderr);
	progress_start(&p, 45.6e6, 0, NULL);
	char b[160];
	/* 12.3 MB in 2 s: 6.15 MB/s; 33.3 MB left: 5.41 s, shown 0:06; 26.97% */
	progress_fields(&p, 12.3e6, 2, b, sizeof b);
	CHECK_STREQ(b, "12.3/45.6 MB  26%  6.15 MB/s  ETA 0:06");
	progress_fields(&p, 0, 0, b, sizeof b);
	CHECK_STREQ(b, "0.0/45.6 MB  0%  0 B/s  ETA --:--");
	progress_fields(&p, 45.6e6, 4, b, sizeof b);
	CHECK_STREQ(b, "45.6/45.6 MB  100%  11.4 MB/s  ETA 0:00");
	/* the unit follows the total: KB below a megabyte, GB above a gigabyte */
	progress_start(&p, 2500, 0, NULL);
	progress_fields(&p, 1000, 0.5, b, sizeof b);
	CHECK_STREQ(b, "1.0/2.5 KB  40%  2 KB/s  ETA 0:01");
	progress_start(&p, 3e9, 0, NULL);
	progress_fields(&p, 1.5e9, 10, b, sizeof b);
	CHECK_STREQ(b, "1.5/3.0 GB  50%  150 MB/s  ETA 0:10");
	/* no total: the amount and the rate only */
	progress_start(&p, 0, 0, NULL);
	progress_fields(&p, 12.3e6, 2, b, sizeof b);
	CHECK_STREQ(b, "12.3 MB  6.15 MB/s");
}

TEST(progress_fields_units)
{
	struct progress p;
	setup(&p, 0, 0, stderr);
	progress_start(&p, 200, 0, "steps");
	char b[160];
	/* 50 steps in 15.625 s: 3.2 steps/s; 150 left: 46.875 s, shown 0:47 */
	progress_fields(&p, 50, 15.625, b, sizeof b);
	CHECK_STREQ(b, "25%  3.2 steps/s  ETA 0:47");
	/* slow steps: three significant digits; whole numbers from 100 a second */
	progress_fields(&p, 1, 30, b, sizeof b);
	CHECK_STREQ(b, "0%  0.0333 steps/s  ETA 1:39:30");
	progress_fields(&p, 150, 1, b, sizeof b);
	CHECK_STREQ(b, "75%  150 steps/s  ETA 0:01");
	progress_start(&p, 0, 0, "steps");
	progress_fields(&p, 50, 15.625, b, sizeof b);
	CHECK_STREQ(b, "3.2 steps/s");
}

/* The lines printed into a memory stream (caller frees). */
static char *drain(FILE *f, char **buf)
{
	fflush(f);
	return *buf;
}

TEST(progress_plain_lines_carry_the_fields)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	struct progress p;
	setup(&p, 0, 0, m);
	progress_start(&p, 100, 0, "steps");
	for (int s = 1; s <= 100; s++) {
		fake_now = s * 0.5;                     /* 2 steps a second */
		progress_at(&p, s == 100, s, "step %d/100", s);
	}
	progress_done(&p);
	/* a line at the first update, then every 10 s (20 steps), then the forced last */
	CHECK_STREQ(drain(m, &buf),
		    "step 1/100  1%  2 steps/s  ETA 0:50\n"
		    "step 21/100  21%  2 steps/s  ETA 0:40\n"
		    "step 41/100  41%  2 steps/s  ETA 0:30\n"
		    "step 61/100  61%  2 steps/s  ETA 0:20\n"
		    "step 81/100  81%  2 steps/s  ETA 0:10\n"
		    "step 100/100  100%  2 steps/s  ETA 0:00\n");
	fclose(m);
	free(buf);
}

TEST(progress_delay_quiet_and_env)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	struct progress p;
	setup(&p, 0, 0, m);
	p.delay = 1.0;                              /* no line in the first second */
	progress_start(&p, 0, 0, NULL);
	fake_now = 0.5;
	progress_at(&p, 0, 1e6, "packing:");
	fake_now = 1.0;
	progress_at(&p, 0, 2e6, "packing:");
	CHECK_STREQ(drain(m, &buf), "packing:  2.0 MB  2 MB/s\n");
	fclose(m);
	free(buf);

	buf = NULL;
	m = open_memstream(&buf, &len);
	setup(&p, 1, 0, m);                         /* quiet: nothing, forced or not */
	progress_update(&p, 1, "x");
	progress_at(&p, 1, 1, "y");
	progress_done(&p);
	fflush(m);
	CHECK(len == 0);
	fclose(m);
	free(buf);

	/* SUPKIT_PROGRESS_INTERVAL=0: a line at every update, the delay dropped */
	setenv("SUPKIT_PROGRESS_INTERVAL", "0", 1);
	progress_init(&p, 0);
	CHECK(p.interval == 0 && p.fixed);
	setenv("SUPKIT_PROGRESS_INTERVAL", "2.5", 1);
	progress_init(&p, 0);
	CHECK(p.interval == 2.5 && p.fixed);
	setenv("SUPKIT_PROGRESS_INTERVAL", "soon", 1);   /* not a number: ignored */
	progress_init(&p, 0);
	CHECK(!p.fixed && (p.interval == 0.1 || p.interval == 10.0));
	setenv("SUPKIT_PROGRESS_INTERVAL", "-1", 1);
	progress_init(&p, 0);
	CHECK(!p.fixed);
	setenv("SUPKIT_PROGRESS_INTERVAL", "0", 1);
	buf = NULL;
	m = open_memstream(&buf, &len);
	progress_init(&p, 0);
	p.tty = 0;
	p.clock = fake_clock;
	p.out = m;
	fake_now = 0;
	progress_start(&p, 4, 0, "steps");
	p.delay = 1.0;
	for (int s = 1; s <= 2; s++) {
		fake_now = s * 0.25;
		progress_at(&p, 0, s, "s%d", s);
	}
	CHECK_STREQ(drain(m, &buf), "s1  25%  4 steps/s  ETA 0:01\ns2  50%  4 steps/s  ETA 0:01\n");
	fclose(m);
	free(buf);
	unsetenv("SUPKIT_PROGRESS_INTERVAL");
}

TEST(progress_terminal_line_updates_in_place)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	struct progress p;
	setup(&p, 0, 0, m);
	p.tty = 1;
	p.interval = 0.1;
	progress_start(&p, 10, 0, "steps");
	fake_now = 1;
	progress_at(&p, 0, 5, "a");
	fake_now = 1.05;                            /* within the interval: skipped */
	progress_at(&p, 0, 6, "b");
	fake_now = 2;
	progress_at(&p, 0, 10, "c");
	progress_done(&p);
	CHECK_STREQ(drain(m, &buf), "\r\033[Ka  50%  5 steps/s  ETA 0:01\r\033[Kc  100%  5 steps/s  ETA 0:00\n");
	fclose(m);
	free(buf);
}

int main(void)
{
	RUN(progress_rate_and_eta);
	RUN(progress_eta_format);
	RUN(progress_fields_bytes);
	RUN(progress_fields_units);
	RUN(progress_plain_lines_carry_the_fields);
	RUN(progress_delay_quiet_and_env);
	RUN(progress_terminal_line_updates_in_place);
	return t_done();
}

/* t.h: the tiny unit-test harness (one header; lib's now_seconds times
 * each test).
 *
 *   TEST(name) { CHECK(x == 1); CHECK_NEAR(a, b, 1e-9); }
 *   int main(void) { RUN(name); return t_done(); }
 *
 * Each TEST counts once: passed, failed (a CHECK failed: file:line and the
 * expression are printed, the test goes on) or skipped (T_SKIP("why")).
 * t_done() prints "N passed, N failed, N skipped" and returns the exit status:
 * 0 only when nothing failed. The runner (tests/run.sh) sums these lines.
 * T_ONLY=word[,word...] in the environment runs only the tests whose name
 * contains one of the words, T_EXCEPT=word[,word...] all but those (the
 * others are not counted). Each test's line shows its wall time.
 * t_run_self runs the test binary again as a child (a test of an abort).
 */
#ifndef SUPKIT_T_H
#define SUPKIT_T_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "lib/progress.h"   /* now_seconds */
#ifdef __cplusplus
}
#endif

static int t_passed, t_failed, t_skipped;
static int t_cur_failed, t_cur_skipped;
static const char *t_cur_name;

#define TEST(name) static void name(void)

/* whether one of the comma-separated words of list is part of name */
static inline int t_matches(const char *name, const char *list)
{
	while (*list) {
		size_t n = strcspn(list, ",");
		for (const char *p = name; n && *p; p++)
			if (strncmp(p, list, n) == 0)
				return 1;
		list += n + (list[n] == ',');
	}
	return 0;
}

/* Run `env 'self' arg` (env: shell assignments, or ""), its stdout and
 * stderr into out (n bytes, the first n - 1 kept, the rest read and
 * dropped); returns pclose's status (-1: no child). */
static inline int t_run_self(const char *self, const char *env, const char *arg, char *out,
			     size_t n)
{
	char cmd[4200], rest[512];
	snprintf(cmd, sizeof cmd, "%s '%s' %s 2>&1", env, self, arg);
	FILE *p = popen(cmd, "r");
	out[0] = 0;
	if (!p)
		return -1;
	size_t got = fread(out, 1, n - 1, p);
	out[got] = 0;
	while (fread(rest, 1, sizeof rest, p) > 0)
		;
	return pclose(p);
}

/* whether T_ONLY and T_EXCEPT (unset or empty: every test) select `name` */
static inline int t_selected(const char *name)
{
	const char *only = getenv("T_ONLY"), *except = getenv("T_EXCEPT");
	return (!only || !*only || t_matches(name, only)) && !(except && t_matches(name, except));
}

#define RUN(name)                                                         \
	do {                                                              \
		if (!t_selected(#name))                                   \
			break;                                            \
		t_cur_failed = 0;                                         \
		t_cur_skipped = 0;                                        \
		t_cur_name = #name;                                       \
		double t_t0 = now_seconds();                             \
		name();                                                   \
		double t_dt = now_seconds() - t_t0;                      \
		if (t_cur_failed) {                                       \
			t_failed++;                                       \
			printf("FAIL %s (%.1f s)\n", #name, t_dt);        \
		} else if (t_cur_skipped) {                               \
			t_skipped++;                                      \
			printf("skip %s (%.1f s)\n", #name, t_dt);        \
		} else {                                                  \
			t_passed++;                                       \
			printf("ok   %s (%.1f s)\n", #name, t_dt);        \
		}                                                         \
		fflush(stdout);                                           \
	} while (0)

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			printf("  %s:%d: %s: CHECK(%s) failed\n", __FILE__,     \
			       __LINE__, t_cur_name, #cond);                     \
			t_cur_failed = 1;                                        \
		}                                                                \
	} while (0)

/* CHECK with a printf-style explanation on failure. */
#define CHECKF(cond, ...)                                                        \
	do {                                                                     \
		if (!(cond)) {                                                   \
			printf("  %s:%d: %s: CHECK(%s) failed: ", __FILE__,     \
			       __LINE__, t_cur_name, #cond);                     \
			printf(__VA_ARGS__);                                     \
			printf("\n");                                            \
			t_cur_failed = 1;                                        \
		}                                                                \
	} while (0)

/* |a - b| <= tol * max(1, |b|)  (relative for large values, absolute near 0) */
#define CHECK_NEAR(a, b, tol)                                                    \
	do {                                                                     \
		double t_a_ = (double)(a), t_b_ = (double)(b);                   \
		double t_s_ = fabs(t_b_) > 1 ? fabs(t_b_) : 1;                   \
		if (!(fabs(t_a_ - t_b_) <= (tol) * t_s_)) {                      \
			printf("  %s:%d: %s: %s = %.17g, expected %s = %.17g "  \
			       "(tol %g)\n", __FILE__, __LINE__, t_cur_name,     \
			       #a, t_a_, #b, t_b_, (double)(tol));               \
			t_cur_failed = 1;                                        \
		}                                                                \
	} while (0)

#define CHECK_STREQ(a, b)                                                        \
	do {                                                                     \
		const char *t_a_ = (a), *t_b_ = (b);                             \
		if (!t_a_ || !t_b_ || strcmp(t_a_, t_b_) != 0) {                 \
			printf("  %s:%d: %s: %s = \"%s\", expected \"%s\"\n",   \
			       __FILE__, __LINE__, t_cur_name, #a,               \
			       t_a_ ? t_a_ : "(null)", t_b_ ? t_b_ : "(null)");  \
			t_cur_failed = 1;                                        \
		}                                                                \
	} while (0)

#define T_SKIP(why)                                                              \
	do {                                                                     \
		printf("  skipped: %s\n", why);                                  \
		t_cur_skipped = 1;                                               \
		return;                                                          \
	} while (0)

static inline int t_done(void)
{
	printf("%d passed, %d failed, %d skipped\n", t_passed, t_failed, t_skipped);
	return t_failed ? 1 : 0;
}

/* Folder of committed fixtures: $SUPKIT_FIXTURES or tests/fixtures. */
static inline const char *t_fixtures(void)
{
	const char *d = getenv("SUPKIT_FIXTURES");
	return d ? d : "tests/fixtures";
}

#endif

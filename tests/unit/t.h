/* t.h: the tiny unit-test harness (one header, no library).
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
 * others are not counted).
 */
#ifndef SUPKIT_T_H
#define SUPKIT_T_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* seconds on the monotonic clock (each test's line shows its wall time) */
static inline double t_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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
		double t_t0 = t_now();                                    \
		name();                                                   \
		double t_dt = t_now() - t_t0;                             \
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

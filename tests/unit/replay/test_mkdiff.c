/* test_mkdiff.c: the diff generator (replay/mkdiff.h).
 *
 * Covers: the edit script is a shortest one (its length equals N + M - 2 LCS,
 * with the LCS computed here by the textbook dynamic programme, an independent
 * method), it turns a into b, the cost-limit heuristic still gives a valid
 * script, unified output at context 0..3 applies back through udiff_patch,
 * and the output equals GNU diff's (committed fixtures, -U 0 and -U 3) on the
 * fixture cases. Reference: Myers 1986; GNU diffutils manual.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fileio.h"
#include "lib/rng.h"
#include "replay/mkdiff.h"
#include "replay/udiff.h"
#include "gnu_cases.h"
#include "t.h"
#include "tfix.h"

/* Random text of n lines over an alphabet of k distinct lines. */
static char *random_text(struct rng *r, size_t n, unsigned k, int crlf_some, size_t *len)
{
	char *s = xmalloc(n * 8 + 1);
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		o += (size_t)sprintf(s + o, "l%u", (unsigned)rng_below(r, k));
		if (crlf_some && rng_below(r, 4) == 0)
			s[o++] = '\r';
		s[o++] = '\n';
	}
	if (o && rng_below(r, 4) == 0)
		o--; /* no final newline */
	s[o] = '\0';
	*len = o;
	return s;
}

static size_t lcs(const struct udiff_lines *a, const struct udiff_lines *b)
{
	size_t n = a->n, m = b->n;
	size_t *dp = xcalloc((n + 1) * (m + 1), sizeof *dp);
	for (size_t i = 1; i <= n; i++)
		for (size_t j = 1; j <= m; j++) {
			size_t *c = &dp[i * (m + 1) + j];
			if (a->len[i - 1] == b->len[j - 1] && !memcmp(a->ptr[i - 1], b->ptr[j - 1], a->len[i - 1]))
				*c = dp[(i - 1) * (m + 1) + j - 1] + 1;
			else
				*c = dp[(i - 1) * (m + 1) + j] > dp[i * (m + 1) + j - 1] ? dp[(i - 1) * (m + 1) + j]
											: dp[i * (m + 1) + j - 1];
		}
	size_t v = dp[n * (m + 1) + m];
	free(dp);
	return v;
}

/* Apply the edit script to a; 1 when it gives b exactly and is well formed. */
static int script_valid(const struct udiff_lines *a, const struct udiff_lines *b, const struct mkdiff_edit *ed,
			size_t ne, size_t *cost)
{
	size_t i = 0, j = 0;
	*cost = 0;
	for (size_t k = 0; k < ne; k++) {
		if (ed[k].a_pos < i || ed[k].b_pos < j || (!ed[k].a_n && !ed[k].b_n))
			return 0;
		if (ed[k].a_pos - i != ed[k].b_pos - j)
			return 0;
		for (; i < ed[k].a_pos; i++, j++) /* unchanged lines must be equal */
			if (a->len[i] != b->len[j] || memcmp(a->ptr[i], b->ptr[j], a->len[i]))
				return 0;
		i += ed[k].a_n;
		j += ed[k].b_n;
		*cost += ed[k].a_n + ed[k].b_n;
	}
	if (i > a->n || j > b->n || a->n - i != b->n - j)
		return 0;
	for (; i < a->n; i++, j++)
		if (a->len[i] != b->len[j] || memcmp(a->ptr[i], b->ptr[j], a->len[i]))
			return 0;
	return 1;
}

TEST(shortest_script_against_dynamic_programme)
{
	struct rng r;
	rng_seed(&r, 7);
	int bad_valid = 0, bad_min = 0;
	for (int it = 0; it < 600; it++) {
		size_t al, bl;
		unsigned k = 1 + (unsigned)rng_below(&r, 6);
		char *a = random_text(&r, rng_below(&r, 40), k, it % 3 == 0, &al);
		char *b = random_text(&r, rng_below(&r, 40), k, it % 3 == 0, &bl);
		struct udiff_lines A, B;
		udiff_lines_split(a, al, &A);
		udiff_lines_split(b, bl, &B);
		struct mkdiff_edit *ed;
		size_t ne = mkdiff_script(&A, &B, 0, &ed), cost;
		if (!script_valid(&A, &B, ed, ne, &cost))
			bad_valid++;
		else if (cost != A.n + B.n - 2 * lcs(&A, &B))
			bad_min++;
		free(ed);
		udiff_lines_release(&A);
		udiff_lines_release(&B);
		free(a);
		free(b);
	}
	CHECKF(bad_valid == 0, "%d invalid scripts", bad_valid);
	CHECKF(bad_min == 0, "%d scripts longer than N + M - 2 LCS", bad_min);
}

TEST(cost_limit_still_valid)
{
	struct rng r;
	rng_seed(&r, 11);
	int bad = 0, longer = 0;
	for (int it = 0; it < 60; it++) {
		size_t al, bl;
		char *a = random_text(&r, 100 + rng_below(&r, 300), 30, 0, &al);
		char *b = random_text(&r, 100 + rng_below(&r, 300), 30, 0, &bl);
		struct udiff_lines A, B;
		udiff_lines_split(a, al, &A);
		udiff_lines_split(b, bl, &B);
		struct mkdiff_edit *ed;
		size_t ne = mkdiff_script(&A, &B, 1 + rng_below(&r, 4), &ed), cost, best;
		if (!script_valid(&A, &B, ed, ne, &cost))
			bad++;
		free(ed);
		ne = mkdiff_script(&A, &B, 0, &ed);
		CHECK(script_valid(&A, &B, ed, ne, &best));
		longer += cost > best;
		free(ed);
		udiff_lines_release(&A);
		udiff_lines_release(&B);
		free(a);
		free(b);
	}
	CHECKF(bad == 0, "%d invalid scripts under a cost limit", bad);
	CHECKF(longer > 0, "the heuristic never triggered (test exercises nothing)");
	CHECK(mkdiff_cost_limit(10) == 4096);
	CHECK(mkdiff_cost_limit((size_t)1 << 30) > 4096);
}

TEST(unified_applies_back)
{
	struct rng r;
	rng_seed(&r, 3);
	int bad = 0;
	for (int it = 0; it < 400; it++) {
		size_t al, bl, dl, ol;
		char *a = random_text(&r, rng_below(&r, 60), 8, 1, &al);
		char *b = random_text(&r, rng_below(&r, 60), 8, 1, &bl);
		char *d, *o;
		mkdiff_unified(a, al, b, bl, "a/x", "b/x", (size_t)(it % 4), &d, &dl);
		struct err e = {0};
		if (udiff_patch(a, al, d, dl, "'gen'", NULL, &o, &ol, &e) < 0) {
			if (bad++ < 3)
				printf("  %s\n", e.msg);
		} else {
			bad += ol != bl || memcmp(o, b, bl) != 0;
			free(o);
		}
		free(d);
		free(a);
		free(b);
	}
	CHECKF(bad == 0, "%d generated diffs do not apply back", bad);
	char *d;
	size_t dl;
	mkdiff_unified("x\n", 2, "x\n", 2, "a", "b", 0, &d, &dl);
	CHECK(dl == 0 && d[0] == '\0');
	free(d);
	mkdiff_unified("x\n", 2, "y\n", 2, "old name", "new\tname", 0, &d, &dl);
	CHECK_STREQ(d, "--- old name\n+++ new\tname\n@@ -1 +1 @@\n-x\n+y\n");
	free(d);
}

/* Byte-identical to GNU diff -U 0 / -U 3 --label old --label new. */
TEST(equals_gnu_diff_on_fixtures)
{
	char path[512];
	for (size_t c = 0; c < N_GNU_CASES; c++) {
		char *old, *new;
		size_t ol, nl;
		struct err e = {0};
		if (gnu_case_read(c, &old, &ol, &new, &nl) < 0)
			return;
		for (int u = 0; u <= 3; u += 3) {
			char *want, *got;
			size_t wl, gl;
			want = t_fix_read(&wl, &e, path, sizeof path, "replay/cases/%s/U%d.diff", gnu_cases[c], u);
			CHECK(want != NULL);
			mkdiff_unified(old, ol, new, nl, "old", "new", (size_t)u, &got, &gl);
			CHECKF(gl == wl && !memcmp(got, want, wl), "%s: differs from GNU diff", path);
			free(want);
			free(got);
		}
		free(old);
		free(new);
	}
}

int main(void)
{
	RUN(shortest_script_against_dynamic_programme);
	RUN(cost_limit_still_valid);
	RUN(unified_applies_back);
	RUN(equals_gnu_diff_on_fixtures);
	return t_done();
}

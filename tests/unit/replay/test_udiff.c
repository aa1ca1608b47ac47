/* test_udiff.c: the unified-diff parser and applier (replay/udiff.h).
 *
 * Covers: line splitting (CRLF, no final newline), parsing of headers and
 * hunks, applying every committed GNU diff fixture (tests/fixtures/replay,
 * made by make.sh with GNU diff -U 0 and -U 3) back to the exact file, and
 * every refusal (counts, mismatching lines, order, overlap,
 * truncation, limits) with its one-line message naming hunk and line. Ends
 * with a mutation fuzz loop (no crash, every failure has a message).
 * Reference: supkit-replay(1); GNU diffutils manual, "Unified Format".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fileio.h"
#include "lib/rng.h"
#include "replay/udiff.h"
#include "gnu_cases.h"
#include "t.h"
#include "tfix.h"

/* Apply diff text to base; returns the result (caller frees) or NULL with e. */
static char *patch(const char *base, const char *diff, size_t *len, struct err *e)
{
	char *out = NULL;
	size_t n = 0;
	err_clear(e);
	if (udiff_patch(base, strlen(base), diff, strlen(diff), "'t.diff'", NULL, &out, &n, e) < 0)
		return NULL;
	if (len)
		*len = n;
	return out;
}

/* The patch is refused with a message containing every fragment given. */
static int refused(const char *base, const char *diff, const char *frag1, const char *frag2)
{
	struct err e = {0};
	char *out = patch(base, diff, NULL, &e);
	if (out) {
		free(out);
		printf("  accepted, expected a refusal containing '%s'\n", frag1);
		return 0;
	}
	int ok = e.code == EXIT_USAGE && strstr(e.msg, "'t.diff'") && strstr(e.msg, frag1) &&
		 (!frag2 || strstr(e.msg, frag2)) && !strchr(e.msg, '\n');
	if (!ok)
		printf("  message: %s (wanted '%s'%s%s)\n", e.msg, frag1, frag2 ? " and " : "", frag2 ? frag2 : "");
	return ok;
}

static int applies_to(const char *base, const char *diff, const char *want)
{
	struct err e = {0};
	size_t n;
	char *out = patch(base, diff, &n, &e);
	if (!out) {
		printf("  refused: %s\n", e.msg);
		return 0;
	}
	int ok = n == strlen(want) && !memcmp(out, want, n);
	if (!ok)
		printf("  got '%s', want '%s'\n", out, want);
	free(out);
	return ok;
}

TEST(split_keeps_crlf_and_missing_newline)
{
	struct udiff_lines l;
	udiff_lines_split("a\r\nbb\n\nc", 8, &l);
	CHECK(l.n == 4);
	CHECK(l.len[0] == 3 && !memcmp(l.ptr[0], "a\r\n", 3));
	CHECK(l.len[1] == 3);
	CHECK(l.len[2] == 1);
	CHECK(l.len[3] == 1 && l.ptr[3][0] == 'c');
	udiff_lines_release(&l);
	udiff_lines_split("", 0, &l);
	CHECK(l.n == 0);
	udiff_lines_release(&l);
	udiff_lines_split("x\n", 2, &l);
	CHECK(l.n == 1 && l.len[0] == 2);
	udiff_lines_release(&l);
}

TEST(parse_headers_and_counts)
{
	const char *t = "--- a/train.py\t2026-01-01 00:00:00.000000000 +0000\n"
			"+++ \"b/x\\ty.py\"\t2026-01-01 00:00:00.000000000 +0000\n"
			"@@ -2 +2 @@ def f():\n-x\n+y\n"
			"@@ -5,0 +6,2 @@\n+p\n+q\n"
			"@@ -9,2 +10,0 @@\n-r\n-s\n";
	struct udiff d;
	struct err e = {0};
	if (udiff_parse(t, strlen(t), "'t'", NULL, &d, &e) < 0) {
		CHECKF(0, "%s", e.msg);
		return;
	}
	CHECK_STREQ(d.old_label, "a/train.py");
	CHECK_STREQ(d.new_label, "b/x\ty.py");
	CHECK(d.n_hunks == 3);
	CHECK(d.hunks[0].old_start == 2 && d.hunks[0].old_count == 1 && d.hunks[0].new_count == 1);
	CHECK(d.hunks[1].old_start == 5 && d.hunks[1].old_count == 0 && d.hunks[1].new_count == 2);
	CHECK(d.hunks[2].new_start == 10 && d.hunks[2].new_count == 0);
	CHECK(d.added == 3 && d.removed == 3);
	CHECK(d.hunks[1].diff_line == 6);
	CHECK(d.lines[d.hunks[2].first].diff_line == 10);
	udiff_release(&d);
	CHECK(udiff_parse("", 0, "'t'", NULL, &d, &e) == 0 && d.n_hunks == 0);
	udiff_release(&d);
}

TEST(apply_small_cases)
{
	const char *base = "1\n2\n3\n4\n5\n";
	CHECK(applies_to(base, "--- a\n+++ b\n@@ -0,0 +1 @@\n+0\n", "0\n1\n2\n3\n4\n5\n"));
	CHECK(applies_to(base, "--- a\n+++ b\n@@ -5,0 +6 @@\n+6\n", "1\n2\n3\n4\n5\n6\n"));
	CHECK(applies_to(base, "--- a\n+++ b\n@@ -1,5 +0,0 @@\n-1\n-2\n-3\n-4\n-5\n", ""));
	CHECK(applies_to(base, "--- a\n+++ b\n@@ -2 +2 @@\n-2\n+two\n@@ -4 +4 @@\n-4\n+four\n",
			 "1\ntwo\n3\nfour\n5\n"));
	/* context 1 */
	CHECK(applies_to(base, "--- a\n+++ b\n@@ -2,3 +2,2 @@\n 2\n-3\n 4\n", "1\n2\n4\n5\n"));
	/* final newline removed, then added */
	CHECK(applies_to(base, "--- a\n+++ b\n@@ -5 +5 @@\n-5\n+5\n\\ No newline at end of file\n",
			 "1\n2\n3\n4\n5"));
	CHECK(applies_to("a\nb", "--- a\n+++ b\n@@ -2 +2 @@\n-b\n\\ No newline at end of file\n+b\n", "a\nb\n"));
	CHECK(applies_to("a\nb", "--- a\n+++ b\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n\\ No newline at end of file\n",
			 "A\nb"));
	/* CRLF kept byte for byte */
	CHECK(applies_to("a\r\nb\r\nc\r\n", "--- a\n+++ b\n@@ -2 +2 @@\n-b\r\n+B\r\n", "a\r\nB\r\nc\r\n"));
	CHECK(applies_to("a\r\nb\r\n", "--- a\n+++ b\n@@ -2 +2 @@\n-b\r\n+b\n", "a\r\nb\n"));
	/* empty diff = identical file; empty baseline */
	CHECK(applies_to("x\n", "", "x\n"));
	CHECK(applies_to("", "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+p\n+q\n", "p\nq\n"));
	/* a leading "diff ..." line (diff -r, git) is allowed */
	CHECK(applies_to("x\n", "diff -U 0 a b\n--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n", "y\n"));
}

/* Every committed GNU diff fixture applies back to its "new" file exactly. */
TEST(apply_gnu_fixtures)
{
	char path[512];
	for (size_t c = 0; c < N_GNU_CASES; c++) {
		for (int u = 0; u < 2; u++) {
			char *old, *new, *diff, *out;
			size_t ol, nl, dl, outl;
			struct err e = {0};
			if (gnu_case_read(c, &old, &ol, &new, &nl) < 0)
				return;
			diff = t_fix_read(&dl, &e, path, sizeof path, "replay/cases/%s/U%d.diff", gnu_cases[c],
					  u ? 3 : 0);
			CHECK(diff != NULL);
			int r = udiff_patch(old, ol, diff, dl, path, NULL, &out, &outl, &e);
			CHECKF(r == 0, "%s", e.msg);
			if (r == 0) {
				CHECKF(outl == nl && !memcmp(out, new, nl), "%s: rebuilt file differs", path);
				free(out);
			}
			free(old);
			free(new);
			free(diff);
		}
	}
}

TEST(refuse_counts_that_do_not_match_the_body)
{
	const char *base = "1\n2\n3\n4\n5\n";
	/* header says 2 removed, body has 1 then the next hunk */
	CHECK(refused(base, "--- a\n+++ b\n@@ -2,2 +2 @@\n-2\n+x\n@@ -5 +4 @@\n-5\n+y\n", "hunk 1 (line 6)",
		      "do not match"));
	/* one '+' line too many */
	CHECK(refused(base, "--- a\n+++ b\n@@ -2 +2 @@\n-2\n+x\n+z\n", "hunk 1 (line 6)", "more lines than"));
	/* one '-' too many */
	CHECK(refused(base, "--- a\n+++ b\n@@ -2 +2 @@\n-2\n-3\n+x\n", "hunk 1 (line 5)", "too many"));
	/* both counts zero */
	CHECK(refused(base, "--- a\n+++ b\n@@ -2,0 +2,0 @@\n", "hunk 1 (line 3)", "empty hunk"));
	/* line 0 with a count */
	CHECK(refused(base, "--- a\n+++ b\n@@ -0 +0 @@\n-1\n+1\n", "hunk 1 (line 3)", "line 0"));
}

TEST(refuse_lines_that_differ_from_the_baseline)
{
	const char *base = "1\n2\n3\n4\n5\n";
	CHECK(refused(base, "--- a\n+++ b\n@@ -1 +1 @@\n-1\n+x\n@@ -3 +3 @@\n-three\n+y\n", "hunk 2 (line 7)",
		      "removed line does not match baseline line 3"));
	CHECK(refused(base, "--- a\n+++ b\n@@ -2,3 +2,3 @@\n 2\n-4\n+x\n 4\n", "hunk 1 (line 5)",
		      "removed line does not match baseline line 3"));
	CHECK(refused(base, "--- a\n+++ b\n@@ -2,2 +2,1 @@\n x\n-3\n", "hunk 1 (line 4)",
		      "context line does not match baseline line 2"));
	CHECK(refused("a\r\nb\r\n", "--- a\n+++ b\n@@ -2 +2 @@\n-b\n+c\n", "baseline line 2", "line ending"));
	CHECK(refused("a\nb", "--- a\n+++ b\n@@ -2 +2 @@\n-b\n+c\n", "baseline line 2", "final newline"));
	CHECK(refused(base, "--- a\n+++ b\n@@ -5 +5 @@\n-5\n\\ No newline at end of file\n+x\n", "hunk 1 (line 4)",
		      "final newline"));
	/* beyond the end */
	CHECK(refused(base, "--- a\n+++ b\n@@ -6 +6 @@\n-6\n+x\n", "hunk 1 (line 3)", "beyond the end"));
	CHECK(refused(base, "--- a\n+++ b\n@@ -9,0 +10 @@\n+x\n", "hunk 1 (line 3)", "beyond the end"));
}

TEST(refuse_hunks_out_of_order_or_overlapping)
{
	const char *base = "1\n2\n3\n4\n5\n";
	CHECK(refused(base, "--- a\n+++ b\n@@ -4 +4 @@\n-4\n+x\n@@ -2 +2 @@\n-2\n+y\n", "hunk 2 (line 6)",
		      "out of order"));
	CHECK(refused(base, "--- a\n+++ b\n@@ -2,2 +2,2 @@\n-2\n-3\n+x\n+y\n@@ -3 +3 @@\n-3\n+z\n",
		      "hunk 2 (line 8)", "overlapping"));
	/* new-file position inconsistent with the lines added before */
	CHECK(refused(base, "--- a\n+++ b\n@@ -1,0 +2 @@\n+x\n@@ -3 +3 @@\n-3\n+y\n", "hunk 2 (line 5)",
		      "expected +4"));
	CHECK(refused(base, "--- a\n+++ b\n@@ -2 +7 @@\n-2\n+x\n", "hunk 1 (line 3)", "disagrees"));
}

TEST(refuse_truncated_diffs)
{
	const char *base = "1\n2\n3\n4\n5\n";
	CHECK(refused(base, "--- a\n+++ b\n@@ -2,2 +2,2 @@\n-2\n-3\n+x\n", "truncated", "hunk 1 (line 3)"));
	CHECK(refused(base, "--- a\n+++ b\n@@ -2 +2 @@\n-2\n+x", "truncated", "line 5"));
	CHECK(refused(base, "--- a\n+++ b\n", "truncated", "no hunk"));
	CHECK(refused(base, "--- a\n", "line 2", "'+++ '"));
	CHECK(refused(base, "--- a\n+++ b\n@@ -2 +2\n-2\n+x\n", "line 3", "hunk header"));
}

TEST(refuse_other_malformed_input)
{
	const char *base = "1\n2\n3\n";
	CHECK(refused(base, "hello\n", "line 1", "expected a '--- ' header"));
	CHECK(refused(base, "--- a\n+++ b\n@@ -1 +1 @@\n-1\n*x\n", "hunk 1 (line 5)", "do not match"));
	CHECK(refused(base, "--- a\n+++ b\n@@ -1 +1 @@\n-1\n+x\n--- c\n+++ d\n@@ -2 +2 @@\n-2\n+y\n", "line 6",
		      "second file"));
	CHECK(refused(base, "--- a\n+++ b\n@@ -1 +1 @@\n-1\n\\ No newline at end of file\n\\ No newline at end of file\n+x\n",
		      "line 6", "marker"));
	CHECK(refused(base, "--- a\n+++ \"b\n@@ -1 +1 @@\n-1\n+x\n", "line 2", "quoted"));
	/* a '+' line without newline followed by more */
	CHECK(refused(base, "--- a\n+++ b\n@@ -1 +1,2 @@\n-1\n+x\n\\ No newline at end of file\n+y\n", "hunk 1",
		      "more lines"));
	CHECK(refused(base, "--- a\n+++ b\n@@ -1 +1 @@\n-1\n+x\n\\ No newline at end of file\n", "baseline line 2",
		      "without a final newline"));
	/* appending after a last line that has no newline */
	CHECK(refused("a\nb", "--- a\n+++ b\n@@ -2,0 +3 @@\n+c\n", "hunk 1 (line 4)", "without a final newline"));
	struct err e = {0};
	char *out;
	size_t n;
	CHECK(udiff_patch(base, 6, "--- a\n+++ b\n\0\n", 15, "'t.diff'", NULL, &out, &n, &e) < 0);
	CHECK(strstr(e.msg, "NUL") != NULL);
}

TEST(limits)
{
	const char *d = "--- a\n+++ b\n@@ -1 +1 @@\n-1\n+x\n@@ -3 +3 @@\n-3\n+y\n";
	struct udiff_limits lim = {0, 1};
	struct udiff u;
	struct err e = {0};
	CHECK(udiff_parse(d, strlen(d), "'t.diff'", &lim, &u, &e) < 0);
	CHECK(strstr(e.msg, "hunk 2 (line 6)") && strstr(e.msg, "limit of 1 hunks"));
	lim.max_hunks = 2;
	CHECK(udiff_parse(d, strlen(d), "'t.diff'", &lim, &u, &e) == 0);
	udiff_release(&u);
	lim.max_bytes = 10;
	CHECK(udiff_parse(d, strlen(d), "'t.diff'", &lim, &u, &e) < 0);
	CHECK(strstr(e.msg, "over the limit of 10") != NULL);
}

/* Mutated diffs: never a crash; a refusal always carries a one-line message. */
TEST(fuzz_mutations)
{
	const char *base = "alpha\nbeta\ngamma\r\ndelta\nepsilon";
	const char *d0 = "--- a\n+++ b\n@@ -0,0 +1 @@\n+zero\n@@ -2,2 +3 @@\n-beta\n-gamma\r\n+G\n"
			 "@@ -5 +5,2 @@\n-epsilon\n\\ No newline at end of file\n+e\n+f\n";
	char *out;
	size_t n, len = strlen(d0);
	struct err e = {0};
	CHECKF(udiff_patch(base, strlen(base), d0, len, "'f'", NULL, &out, &n, &e) == 0, "%s", e.msg);
	if (e.code == 0) {
		CHECK(n == strlen("zero\nalpha\nG\ndelta\ne\nf\n"));
		free(out);
	}
	struct rng r;
	rng_seed(&r, 12345);
	char *buf = xmalloc(len + 8);
	const char alphabet[] = "@-+ \\\n,0123456789abc\r";
	int bad = 0;
	for (int it = 0; it < 20000; it++) {
		memcpy(buf, d0, len);
		size_t bl = len;
		int k = 1 + (int)(rng_u64(&r) % 3);
		for (int j = 0; j < k; j++) {
			size_t p = (size_t)(rng_u64(&r) % bl);
			int op = (int)(rng_u64(&r) % 3);
			char ch = alphabet[rng_u64(&r) % (sizeof alphabet - 1)];
			if (op == 0)
				buf[p] = ch;
			else if (op == 1 && bl > 1)
				memmove(buf + p, buf + p + 1, --bl - p);
			else {
				memmove(buf + p + 1, buf + p, bl - p);
				buf[p] = ch;
				bl++;
			}
			if (bl >= len + 6)
				break;
		}
		err_clear(&e);
		if (udiff_patch(base, strlen(base), buf, bl, "'f'", NULL, &out, &n, &e) == 0)
			free(out);
		else if (!e.msg[0] || strchr(e.msg, '\n') || strncmp(e.msg, "'f'", 3))
			bad++;
	}
	free(buf);
	CHECKF(bad == 0, "%d refusals without a proper one-line message", bad);
}

int main(void)
{
	RUN(split_keeps_crlf_and_missing_newline);
	RUN(parse_headers_and_counts);
	RUN(apply_small_cases);
	RUN(apply_gnu_fixtures);
	RUN(refuse_counts_that_do_not_match_the_body);
	RUN(refuse_lines_that_differ_from_the_baseline);
	RUN(refuse_hunks_out_of_order_or_overlapping);
	RUN(refuse_truncated_diffs);
	RUN(refuse_other_malformed_input);
	RUN(limits);
	RUN(fuzz_mutations);
	return t_done();
}

/* mkdiff.h: the diff generator of supkit replay (the inverse of udiff_apply).
 *
 * Implements a line diff with Myers' O(ND) algorithm in linear space (the
 * "middle snake" divide and conquer), on lines hashed to equivalence classes,
 * and writes it in unified format exactly as `diff -U N --label A --label B`
 * (GNU diffutils) does: same header, hunk grouping, ",1" omitted, "\ No newline
 * at end of file" markers. Lines compare byte for byte ("\r\n" differs from
 * "\n"; a last line without a newline differs from the same text with one).
 * Runs of changes are then slid over equal lines as GNU diff does (merging
 * runs, aligning with the other file's changes), so the hunks usually match
 * GNU diff's byte for byte; where they do not, both are equally short and
 * apply to the same file.
 * Leaves out: GNU diff's other output formats, whitespace options, and its
 * discarding of frequent lines (a speed heuristic for large files).
 * Reference: E. W. Myers, "An O(ND) Difference Algorithm and Its Variations",
 * Algorithmica 1 (1986), sections 3 and 4b; GNU diffutils manual, "Unified Format".
 */
#ifndef SUPKIT_MKDIFF_H
#define SUPKIT_MKDIFF_H

#include <stddef.h>
#include "replay/udiff.h"

/* One change region: old lines [a_pos, a_pos + a_n) replaced by new lines
 * [b_pos, b_pos + b_n) (0-based; a_n or b_n may be 0, not both). */
struct mkdiff_edit {
	size_t a_pos, a_n, b_pos, b_n;
};

/* The edit script turning a into b, as change regions in order; returns their
 * number, *edits is fresh (caller frees; NULL when 0). cost_limit: 0 finds a
 * shortest script (the number of '-' plus '+' lines is minimal); otherwise the
 * search of one subproblem stops after cost_limit steps and splits at its
 * furthest point (GNU diff's "too expensive" heuristic): a valid script, not
 * always a shortest one, in bounded time. */
size_t mkdiff_script(const struct udiff_lines *a, const struct udiff_lines *b, size_t cost_limit,
		     struct mkdiff_edit **edits);

/* The default cost limit for n = lines of a + lines of b (as GNU diff:
 * at least 4096, growing with sqrt(n)). */
size_t mkdiff_cost_limit(size_t n);

/* Unified diff of a against b with `context` lines of context, labelled as
 * given (written verbatim, no timestamp). Empty text (*out_len == 0) when the
 * files are identical. *out is fresh and NUL-terminated; caller frees. */
void mkdiff_unified(const char *a, size_t alen, const char *b, size_t blen, const char *label_a,
		    const char *label_b, size_t context, char **out, size_t *out_len);

#endif

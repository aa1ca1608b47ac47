/* udiff.h: unified diffs of one text file: parse, apply, split into lines.
 *
 * Implements the unified format as GNU diff writes it (any context size, -U 0
 * included): "--- old" / "+++ new" headers (a tab then a timestamp is allowed;
 * C-quoted names are unquoted), hunks "@@ -l[,n] +l[,n] @@[ text]" whose body
 * lines start with ' ', '-' or '+', and "\ No newline at end of file" after a
 * line that has no final newline. Lines keep their bytes exactly: "\r\n" stays
 * "\r\n", a last line without a newline stays without one.
 * Refuses (one line naming the diff, the hunk and the diff line): header counts
 * that disagree with the body, a truncated diff, hunks out of order or
 * overlapping, a new-file position that disagrees with the old one, removed or
 * context lines that differ from the baseline, lines outside the baseline.
 * Leaves out: fuzz and offsets (a hunk applies where it says or not at all),
 * several files in one diff, git binary patches, renames, context diffs.
 * Reference: GNU diffutils manual, "Detailed Description of Unified Format";
 * POSIX.1-2017 diff(1) -u. For a count of 0 the start names the line before.
 *
 * Ownership: a parsed struct udiff borrows the diff text (its lines point
 * into it): keep the text alive until udiff_release().
 */
#ifndef SUPKIT_UDIFF_H
#define SUPKIT_UDIFF_H

#include <stddef.h>
#include "lib/err.h"

/* A text split into lines; line i is ptr[i][0 .. len[i]) including its "\n"
 * (and a "\r" before it); only the last line may lack the "\n". */
struct udiff_lines {
	const char **ptr;
	size_t *len;
	size_t n;
};
/* Split buf (borrowed) into lines. An empty buffer has 0 lines. */
void udiff_lines_split(const char *buf, size_t len, struct udiff_lines *out);
void udiff_lines_release(struct udiff_lines *l);

struct udiff_line {
	char kind;          /* ' ' context, '-' removed, '+' added */
	const char *text;   /* the line's bytes (after the kind), into the diff text */
	size_t len;         /* including its "\n" unless marked "\ No newline" */
	size_t diff_line;   /* 1-based line number in the diff text */
};

struct udiff_hunk {
	size_t old_start, old_count; /* as in the header ("-l,n"; n defaults to 1) */
	size_t new_start, new_count;
	size_t first, n;             /* body: lines[first .. first + n) */
	size_t diff_line;            /* line of the "@@" header */
};

struct udiff {
	char *old_label, *new_label; /* file names from the headers (unquoted, no
	                              * timestamp); NULL for an empty diff */
	struct udiff_hunk *hunks;
	size_t n_hunks;
	struct udiff_line *lines;
	size_t n_lines;
	size_t added, removed;       /* '+' and '-' lines over all hunks */
};

struct udiff_limits {
	size_t max_bytes;  /* diff text size (0 = no limit) */
	size_t max_hunks;  /* hunks (0 = no limit) */
};

/* Parse text (len bytes, borrowed) into d. name prefixes messages
 * ("'x.diff': hunk 2 (line 9): ..."). An empty text is a diff with no hunks
 * (identical files). Returns 0, or -1 with e set (EXIT_USAGE) and d empty.
 * lim may be NULL (no limits). */
int udiff_parse(const char *text, size_t len, const char *name,
		const struct udiff_limits *lim, struct udiff *d, struct err *e);
void udiff_release(struct udiff *d);

/* Apply d to the baseline bytes. On success *out (fresh, NUL-terminated,
 * caller frees) and *out_len hold the new file. Returns 0, or -1 with e set
 * (EXIT_USAGE): a line differs from the baseline, lies beyond its end, or a
 * line without a final newline is not the last one. name prefixes messages. */
int udiff_apply(const struct udiff *d, const char *base, size_t blen, const char *name,
		char **out, size_t *out_len, struct err *e);

/* Parse then apply in one call (the text is only needed during the call). */
int udiff_patch(const char *base, size_t blen, const char *diff, size_t dlen, const char *name,
		const struct udiff_limits *lim, char **out, size_t *out_len, struct err *e);

#endif

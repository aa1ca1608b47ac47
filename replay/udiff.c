/* udiff.c: parse and apply unified diffs of one text file, byte for byte.
 *
 * Implements udiff.h: line splitting that keeps "\r\n" and a missing final
 * newline, a strict parser of GNU diff's unified output (any context size),
 * and an applier that places each hunk exactly where its header says.
 * Leaves out: fuzz, offsets, several files per diff, binary and git extended
 * headers other than leading "diff "/"index " lines.
 * Reference: GNU diffutils manual, "Detailed Description of Unified Format";
 * POSIX.1-2017 diff(1) -u.
 */
#include "replay/udiff.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NUM_MAX ((size_t)1 << 40) /* line numbers and counts above this are refused */

void udiff_lines_split(const char *buf, size_t len, struct udiff_lines *out)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += buf[i] == '\n';
	if (len && buf[len - 1] != '\n')
		n++;
	out->n = n;
	out->ptr = xmalloc((n ? n : 1) * sizeof *out->ptr);
	out->len = xmalloc((n ? n : 1) * sizeof *out->len);
	size_t k = 0, start = 0;
	while (start < len) {
		const char *nl = memchr(buf + start, '\n', len - start);
		size_t end = nl ? (size_t)(nl - buf) + 1 : len;
		out->ptr[k] = buf + start;
		out->len[k] = end - start;
		k++;
		start = end;
	}
}

void udiff_lines_release(struct udiff_lines *l)
{
	free(l->ptr);
	free(l->len);
	memset(l, 0, sizeof *l);
}

void udiff_release(struct udiff *d)
{
	free(d->old_label);
	free(d->new_label);
	free(d->hunks);
	free(d->lines);
	memset(d, 0, sizeof *d);
}

/* Label of a "--- "/"+++ " header: up to a tab (the timestamp), C-unquoted
 * when it starts with a double quote. NULL when the quoting is broken. */
static char *label_parse(const char *s, size_t len)
{
	if (len && s[len - 1] == '\n')
		len--;
	if (!len || s[0] != '"') {
		const char *tab = memchr(s, '\t', len);
		return xstrndup(s, tab ? (size_t)(tab - s) : len);
	}
	char *out = xmalloc(len + 1);
	size_t o = 0, i = 1;
	for (; i < len && s[i] != '"'; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c != '\\') {
			out[o++] = (char)c;
			continue;
		}
		if (++i >= len)
			break;
		c = (unsigned char)s[i];
		switch (c) {
		case 'a': out[o++] = '\a'; break;
		case 'b': out[o++] = '\b'; break;
		case 'f': out[o++] = '\f'; break;
		case 'n': out[o++] = '\n'; break;
		case 'r': out[o++] = '\r'; break;
		case 't': out[o++] = '\t'; break;
		case 'v': out[o++] = '\v'; break;
		case '\\': case '"': out[o++] = (char)c; break;
		default:
			if (c >= '0' && c <= '7' && i + 2 < len && s[i + 1] >= '0' && s[i + 1] <= '7' &&
			    s[i + 2] >= '0' && s[i + 2] <= '7') {
				out[o++] = (char)(((c - '0') << 6) | ((s[i + 1] - '0') << 3) | (s[i + 2] - '0'));
				i += 2;
				break;
			}
			free(out);
			return NULL;
		}
	}
	if (i >= len || s[i] != '"' || (i + 1 < len && s[i + 1] != '\t') || o == 0) {
		free(out);
		return NULL;
	}
	out[o] = '\0';
	return out;
}

/* Parse a decimal number at *p (advancing it); -1 when none or too large. */
static int num_parse(const char **p, const char *end, size_t *out)
{
	const char *s = *p;
	size_t v = 0;
	if (s >= end || *s < '0' || *s > '9')
		return -1;
	while (s < end && *s >= '0' && *s <= '9') {
		v = v * 10 + (size_t)(*s - '0');
		if (v > NUM_MAX)
			return -1;
		s++;
	}
	*p = s;
	*out = v;
	return 0;
}

/* "@@ -l[,n] +l[,n] @@..." -> h. 0 or -1. */
static int header_parse(const char *s, size_t len, struct udiff_hunk *h)
{
	const char *p = s + 4, *end = s + len; /* past "@@ -" */
	if (num_parse(&p, end, &h->old_start) < 0)
		return -1;
	h->old_count = 1;
	if (p < end && *p == ',') {
		p++;
		if (num_parse(&p, end, &h->old_count) < 0)
			return -1;
	}
	if (end - p < 2 || p[0] != ' ' || p[1] != '+')
		return -1;
	p += 2;
	if (num_parse(&p, end, &h->new_start) < 0)
		return -1;
	h->new_count = 1;
	if (p < end && *p == ',') {
		p++;
		if (num_parse(&p, end, &h->new_count) < 0)
			return -1;
	}
	if (end - p < 3 || memcmp(p, " @@", 3) != 0)
		return -1;
	p += 3;
	if (p < end && *p != ' ' && *p != '\n' && *p != '\r')
		return -1;
	return 0;
}

static int starts(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);
	return len >= n && memcmp(s, prefix, n) == 0;
}

/* The first bytes of a diff line, printable, for messages. */
static void excerpt(const char *s, size_t len, char *buf, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < len && o + 5 < cap; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\n')
			break;
		if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\')
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	if (o >= cap)
		o = cap - 1;
	buf[o] = '\0';
}

int udiff_parse(const char *text, size_t len, const char *name, const struct udiff_limits *lim,
		struct udiff *d, struct err *e)
{
	memset(d, 0, sizeof *d);
	if (lim && lim->max_bytes && len > lim->max_bytes)
		return err_set(e, EXIT_USAGE, "%s: the diff is %zu bytes, over the limit of %zu", name, len,
			       lim->max_bytes);
	if (len == 0)
		return 0;
	if (memchr(text, '\0', len))
		return err_set(e, EXIT_USAGE, "%s: the diff contains a NUL byte (binary?)", name);
	if (text[len - 1] != '\n') {
		size_t ln = 1;
		for (size_t i = 0; i < len; i++)
			ln += text[i] == '\n';
		return err_set(e, EXIT_USAGE, "%s: truncated diff: line %zu has no newline", name, ln);
	}
	struct udiff_lines tl;
	udiff_lines_split(text, len, &tl);
	size_t i = 0;
	char ex[64];
	/* Leading "diff ..." / "index ..." lines (diff -r, git) are allowed. */
	while (i < tl.n && (starts(tl.ptr[i], tl.len[i], "diff ") || starts(tl.ptr[i], tl.len[i], "index ")))
		i++;
	if (i >= tl.n || !starts(tl.ptr[i], tl.len[i], "--- ")) {
		size_t at = i < tl.n ? i : tl.n - 1;
		excerpt(tl.ptr[at], tl.len[at], ex, sizeof ex);
		err_set(e, EXIT_USAGE, "%s: line %zu: expected a '--- ' header, found '%s'", name, at + 1, ex);
		goto fail;
	}
	if (i + 1 >= tl.n || !starts(tl.ptr[i + 1], tl.len[i + 1], "+++ ")) {
		err_set(e, EXIT_USAGE, "%s: line %zu: expected a '+++ ' header after '--- '", name, i + 2);
		goto fail;
	}
	d->old_label = label_parse(tl.ptr[i] + 4, tl.len[i] - 4);
	d->new_label = label_parse(tl.ptr[i + 1] + 4, tl.len[i + 1] - 4);
	if (!d->old_label || !d->new_label) {
		err_set(e, EXIT_USAGE, "%s: line %zu: badly quoted file name", name, d->old_label ? i + 2 : i + 1);
		goto fail;
	}
	i += 2;
	if (i >= tl.n) {
		err_set(e, EXIT_USAGE, "%s: truncated diff: no hunk after the headers (line %zu)", name, i);
		goto fail;
	}
	size_t cap_h = 16, cap_l = 64;
	d->hunks = xmalloc(cap_h * sizeof *d->hunks);
	d->lines = xmalloc(cap_l * sizeof *d->lines);
	size_t prev_old_end = 0;  /* first old line not yet covered (0-based) */
	long long delta = 0;      /* new - old line count so far */
	while (i < tl.n) {
		const char *s = tl.ptr[i];
		size_t sl = tl.len[i];
		size_t hn = d->n_hunks + 1;
		if (starts(s, sl, "--- ") || starts(s, sl, "diff ")) {
			err_set(e, EXIT_USAGE, "%s: line %zu: a second file after hunk %zu (one file per diff)", name,
				i + 1, d->n_hunks);
			goto fail;
		}
		struct udiff_hunk h;
		memset(&h, 0, sizeof h);
		if (!starts(s, sl, "@@ -") || header_parse(s, sl, &h) < 0) {
			excerpt(s, sl, ex, sizeof ex);
			if (d->n_hunks)
				err_set(e, EXIT_USAGE,
					"%s: hunk %zu (line %zu): more lines than the header's counts, or a bad "
					"hunk header: '%s'", name, d->n_hunks, i + 1, ex);
			else
				err_set(e, EXIT_USAGE, "%s: line %zu: expected a hunk header '@@ -l,n +l,n @@', found '%s'",
					name, i + 1, ex);
			goto fail;
		}
		if (lim && lim->max_hunks && hn > lim->max_hunks) {
			err_set(e, EXIT_USAGE, "%s: hunk %zu (line %zu): more than the limit of %zu hunks", name, hn,
				i + 1, lim->max_hunks);
			goto fail;
		}
		h.diff_line = i + 1;
		if (h.old_count == 0 && h.new_count == 0) {
			err_set(e, EXIT_USAGE, "%s: hunk %zu (line %zu): empty hunk (both counts are 0)", name, hn, i + 1);
			goto fail;
		}
		if ((h.old_count && h.old_start == 0) || (h.new_count && h.new_start == 0)) {
			err_set(e, EXIT_USAGE, "%s: hunk %zu (line %zu): line 0 with a non-zero count", name, hn, i + 1);
			goto fail;
		}
		size_t old_before = h.old_count ? h.old_start - 1 : h.old_start;
		size_t new_before = h.new_count ? h.new_start - 1 : h.new_start;
		if (old_before < prev_old_end) {
			err_set(e, EXIT_USAGE,
				"%s: hunk %zu (line %zu): out of order or overlapping (starts at old line %zu, "
				"the previous hunk ends at line %zu)", name, hn, i + 1, h.old_start, prev_old_end);
			goto fail;
		}
		if ((long long)new_before != (long long)old_before + delta) {
			err_set(e, EXIT_USAGE,
				"%s: hunk %zu (line %zu): new-file position +%zu disagrees with old position -%zu "
				"and the lines added before it (expected +%lld)", name, hn, i + 1, h.new_start,
				h.old_start, (long long)old_before + delta + (h.new_count ? 1 : 0));
			goto fail;
		}
		h.first = d->n_lines;
		size_t old_left = h.old_count, new_left = h.new_count;
		i++;
		while (old_left || new_left) {
			if (i >= tl.n) {
				err_set(e, EXIT_USAGE,
					"%s: truncated diff: hunk %zu (line %zu) needs %zu more old and %zu more new "
					"lines, the diff ends at line %zu", name, hn, h.diff_line, old_left, new_left, tl.n);
				goto fail;
			}
			s = tl.ptr[i];
			sl = tl.len[i];
			char kind = s[0];
			const char *body = s + 1;
			size_t blen = sl - 1;
			if (kind == '\n') { /* an empty context line, as some tools write it */
				kind = ' ';
				body = s;
				blen = sl;
			}
			if (kind == '\\') {
				if (h.n == 0 || d->lines[d->n_lines - 1].len == 0 ||
				    d->lines[d->n_lines - 1].text[d->lines[d->n_lines - 1].len - 1] != '\n') {
					err_set(e, EXIT_USAGE, "%s: hunk %zu (line %zu): '\\' marker without a line before it",
						name, hn, i + 1);
					goto fail;
				}
				d->lines[d->n_lines - 1].len--;
				i++;
				continue;
			}
			if (kind != ' ' && kind != '-' && kind != '+') {
				excerpt(s, sl, ex, sizeof ex);
				err_set(e, EXIT_USAGE,
					"%s: hunk %zu (line %zu): header counts -%zu,%zu +%zu,%zu do not match the body: "
					"%zu old and %zu new lines missing before '%s'", name, hn, i + 1, h.old_start,
					h.old_count, h.new_start, h.new_count, old_left, new_left, ex);
				goto fail;
			}
			if ((kind != '+' && old_left == 0) || (kind != '-' && new_left == 0)) {
				err_set(e, EXIT_USAGE,
					"%s: hunk %zu (line %zu): header counts -%zu,%zu +%zu,%zu do not match the body: "
					"one '%c' line too many", name, hn, i + 1, h.old_start, h.old_count, h.new_start,
					h.new_count, kind);
				goto fail;
			}
			if (kind != '+')
				old_left--;
			if (kind != '-')
				new_left--;
			if (d->n_lines == cap_l) {
				cap_l *= 2;
				d->lines = xrealloc(d->lines, cap_l * sizeof *d->lines);
			}
			d->lines[d->n_lines].kind = kind;
			d->lines[d->n_lines].text = body;
			d->lines[d->n_lines].len = blen;
			d->lines[d->n_lines].diff_line = i + 1;
			d->n_lines++;
			h.n++;
			d->added += kind == '+';
			d->removed += kind == '-';
			i++;
		}
		/* "\ No newline" markers may follow the hunk's last lines. */
		while (i < tl.n && tl.ptr[i][0] == '\\') {
			struct udiff_line *last = &d->lines[d->n_lines - 1];
			if (last->len == 0 || last->text[last->len - 1] != '\n') {
				err_set(e, EXIT_USAGE, "%s: hunk %zu (line %zu): a second '\\' marker", name, hn, i + 1);
				goto fail;
			}
			last->len--;
			i++;
		}
		if (d->n_hunks == cap_h) {
			cap_h *= 2;
			d->hunks = xrealloc(d->hunks, cap_h * sizeof *d->hunks);
		}
		d->hunks[d->n_hunks++] = h;
		prev_old_end = old_before + h.old_count;
		delta += (long long)h.new_count - (long long)h.old_count;
	}
	udiff_lines_release(&tl);
	return 0;
fail:
	udiff_lines_release(&tl);
	udiff_release(d);
	return -1;
}

/* Output buffer that refuses bytes after a line without a final newline. */
struct outbuf {
	char *p;
	size_t n, cap;
	int open_line; /* the last line written has no "\n" */
};

static int out_put(struct outbuf *o, const char *s, size_t len)
{
	if (!len)
		return 0;
	if (o->open_line)
		return -1;
	if (o->n + len + 1 > o->cap) {
		while (o->n + len + 1 > o->cap)
			o->cap = o->cap ? o->cap * 2 : 4096;
		o->p = xrealloc(o->p, o->cap);
	}
	memcpy(o->p + o->n, s, len);
	o->n += len;
	o->open_line = s[len - 1] != '\n';
	return 0;
}

/* Why two lines differ, for the message. */
static const char *mismatch_hint(const char *a, size_t al, const char *b, size_t bl)
{
	size_t an = al, bn = bl;
	if (an && a[an - 1] == '\n')
		an--;
	if (bn && b[bn - 1] == '\n')
		bn--;
	int acr = an && a[an - 1] == '\r', bcr = bn && b[bn - 1] == '\r';
	if ((al != an) != (bl != bn) && an == bn && !memcmp(a, b, an))
		return " (only the final newline differs)";
	if (acr != bcr && an - (size_t)acr == bn - (size_t)bcr && !memcmp(a, b, an - (size_t)acr))
		return " (only the line ending differs: CRLF against LF)";
	return "";
}

int udiff_apply(const struct udiff *d, const char *base, size_t blen, const char *name,
		char **out, size_t *out_len, struct err *e)
{
	struct udiff_lines bl;
	udiff_lines_split(base, blen, &bl);
	struct outbuf o = {0};
	size_t pos = 0; /* next baseline line (0-based) */
	for (size_t k = 0; k < d->n_hunks; k++) {
		const struct udiff_hunk *h = &d->hunks[k];
		size_t before = h->old_count ? h->old_start - 1 : h->old_start;
		if (before + h->old_count > bl.n || before < pos) {
			if (before < pos)
				err_set(e, EXIT_USAGE, "%s: hunk %zu (line %zu): out of order or overlapping", name,
					k + 1, h->diff_line);
			else
				err_set(e, EXIT_USAGE,
					"%s: hunk %zu (line %zu): old lines %zu..%zu are beyond the end of the baseline "
					"(%zu lines)", name, k + 1, h->diff_line, before + 1, before + h->old_count, bl.n);
			goto fail;
		}
		for (; pos < before; pos++)
			if (out_put(&o, bl.ptr[pos], bl.len[pos]) < 0)
				goto open_line;
		for (size_t j = h->first; j < h->first + h->n; j++) {
			const struct udiff_line *l = &d->lines[j];
			if (l->kind != '+') {
				if (l->len != bl.len[pos] || memcmp(l->text, bl.ptr[pos], l->len) != 0) {
					err_set(e, EXIT_USAGE, "%s: hunk %zu (line %zu): %s line does not match baseline "
						"line %zu%s", name, k + 1, l->diff_line,
						l->kind == '-' ? "removed" : "context", pos + 1,
						mismatch_hint(l->text, l->len, bl.ptr[pos], bl.len[pos]));
					goto fail;
				}
				pos++;
			}
			if (l->kind != '-' && out_put(&o, l->text, l->len) < 0) {
				err_set(e, EXIT_USAGE, "%s: hunk %zu (line %zu): a line without a final newline is "
					"followed by more lines", name, k + 1, l->diff_line);
				goto fail;
			}
		}
	}
	for (; pos < bl.n; pos++)
		if (out_put(&o, bl.ptr[pos], bl.len[pos]) < 0)
			goto open_line;
	udiff_lines_release(&bl);
	if (!o.p)
		o.p = xmalloc(1);
	o.p[o.n] = '\0';
	*out = o.p;
	*out_len = o.n;
	return 0;
open_line:
	err_set(e, EXIT_USAGE, "%s: baseline line %zu follows a line without a final newline", name, pos + 1);
fail:
	udiff_lines_release(&bl);
	free(o.p);
	return -1;
}

int udiff_patch(const char *base, size_t blen, const char *diff, size_t dlen, const char *name,
		const struct udiff_limits *lim, char **out, size_t *out_len, struct err *e)
{
	struct udiff d;
	if (udiff_parse(diff, dlen, name, lim, &d, e) < 0)
		return -1;
	int r = udiff_apply(&d, base, blen, name, out, out_len, e);
	udiff_release(&d);
	return r;
}

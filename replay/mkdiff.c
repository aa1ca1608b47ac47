/* mkdiff.c: Myers' linear-space O(ND) line diff and GNU-style unified output.
 *
 * Implements mkdiff.h. Lines are first mapped to integer equivalence classes
 * (FNV-1a hash table, byte-exact comparison), then compare_seq() trims common
 * prefix and suffix and splits each remaining box at a middle snake found by
 * searching forward and backward at once (Myers 1986, section 4b), marking
 * deleted and inserted lines; shift_boundaries() slides runs of changes as
 * GNU diff's analyze.c does; the flags are then grouped into regions and
 * hunks. Leaves out: GNU diff's discarding of frequent lines (a speed
 * heuristic that does not change validity).
 * Reference: E. W. Myers, "An O(ND) Difference Algorithm and Its Variations",
 * Algorithmica 1 (1986) 251-266; GNU diffutils manual, "Unified Format".
 */
#include "replay/mkdiff.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- equivalence classes ---- */

struct eq_slot {
	uint64_t hash;
	const char *p;
	size_t len;
	size_t id; /* 0 = empty slot; ids start at 1 */
};

struct eq_table {
	struct eq_slot *s;
	size_t cap, n;
};

static uint64_t fnv1a(const char *p, size_t len)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)p[i];
		h *= 1099511628211ull;
	}
	return h;
}

static size_t eq_id(struct eq_table *t, const char *p, size_t len)
{
	uint64_t h = fnv1a(p, len);
	size_t i = (size_t)h & (t->cap - 1);
	while (t->s[i].id) {
		if (t->s[i].hash == h && t->s[i].len == len && !memcmp(t->s[i].p, p, len))
			return t->s[i].id;
		i = (i + 1) & (t->cap - 1);
	}
	t->s[i].hash = h;
	t->s[i].p = p;
	t->s[i].len = len;
	t->s[i].id = ++t->n;
	return t->n;
}

/* ---- Myers ---- */

struct ctx {
	const size_t *a, *b;   /* class ids */
	char *del, *ins;       /* change flags, one per line of a and b */
	long *fd, *bd;         /* furthest x per diagonal, indexed by k + off */
	long off;
	long cost_limit;       /* 0 = minimal */
};

/* Find a point (*xm, *ym) on a shortest path through the box
 * [xoff, xlim) x [yoff, ylim) (lines at the box's corners differ), or, past
 * the cost limit, a good point that splits it. */
static void middle_snake(struct ctx *c, long xoff, long xlim, long yoff, long ylim, long *xm, long *ym)
{
	long *fd = c->fd + c->off, *bd = c->bd + c->off;
	const size_t *a = c->a, *b = c->b;
	long dmin = xoff - ylim, dmax = xlim - yoff;
	long fmid = xoff - yoff, bmid = xlim - ylim;
	long fmin = fmid, fmax = fmid, bmin = bmid, bmax = bmid;
	int odd = (int)((fmid - bmid) & 1);
	fd[fmid] = xoff;
	bd[bmid] = xlim;
	for (long cost = 1;; cost++) {
		/* Extend the forward search by one edit. */
		if (fmin > dmin)
			fd[--fmin - 1] = -1;
		else
			++fmin;
		if (fmax < dmax)
			fd[++fmax + 1] = -1;
		else
			--fmax;
		for (long d = fmax; d >= fmin; d -= 2) {
			long tlo = fd[d - 1], thi = fd[d + 1];
			long x = tlo >= thi ? tlo + 1 : thi;
			long y = x - d;
			while (x < xlim && y < ylim && a[x] == b[y]) {
				x++;
				y++;
			}
			fd[d] = x;
			if (odd && bmin <= d && d <= bmax && bd[d] <= x) {
				*xm = x;
				*ym = y;
				return;
			}
		}
		/* Extend the backward search by one edit. */
		if (bmin > dmin)
			bd[--bmin - 1] = LONG_MAX;
		else
			++bmin;
		if (bmax < dmax)
			bd[++bmax + 1] = LONG_MAX;
		else
			--bmax;
		for (long d = bmax; d >= bmin; d -= 2) {
			long tlo = bd[d - 1], thi = bd[d + 1];
			long x = tlo < thi ? tlo : thi - 1;
			long y = x - d;
			while (xoff < x && yoff < y && a[x - 1] == b[y - 1]) {
				x--;
				y--;
			}
			bd[d] = x;
			if (!odd && fmin <= d && d <= fmax && x <= fd[d]) {
				*xm = x;
				*ym = y;
				return;
			}
		}
		if (!c->cost_limit || cost < c->cost_limit)
			continue;
		/* Too expensive: split at the furthest point reached forward or
		 * backward, whichever got further into the box. */
		long fxy = -1, fx = xoff, bxy = LONG_MAX, bx = xlim;
		for (long d = fmax; d >= fmin; d -= 2) {
			long x = fd[d] < xlim ? fd[d] : xlim, y = x - d;
			if (ylim < y) {
				x = ylim + d;
				y = ylim;
			}
			if (fxy < x + y) {
				fxy = x + y;
				fx = x;
			}
		}
		for (long d = bmax; d >= bmin; d -= 2) {
			long x = bd[d] > xoff ? bd[d] : xoff, y = x - d;
			if (y < yoff) {
				x = yoff + d;
				y = yoff;
			}
			if (x + y < bxy) {
				bxy = x + y;
				bx = x;
			}
		}
		long px, py;
		if ((xlim + ylim) - bxy < fxy - (xoff + yoff)) {
			px = fx;
			py = fxy - fx;
		} else {
			px = bx;
			py = bxy - bx;
		}
		/* Use the split only when it makes both halves smaller. */
		if ((px > xoff || py > yoff) && (px < xlim || py < ylim)) {
			*xm = px;
			*ym = py;
			return;
		}
	}
}

static void compare_seq(struct ctx *c, long xoff, long xlim, long yoff, long ylim)
{
	for (;;) {
		while (xoff < xlim && yoff < ylim && c->a[xoff] == c->b[yoff]) {
			xoff++;
			yoff++;
		}
		while (xlim > xoff && ylim > yoff && c->a[xlim - 1] == c->b[ylim - 1]) {
			xlim--;
			ylim--;
		}
		if (xoff == xlim) {
			for (long y = yoff; y < ylim; y++)
				c->ins[y] = 1;
			return;
		}
		if (yoff == ylim) {
			for (long x = xoff; x < xlim; x++)
				c->del[x] = 1;
			return;
		}
		long xm, ym;
		middle_snake(c, xoff, xlim, yoff, ylim, &xm, &ym);
		/* Recurse into the smaller half, loop on the other (bounded stack). */
		if ((xm - xoff) + (ym - yoff) < (xlim - xm) + (ylim - ym)) {
			compare_seq(c, xoff, xm, yoff, ym);
			xoff = xm;
			yoff = ym;
		} else {
			compare_seq(c, xm, xlim, ym, ylim);
			xlim = xm;
			ylim = ym;
		}
	}
}

/* Slide each run of changed lines of one file (changed[0..n), equivalence
 * classes eq) as GNU diff's analyze.c does: up while the line before it equals
 * its last line, merging with earlier runs, then down while its first line
 * equals the line after it, merging with later runs, then back up to end
 * where a run of changes in the other file (other) ends, if it passed one.
 * Sliding a run over equal lines leaves the unchanged lines the same
 * sequence, so the script stays valid and as short. Both flag arrays have a
 * zero at index -1 and at their end. */
static void shift_boundaries(char *changed, const char *other, const size_t *eq, long n)
{
	long i = 0, j = 0;
	for (;;) {
		while (i < n && !changed[i]) {
			while (other[j++])
				;
			i++;
		}
		if (i == n)
			break;
		long start = i, runlength, corresponding;
		while (changed[++i])
			;
		while (other[j])
			j++;
		do {
			runlength = i - start;
			while (start && eq[start - 1] == eq[i - 1]) {
				changed[--start] = 1;
				changed[--i] = 0;
				while (changed[start - 1])
					start--;
				while (other[--j])
					;
			}
			corresponding = other[j - 1] ? i : n;
			while (i != n && eq[start] == eq[i]) {
				changed[start++] = 0;
				changed[i++] = 1;
				while (changed[i])
					i++;
				while (other[++j])
					corresponding = i;
			}
		} while (runlength != i - start);
		while (corresponding < i) {
			changed[--start] = 1;
			changed[--i] = 0;
			while (other[--j])
				;
		}
	}
}

size_t mkdiff_cost_limit(size_t n)
{
	size_t lim = 1;
	for (size_t diags = n + 3; diags; diags >>= 2)
		lim <<= 1;
	return lim < 4096 ? 4096 : lim;
}

size_t mkdiff_script(const struct udiff_lines *A, const struct udiff_lines *B, size_t cost_limit,
		     struct mkdiff_edit **edits)
{
	size_t n = A->n, m = B->n;
	struct eq_table t;
	t.cap = 16;
	while (t.cap < 2 * (n + m) + 16)
		t.cap <<= 1;
	t.n = 0;
	t.s = xcalloc(t.cap, sizeof *t.s);
	size_t *ids = xmalloc((n + m + 1) * sizeof *ids);
	for (size_t i = 0; i < n; i++)
		ids[i] = eq_id(&t, A->ptr[i], A->len[i]);
	for (size_t j = 0; j < m; j++)
		ids[n + j] = eq_id(&t, B->ptr[j], B->len[j]);
	free(t.s);

	struct ctx c;
	c.a = ids;
	c.b = ids + n;
	/* Flags with a zero sentinel before and after (shift_boundaries reads them). */
	char *del_mem = xcalloc(n + 2, 1), *ins_mem = xcalloc(m + 2, 1);
	c.del = del_mem + 1;
	c.ins = ins_mem + 1;
	c.off = (long)m + 1;
	c.fd = xmalloc((n + m + 3) * sizeof *c.fd);
	c.bd = xmalloc((n + m + 3) * sizeof *c.bd);
	c.cost_limit = (long)cost_limit;
	compare_seq(&c, 0, (long)n, 0, (long)m);
	free(c.fd);
	free(c.bd);
	shift_boundaries(c.del, c.ins, c.a, (long)n);
	shift_boundaries(c.ins, c.del, c.b, (long)m);

	/* Group the flags into change regions. */
	size_t cap = 16, k = 0;
	struct mkdiff_edit *ed = NULL;
	size_t i = 0, j = 0;
	while (i < n || j < m) {
		if (i < n && j < m && !c.del[i] && !c.ins[j]) {
			i++;
			j++;
			continue;
		}
		struct mkdiff_edit r = {i, 0, j, 0};
		while (i < n && c.del[i]) {
			i++;
			r.a_n++;
		}
		while (j < m && c.ins[j]) {
			j++;
			r.b_n++;
		}
		if (!r.a_n && !r.b_n) /* cannot happen: flags are consistent */
			abort();
		if (!ed)
			ed = xmalloc(cap * sizeof *ed);
		if (k == cap) {
			cap *= 2;
			ed = xrealloc(ed, cap * sizeof *ed);
		}
		ed[k++] = r;
	}
	free(del_mem);
	free(ins_mem);
	free(ids);
	*edits = ed;
	return k;
}

/* ---- unified output ---- */

struct sbuf {
	char *p;
	size_t n, cap;
};

static void sb_put(struct sbuf *s, const char *p, size_t len)
{
	if (s->n + len + 1 > s->cap) {
		while (s->n + len + 1 > s->cap)
			s->cap = s->cap ? 2 * s->cap : 4096;
		s->p = xrealloc(s->p, s->cap);
	}
	memcpy(s->p + s->n, p, len);
	s->n += len;
	s->p[s->n] = '\0';
}

static void sb_puts(struct sbuf *s, const char *p)
{
	sb_put(s, p, strlen(p));
}

static void sb_line(struct sbuf *s, char kind, const char *p, size_t len)
{
	sb_put(s, &kind, 1);
	sb_put(s, p, len);
	if (!len || p[len - 1] != '\n')
		sb_puts(s, "\n\\ No newline at end of file\n");
}

/* "-s,c" as GNU diff writes it: ",1" omitted, start = line before when c == 0. */
static void sb_range(struct sbuf *s, char sign, size_t from, size_t count)
{
	char buf[64];
	size_t start = count ? from + 1 : from;
	if (count == 1)
		snprintf(buf, sizeof buf, "%c%zu", sign, start);
	else
		snprintf(buf, sizeof buf, "%c%zu,%zu", sign, start, count);
	sb_puts(s, buf);
}

void mkdiff_unified(const char *a, size_t alen, const char *b, size_t blen, const char *label_a,
		    const char *label_b, size_t context, char **out, size_t *out_len)
{
	struct udiff_lines A, B;
	udiff_lines_split(a, alen, &A);
	udiff_lines_split(b, blen, &B);
	struct mkdiff_edit *ed;
	size_t ne = mkdiff_script(&A, &B, mkdiff_cost_limit(A.n + B.n), &ed);
	struct sbuf s = {0};
	if (ne) {
		sb_puts(&s, "--- ");
		sb_puts(&s, label_a);
		sb_puts(&s, "\n+++ ");
		sb_puts(&s, label_b);
		sb_puts(&s, "\n");
	}
	for (size_t k = 0; k < ne;) {
		/* Regions k..e-1 form one hunk: gaps of at most 2 * context. */
		size_t e = k + 1;
		while (e < ne && ed[e].a_pos - (ed[e - 1].a_pos + ed[e - 1].a_n) <= 2 * context)
			e++;
		size_t lead = ed[k].a_pos < context ? ed[k].a_pos : context;
		size_t a_end = ed[e - 1].a_pos + ed[e - 1].a_n;
		size_t trail = A.n - a_end < context ? A.n - a_end : context;
		size_t old_from = ed[k].a_pos - lead, old_to = a_end + trail;
		size_t new_from = ed[k].b_pos - lead;
		size_t new_to = ed[e - 1].b_pos + ed[e - 1].b_n + trail;
		sb_puts(&s, "@@ ");
		sb_range(&s, '-', old_from, old_to - old_from);
		sb_puts(&s, " ");
		sb_range(&s, '+', new_from, new_to - new_from);
		sb_puts(&s, " @@\n");
		size_t i = old_from;
		for (size_t r = k; r < e; r++) {
			for (; i < ed[r].a_pos; i++)
				sb_line(&s, ' ', A.ptr[i], A.len[i]);
			for (size_t x = 0; x < ed[r].a_n; x++, i++)
				sb_line(&s, '-', A.ptr[i], A.len[i]);
			for (size_t y = 0; y < ed[r].b_n; y++)
				sb_line(&s, '+', B.ptr[ed[r].b_pos + y], B.len[ed[r].b_pos + y]);
		}
		for (; i < old_to; i++)
			sb_line(&s, ' ', A.ptr[i], A.len[i]);
		k = e;
	}
	free(ed);
	udiff_lines_release(&A);
	udiff_lines_release(&B);
	if (!s.p) {
		s.p = xmalloc(1);
		s.p[0] = '\0';
	}
	*out = s.p;
	*out_len = s.n;
}

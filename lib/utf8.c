/* utf8.c: utf8_valid, a whole buffer checked with utf8_seq, and
 * utf8_replaced_len (see utf8.h). Leaves out locating the first bad byte
 * (callers only need yes or no). Reference: RFC 3629 section 4; Unicode
 * 15.0 section 3.9 (maximal subparts, Table 3-7 well-formed sequences). */
#include "utf8.h"

int utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		size_t k = utf8_seq(p + i, n - i);
		if (!k)
			return 0;
		i += k;
	}
	return 1;
}

/* Length of the maximal subpart at p (n > 0 bytes, not a valid sequence):
 * the lead byte and the continuation bytes that could still begin a valid
 * sequence with it (Table 3-7's ranges); 1 for a byte that cannot lead. */
static size_t maximal_subpart(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	size_t k;
	unsigned lo = 0x80, hi = 0xBF;
	if (c >= 0xC2 && c <= 0xDF)
		k = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		k = 3;
		if (c == 0xE0)
			lo = 0xA0;
		if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		k = 4;
		if (c == 0xF0)
			lo = 0x90;
		if (c == 0xF4)
			hi = 0x8F;
	} else
		return 1;
	size_t m = 1;
	if (m < n && m < k && p[1] >= lo && p[1] <= hi) {
		m++;
		while (m < n && m < k && p[m] >= 0x80 && p[m] <= 0xBF)
			m++;
	}
	return m;
}

size_t utf8_replaced_len(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, out = 0;
	while (i < n) {
		size_t k = p[i] < 0x80 ? 1 : utf8_seq(p + i, n - i);
		if (k) {
			out += k;
			i += k;
		} else {
			out += 3;
			i += maximal_subpart(p + i, n - i);
		}
	}
	return out;
}

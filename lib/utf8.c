/* utf8.c: utf8_valid, a whole buffer checked with utf8_seq (see utf8.h).
 * Leaves out locating the first bad byte (callers only need yes or no).
 * Reference: RFC 3629 section 4. */
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

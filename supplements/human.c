/* human.c: human-readable byte counts (see human.h). SI prefixes, powers of 1000. */
#include "supplements/human.h"

#include <stdio.h>

char *human_bytes(uint64_t bytes, char *buf, size_t n)
{
	static const char *unit[] = {"KB", "MB", "GB", "TB", "PB"};
	if (bytes < 1000) {
		snprintf(buf, n, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	double v = (double)bytes / 1000;
	int u = 0;
	/* move up a unit when rounding to 4 digits would print 1000 */
	while (u < 4 && v >= 999.95) {
		v /= 1000;
		u++;
	}
	int dec = v < 9.9995 ? 3 : v < 99.995 ? 2 : 1;
	snprintf(buf, n, "%.*f %s", dec, v, unit[u]);
	return buf;
}

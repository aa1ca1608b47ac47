/* human.h: sizes for people: "1.056 MB", "422.6 KB" (decimal units, four
 * significant digits), as the supplements tools print them. */
#ifndef SUPKIT_SUPPLEMENTS_HUMAN_H
#define SUPKIT_SUPPLEMENTS_HUMAN_H

#include <stddef.h>
#include <stdint.h>

/* Format bytes into buf (>= 16 bytes): "0 B" .. "999 B", then KB, MB, GB, TB
 * (powers of 1000) with four significant digits. Returns buf. */
char *human_bytes(uint64_t bytes, char *buf, size_t n);

#endif

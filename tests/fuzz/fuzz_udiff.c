/* fuzz_udiff.c: libFuzzer harness for the unified-diff parser and applier
 * (replay/udiff.c) and the generator (replay/mkdiff.c).
 *
 * Input: "<baseline>\0<diff>" (no NUL: a fixed small baseline, the whole
 * input is the diff). Whatever applies must round-trip through the generator:
 * mkdiff_unified(baseline, result) applied to baseline gives result again,
 * else abort. A refusal must carry a one-line message.
 *
 * Build (clang): clang -g -O1 -fsanitize=fuzzer,address,undefined -I. \
 *   tests/fuzz/fuzz_udiff.c build/libreplay.a build/liblib.a \
 *   $(pkg-config --libs libcrypto libcjson)
 * Seeds: tests/fixtures/replay/cases/ * /U0.diff and U3.diff. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "replay/mkdiff.h"
#include "replay/udiff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char fixed[] = "alpha\nbeta\ngamma\r\ndelta\n\nepsilon";
	const char *in = (const char *)data, *base = fixed, *diff = in;
	size_t blen = sizeof fixed - 1, dlen = size;
	const char *nul = memchr(in, '\0', size);
	if (nul) {
		base = in;
		blen = (size_t)(nul - in);
		diff = nul + 1;
		dlen = size - blen - 1;
	}
	struct udiff_limits lim = {1 << 20, 1000};
	struct err e = {0};
	char *out;
	size_t olen;
	if (udiff_patch(base, blen, diff, dlen, "'fuzz'", &lim, &out, &olen, &e) != 0) {
		if (!e.msg[0] || strchr(e.msg, '\n'))
			abort();
		return 0;
	}
	if (!memchr(base, '\0', blen) && !memchr(out, '\0', olen)) {
		char *d2, *back;
		size_t d2len, backlen;
		mkdiff_unified(base, blen, out, olen, "a", "b", (size_t)(size % 4), &d2, &d2len);
		if (udiff_patch(base, blen, d2, d2len, "'regen'", NULL, &back, &backlen, &e) != 0)
			abort();
		if (backlen != olen || memcmp(back, out, olen) != 0)
			abort();
		free(back);
		free(d2);
	}
	free(out);
	return 0;
}

/* fuzz_manifest.c: libFuzzer harness for manifest.json parsing
 * (supplements/manifest.c manifest_parse) and its print/parse round trip:
 * whatever parses must print and parse back to the same bytes.
 *
 * Build (clang): clang -g -O1 -fsanitize=fuzzer,address,undefined -I. \
 *   tests/fuzz/fuzz_manifest.c build/libsupplements.a build/libreplay.a \
 *   build/liblib.a $(pkg-config --libs libarchive libcrypto libcjson)
 * Seeds: tests/fixtures/supplements/tree.manifest.json. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "supplements/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct manifest m, m2;
	struct err e;
	if (manifest_parse((const char *)data, size, "fuzz", &m, &e) == 0) {
		size_t len;
		char *s = manifest_print(&m, &len);
		if (manifest_parse(s, len, "fuzz-reprint", &m2, &e) != 0)
			abort();
		char *s2 = manifest_print(&m2, NULL);
		if (strcmp(s, s2) != 0)
			abort();
		free(s);
		free(s2);
		manifest_release(&m2);
	}
	manifest_release(&m);
	return 0;
}

/* fuzz_zipdir.c: libFuzzer harness for the supplement zip readers: the
 * central-directory reader (supplements/zipdir.c), the libarchive scan
 * (scan.c) and safe extraction (unpack.c) on arbitrary bytes.
 *
 * Build (clang): clang -g -O1 -fsanitize=fuzzer,address,undefined -I. \
 *   tests/fuzz/fuzz_zipdir.c build/libsupplements.a build/libreplay.a \
 *   build/liblib.a $(pkg-config --libs libarchive libcrypto libcjson)
 * Seeds: tests/fuzz/seeds.txt (the zips under tests/fixtures/supplements).
 * Leaves out: checking results (the unit tests do); this looks for crashes,
 * leaks and writes outside the target only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "supplements/scan.h"
#include "supplements/unpack.h"
#include "supplements/zipdir.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base[64];

static void base_remove(void)
{
	dir_remove_tree(base);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!base[0]) {
		snprintf(base, sizeof base, "/tmp/supkit-fuzz-zip-XXXXXX");
		if (!mkdtemp(base))
			abort();
		atexit(base_remove);
	}
	char *zp = path_join(base, "in.zip"), *out = path_join(base, "out");
	struct err e;
	fuzz_write_file(zp, data, size);
	struct zipdir zd;
	if (zipdir_read(zp, 0, &zd, &e) == 0)
		zipdir_release(&zd);
	struct scan s;
	struct scan_opts so = {.safetensors_digest = 1, .quiet = 1};
	scan_path(zp, &so, &s, &e);
	scan_release(&s);
	struct unpack_limits l;
	unpack_limits_default(&l);
	l.quiet = 1;
	l.max_total = 64u << 20;
	struct unpack_result r;
	unpack_zip(zp, out, &l, &r, &e);
	dir_remove_tree(out);
	free(zp);
	free(out);
	return 0;
}

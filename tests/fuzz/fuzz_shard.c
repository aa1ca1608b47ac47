/* fuzz_shard.c: libFuzzer harness for the token shard reader
 * (data/shard.c shard_open) and, on shards it accepts, the loader
 * (data/loader.c: open, a few batches, state save/restore round trip).
 * Whatever is accepted must satisfy the format's invariants.
 *
 * Build (clang): clang -g -O1 -fsanitize=fuzzer,address,undefined -I. \
 *   -I/usr/include/cjson tests/fuzz/fuzz_shard.c build/libtrainer.a \
 *   build/liblib.a $(pkg-config --libs libpcre2-8 libarchive libcrypto libcjson)
 * Seeds: tests/fixtures/loader/a.bin, b.bin. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "data/loader.h"
#include "data/shard.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	snprintf(path, sizeof path, "/tmp/fuzz_shard.%d.bin", (int)getpid());
	struct err e;
	fuzz_write_file(path, data, size);
	struct shard s;
	if (shard_open(&s, path, &e) == 0) {
		if (s.n_tokens && s.tokens[0] != s.bos_id)
			abort();
		for (uint64_t i = 0; i < s.n_tokens; i++)
			if (s.tokens[i] >= s.vocab_size)
				abort();
		uint64_t docs = s.n_docs;
		shard_close(&s);
		if (docs) {
			const char *p[1] = {path};
			struct loader a, b;
			if (loader_open(p, 1, 7, 2, size & 1, &a, &e) < 0 ||
			    loader_open(p, 1, 7, 2, size & 1, &b, &e) < 0)
				abort();
			int32_t x[14], y[14], x2[14], y2[14];
			loader_next(&a, x, y);
			size_t n;
			uint8_t *st = loader_state(&a, &n);
			if (loader_restore(&b, st, n, &e) < 0)
				abort();
			loader_next(&a, x, y);
			loader_next(&b, x2, y2);
			if (memcmp(x, x2, sizeof x) || memcmp(y, y2, sizeof y) || x[0] != (int32_t)a.bos_id)
				abort();
			free(st);
			loader_close(&a);
			loader_close(&b);
		}
	}
	unlink(path);
	return 0;
}

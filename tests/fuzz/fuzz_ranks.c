/* fuzz_ranks.c: libFuzzer harness for tiktoken rank files
 * (data/tokenizer.c tokenizer_load, gzip included) and the encoder: on an
 * accepted rank set that holds all 256 single bytes, decode(encode(x)) == x
 * for the input's own bytes.
 *
 * Build (clang): clang -g -O1 -fsanitize=fuzzer,address,undefined -I. \
 *   -I/usr/include/cjson tests/fuzz/fuzz_ranks.c build/libtrainer.a \
 *   build/liblib.a $(pkg-config --libs libpcre2-8 libarchive libcrypto libcjson)
 * Seeds: tests/fixtures/data/bpe_ref.tiktoken. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "data/tokenizer.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	snprintf(path, sizeof path, "/tmp/fuzz_ranks.%d.tiktoken", (int)getpid());
	struct err e;
	fuzz_write_file(path, data, size);
	struct tokenizer tk;
	if (tokenizer_load(&tk, path, NULL, &e) == 0) {
		int bytes = tk.n_ranks >= 256;
		for (uint32_t b = 0; b < 256 && bytes; b++) {
			unsigned char c = (unsigned char)b;
			struct ids one = {0};
			tokenizer_encode(&tk, (const char *)&c, 1, &one, &e);
			bytes = one.n == 1;
			ids_free(&one);
		}
		if (bytes) {
			struct ids ids = {0};
			struct bytes back = {0};
			if (tokenizer_encode(&tk, (const char *)data, size, &ids, &e) < 0 ||
			    tokenizer_decode(&tk, ids.v, ids.n, &back, &e) < 0 || back.n != size ||
			    (size && memcmp(back.v, data, size) != 0))
				abort();
			ids_free(&ids);
			bytes_free(&back);
		}
		tokenizer_free(&tk);
	}
	unlink(path);
	return 0;
}

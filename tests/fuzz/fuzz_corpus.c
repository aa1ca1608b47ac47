/* fuzz_corpus.c: libFuzzer harness for the corpus readers
 * (data/corpus.c corpus_read_file: JSON Lines, JSON array, delimited
 * text, and auto: parquet by its magic or text; binary input refused) and
 * the Brown de-tagger: counts must add up and documents passed on must be
 * non-empty.
 *
 * Build (clang): clang -g -O1 -fsanitize=fuzzer,address,undefined -I. \
 *   -I/usr/include/cjson tests/fuzz/fuzz_corpus.c build/libtrainer.a \
 *   build/liblib.a $(pkg-config --libs libpcre2-8 libarchive libcrypto libcjson)
 * Seeds: tests/fixtures/data/texts.json. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "data/corpus.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_doc(const char *doc, size_t len, int valid, void *ctx, struct err *e)
{
	(void)e;
	if (len == 0 || valid != utf8_valid(doc, len))
		abort();
	*(uint64_t *)ctx += len;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	snprintf(path, sizeof path, "/tmp/fuzz_corpus.%d", (int)getpid());
	struct err e;
	fuzz_write_file(path, data, size);
	enum corpus_format fmt[4] = {CORPUS_JSONL, CORPUS_JSON, CORPUS_TEXT, CORPUS_AUTO};
	for (int i = 0; i < 4; i++) {
		struct corpus_opts o = {.format = fmt[i], .delim = i == 2 ? "\n\n" : NULL};
		struct corpus_counts c = {0};
		uint64_t bytes = 0;
		if (corpus_read_file(path, &o, on_doc, &bytes, &c, &e) == 0 && bytes != c.bytes)
			abort();
	}
	struct bytes b = {0};
	brown_detag((const char *)data, size, &b);
	if (b.n > 2 * size + 1)
		abort();
	bytes_free(&b);
	unlink(path);
	return 0;
}

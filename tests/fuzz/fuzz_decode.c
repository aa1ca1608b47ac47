/* fuzz_decode.c: libFuzzer harness for what supkit data decode reads and
 * writes: the ids file (data/data.c data_ids_parse, as text and as
 * --u32), tokenizer_decode (data/tokenizer.c) and the JSON text of
 * --json (data_text_json).
 *
 * The tokenizer is fixed: the 256 single bytes, a hole at rank 256, then
 * "th", "he", "e ", " t" and a 100-byte token (ranks 257..261), and the 4
 * special tokens (262..265), loaded from a rank file the harness writes.
 * Invariants, for each way of reading: a refusal carries a one-line message
 * naming the file (text: the line); an accepted text file is lines of
 * decimal digits only (a CR before the LF aside, empty lines skipped), one
 * id each, in order, and reads back the same from the ids written one a
 * line; an accepted --u32 file is its length / 4 ids, little-endian. Decode
 * succeeds exactly when every id is below 266 and not 256, to the tokens'
 * bytes one after another ("<|reserved_K|>" for the specials), and
 * otherwise names the index of the first bad id. The JSON text is valid
 * UTF-8 without NUL: the bytes themselves when they are valid UTF-8 without
 * NUL, else each NUL and each byte of an invalid sequence U+FFFD.
 * Seeds: tests/fixtures/data/sample_bench.ids and
 * tests/fuzz/corpus/decode/. Reference: data/data.h, supkit-data(1). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fileio.h"
#include "lib/utf8.h"
#include "data/data.h"
#include "data/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { FZ_HOLE = 256, FZ_RANKS = 262, FZ_VOCAB = FZ_RANKS + TOKENIZER_N_SPECIAL };
static struct tokenizer tk;
static int tk_ready;
static unsigned char long_tok[100];
static const char *const merges[5] = {"th", "he", "e ", " t", NULL};

static void fuzz_cleanup(void)
{
	tokenizer_free(&tk);
}

static void b64(const unsigned char *s, size_t n, char *out)
{
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0) | (i + 2 < n ? s[i + 2] : 0);
		out[o++] = al[v >> 18 & 63];
		out[o++] = al[v >> 12 & 63];
		out[o++] = i + 1 < n ? al[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? al[v & 63] : '=';
	}
	out[o] = 0;
}

/* token t's bytes (NULL for the hole and ids past the ranks) */
static const unsigned char *tok_bytes(uint32_t t, size_t *n)
{
	static unsigned char one;
	if (t < 256) {
		one = (unsigned char)t;
		*n = 1;
		return &one;
	}
	if (t > FZ_HOLE && t < FZ_HOLE + 5) {
		*n = strlen(merges[t - FZ_HOLE - 1]);
		return (const unsigned char *)merges[t - FZ_HOLE - 1];
	}
	if (t == FZ_RANKS - 1) {
		*n = sizeof long_tok;
		return long_tok;
	}
	return NULL;
}

static void fuzz_init(void)
{
	char dir[] = "/tmp/supkit-fuzz-decode-XXXXXX";
	if (!mkdtemp(dir))
		abort();
	for (size_t i = 0; i < sizeof long_tok; i++)
		long_tok[i] = (unsigned char)('a' + i % 26);
	long_tok[sizeof long_tok - 1] = 0xe9;   /* ends in an invalid sequence */
	size_t cap = 1 << 16, len = 0;
	char *text = malloc(cap), line[256];
	if (!text)
		abort();
	for (uint32_t t = 0; t < FZ_RANKS; t++) {
		size_t n;
		const unsigned char *b = tok_bytes(t, &n);
		if (!b)
			continue;
		b64(b, n, line);
		len += (size_t)snprintf(text + len, cap - len, "%s %u\n", line, t);
	}
	char *path = path_join(dir, "ranks.tiktoken");
	struct err e = {0};
	if (file_write_atomic(path, text, len, &e) != 0 || tokenizer_load(&tk, path, NULL, &e) != 0 ||
	    tk.n_vocab != FZ_VOCAB) {
		fprintf(stderr, "fuzz_decode: %s\n", e.msg);
		abort();
	}
	dir_remove_tree(dir);
	free(path);
	free(text);
	tk_ready = 1;
	atexit(fuzz_cleanup);
}

static void one_line(const struct err *e, const char *name)
{
	if (!e->msg[0] || strchr(e->msg, '\n') || !strstr(e->msg, name))
		abort();
}

/* The text file's lines, as the format says: 1 when every non-empty line
 * (less a CR before its LF) is decimal digits. */
static int lines_are_digits(const uint8_t *d, size_t n)
{
	size_t i = 0;
	while (i < n) {
		const uint8_t *nl = memchr(d + i, '\n', n - i);
		size_t end = nl ? (size_t)(nl - d) : n, len = end - i;
		if (len && d[i + len - 1] == '\r')
			len--;
		for (size_t k = 0; k < len; k++)
			if (d[i + k] < '0' || d[i + k] > '9')
				return 0;
		i = end + 1;
	}
	return 1;
}

static void check_decode(const struct ids *ids)
{
	static const char name[] = "a.ids";
	struct bytes out = {0}, want = {0};
	struct err e = {0};
	size_t bad = SIZE_MAX;
	for (size_t i = 0; i < ids->n && bad == SIZE_MAX; i++) {
		uint32_t t = ids->v[i];
		size_t n;
		const unsigned char *b = tok_bytes(t, &n);
		if (b) {
			bytes_append(&want, b, n);
		} else if (t >= FZ_RANKS && t < FZ_VOCAB) {
			char s[32];
			bytes_append(&want, s, (size_t)snprintf(s, sizeof s, "<|reserved_%u|>", t - FZ_RANKS));
		} else {
			bad = i;
		}
	}
	int rc = tokenizer_decode(&tk, ids->v, ids->n, &out, &e);
	if ((rc == 0) != (bad == SIZE_MAX))
		abort();
	if (rc != 0) {
		char at[48];
		snprintf(at, sizeof at, "at index %zu ", bad);
		err_prefix(&e, "'%s'", name);   /* as supkit data decode reports it */
		one_line(&e, name);
		if (!strstr(e.msg, at))
			abort();
	} else {
		if (out.n != want.n || (out.n && memcmp(out.v, want.v, out.n)))
			abort();
		/* --json's text */
		cJSON *j = data_text_json(out.v, out.n);
		const char *s = cJSON_GetStringValue(j);
		if (!s || !utf8_valid(s, strlen(s)))
			abort();
		int plain = out.n == 0 || (utf8_valid((const char *)out.v, out.n) && !memchr(out.v, 0, out.n));
		if (plain && (strlen(s) != out.n || (out.n && memcmp(s, out.v, out.n))))
			abort();
		if (!plain && strlen(s) < out.n)
			abort();
		cJSON_Delete(j);
	}
	bytes_free(&out);
	bytes_free(&want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char name[] = "a.ids";
	static const uint8_t empty[1];
	if (!data)
		data = empty;   /* libFuzzer's empty input */
	if (!tk_ready)
		fuzz_init();
	for (int u32 = 0; u32 < 2; u32++) {
		struct ids ids = {0};
		struct err e = {0};
		if (data_ids_parse(name, (const char *)data, size, u32, &ids, &e) != 0) {
			one_line(&e, name);
			if (!strstr(e.msg, u32 ? "offset" : "line"))
				abort();
			ids_free(&ids);
			continue;
		}
		if (u32) {
			if (size % 4 || ids.n != size / 4)
				abort();
			for (size_t i = 0; i < ids.n; i++)
				if (ids.v[i] != ((uint32_t)data[4 * i] | (uint32_t)data[4 * i + 1] << 8 |
						 (uint32_t)data[4 * i + 2] << 16 | (uint32_t)data[4 * i + 3] << 24))
					abort();
		} else {
			if (!lines_are_digits(data, size))
				abort();
			/* written back one a line, read back the same */
			struct bytes t = {0};
			for (size_t i = 0; i < ids.n; i++) {
				char s[16];
				bytes_append(&t, s, (size_t)snprintf(s, sizeof s, "%u\n", ids.v[i]));
			}
			struct ids back = {0};
			if (data_ids_parse(name, (const char *)t.v, t.n, 0, &back, &e) != 0 || back.n != ids.n ||
			    (ids.n && memcmp(back.v, ids.v, ids.n * sizeof *ids.v)))
				abort();
			ids_free(&back);
			bytes_free(&t);
		}
		check_decode(&ids);
		ids_free(&ids);
	}
	return 0;
}

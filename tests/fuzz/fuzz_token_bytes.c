/* fuzz_token_bytes.c: libFuzzer harness for the token_bytes reader
 * (data/tokenizer.c tokenizer_token_bytes_mem, behind
 * tokenizer_token_bytes), which supkit train reads as DATA_DIR/
 * token_bytes.bin (or --token-bytes) for BPB and supkit data stats reads
 * with --token-bytes.
 *
 * Invariants: a refusal carries a one-line message naming the file; an
 * accepted file is "SKTOKBYT", version 1 and V > 4 u32 lengths filling the
 * file exactly, every length at most TOKENIZER_MAX_TOKEN_BYTES, the last
 * TOKENIZER_N_SPECIAL 0 and some other not 0; the lengths handed back are
 * the file's, so the file written back from them is the input byte for byte.
 * Seed: tests/fixtures/train/data/token_bytes.bin (a 512-token BPE's).
 * Reference: data/tokenizer.h, supkit-data(1). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char name[] = "run/data/token_bytes.bin";
	static const uint8_t empty[1];
	if (!data)
		data = empty;   /* libFuzzer's empty input */
	struct err e = {0};
	uint32_t *tb = NULL, V = 0;
	if (tokenizer_token_bytes_mem(data, size, name, &tb, &V, &e) != 0) {
		if (!e.msg[0] || strchr(e.msg, '\n') || !strstr(e.msg, name))
			abort();
		return 0;
	}
	if (V <= TOKENIZER_N_SPECIAL || size != 16 + 4 * (size_t)V || memcmp(data, "SKTOKBYT", 8) ||
	    le32(data + 8) != 1 || le32(data + 12) != V)
		abort();
	uint32_t any = 0;
	for (uint32_t i = 0; i < V; i++) {
		if (tb[i] != le32(data + 16 + 4 * (size_t)i) || tb[i] > TOKENIZER_MAX_TOKEN_BYTES)
			abort();
		if (i >= V - TOKENIZER_N_SPECIAL && tb[i] != 0)
			abort();
		any |= tb[i];
	}
	if (!any)
		abort();
	/* written back as tokenizer_save_token_bytes lays it out */
	uint8_t *back = malloc(size);
	if (!back)
		abort();
	memcpy(back, "SKTOKBYT", 8);
	uint32_t head[2] = {1, V};
	for (int k = 0; k < 2; k++)
		for (int b = 0; b < 4; b++)
			back[8 + 4 * k + b] = (uint8_t)(head[k] >> (8 * b));
	for (uint32_t i = 0; i < V; i++)
		for (int b = 0; b < 4; b++)
			back[16 + 4 * (size_t)i + b] = (uint8_t)(tb[i] >> (8 * b));
	if (memcmp(back, data, size))
		abort();
	free(back);
	free(tb);
	return 0;
}

/* fuzz_safetensors.c: libFuzzer harness for the safetensors reader
 * (lib/safetensors.c st_open_mem): whatever is accepted must keep every
 * tensor inside the data with a span that matches its shape, convert to
 * float64 when it is a float type, and digest without reading out of bounds;
 * every name and __metadata__ string it hands out is valid UTF-8.
 *
 * Build (clang): clang -g -O1 -fsanitize=fuzzer,address,undefined -I. \
 *   $(pkg-config --cflags libcjson) tests/fuzz/fuzz_safetensors.c \
 *   build/liblib.a $(pkg-config --libs libcjson libcrypto) -lm
 * Seeds: tests/fixtures/safetensors/ *.safetensors. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/safetensors.h"
#include "lib/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct st_file f;
	struct err e;
	if (st_open_mem(&f, data, size, "fuzz", &e) != 0)
		return 0;
	uint64_t data_len = f.map_len - f.data_start;
	for (size_t i = 0; i < f.n; i++) {
		const struct st_tensor *t = &f.t[i];
		if (t->begin > t->end || t->end > data_len)
			abort();
		if (st_numel(t) * st_dtype_size(t->dtype) != t->end - t->begin)
			abort();
		if (st_find(&f, t->name) == NULL || !utf8_valid(t->name, strlen(t->name)))
			abort();
		uint64_t n = st_numel(t);
		if (n <= (1u << 20)) {
			double *v = malloc((n ? n : 1) * sizeof *v);
			int fl = t->dtype == ST_F64 || t->dtype == ST_F32 || t->dtype == ST_BF16 || t->dtype == ST_F16;
			if ((st_to_f64(t, v, &e) == 0) != fl)
				abort();
			free(v);
		}
	}
	for (size_t i = 0; i < f.n_meta; i++)
		if (!utf8_valid(f.meta_keys[i], strlen(f.meta_keys[i])) ||
		    !utf8_valid(f.meta_vals[i], strlen(f.meta_vals[i])))
			abort();
	char hex[65];
	st_digest(&f, hex);
	if (strlen(hex) != 64)
		abort();
	st_close(&f);
	return 0;
}

/* fuzz_loader_state.c: libFuzzer harness for the loader's resume state
 * (data/loader.c loader_restore), read from a run folder on --resume.
 *
 * The loader is fixed: the two fixture shards tests/fixtures/loader/a.bin and
 * b.bin (under $SUPKIT_ROOT, else the current folder), T 7, B 2, seed 5.
 * Invariants: a refusal carries a one-line message and leaves the loader
 * usable; an accepted state gives batches whose every input row starts at
 * BOS with ids below V, whose targets are the inputs shifted by one, and
 * whose own state restores into a fresh loader to the same next batch.
 * Seed: tests/fuzz/corpus/loader_state/after3 (the state after 3 batches);
 * FUZZ_WRITE_SEED=PATH makes the harness write it (tests/fuzz/README.md).
 * Reference: data/loader.h, docs/data.md. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fileio.h"
#include "data/loader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { FZ_T = 7, FZ_B = 2, FZ_SEED = 5 };
static char *fuzz_paths[2];

static void fuzz_free_paths(void)
{
	free(fuzz_paths[0]);
	free(fuzz_paths[1]);
}

static void fuzz_open(struct loader *ld)
{
	struct err e = {0};
	if (!fuzz_paths[0]) {
		const char *root = getenv("SUPKIT_ROOT");
		fuzz_paths[0] = path_join(root ? root : ".", "tests/fixtures/loader/a.bin");
		fuzz_paths[1] = path_join(root ? root : ".", "tests/fixtures/loader/b.bin");
		atexit(fuzz_free_paths);
	}
	if (loader_open((const char *const *)fuzz_paths, 2, FZ_T, FZ_B, FZ_SEED, ld, &e) != 0) {
		fprintf(stderr, "fuzz_loader_state: %s (run from the repository root)\n", e.msg);
		abort();
	}
	const char *seed = getenv("FUZZ_WRITE_SEED");
	if (seed) {
		int32_t x[FZ_B * FZ_T], y[FZ_B * FZ_T];
		for (int i = 0; i < 3; i++)
			loader_next(ld, x, y);
		size_t n;
		uint8_t *st = loader_state(ld, &n);
		if (file_write_atomic(seed, st, n, &e) != 0)
			abort();
		free(st);
		loader_close(ld);
		exit(0);
	}
}

static void fuzz_batch(struct loader *ld, int32_t *x, int32_t *y)
{
	loader_next(ld, x, y);
	for (int r = 0; r < FZ_B; r++) {
		const int32_t *xr = x + r * FZ_T, *yr = y + r * FZ_T;
		if (xr[0] != (int32_t)ld->bos_id)
			abort();
		for (int t = 0; t < FZ_T; t++) {
			if (xr[t] < 0 || (uint32_t)xr[t] >= ld->vocab_size || yr[t] < 0 ||
			    (uint32_t)yr[t] >= ld->vocab_size)
				abort();
			if (t + 1 < FZ_T && yr[t] != xr[t + 1])
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct loader a, b;
	struct err e = {0};
	int32_t x[FZ_B * FZ_T], y[FZ_B * FZ_T], x2[FZ_B * FZ_T], y2[FZ_B * FZ_T];
	fuzz_open(&a);
	if (loader_restore(&a, data, size, &e) != 0) {
		if (!e.msg[0] || strchr(e.msg, '\n'))
			abort();
		fuzz_batch(&a, x, y); /* still usable */
		loader_close(&a);
		return 0;
	}
	for (int i = 0; i < 3; i++)
		fuzz_batch(&a, x, y);
	size_t n;
	uint8_t *st = loader_state(&a, &n);
	fuzz_open(&b);
	if (loader_restore(&b, st, n, &e) != 0)
		abort();
	fuzz_batch(&a, x, y);
	fuzz_batch(&b, x2, y2);
	if (memcmp(x, x2, sizeof x) || memcmp(y, y2, sizeof y))
		abort();
	free(st);
	loader_close(&a);
	loader_close(&b);
	return 0;
}

/* fuzz_parquet.c: libFuzzer harness for the parquet reader
 * (data/parquet.c pq_open_mem, pq_read_row_group) over the input as a whole
 * file, column "text": a refusal must carry a one-line message naming the
 * input; an accepted file must pass on only valid UTF-8, in increasing row
 * order inside its row group's rows, with counts that add up to the
 * footer's. The callback stops a read after 2^20 values (a file of many
 * repeated dictionary values is valid and would only take long).
 *
 * Build (clang): make fuzz (tests/fuzz/fuzz.mk), or by hand
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -I. \
 *   tests/fuzz/fuzz_parquet.c build/libdata.a build/liblib.a \
 *   -lzstd -lz -lsnappy
 * Seeds: tests/fixtures/parquet/ *.parquet. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/parquet.h"
#include "lib/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_VALUES (1u << 20)

struct state {
	uint64_t values, bytes;
	uint64_t next_row;    /* the lowest row the next value may have */
	uint64_t row_end;     /* one past the row group's last row */
};

static int on_value(const char *s, size_t len, uint64_t row, void *ctx, struct err *e)
{
	struct state *st = ctx;
	if (!utf8_valid(s, len) || row < st->next_row || row >= st->row_end)
		abort();
	st->next_row = row + 1;
	st->bytes += len;
	if (++st->values >= FUZZ_MAX_VALUES)
		return err_set(e, EXIT_USAGE, "harness: value limit");
	return 0;
}

static void check_msg(const struct err *e)
{
	if (!e->msg[0] || strchr(e->msg, '\n') || !strstr(e->msg, "'fuzz'") ||
	    (e->code != EXIT_USAGE && e->code != EXIT_SYS))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pq_file *f;
	struct err e;
	if (pq_open_mem(&f, data, size, "fuzz", "text", &e) != 0) {
		if (f)
			abort();
		check_msg(&e);
		return 0;
	}
	struct state st = {0};
	struct pq_counts c = {0};
	uint64_t first = 0, sum = 0;
	for (size_t g = 0; g < pq_row_groups(f); g++)
		sum += pq_row_group_rows(f, g);
	if (sum != pq_rows(f))
		abort();
	int rc = 0;
	for (size_t g = 0; g < pq_row_groups(f) && rc == 0; g++) {
		uint64_t rows = pq_row_group_rows(f, g);
		struct pq_counts before = c;
		st.next_row = first;
		st.row_end = first + rows;
		if (pq_row_group_bytes(f, g) > size || !pq_row_group_codec(f, g))
			abort();
		rc = pq_read_row_group(f, g, on_value, &st, &c, &e);
		if (rc == 0 && (c.rows - before.rows != rows ||
				c.values + c.nulls - before.values - before.nulls != rows))
			abort();
		first += rows;
	}
	if (rc != 0) {
		if (!strstr(e.msg, "harness: value limit"))
			check_msg(&e);
	} else if (c.rows != pq_rows(f) || c.values != st.values || c.bytes != st.bytes) {
		abort();
	}
	pq_close(f);
	return 0;
}
